#!/usr/bin/env python3
"""PyTorch's own attention on the shapes `rfa-bench attention` times, for the side-by-side anchor.

`rfa-bench attention` runs RFA and the runtime's SDPA through Vulkan with H heads of D complex
dims (2D real halves); this times torch.nn.functional.scaled_dot_product_attention on the same
machine, causal, B x H heads of head dim 2D, in fp32 and in bf16 (FlashAttention where PyTorch
has it), and the one-row decode step over N keys. One line per (mode, dtype, N); --json prints
JSON lines with the fields bench, impl, mode, dtype, n, heads, head_dim, batch, ms, device.

  python3 tools/rfa-bench/torch_sdpa_anchor.py --n 1024,4096,16384,65536 [--json]

Timing: CUDA events around each call after a warm-up call, median of --reps; on a machine without
CUDA it runs on the CPU (wall clock), which is only useful to check the script.
"""
import argparse
import json
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1024,4096,16384")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dim", type=int, default=32, help="complex dims per head, as rfa-bench (head dim = 2 x dim)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch_sdpa_anchor: PyTorch is not installed", file=sys.stderr)
        return 2
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    name = torch.cuda.get_device_name(0) if cuda else "cpu"
    types = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    hd = 2 * a.dim
    # PyTorch before 2.0 has no fused SDPA: the plain formula then (the `impl` field says which).
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    impl = "sdpa" if sdpa else "math"
    if sdpa is None:
        def sdpa(q, k, v, is_causal=False):
            s = (q @ k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
            if is_causal:
                n, m = s.shape[-2], s.shape[-1]
                s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=s.device).triu(m - n + 1), float("-inf"))
            return torch.softmax(s.float(), dim=-1).to(v.dtype) @ v

    def timed(fn) -> float:
        fn()  # warm-up: kernel choice, allocations
        times = []
        for _ in range(a.reps):
            if cuda:
                t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0.record()
                fn()
                t1.record()
                torch.cuda.synchronize()
                times.append(t0.elapsed_time(t1))
            else:
                s = time.perf_counter()
                fn()
                times.append((time.perf_counter() - s) * 1e3)
        return statistics.median(times)

    if not a.json:
        print(f"{'mode':8} {'dtype':5} {'N':>7} {'ms':>10}  device: {name}, torch {torch.__version__} ({impl})")
    for n in [int(x) for x in a.n.split(",") if x]:
        for dt in [d for d in a.dtypes.split(",") if d]:
            if dt not in types:
                print(f"torch_sdpa_anchor: unknown dtype '{dt}' (fp32, bf16, fp16)", file=sys.stderr)
                return 2
            g = torch.Generator(device="cpu").manual_seed(0)
            shape = (a.batch, a.heads, n, hd)
            q, k, v = (torch.randn(shape, generator=g).to(dev, types[dt]) for _ in range(3))
            rows = {
                "prefill": lambda: sdpa(q, k, v, is_causal=True),
                # One query row over all n keys (no mask needed: every key is in its past).
                "decode": lambda: sdpa(q[:, :, -1:], k, v),
            }
            for mode, fn in rows.items():
                with torch.no_grad():
                    ms = timed(fn)
                rec = {"bench": "torch_sdpa", "impl": impl, "mode": mode, "dtype": dt, "n": n, "heads": a.heads, "head_dim": hd,
                       "batch": a.batch, "ms": round(ms, 4), "device": name}
                print(json.dumps(rec) if a.json else f"{mode:8} {dt:5} {n:7d} {ms:10.3f}")
            del q, k, v
            if cuda:
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
