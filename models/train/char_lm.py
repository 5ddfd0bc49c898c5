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


def train(kind, a, data, log):
    seed_all(a.seed)
    args = model_args(kind, a)
    model = LanguageModel(args)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    rng = np.random.default_rng(a.seed + 1)
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
            log("[%s] step %5d  loss %.3f nats (ema %.3f = %.3f bpc)  %.0fs"
                % (kind, step, loss.item(), run, run / np.log(2), tm()))
    return model, args, tm()


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d-e", dest="d_e", type=int, default=96)
    ap.add_argument("--d-k", dest="d_k", type=int, default=64, help="d_k_total = d_v_total (complex dims)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--eval-tokens", type=int, default=32768)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tiny-char-lm"))
    ap.add_argument("--skip-baseline", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    out_dir = os.path.abspath(a.out)
    os.makedirs(out_dir, exist_ok=True)
    t_all = time.time()
    log = lambda s: print(s, flush=True)
    train_ids, val_ids, files, n_fortunes = load_corpus()
    log("corpus: %d files, %d fortunes, train %d bytes, val %d bytes" % (len(files), n_fortunes, len(train_ids), len(val_ids)))

    results, walls = {}, {}
    mult = (1, 2, 4, 8)
    kinds = ["rfa"] if a.skip_baseline else ["rfa", "rope"]
    models = {}
    for kind in kinds:
        model, args, wall = train(kind, a, train_ids, log)
        models[kind] = (model, args)
        walls[kind] = wall
        label = "RFA (M2 / SC-RFA)" if kind == "rfa" else "RoPE baseline (M2.6 pure rotation)"
        te = Timer()
        results[label] = {}
        for m in mult:
            L = m * a.ctx
            results[label]["%dx (%d)" % (m, L)] = bpc(model, val_ids, L, a.eval_tokens, max(1, 8 // m))
            log("%s  ctx %d: %.4f bpc  (%.0fs)" % (label, L, results[label]["%dx (%d)" % (m, L)], te()))

    model, args = models["rfa"]
    stored = export_model(model, args, "lm", out_dir, mode="f16",
                          metadata={"model": "tiny-char-lm", "made_by": "models/train/char_lm.py"})
    write_goldens(args, stored, out_dir, val_ids)
    heads = head_table(model)
    summary = dict(results=results, train_wall_s=walls, total_wall_s=time.time() - t_all, cli=portable_cli(a),
                   heads=heads, corpus=dict(files=files, n_fortunes=n_fortunes, train_bytes=len(train_ids),
                                            val_bytes=len(val_ids)))
    with open(os.path.join(out_dir, "metrics.json"), "w") as f:
        json.dump(summary, f, indent=1, default=float)
    log(json.dumps(results, indent=1))
    log(head_table_md(heads))
    log("total wall %.0fs" % (time.time() - t_all))


if __name__ == "__main__":
    main()
