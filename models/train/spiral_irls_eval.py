"""Run exported spiral models with another number of tied AFA iterations (docs/variant-afa-full.md §3):
the same weights (tied iterations share every parameter, so a model trained at n runs at any n), the
held-out sets of spiral.py/spiral_rank.py, next-step MSE against the true state. Writes a JSON in
spiral_rank.py's format (its --merge joins it to the ranking), one kind per (model, n):
"<kind>@n<k>".

usage: nice /usr/bin/python3 spiral_irls_eval.py --model DIR[,DIR...] --iterations 1,2,3,4 --json OUT.json
"""
import argparse
import json
import os
import sys
import types

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spiral  # noqa: E402
from export import read_safetensors  # noqa: E402
from rfa_torch import make_args, NextStepPredictor  # noqa: E402


def load(model_dir, iterations):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    a = dict(cfg["args"])
    a["afa_irls_iterations"] = iterations
    args = make_args("M2", **{k: v for k, v in a.items()})
    args.architecture = cfg["architecture"]
    model = NextStepPredictor(args)
    sd = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in read_safetensors(
        os.path.join(model_dir, "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k.split(".")[-1] not in ("t_measure", "abs_idx", "causal_mask")]
    if missing or unexpected:
        raise SystemExit("%s: missing %s, unexpected %s" % (model_dir, missing, unexpected))
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="exported spiral.py model folders, comma-separated")
    ap.add_argument("--iterations", default="1,2,3,4")
    ap.add_argument("--json", required=True)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    log = lambda s: print(s, flush=True)
    out = {"baselines": {}, "runs": {}, "train_wall_s": {}}
    for model_dir in [d for d in a.model.split(",") if d]:
        m = json.load(open(os.path.join(model_dir, "metrics.json")))
        cli = types.SimpleNamespace(**m["cli"])
        kind = m["cli"]["kind"]
        sp = spiral.Spiral(cli.sigma_p, cli.sigma_m)
        sets = spiral.eval_sets(sp, cli)
        keys = {(N, irr): "N=%d %s" % (N, "irregular" if irr else "regular") for (N, irr) in sets}
        for (N, irr), (y, t, tgt, gaps) in sets.items():
            base = {"raw measurements": float(((y - tgt) ** 2).mean()),
                    "Kalman (true model)": float(((sp.kalman_predict(y, gaps) - tgt) ** 2).mean())}
            if out["baselines"].setdefault(keys[(N, irr)], base) != base:
                raise SystemExit("%s: evaluated on other data (baselines differ)" % model_dir)
        for n in [int(x) for x in a.iterations.split(",") if x]:
            model = load(model_dir, n)
            run = {keys[k]: spiral.model_mse(model, y, t, tgt, 32 if k[0] <= 100 else 8)
                   for k, (y, t, tgt, gaps) in sets.items()}
            name = "%s@n%d" % (kind, n)
            out["runs"][name] = {str(cli.seed): run}
            out["train_wall_s"][name] = {str(cli.seed): 0.0}
            out.setdefault("recipe", {})[name] = dict(steps=m["train_steps"][kind], batch=cli.batch, lr=cli.lr)
            log("%s: %s" % (name, json.dumps(run)))
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
