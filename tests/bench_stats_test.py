#!/usr/bin/env python3
"""`rfa-bench attention --stats` on a tiny shape: every benchmark line names the kernels its run
dispatched, each with its SPIR-V counts (> 0) and either the driver's statistics or the explicit
note that the driver exposes none; the kernels are the ones each path must use (rotate, lag table,
the fused RFA kernel, SDPA, AFA, RT-RFA, split-k's reduce); without --stats nothing of it appears.

  bench_stats_test.py RFA_BENCH
"""
import json
import os
import re
import subprocess
import sys

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(bench, args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run([bench, "attention"] + args, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        sys.exit("rfa-bench attention %s failed (exit %d):\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def check_kernel(k, where):
    s = k.get("spirv", {})
    for f in ("functions", "instructions", "inlined"):
        check(isinstance(s.get(f), int) and s[f] > 0, "%s: kernel %s spirv.%s = %r" % (where, k.get("shader"), f, s.get(f)))
    check(s.get("innermost_loop", -1) <= s.get("inlined", 0), "%s: %s innermost loop past the whole" % (where, k.get("shader")))
    if k.get("exposed"):
        exes = k.get("executables", [])
        check(len(exes) > 0 and all(len(e.get("statistics", {})) > 0 for e in exes),
              "%s: %s exposed but without statistics: %r" % (where, k.get("shader"), exes))
    else:
        check("not exposed by" in k.get("note", "") or "statistics:" in k.get("note", ""),
              "%s: %s has neither statistics nor the note: %r" % (where, k.get("shader"), k.get("note")))


def main():
    bench = sys.argv[1]
    tiny = ["--n", "40", "--heads", "2", "--dim", "8", "--reps", "1"]

    # JSON, prefill: every variant's kernels.
    lines = [json.loads(l) for l in run(bench, tiny + ["--variants", "M2,AFA,RT", "--stats", "--json"]).splitlines() if l.strip()]
    check(sorted(l["variant"] for l in lines) == ["AFA", "M2", "RT", "sdpa"], "prefill variants: %r" % [l["variant"] for l in lines])
    want = {"M2": "rfa_attention", "AFA": "afa_attention", "RT": "rt_attention", "sdpa": "sdpa"}
    for l in lines:
        where = "%s %s" % (l["variant"], l["mode"])
        st = l.get("stats")
        check(isinstance(st, dict) and st.get("driver"), "%s: no stats object" % where)
        if not isinstance(st, dict):
            continue
        names = [k["shader"] for k in st.get("kernels", [])]
        check(any(n.startswith(want[l["variant"]]) for n in names), "%s: no %s* kernel in %r" % (where, want[l["variant"]], names))
        check(any(n.startswith("rfa_rotate") for n in names), "%s: no rotate kernel in %r" % (where, names))
        for k in st["kernels"]:
            check_kernel(k, where)
    m2 = [l for l in lines if l["variant"] == "M2"][0]
    check(any(k["shader"] == "rfa_lag_table" for k in (m2.get("stats") or {}).get("kernels", [])), "M2: no lag table kernel")

    # JSON, decode with split-k forced: the reduce pass is a kernel of its own.
    dec = [json.loads(l) for l in run(bench, tiny + ["--variants", "M2", "--decode", "--stats", "--json"],
                                      {"RFA_ATTN_SPLIT_K": "4"}).splitlines() if l.strip()]
    m2d = [l for l in dec if l["variant"] == "M2"]
    check(len(m2d) == 1 and "split-k" in m2d[0]["path"], "decode: split-k not taken: %r" % [l.get("path") for l in dec])
    if m2d:
        ks = (m2d[0].get("stats") or {}).get("kernels", [])
        names = [k["shader"] for k in ks]
        check("rfa_attention_reduce" in names, "decode split-k: no reduce kernel in %r" % names)
        for k in ks:
            check_kernel(k, "M2 decode split-k")

    # Text: under every benchmark line, kernel lines with counts and statistics or the note.
    text = run(bench, tiny + ["--variants", "M2", "--stats"]).splitlines()
    bench_lines = [i for i, l in enumerate(text[1:], 1) if not l.startswith("    kernel ")]
    check(len(bench_lines) == 2, "text: benchmark lines %r" % [text[i] for i in bench_lines])
    for i in bench_lines:
        check(i + 1 < len(text) and text[i + 1].startswith("    kernel "), "text: no kernel line under %r" % text[i])
    kl = [l for l in text if l.startswith("    kernel ")]
    check(len(kl) >= 2 * 3, "text: %d kernel lines" % len(kl))
    for l in kl:
        m = re.search(r"SPIR-V (\d+) instructions in (\d+) functions, (\d+) inlined", l)
        check(m and all(int(x) > 0 for x in m.groups()), "text: no SPIR-V counts in %r" % l)
        check(re.search(r"\| .*\(subgroup \d+\): \S", l) or "statistics: not exposed by" in l or "statistics:" in l,
              "text: neither statistics nor the note in %r" % l)

    # Off by default: no stats, no kernel lines.
    plain = run(bench, tiny + ["--variants", "M2", "--json"]).splitlines()
    check(all("stats" not in json.loads(l) for l in plain if l.strip()), "stats printed without --stats")
    check(not any(l.startswith("    kernel ") for l in run(bench, tiny + ["--variants", "M2"]).splitlines()),
          "kernel lines printed without --stats")

    print(kl[0] if kl else "")
    if FAILS:
        sys.exit("%d checks failed" % len(FAILS))
    print("bench_stats_test: ok (%d JSON lines, %d kernel lines)" % (len(lines) + len(dec), len(kl)))


if __name__ == "__main__":
    main()
