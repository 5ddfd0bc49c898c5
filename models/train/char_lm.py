"""tiny-char-lm: byte-level (vocab 256) RFA language model on the BSD `fortune` cookie files.

One command reproduces models/tiny-char-lm from scratch (fixed seeds):
    cd models/train && nice -n 10 /usr/bin/python3 char_lm.py

Data: every cookie file in /usr/share/games/fortunes (Debian package `fortunes`, the
non-offensive set), sorted by file name; each file is split on the `%` separator lines, the
separators are dropped and the fortunes are joined with a blank line. The fortunes are shuffled
with a fixed seed; the last 5% form the validation set.
"""
import argparse
import glob
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rfa_torch import make_args, LanguageModel  # noqa: E402
from export import export_model, load_stored_into, save_npy  # noqa: E402
from common import seed_all, lr_at, head_table, head_table_md, portable_cli, Timer  # noqa: E402

FORTUNE_DIR = "/usr/share/games/fortunes"


def load_corpus(val_frac=0.05, seed=0):
    fortunes, files = [], []
    for path in sorted(glob.glob(os.path.join(FORTUNE_DIR, "*"))):
        base = os.path.basename(path)
        if "." in base or os.path.islink(path) or not os.path.isfile(path):
            continue                                   # skip *.dat indexes and *.u8 links
        files.append(base)
        with open(path, "rb") as f:
            raw = f.read()
        cur = []
        for line in raw.split(b"\n"):
            if line.strip() == b"%":
                if cur:
                    fortunes.append(b"\n".join(cur).strip(b"\n"))
                cur = []
            else:
                cur.append(line)
        if cur and b"\n".join(cur).strip():
            fortunes.append(b"\n".join(cur).strip(b"\n"))
    fortunes = [f for f in fortunes if f]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(fortunes))
    n_val = int(len(fortunes) * val_frac)
    val = [fortunes[i] for i in order[-n_val:]]
    train = [fortunes[i] for i in order[:-n_val]]
    join = lambda fs: np.frombuffer(b"\n\n".join(fs) + b"\n\n", dtype=np.uint8).astype(np.int64)
    return join(train), join(val), files, len(fortunes)


def model_args(kind, a):
    common = dict(n_heads=a.heads, d_e=a.d_e, d_k_total=a.d_k, d_v_total=a.d_k, num_blocks=a.layers,
                  hidden_dim=4 * a.d_e, d_in=None, seq_len=a.ctx, vocab_size=256, batch_size=a.batch,
                  t_equal=True, norm="layer_norm", norm_eps=1e-5, tokenizer="bytes")
    args = make_args("M2" if kind == "rfa" else "M2.6", **common)
    args.architecture = "lm"
    return args


def train(kind, a, data, log, val=None, model=None, data_seed=1):
    """Train a new model (or continue `model`, with a fresh Adam) for a.steps steps at peak lr a.lr."""
    seed_all(a.seed)
    args = model_args(kind, a)
    if model is None:
        model = LanguageModel(args)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    rng = np.random.default_rng(a.seed + data_seed)
    tm = Timer()
    run = None
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.steps, a.lr)
        starts = rng.integers(0, len(data) - a.ctx - 1, size=a.batch)
        chunk = torch.from_numpy(np.stack([data[s:s + a.ctx + 1] for s in starts]))
        logits = model(chunk[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 256), chunk[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run = loss.item() if run is None else 0.98 * run + 0.02 * loss.item()
        if step % 100 == 0 or step == a.steps - 1:
            log("[%s] step %5d  loss %.3f nats (ema %.3f = %.3f bpc)  lr %.2e  %.0fs"
                % (kind, step, loss.item(), run, run / np.log(2), lr_at(step, a.steps, a.lr), tm()))
        if val is not None and a.eval_every > 0 and ((step + 1) % a.eval_every == 0 or step == a.steps - 1):
            # a fixed slice of the validation text at the training context (read-only; the training
            # RNG is untouched, so this does not change the trained weights)
            log("[%s] step %5d  val %.4f bpc (first %d val bytes, ctx %d)  %.0fs"
                % (kind, step + 1, bpc(model, val, a.ctx, a.eval_every_tokens, 16), a.eval_every_tokens, a.ctx, tm()))
    return model, args, tm()


@torch.no_grad()
def sample(model, prompt, n, temperature=0.0, seed=1, ctx=None):
    """Greedy (temperature 0) or sampled continuation of `prompt` (bytes), for the log."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    ids = list(prompt)
    for _ in range(n):
        x = torch.tensor([ids[-ctx:] if ctx else ids])
        logits = model(x)[0, -1]
        if temperature <= 0:
            nxt = int(torch.argmax(logits))
        else:
            nxt = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=g))
        ids.append(nxt)
    model.train()
    return bytes(ids[len(prompt):]).decode("utf-8", "replace")


@torch.no_grad()
def bpc(model, val, L, max_tokens, bs):
    """Mean bits/char over non-overlapping windows of length L (all positions scored)."""
    model.eval()
    n_win = max(1, min(max_tokens // L, (len(val) - 1) // L))
    tot, cnt = 0.0, 0
    for i in range(0, n_win, bs):
        idx = range(i, min(n_win, i + bs))
        x = torch.from_numpy(np.stack([val[w * L:w * L + L + 1] for w in idx]))
        logits = model(x[:, :-1])
        tot += F.cross_entropy(logits.reshape(-1, 256), x[:, 1:].reshape(-1), reduction="sum").item()
        cnt += x[:, 1:].numel()
    model.train()
    return tot / cnt / np.log(2)


def write_goldens(args, stored, out_dir, val):
    gdir = os.path.join(out_dir, "golden")
    os.makedirs(gdir, exist_ok=True)
    m64, missing = load_stored_into(LanguageModel(args), stored, torch.float64)
    missing = [k for k in missing if k != "lm_head.weight"]
    assert not missing, missing
    m64.eval()
    text = b"Q: How many programmers does it take to change a light bulb?\nA: "
    ids = np.frombuffer(text, dtype=np.uint8).astype(np.int64)[None, :48]
    with torch.no_grad():
        logits = m64(torch.from_numpy(ids)).numpy()
    save_npy(os.path.join(gdir, "input.npy"), ids)
    save_npy(os.path.join(gdir, "output.npy"), logits.astype(np.float32))
    # a longer input (2x the training context) with only the last position's logits kept
    L2 = 2 * args.seq_len
    ids2 = val[:L2][None, :].astype(np.int64)
    with torch.no_grad():
        last = m64(torch.from_numpy(ids2))[:, -1:].numpy()
    save_npy(os.path.join(gdir, "long_input.npy"), ids2)
    save_npy(os.path.join(gdir, "long_output_last.npy"), last.astype(np.float32))
    with open(os.path.join(gdir, "README"), "w") as f:
        f.write("Made by `cd models/train && nice -n 10 /usr/bin/python3 char_lm.py` (function write_goldens).\n"
                "Computed in float64 by models/train/rfa_torch.py from the weights exactly as stored in "
                "../model.safetensors (f16 matrices widened to f64).\n"
                "input.npy int64 [1,48] byte ids; output.npy f32 [1,48,256] logits (causal, t_i = i).\n"
                "long_input.npy int64 [1,%d] (2x the training context, from the validation text);\n"
                "  long_output_last.npy f32 [1,1,256] logits at the last position only.\n" % L2)


LABELS = {"rfa": "RFA (M2 / SC-RFA)", "rope": "RoPE baseline (M2.6 pure rotation)"}
MULT = (1, 2, 4, 8)


def evaluate(kind, model, a, val_ids, log):
    te = Timer()
    res = {}
    for m in MULT:
        L = m * a.ctx
        res["%dx (%d)" % (m, L)] = bpc(model, val_ids, L, a.eval_tokens, max(1, 8 // m))
        log("%s  ctx %d: %.4f bpc  (%.0fs)" % (LABELS[kind], L, res["%dx (%d)" % (m, L)], te()))
    return res


def score_exported(a):
    """Bits per byte of the model as shipped (model.safetensors, f16 matrices) on the whole validation
    split: non-overlapping windows of L bytes, every position scored; the tail shorter than a window is
    scored as one shorter window, so every validation byte after the first counts once."""
    from export import read_safetensors
    out_dir = os.path.abspath(a.out)
    with open(os.path.join(out_dir, "config.json")) as f:
        cfg = json.load(f)
    args = make_args(None, **cfg["args"])
    args.architecture = "lm"
    stored = read_safetensors(os.path.join(out_dir, "model.safetensors"))
    stored = stored[0] if isinstance(stored, tuple) else stored
    model, missing = load_stored_into(LanguageModel(args), stored, torch.float32)
    assert [k for k in missing if k != "lm_head.weight"] == [], missing
    model.eval()
    _, val, _, _ = load_corpus()
    res = {}
    t0 = time.time()
    for m in [int(v) for v in a.score_mults.split(",")]:
        L = m * args.seq_len
        tot, cnt = 0.0, 0
        with torch.no_grad():
            starts = list(range(0, len(val) - 1, L))
            for i in range(0, len(starts), max(1, 8 // m)):
                for s0 in starts[i:i + max(1, 8 // m)]:
                    x = torch.from_numpy(val[s0:s0 + L + 1][None, :])
                    logits = model(x[:, :-1])
                    tot += F.cross_entropy(logits.reshape(-1, 256), x[0, 1:], reduction="sum").item()
                    cnt += x.shape[1] - 1
        res["%dx (%d)" % (m, L)] = tot / cnt / np.log(2)
        print("exported model, whole validation split (%d scored bytes), ctx %d: %.4f bits/byte  (%.0fs)"
              % (cnt, L, res["%dx (%d)" % (m, L)], time.time() - t0), flush=True)
    mpath = os.path.join(out_dir, "metrics.json")
    with open(mpath) as f:
        summary = json.load(f)
    summary.setdefault("exported_model_whole_val_split", {}).update(res)
    with open(mpath, "w") as f:
        json.dump(summary, f, indent=1, default=float)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d-e", dest="d_e", type=int, default=192)
    ap.add_argument("--d-k", dest="d_k", type=int, default=96, help="d_k_total = d_v_total (complex dims)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3600)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--eval-tokens", type=int, default=32768)
    ap.add_argument("--eval-every", type=int, default=400, help="log validation bpc every N steps (0: never)")
    ap.add_argument("--eval-every-tokens", type=int, default=16384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tiny-char-lm"))
    ap.add_argument("--baseline-steps", type=int, default=1500,
                    help="training steps of the RoPE baseline (its own warm-up and cosine schedule over them); "
                         "0: the same as --steps")
    ap.add_argument("--stage2-steps", type=int, default=1000,
                    help="RFA stage 2: steps continued from stage 1's exported weights with a fresh Adam (0: none)")
    ap.add_argument("--stage2-lr", type=float, default=6e-4, help="RFA stage 2: peak learning rate")
    ap.add_argument("--resume-stage2", action="store_true",
                    help="skip RFA stage 1: start stage 2 from the stage-1 export already in --out")
    ap.add_argument("--skip-baseline", action="store_true", help="train and export RFA only")
    ap.add_argument("--baseline-only", action="store_true",
                    help="train and evaluate the RoPE baseline only and merge it into an existing metrics.json "
                         "(made by the same recipe with --skip-baseline); the exported model is not touched")
    ap.add_argument("--score-exported", action="store_true",
                    help="only score the exported model (its stored f16 weights, in float32) on the whole "
                         "validation split at 1x-8x the training context and add it to metrics.json")
    ap.add_argument("--score-mults", default="1,2,4,8", help="with --score-exported: context multiples")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.score_exported:
        return score_exported(a)
    out_dir = os.path.abspath(a.out)
    os.makedirs(out_dir, exist_ok=True)
    t_all = time.time()
    log = lambda s: print(s, flush=True)
    train_ids, val_ids, files, n_fortunes = load_corpus()
    log("corpus: %d files, %d fortunes, train %d bytes, val %d bytes" % (len(files), n_fortunes, len(train_ids), len(val_ids)))
    log("torch %s, %d thread(s), BLAS: %s" % (torch.__version__, torch.get_num_threads(),
                                              os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")))
    mpath = os.path.join(out_dir, "metrics.json")

    def write_metrics(summary):
        with open(mpath, "w") as f:
            json.dump(summary, f, indent=1, default=float)

    if not a.baseline_only:
        export_meta = {"model": "tiny-char-lm", "made_by": "models/train/char_lm.py"}
        if not a.resume_stage2:
            model, args, wall = train("rfa", a, train_ids, log, val_ids)
            log("parameters: %d" % sum(p.numel() for p in model.parameters()))
            stage1 = evaluate("rfa", model, a, val_ids, log)
            # stage 1's export (f16 matrices) is where stage 2 starts from
            stored = export_model(model, args, "lm", out_dir, mode="f16", metadata=export_meta)
            with open(mpath, "w") as f:
                json.dump(dict(results={LABELS["rfa"]: stage1}, train_wall_s={"rfa": wall}), f, indent=1)
        else:
            with open(mpath) as f:
                prev = json.load(f)
            stage1, wall = prev["results"][LABELS["rfa"]], prev["train_wall_s"]["rfa"]
            if isinstance(wall, dict):
                raise SystemExit("metrics.json is not a stage-1 export")
            from export import read_safetensors
            stored = read_safetensors(os.path.join(out_dir, "model.safetensors"))
            log("resuming from stage 1's export in %s (stage 1 trained in %.0fs)" % (out_dir, wall))
        walls = {"stage1": wall}
        if a.stage2_steps > 0:
            # stage 2: continue from stage 1's stored weights (the f16-rounded matrices, widened to
            # f32) with a fresh Adam, its own warm-up and cosine schedule and its own data draws
            a2 = argparse.Namespace(**vars(a))
            a2.steps, a2.lr = a.stage2_steps, a.stage2_lr
            model, _ = load_stored_into(LanguageModel(model_args("rfa", a)), stored, torch.float32)
            model.train()
            model, args, wall2 = train("rfa", a2, train_ids, log, val_ids, model=model, data_seed=2)
            walls["stage2"] = wall2
        else:
            args = model_args("rfa", a)
            model, _ = load_stored_into(LanguageModel(args), stored, torch.float32)
        log("parameters: %d" % sum(p.numel() for p in model.parameters()))
        results = {LABELS["rfa"]: evaluate("rfa", model, a, val_ids, log)}
        wall = walls
        for prompt in (b"The ", b"Q: What is "):
            log("sample greedy %r: %r" % (prompt, sample(model, prompt, 200, ctx=a.ctx)))
            log("sample T=0.8 seed 1 %r: %r" % (prompt, sample(model, prompt, 200, 0.8, 1, ctx=a.ctx)))
        stored = export_model(model, args, "lm", out_dir, mode="f16",
                              metadata={"model": "tiny-char-lm", "made_by": "models/train/char_lm.py"})
        write_goldens(args, stored, out_dir, val_ids)
        heads = head_table(model)
        summary = dict(results=results, rfa_stage1_results=stage1, train_wall_s={"rfa": wall},
                       total_wall_s=time.time() - t_all,
                       cli=portable_cli(a), heads=heads,
                       corpus=dict(files=files, n_fortunes=n_fortunes, train_bytes=len(train_ids),
                                   val_bytes=len(val_ids)))
        write_metrics(summary)
        log("exported RFA model, goldens and metrics.json to %s" % out_dir)
        log(head_table_md(heads))
        del model
    else:
        with open(mpath) as f:
            summary = json.load(f)
        cli = dict(summary["cli"])
        for k in ("d_e", "d_k", "layers", "heads", "ctx", "steps", "batch", "lr", "seed", "eval_tokens"):
            assert cli.get(k) == getattr(a, k), "recipe differs from metrics.json: %s %r vs %r" % (k, cli.get(k), getattr(a, k))
        summary["cli"]["baseline_steps"] = a.baseline_steps
    if not a.skip_baseline:
        t0 = time.time()
        rope_a = argparse.Namespace(**vars(a))
        rope_a.steps = a.baseline_steps or a.steps
        log("RoPE baseline: %d steps (RFA: %d)" % (rope_a.steps, a.steps))
        model, args, wall = train("rope", rope_a, train_ids, log, val_ids)
        summary["results"][LABELS["rope"]] = evaluate("rope", model, a, val_ids, log)
        summary["train_wall_s"]["rope"] = wall
        summary["total_wall_s"] = (summary.get("total_wall_s", 0.0) + time.time() - t0 if a.baseline_only
                                   else time.time() - t_all)
        if a.baseline_only:
            summary["baseline_run_separately"] = True
        write_metrics(summary)
    log(json.dumps(summary["results"], indent=1))
    log("total wall %.0fs" % summary["total_wall_s"])


if __name__ == "__main__":
    main()
