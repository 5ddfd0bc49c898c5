"""The spiral benchmark that ranks the mechanisms: spiral.py's simulator, exact Kalman filter, data
and training recipe for every kind in spiral.KINDS (RFA, RoPE, accumulated rotations with and
without RFA's decay, AFA with and without its unitary switch, RT-RFA), each seed trained from
scratch. Reports next-step MSE against the true state at 1x and 4x the training length, regular and
irregular sampling, beside raw measurements and the Kalman filter: one JSON file and a markdown
table (mean and spread over seeds, and the ratio to Kalman).

usage: nice /usr/bin/python3 spiral_rank.py [--kinds rfa,acc,rfa_acc,rope,afa,afa_unitary,rt] [--seeds 0,1,2]
                                            [--json ../benchmark-spiral.json] [spiral.py options]
       /usr/bin/python3 spiral_rank.py --merge A.json B.json ... [--json OUT.json]
         (runs of the same settings made in parallel processes, e.g. one seed each: one table; a
          spiral.py metrics.json, e.g. ../spiral-filter/metrics.json, counts as that kind's seed run)
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import spiral  # noqa: E402

LABELS = {
    "rfa": "RFA (M2)",
    "rope": "RoPE (M2.6)",
    "acc": "ACC random Q/K/V (M2.6 + accumulated steps)",
    "rfa_acc": "RFA + accumulated steps (M2)",
    "afa": "AFA (channel_sum)",
    "afa_unitary": "AFA unitary (channel_sum)",
    "rt": "RT-RFA (stationary, student-t)",
    "rfa_w50": "RFA (M2), attention window 50",
    "rope_w50": "RoPE (M2.6), attention window 50",
    "afa_w50": "AFA (channel_sum), attention window 50",
    "afa_full_w50": "full AFA, attention window 50",
    "rt_w50": "RT-RFA (stationary, student-t), attention window 50",
}
LABELS.update({"afa_irls%d_w50" % n: "full AFA + mix, IRLS n = %d, attention window 50" % n for n in (1, 2, 3, 4)})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="rfa,acc,rfa_acc,rope")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                   "benchmark-spiral.json"))
    for flag, kw in (("--d-e", dict(dest="d_e", type=int, default=64)), ("--d-k", dict(dest="d_k", type=int, default=32)),
                     ("--layers", dict(type=int, default=2)), ("--heads", dict(type=int, default=4)),
                     ("--steps", dict(type=int, default=None)), ("--batch", dict(type=int, default=16)),
                     ("--lr", dict(type=float, default=2e-3)), ("--n-train", dict(dest="n_train", type=int, default=100)),
                     ("--n-eval", dict(dest="n_eval", type=int, default=128)),
                     ("--sigma-p", dict(dest="sigma_p", type=float, default=0.1)),
                     ("--sigma-m", dict(dest="sigma_m", type=float, default=1.0)),
                     ("--threads", dict(type=int, default=1))):
        ap.add_argument(flag, **kw)
    ap.add_argument("--merge", nargs="+", metavar="JSON")
    ap.add_argument("--eigen", metavar="JSON", help="print the learned-eigenvalue table of a ranking JSON and exit")
    a = ap.parse_args()
    if a.eigen:
        print(eigen_table(json.load(open(a.eigen))))
        return 0
    if a.merge:
        return merge(a.merge, a.json)
    torch.set_num_threads(a.threads)
    kinds = [k for k in a.kinds.split(",") if k]
    for k in kinds:
        if k not in spiral.KINDS:
            ap.error("unknown kind %r (known: %s)" % (k, ", ".join(spiral.KINDS)))
    seeds = [int(s) for s in a.seeds.split(",") if s]
    log = lambda s: print(s, flush=True)
    sp = spiral.Spiral(a.sigma_p, a.sigma_m)
    sets = spiral.eval_sets(sp, a)
    keys = {(N, irr): "N=%d %s" % (N, "irregular" if irr else "regular") for (N, irr) in sets}
    out = {"baselines": {}, "runs": {}, "train_wall_s": {}, "cli": vars(a)}
    for (N, irr), (y, t, tgt, gaps) in sets.items():
        out["baselines"][keys[(N, irr)]] = {
            "raw measurements": float(((y - tgt) ** 2).mean()),
            "Kalman (true model)": float(((sp.kalman_predict(y, gaps) - tgt) ** 2).mean())}
    for kind in kinds:
        for seed in seeds:
            a.seed = seed
            model, _, wall = spiral.train(kind, a, sp, log)
            run = {keys[k]: spiral.model_mse(model, y, t, tgt, 32 if k[0] <= 100 else 8)
                   for k, (y, t, tgt, gaps) in sets.items()}
            out["runs"].setdefault(kind, {})[str(seed)] = run
            out["train_wall_s"].setdefault(kind, {})[str(seed)] = wall
            eig = common.afa_eigenvalues(model)
            if eig:  # learned eigenvalues per layer, head, channel (per sample), for the eigenvalue table
                out.setdefault("eigenvalues", {}).setdefault(kind, {})[str(seed)] = eig
            out.setdefault("recipe", {})[kind] = dict(steps=spiral.train_steps(kind, a), batch=a.batch, lr=a.lr)
            log("%s seed %d: %s (%.0fs)" % (kind, seed, json.dumps(run), wall))
            afa_rows = common.afa_head_table(model)
            if afa_rows:  # what the AFA heads learned (per-channel ranges), for the log only
                log(common.afa_head_table_md(afa_rows, "dt"))
            with open(a.json, "w") as f:  # after every run: a partial table survives an interruption
                json.dump(out, f, indent=1)
    log(table(out, kinds, keys.values()))
    return 0


def from_metrics(m):
    """A spiral.py metrics.json (one kind, one seed, exported model) in this script's format."""
    kind, seed = m["cli"]["kind"], m["cli"]["seed"]
    label = spiral.RESULT_LABELS.get(kind, kind)
    base = ("raw measurements", "Kalman (true model)")
    out = {"baselines": {k: {b: v[b] for b in base} for k, v in m["results"].items()},
           "runs": {kind: {str(seed): {k: v[label] for k, v in m["results"].items()}}},
           "train_wall_s": {kind: {str(seed): m["train_wall_s"][kind]}}}
    if "eigenvalues" in m:
        out["eigenvalues"] = {kind: {str(seed): m["eigenvalues"]}}
    if "train_steps" in m:
        out["recipe"] = {kind: dict(steps=m["train_steps"][kind], batch=m["cli"]["batch"], lr=m["cli"]["lr"])}
    return out


def merge(files, dest):
    out = None
    for fn in files:
        with open(fn) as f:
            part = json.load(f)
        if "results" in part:  # spiral.py's metrics.json of an exported model
            part = from_metrics(part)
        if out is None:
            out = part
            continue
        if part["baselines"] != out["baselines"]:
            print("spiral_rank: %s was evaluated on other data (baselines differ)" % fn, file=sys.stderr)
            return 2
        for key in ("runs", "train_wall_s", "eigenvalues"):
            if key not in part:
                continue
            for kind, by_seed in part[key].items():
                out.setdefault(key, {}).setdefault(kind, {}).update(by_seed)
        for kind, recipe in part.get("recipe", {}).items():  # runs of one kind must share their recipe
            if out.setdefault("recipe", {}).setdefault(kind, recipe) != recipe:
                print("spiral_rank: %s trained %s with another recipe (%s, not %s)"
                      % (fn, kind, recipe, out["recipe"][kind]), file=sys.stderr)
                return 2
    with open(dest, "w") as f:
        json.dump(out, f, indent=1)
    print(table(out, list(out["runs"]), out["baselines"].keys()))
    return 0


TRUE_MU, TRUE_OMEGA = 0.01, 0.1  # the spiral's -0.1 +- i per unit time at dt = 0.1: per sample (spiral.py)


def eigen_table(out):
    """Markdown: per AFA run (kind, seed) and head, the learned channel eigenvalue -mu + i|omega| nearest the
    spiral's true -0.01 + 0.1i per sample (distance in (log10 mu, omega / 0.1)), and how many of the
    head's channels decay within a factor 2 of the true mu and rotate within 20% of the true omega."""
    lines = ["| model | seed | layer | head | nearest channel: mu, omega | mu / true | omega / true | "
             "channels near the truth (mu within 2x, omega within 20%) |", "|---|---|---|---|---|---|---|---|"]
    for kind, by_seed in out.get("eigenvalues", {}).items():
        for seed, layers in by_seed.items():
            for li, heads in enumerate(layers):
                for h, chans in enumerate(heads):
                    dist = lambda c: math.hypot(math.log10(max(-c[0], 1e-12) / TRUE_MU), abs(c[1]) / TRUE_OMEGA - 1)
                    best = min(chans, key=dist)
                    near = sum(1 for c in chans if 0.5 <= -c[0] / TRUE_MU <= 2 and abs(abs(c[1]) / TRUE_OMEGA - 1) <= 0.2)
                    lines.append("| %s | %s | %d | %d | %.4g, %.4g | %.2f | %.2f | %d of %d |" % (
                        LABELS.get(kind, kind), seed, li, h, -best[0], abs(best[1]), -best[0] / TRUE_MU,
                        abs(best[1]) / TRUE_OMEGA, near, len(chans)))
    return "\n".join(lines)


def table(out, kinds, set_names):
    """Markdown: MSE mean (min..max over seeds) and the ratio of the mean to Kalman, per set."""
    names = list(set_names)
    lines = ["| model | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for base in ("raw measurements", "Kalman (true model)"):
        lines.append("| %s | " % base + " | ".join("%.4f" % out["baselines"][n][base] for n in names) + " |")
    for kind in kinds:
        cells = []
        for n in names:
            v = np.array([r[n] for r in out["runs"][kind].values()])
            k = out["baselines"][n]["Kalman (true model)"]
            spread = "" if len(v) == 1 else " (%.4f..%.4f)" % (v.min(), v.max())
            cells.append("%.4f%s, %.2fx" % (v.mean(), spread, v.mean() / k))
        recipe = out.get("recipe", {}).get(kind)
        steps = "" if not recipe or recipe["steps"] == 1000 else ", %d steps" % recipe["steps"]
        lines.append("| %s%s (%d seed%s) | " % (LABELS.get(kind, kind), steps, len(out["runs"][kind]),
                                               "" if len(out["runs"][kind]) == 1 else "s") + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
