#!/usr/bin/env python3
"""scripts/gpu-report.sh --quick on this machine's device: exit 0, the report labelled as quick, the
timing table's shape (9 columns; a row per prefill N and path and per decode context and path;
RFA/SDPA equal to the two times' quotient; decode rows with a K/V rate, prefill rows without), the
PyTorch columns filled where torch has CUDA and marked n/a with the note where it has not, the
kernel statistics table (SPIR-V counts > 0; the driver's statistics or the note that it has none),
the test table, and the raw JSON lines.

  gpu_report_test.py SOURCE_DIR BUILD_DIR OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_after(lines, header_start):
    """The rows (as cell lists) of the markdown table whose header line starts with header_start."""
    for i, l in enumerate(lines):
        if l.startswith(header_start):
            rows = []
            for r in lines[i + 2:]:
                if not r.startswith("|"):
                    break
                rows.append(cells(r))
            return cells(l), rows
    return None, []


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def main():
    src, build, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, RFA_BUILD=build)
    p = subprocess.run(["bash", os.path.join(src, "scripts", "gpu-report.sh"), "--quick", "--out", out],
                       capture_output=True, text=True, env=env, timeout=1200)
    print(p.stdout)
    check(p.returncode == 0, "gpu-report.sh --quick exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    lines = p.stdout.splitlines()
    check(lines and lines[0].startswith("# RFA-VK GPU report (--quick"), "title not labelled --quick: %r" % lines[:1])

    head, rows = table_after(lines, "| shape | path |")
    want = ["shape", "path", "RFA M2 ms", "runtime SDPA ms", "RFA/SDPA", "PyTorch SDPA fp32 ms", "PyTorch SDPA bf16 ms",
            "decode K/V GB/s", "% of HBM"]
    check(head == want, "timing table header %r" % head)
    coopmat = any(r[1] == "cooperative matrices" for r in rows)
    # --quick: prefill N = 64, 128 on fp32 and fp16 caches (+ cooperative matrices where present),
    # decode at 128 and 512 on both caches.
    check(len(rows) == 8 + (2 if coopmat else 0), "timing table has %d rows" % len(rows))
    torch_cuda = not any("PyTorch SDPA columns skipped" in l for l in lines)
    check(torch_cuda or any(l.startswith("- PyTorch SDPA columns skipped: ") for l in lines), "no PyTorch note")
    shapes = set()
    for r in rows:
        check(len(r) == 9, "row %r has %d cells" % (r, len(r)))
        if len(r) != 9:
            continue
        shapes.add((r[0], r[1]))
        m2, sd, ratio = num(r[2]), num(r[3]), num(r[4])
        check(m2 is not None and m2 > 0 and sd is not None and sd > 0, "row %r: times" % r)
        if m2 and sd and ratio is not None:
            check(abs(ratio - m2 / sd) <= 0.01 + 0.01 * m2 / sd, "row %r: RFA/SDPA %s is not %.3f" % (r, r[4], m2 / sd))
        for c in (5, 6):
            check((num(r[c]) is not None and num(r[c]) > 0) if torch_cuda else r[c] == "n/a", "row %r: PyTorch cell %r" % (r, r[c]))
        if r[0].startswith("decode"):
            check(num(r[7]) is not None and num(r[7]) > 0, "decode row %r: no K/V rate" % r)
            check(num(r[8]) is not None or r[8] == "n/a", "decode row %r: %% of HBM %r" % (r, r[8]))
        else:
            check(r[0].startswith("prefill N = ") and r[7] == "" and r[8] == "", "prefill row %r" % r)
    for s in ("prefill N = 64", "prefill N = 128", "decode, context 128", "decode, context 512"):
        for path in ("fp32 caches", "fp16 caches"):
            check((s, path) in shapes, "no row %s / %s" % (s, path))

    head, krows = table_after(lines, "| run | kernel |")
    check(head is not None and len(krows) >= 4, "kernel statistics table: %r rows" % len(krows))
    kernels = set()
    for r in krows:
        check(len(r) == 7, "kernel row %r" % r)
        if len(r) != 7:
            continue
        kernels.add(r[1])
        check(all(num(x) is not None and num(x) > 0 for x in r[3:5]), "kernel row %r: SPIR-V counts" % r)
        check(" = " in r[6] or "not exposed by" in r[6], "kernel row %r: neither statistics nor the note" % r)
    for k in ("rfa_rotate", "rfa_attention", "sdpa", "afa_attention", "rt_attention"):
        check(any(x.startswith(k) for x in kernels), "no %s kernel in the statistics table: %r" % (k, sorted(kernels)))

    # The v3 switches, each off and on in the same run (--quick: two of them), the ratio their quotient.
    head, vrows = table_after(lines, "| switch | shape |")
    check(head == ["switch", "shape", "path (on)", "off ms", "on ms", "on/off"], "v3 table header %r" % head)
    check(sorted(r[0] for r in vrows) == ["attention_fma", "attention_fma"], "v3 rows %r" % vrows)
    for r in vrows:
        off, on, ratio = num(r[3]), num(r[4]), num(r[5])
        check(off and on and ratio is not None and abs(ratio - on / off) <= 0.002 + 0.001 * on / off, "v3 row %r" % r)

    head, trows = table_after(lines, "| test | result |")
    check(head == ["test", "result", "seconds", "notes"] and len(trows) == 2, "tests table %r %r" % (head, trows))
    for r in trows:
        check(r[1] == "passed", "test row %r" % r)

    check(os.path.isfile(os.path.join(out, "report.markdown")), "no report.markdown in --out")

    # The PyTorch columns filled: --torch-cpu runs the anchor on the CPU where torch has no CUDA
    # (where no python has torch at all, the note must say so instead).
    p2 = subprocess.run(["bash", os.path.join(src, "scripts", "gpu-report.sh"), "--quick", "--torch-cpu", "--no-tests",
                         "--prefill-n", "48", "--decode-n", "96"], capture_output=True, text=True,
                        env=dict(env, RFA_HBM_GBS="2"), timeout=1200)
    check(p2.returncode == 0, "gpu-report.sh --torch-cpu exited %d: %s" % (p2.returncode, p2.stderr[-2000:]))
    l2 = p2.stdout.splitlines()
    _, rows2 = table_after(l2, "| shape | path |")
    check([r[0] for r in rows2] == ["prefill N = 48"] * 2 + ["decode, context 96"] * 2, "--prefill-n/--decode-n rows %r" % rows2)
    has_torch = not any("no python with PyTorch" in l for l in l2)
    for r in rows2:
        for c in (5, 6):
            check((num(r[c]) is not None and num(r[c]) > 0) if has_torch else r[c] == "n/a", "--torch-cpu row %r: cell %r" % (r, r[c]))
    check(not any(l.startswith("## Tests") for l in l2), "--no-tests still ran tests")
    # RFA_HBM_GBS = 2: the decode rows' share of it.
    check(any(l.startswith("- memory bandwidth: 2 GB/s (RFA_HBM_GBS)") for l in l2), "RFA_HBM_GBS not named")
    for r in rows2[2:]:
        gbs, pct = num(r[7]), num(r[8])
        check(gbs is not None and pct is not None and abs(pct - 50.0 * gbs) <= 0.05 + 0.01 * pct, "%% of HBM in %r" % r)
    raw = [json.loads(l) for l in open(os.path.join(out, "raw.jsonl"))] if os.path.isfile(os.path.join(out, "raw.jsonl")) else []
    check(sum(1 for l in raw if l.get("bench") == "attention") >= 16, "raw.jsonl: %d attention lines" % len(raw))
    if FAILS:
        sys.exit("%d checks failed" % len(FAILS))
    print("gpu_report_test: ok (%d timing rows, %d kernel rows)" % (len(rows), len(krows)))


if __name__ == "__main__":
    main()
