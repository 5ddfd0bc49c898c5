#!/usr/bin/env python3
"""One report of RFA-VK's attention on a GPU machine, as markdown (scripts/gpu-report.sh runs it).

Runs `rfa-bench attention --json` (prefill at N = 1k, 4k, 8k, 16k, 65k on fp32 caches, fp16 caches
and the cooperative-matrix tile where the device has one; decode steps at context 512, 4k, 32k on
fp32 and fp16 caches), `tools/rfa-bench/torch_sdpa_anchor.py --json` on the same shapes when PyTorch
sees a CUDA device, `rfa-bench attention --stats` for the kernels' SPIR-V counts and the driver's
statistics, and the suite's tests that take another path (or skip) on lavapipe, then prints one
markdown report: the timing table (RFA M2 ms, the runtime's SDPA ms, their ratio, PyTorch SDPA fp32
and bf16 ms, decode K/V GB/s and its share of the device's memory bandwidth where known), the
kernel statistics and the tests' results.

--quick runs the same on lavapipe-sized shapes (H = 2, D = 16; prefill N = 64, 128; decode 128,
512; one repetition; one test case), labelled as such: it checks the script, not the GPU.

PyTorch: the first of $RFA_TORCH_PYTHON, this interpreter, python3 on PATH and the system's
python3 that imports torch runs the anchor.

  python3 tools/rfa-bench/gpu_report.py --bench BUILD/rfa-bench --tests BUILD/tests [--quick] [--out DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Peak memory bandwidth in GB/s by device name (vendor data sheets), most specific name first.
# RFA_HBM_GBS overrides it for a device not listed.
BANDWIDTH = [
    ("H200", 4800), ("H100 NVL", 3900), ("H100 PCIe", 2039), ("H100", 3350), ("GH200", 4000),
    ("A100-SXM4-80GB", 2039), ("A100 80GB PCIe", 1935), ("A100-PCIE-80GB", 1935), ("A100", 1555),
    ("L40S", 864), ("L40", 864), ("L4", 300), ("A10G", 600), ("A10", 600), ("RTX 4090", 1008),
    ("RTX 3090", 936), ("V100", 900), ("T4", 320),
]

# The suite's tests whose GPU path differs from lavapipe's: test_attention_tile's case on real
# cooperative matrices (skipped on lavapipe, which has no VK_NV_cooperative_matrix) and its other
# cases on the GPU's tile sizes; the cooperative tile and shared-memory key tiles, which GPUs take by
# default (lavapipe only when CTest forces them); split-k and fp16 caches on a GPU's own tiling;
# test_pipeline_stats reads the driver's statistics where it exposes them (lavapipe: the note).
GPU_TESTS = ["test_attention_tile", "test_attention_paths", "test_rfa_attention", "test_pipeline_stats"]
QUICK_TESTS = [("test_attention_tile", "the tile on cooperative matrices matches the twin"),
               ("test_pipeline_stats", "driver statistics are captured only when asked, and a driver without them says so")]


def log(msg):
    print("gpu-report: " + msg, file=sys.stderr, flush=True)


def run_json(cmd, env_extra=None, timeout=3600):
    """Runs cmd; returns (JSON objects of its stdout lines, error text or None)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    log(" ".join(("%s=%s " % kv for kv in (env_extra or {}).items())) + " ".join(cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], "timed out after %d s" % timeout
    out = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return out, "exit %d: %s" % (p.returncode, tail)
    return out, None


def bandwidth_of(device):
    env = os.environ.get("RFA_HBM_GBS")
    if env:
        return float(env), "RFA_HBM_GBS"
    for name, gbs in BANDWIDTH:
        if name.lower() in device.lower():
            return float(gbs), name
    return None, None


def fmt(v, digits=3):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return ("%." + str(digits) + "f") % v


def torch_cuda(allow_cpu=False):
    """(True, what, python) when a python with PyTorch sees a CUDA device (or any, with allow_cpu);
    else (False, why, None)."""
    code = "import torch,sys\nprint(torch.__version__)\nprint(torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
    tried = []
    for py in [os.environ.get("RFA_TORCH_PYTHON"), sys.executable, shutil.which("python3"), "/usr/bin/python3"]:
        if not py or py in tried or not os.access(py, os.X_OK):
            continue
        tried.append(py)
        try:
            p = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = p.stdout.strip().splitlines()
        if p.returncode != 0 or not lines:
            continue
        if len(lines) < 2 or not lines[1]:
            if allow_cpu:
                return True, ("torch %s (%s) on the CPU, as --torch-cpu asks: no CUDA device; wall clock, "
                              "a check of the script, not a GPU figure" % (lines[0], py)), py
            return False, "torch %s (%s) has no CUDA device" % (lines[0], py), None
        return True, "torch %s on %s" % (lines[0], lines[1]), py
    return False, "no python with PyTorch (tried %s; RFA_TORCH_PYTHON names another)" % ", ".join(tried), None


def run_tests(tests_dir, quick):
    """Runs each GPU-path test executable; returns rows (name, result, seconds, notes)."""
    rows = []
    env = {"RFA_VALIDATION": os.environ.get("RFA_VALIDATION", "1"),
           "VK_LAYER_ENABLES": os.environ.get("VK_LAYER_ENABLES", "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"),
           "RFA_SOURCE_DIR": os.environ.get("RFA_SOURCE_DIR", ROOT)}
    todo = QUICK_TESTS if quick else [(t, None) for t in GPU_TESTS]
    for name, case in todo:
        exe = os.path.join(tests_dir, name)
        label = name + (" (%s)" % case if case else "")
        if not os.access(exe, os.X_OK):
            rows.append((label, "not built", 0.0, "no %s" % exe))
            continue
        cmd = [exe] + (["--test-case=" + case] if case else [])
        log(" ".join(cmd))
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **env), timeout=3000)
            rc, text = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            rc, text = -1, "timed out"
        secs = time.time() - t0
        skipped = sorted(set(m.strip() for m in re.findall(r"MESSAGE: (skipped: [^\n]*)", text)))
        summary = re.findall(r"\[doctest\] test cases:\s*([^\n]*)", text)
        notes = "; ".join(([summary[-1].strip().replace(" | ", ", ")] if summary else []) + skipped)
        if rc != 0 and not summary:
            notes = (text.strip().splitlines() or ["exit %d" % rc])[-1]
        rows.append((label, "passed" if rc == 0 else "FAILED", secs, notes))
    return rows


def test_table(test_rows, quick):
    out = ["## Tests that take the GPU's own paths" + (" (--quick: one case)" if quick else ""), "",
           "| test | result | seconds | notes |", "|---|---|---|---|"]
    for name, res, secs, nt in test_rows:
        out.append("| %s | %s | %.1f | %s |" % (name, res, secs, nt.replace("|", "/")))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="the rfa-bench executable")
    ap.add_argument("--tests", default="", help="the folder of the test executables (BUILD/tests)")
    ap.add_argument("--quick", action="store_true", help="lavapipe-sized shapes, labelled as such")
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--tests-only", action="store_true", help="only the tests (a lent machine's command limit)")
    ap.add_argument("--out", default="", help="also write the raw JSON lines and the report here")
    ap.add_argument("--heads", type=int, default=0, help="heads (default 8; --quick: 2)")
    ap.add_argument("--dim", type=int, default=0, help="complex dims per head (default 32; --quick: 16)")
    ap.add_argument("--prefill-n", default="", help="prefill lengths instead of the default list, e.g. 1024,4096")
    ap.add_argument("--decode-n", default="", help="decode contexts instead of the default list, e.g. 512,4096")
    ap.add_argument("--torch-cpu", action="store_true", help="run PyTorch on the CPU where it has no CUDA (tests)")
    a = ap.parse_args()

    if a.quick:
        prefill_ns, decode_ns, reps = [64, 128], [128, 512], "1"
    else:
        prefill_ns, decode_ns, reps = [1024, 4096, 8192, 16384, 65536], [512, 4096, 32768], "3"
    try:
        if a.prefill_n:
            prefill_ns = [int(x) for x in a.prefill_n.split(",") if x]
        if a.decode_n:
            decode_ns = [int(x) for x in a.decode_n.split(",") if x]
    except ValueError:
        print("gpu-report: --prefill-n and --decode-n take comma-separated integers", file=sys.stderr)
        return 2
    if not prefill_ns or not decode_ns or min(prefill_ns + decode_ns) < 1:
        print("gpu-report: --prefill-n and --decode-n need at least one positive length each", file=sys.stderr)
        return 2
    heads = a.heads or (2 if a.quick else 8)
    dim = a.dim or (16 if a.quick else 32)
    shape = ["--heads", str(heads), "--dim", str(dim)]
    if a.tests_only:
        test_rows = run_tests(a.tests, a.quick)
        sys.stdout.write("\n".join(test_table(test_rows, a.quick)) + "\n")
        return 1 if any(r[1] != "passed" for r in test_rows) else 0
    raw = []
    rows = []   # dicts: shape, path label, M2 line, error
    device = ""
    notes = []

    # Does the device take the cooperative-matrix tile? One small prefill tells (its path says so).
    probe, err = run_json([a.bench, "attention", "--json", "--variants", "M2", "--n", str(prefill_ns[0]), "--reps", "1"] + shape,
                          {"RFA_ATTN_COOPMAT": "1"})
    raw += probe
    cm_line = next((l for l in probe if l.get("variant") == "M2"), None)
    cm_path = (cm_line or {}).get("path", "")
    coopmat = "fp16 in, fp32 sums" in cm_path and "emulated" not in cm_path
    # ... and its per-element form (VK_NV_cooperative_matrix2; on by default where present).
    per_element = coopmat and "per element" in cm_path
    if cm_line:
        device = cm_line.get("device", "")
    if not coopmat:
        notes.append("cooperative matrices: not available here (%s)" %
                     (err or (cm_line or {}).get("path", "no M2 line")))

    paths = [("fp32 caches", [], {}), ("fp16 caches", ["--kv", "f16"], {})]
    if coopmat:
        paths.append(("cooperative matrices", [], {"RFA_ATTN_COOPMAT": "1"}))
    for mode, ns in (("prefill", prefill_ns), ("decode", decode_ns)):
        for label, args, env in paths:
            if mode == "decode" and label == "cooperative matrices":
                continue  # decode steps keep threads per row and split-k: the tile is a prefill path
            # One process for every N (each pays the pipelines' build once); a failure at a large N
            # keeps the lines printed before it.
            cmd = [a.bench, "attention", "--json", "--variants", "M2", "--n", ",".join(map(str, ns)), "--reps", reps]
            lines, err = run_json(cmd + shape + args + (["--decode"] if mode == "decode" else []), env)
            raw += lines
            for n in ns:
                m2 = next((l for l in lines if l.get("variant") == "M2" and l.get("n") == n), None)
                sd = next((l for l in lines if l.get("variant") == "sdpa" and l.get("n") == n), None)
                if m2:
                    device = device or m2.get("device", "")
                rows.append({"mode": mode, "n": n, "label": label, "m2": m2, "sdpa": sd, "error": err})

    # PyTorch's SDPA on the same shapes, one process per N so that one failure (memory) costs one N.
    torch = {}
    if a.no_torch:
        torch_note = "PyTorch SDPA: not run (--no-torch)"
    else:
        ok, why, torch_py = torch_cuda(a.torch_cpu)
        torch_note = ("PyTorch SDPA: " + why) if ok else ("PyTorch SDPA columns skipped: " + why)
        if ok:
            anchor = os.path.join(HERE, "torch_sdpa_anchor.py")
            for n in sorted(set(prefill_ns + decode_ns)):
                lines, err = run_json([torch_py, anchor, "--json", "--n", str(n), "--reps", "5" if not a.quick else "1"] + shape)
                raw += lines
                if err:
                    torch_note += "; N = %d: %s" % (n, err)
                for l in lines:
                    torch[(l["mode"], l["n"], l["dtype"])] = l["ms"]

    # Kernel statistics: every pipeline of one prefill and one decode run (split-k where the device takes it).
    # Prefill on the device's own path, on fp16 caches, on cooperative matrices where present and
    # (full report) without the tile; decode at the longest context (split-k where the device takes it).
    stats_lines = []
    first, last = ["--n", str(prefill_ns[0])], ["--n", str(decode_ns[-1]), "--decode"]
    runs = [(first, {}), (first + ["--kv", "f16"], {})]
    if coopmat:
        runs.append((first, {"RFA_ATTN_COOPMAT": "1"}))
    if not a.quick:
        runs.append((first, {"RFA_ATTN_TILE": "0"}))
    runs.append((last, {}))
    for extra, env in runs:
        lines, err = run_json([a.bench, "attention", "--json", "--stats", "--variants", "M2,AFA,RT", "--reps", "1"] + shape + extra, env)
        raw += lines
        stats_lines += lines
        if err:
            notes.append("--stats %s: %s" % (" ".join(extra), err))

    # The kernels-v3 switches (docs/math.md §9, "Kernels v3"): each off and on in the same run, on
    # the shape and path it changes (KernelOptions through the RFA_ATTN_* variables).
    v3_rows = []
    pre_n = [n for n in prefill_ns if n <= 16384][-1:] or prefill_ns[:1]
    dec_n = [n for n in decode_ns if n >= 4096][:1] or decode_ns[-1:]
    switches = [
        ("attention_fma", "RFA_ATTN_FMA", "prefill", {}, []),
        ("attention_fma", "RFA_ATTN_FMA", "decode", {}, []),
        ("attention_q_registers", "RFA_ATTN_Q_REGISTERS", "prefill", {}, []),
        ("attention_pad_strides", "RFA_ATTN_PAD_STRIDES", "prefill", {}, []),
        ("attention_lag_e2", "RFA_ATTN_LAG_E2", "prefill", {}, []),
        ("attention_f16_chunk (1 / 4)", "RFA_ATTN_F16_CHUNK", "prefill", {"RFA_ATTN_F16_MATH": "1"}, []),
        ("attention_decode_registers", "RFA_ATTN_DECODE_REGISTERS", "decode", {}, []),
        ("attention_split_cores", "RFA_ATTN_SPLIT_CORES", "decode", {}, []),
    ]
    if coopmat:
        # (prefetch and raw fp16 words on the shared-memory form, which they were written for)
        cm = {"RFA_ATTN_COOPMAT": "1", "RFA_ATTN_COOPMAT_PER_ELEMENT": "0"}
        switches += [("attention_prefetch", "RFA_ATTN_PREFETCH", "prefill", cm, []),
                     ("attention_raw_f16", "RFA_ATTN_RAW_F16", "prefill", cm, ["--kv", "f16"])]
    else:
        notes.append("v3 switches of the matrix tile (attention_prefetch, attention_raw_f16): no cooperative matrices here")
    if per_element:
        switches += [("attention_coopmat_per_element", "RFA_ATTN_COOPMAT_PER_ELEMENT", "prefill", {"RFA_ATTN_COOPMAT": "1"}, []),
                     ("attention_coopmat_per_element", "RFA_ATTN_COOPMAT_PER_ELEMENT", "prefill", {"RFA_ATTN_COOPMAT": "1"},
                      ["--kv", "f16"])]
    elif coopmat:
        notes.append("attention_coopmat_per_element: no VK_NV_cooperative_matrix2 here (%s)" % cm_path)
    if a.quick:  # the CTest check: one switch, prefill and decode, is enough to test the table
        switches = switches[:2]
    for name, var, mode, env, args in switches:
        ns = pre_n if mode == "prefill" else dec_n
        res = {}
        for value in ("0", "1"):
            v = ("1" if value == "0" else "4") if var == "RFA_ATTN_F16_CHUNK" else value
            cmd = [a.bench, "attention", "--json", "--variants", "M2", "--n", str(ns[0]), "--reps", reps] + shape + args
            lines, err = run_json(cmd + (["--decode"] if mode == "decode" else []), dict(env, **{var: v}))
            raw += lines
            res[value] = (next((l for l in lines if l.get("variant") == "M2"), None), err)
        v3_rows.append((name, mode, ns[0], res))

    test_rows = [] if a.no_tests or not a.tests else run_tests(a.tests, a.quick)

    hbm, hbm_src = bandwidth_of(device)
    out = []
    title = "# RFA-VK GPU report" + (" (--quick: lavapipe-sized shapes, not a GPU measurement)" if a.quick else "")
    out.append(title)
    out.append("")
    out.append("device: %s; H = %d, D = %d (complex; head dim %d), B = 1, causal; times are GPU medians in ms"
               % (device or "?", heads, dim, 2 * dim))
    out.append("")
    out.append("| shape | path | RFA M2 ms | runtime SDPA ms | RFA/SDPA | PyTorch SDPA fp32 ms | PyTorch SDPA bf16 ms "
               "| decode K/V GB/s | % of HBM |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    paths_seen = {}
    for r in rows:
        m2, sd = r["m2"], r["sdpa"]
        shape = ("prefill N = %d" if r["mode"] == "prefill" else "decode, context %d") % r["n"]
        if not m2:
            out.append("| %s | %s | error: %s | | | | | | |" % (shape, r["label"], (r["error"] or "no result").replace("|", "/")))
            continue
        paths_seen.setdefault(m2.get("path", ""), []).append("%s (%s)" % (shape, r["label"]))
        gbs = m2.get("kv_gbs") if r["mode"] == "decode" else None
        pct = (100.0 * gbs / hbm) if (gbs is not None and hbm) else None
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            shape, r["label"], fmt(m2["ms"]), fmt(sd["ms"] if sd else None), fmt(m2.get("ratio"), 2),
            fmt(torch.get((r["mode"], r["n"], "fp32"))), fmt(torch.get((r["mode"], r["n"], "bf16"))),
            fmt(gbs, 1 if gbs >= 10 else 3) if gbs is not None else "", fmt(pct, 1) if pct is not None else ("" if gbs is None else "n/a")))
    out.append("")
    out.append("- " + torch_note)
    out.append("- memory bandwidth: " + ("%.0f GB/s (%s)" % (hbm, hbm_src) if hbm else
                                        "unknown for this device (set RFA_HBM_GBS to fill the % column)"))
    out.append("- decode K/V GB/s counts the K and V caches each step reads (rfa-bench's kv_gbs)")
    for n in notes:
        out.append("- " + n)
    out.append("")
    out.append("Kernel paths (rfa-bench's words):")
    out.append("")
    for p, where in paths_seen.items():
        out.append("- %s: %s" % (", ".join(where), p))

    out.append("")
    out.append("## Kernels v3: each switch off and on (KernelOptions; RFA_ATTN_* variables)")
    out.append("")
    out.append("| switch | shape | path (on) | off ms | on ms | on/off |")
    out.append("|---|---|---|---|---|---|")
    for name, mode, n, res in v3_rows:
        (off, e0), (on, e1) = res["0"], res["1"]
        shape_s = ("prefill N = %d" if mode == "prefill" else "decode, context %d") % n
        if not off or not on:
            out.append("| %s | %s | error: %s | | | |" % (name, shape_s, (e0 or e1 or "no result").replace("|", "/")))
            continue
        out.append("| %s | %s | %s | %s | %s | %s |" % (name, shape_s, on.get("path", "").replace("|", "/"),
                                                       fmt(off["ms"]), fmt(on["ms"]), fmt(on["ms"] / off["ms"], 3)))
    out.append("")
    out.append("## Kernel statistics (rfa-bench attention --stats)")
    out.append("")
    out.append("| run | kernel | spec | SPIR-V instructions | inlined | innermost loop | driver statistics |")
    out.append("|---|---|---|---|---|---|---|")
    seen = set()
    for l in stats_lines:
        st = l.get("stats") or {}
        for k in st.get("kernels", []):
            key = (k["shader"], tuple(k.get("spec", [])))
            if key in seen:
                continue
            seen.add(key)
            if k.get("exposed"):
                drv = "; ".join("%s: %s" % (e.get("name", "?"), ", ".join("%s = %s" % kv for kv in e.get("statistics", {}).items()))
                                for e in k.get("executables", []))
            else:
                drv = k.get("note", "")
            sp = k.get("spirv", {})
            out.append("| %s %s N = %s, %s caches | %s | %s | %s | %s | %s | %s |" % (
                l.get("variant"), l.get("mode"), l.get("n"), l.get("kv"), k["shader"], ",".join(str(x) for x in k.get("spec", [])),
                sp.get("instructions"), sp.get("inlined"), sp.get("innermost_loop"), drv.replace("|", "/")))

    if test_rows:
        out.append("")
        out += test_table(test_rows, a.quick)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "report.markdown"), "w") as f:
            f.write(text)
        with open(os.path.join(a.out, "raw.jsonl"), "w") as f:
            for l in raw:
                f.write(json.dumps(l) + "\n")
    failed = [r for r in test_rows if r[1] != "passed"] + [r for r in rows if not r["m2"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
