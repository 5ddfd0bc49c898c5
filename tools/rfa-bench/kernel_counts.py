#!/usr/bin/env python3
"""Static instruction counts of the attention kernels as an H100 would run them, each kernels-v3
switch off and on (docs/math.md §9, "Kernels v3"): the built SPIR-V specialized with the choices the
host makes there (workgroup 128, S 8, BQ 64, BK 32 scalar / 64 matrices, D 32, M2), frozen and
optimised by spirv-opt -O (so that a switch's dead side is gone and the [[unroll]] loops are
unrolled), then counted: every instruction (`rfa-bench spirv`, gpu/pipeline_stats.hpp) and the
kinds a switch moves (OpDot, Fma, OpFMul, OpFAdd, OpFConvert, OpLoad; from spirv-dis). SPIR-V
counts are not the driver's: OpDot of two vec2 is one instruction here and two multiplies and an
add in a GPU's ISA, which is what the FMA switch removes.

  kernel_counts.py BUILD_DIR [--spirv-opt PATH] [--json]

attention_coopmat_per_element is a kernel of its own (*_tile_pe), so its row compares two kernels
under the same specialization; OpStore, barriers and matrix stores show the shared-memory round
trips it removes.

Needs spirv-opt (Debian's spirv-tools; the newer one of .drivers/mesa26/bin for the *_tile_ck
kernels, which Debian 12's does not read). Counts, not times: the GPU report times the switches.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# shaders/common/kernel_ids.h: the fused RFA kernel's ids, and SDPA's (its first nine, then its own).
ATTN = dict(WG=0, BQ=1, S=2, BK=3, D=4, DC=5, RED=6, FIN=7, Causal=8, Cov=9, Bias=10, Prec=11, Robust=12,
            FullResid=13, CounterRot=14, ShiftRot=15, Gate=16, OutNorm=17, DirectKv=18, Split=19, Phase=20,
            KvApart=21, CmBlock=22, Fma=23, QRegs=24, Pad=25, F16Chunk=26, Prefetch=27, RawF16=28, LagE2=29)
SDPA = dict(WG=0, BQ=1, S=2, BK=3, D=4, DC=5, RED=6, FIN=7, Causal=8, DirectKv=9, Split=10, KvApart=11, CmBlock=12,
            Fma=13, QRegs=14, Pad=15, F16Chunk=16, Prefetch=17, RawF16=18)
# The host's choices on an H100 (ops::choose_attention_tiling): the scalar tile and the matrices at
# D = 32; a decode step of one row (128 threads, keys straight from the cache).
RFA_M2 = dict(Causal=1, Cov=1, Bias=1, Prec=1, Robust=1, FullResid=1, CounterRot=1, ShiftRot=1, Gate=0, OutNorm=0,
              Phase=0)
TILE = dict(WG=128, BQ=64, S=8, BK=32, D=32, DC=8, RED=1, FIN=1, DirectKv=0, Split=1, KvApart=1, CmBlock=16)
MATRICES = dict(TILE, BK=64)
DECODE = dict(WG=128, BQ=1, S=128, BK=64, D=32, DC=8, RED=128 * 8, FIN=32, DirectKv=1, Split=16, KvApart=1, CmBlock=16)
KINDS = [("dot", "= OpDot "), ("fma", " Fma "), ("fmul", "= OpFMul "), ("fadd", "= OpFAdd "),
         ("fconvert", "= OpFConvert "), ("load", "= OpLoad "), ("store", "OpStore "), ("barrier", "OpControlBarrier "),
         ("cm_store", "OpCooperativeMatrixStoreKHR ")]
BOOLS = {"Causal", "Robust", "FullResid", "CounterRot", "ShiftRot", "Gate", "OutNorm", "DirectKv", "KvApart", "Fma",
         "QRegs", "Pad", "Prefetch", "RawF16", "LagE2"}  # spirv-opt takes a bool's value as true/false
V3_OFF = dict(Fma=0, QRegs=0, Pad=0, F16Chunk=1, Prefetch=0, RawF16=0, LagE2=0)
V3_ON = dict(Fma=1, QRegs=0, Pad=1, F16Chunk=4, Prefetch=1, RawF16=1, LagE2=1)

# (row label, kernel, ids, shape, pairs a thread forms per key tile (4 x 4 scalar, 4 x 8 matrices;
# decode: one key), the switches compared ("all": every default v3 switch against every one off)).
CASES = [
    ("scalar tile, fp32", "rfa_attention_tile_sg", ATTN, dict(RFA_M2, **TILE), 16, ["Fma", "LagE2", "Pad", "all"]),
    ("scalar tile, Q in registers", "rfa_attention_tile_sg", ATTN, dict(RFA_M2, **TILE), 16, ["QRegs"]),
    ("scalar tile, fp16 products", "rfa_attention_tile_f16_sg", ATTN, dict(RFA_M2, **TILE), 16, ["F16Chunk", "all"]),
    ("SDPA scalar tile", "sdpa_tile_sg", SDPA, dict(TILE), 16, ["Fma", "all"]),
    ("matrix tile (NV), fp16 caches", "rfa_attention_tile_cm_kv16", ATTN, dict(RFA_M2, **MATRICES), 32,
     ["Prefetch", "RawF16", "all"]),
    ("matrix tile (KHR), fp16 caches", "rfa_attention_tile_ck_kv16", ATTN, dict(RFA_M2, **MATRICES), 32,
     ["Prefetch", "RawF16", "all"]),
    # attention_coopmat_per_element: a kernel of its own (VK_NV_cooperative_matrix2), off -> on.
    ("matrix tile (KHR), fp16 caches", ("rfa_attention_tile_ck_kv16", "rfa_attention_tile_pe_kv16"), ATTN,
     dict(RFA_M2, **MATRICES), 32, ["PerElement"]),
    ("SDPA matrix tile (KHR)", ("sdpa_tile_ck", "sdpa_tile_pe"), SDPA, dict(MATRICES), 32, ["PerElement"]),
    ("decode, keys from the cache", "rfa_attention", ATTN, dict(RFA_M2, **DECODE), 1, ["Fma", "LagE2", "all"]),
]


def specialize_and_count(bench, spirv_opt, spv, ids, values):
    spec = " ".join("%d:%s" % (ids[k], ("true" if v else "false") if k in BOOLS else str(v))
                    for k, v in sorted(values.items()) if k in ids)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "k.spv")
        p = subprocess.run([spirv_opt, "--set-spec-const-default-value", spec, "--freeze-spec-const",
                            "--fold-spec-const-op-composite", "-O", spv, "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "spirv-opt failed"
        q = subprocess.run([bench, "spirv", out], capture_output=True, text=True)
        if q.returncode != 0:
            return None, q.stderr.strip()
        counts = json.loads(q.stdout)
        dis = subprocess.run([spirv_opt.replace("spirv-opt", "spirv-dis"), out], capture_output=True, text=True).stdout
        lines = dis.splitlines()
        for kind, pattern in KINDS:
            counts[kind] = sum(1 for line in lines if pattern in line)
        # The key-tile loop: the largest loop construct (a structured loop's blocks lie between its
        # header's label and its merge block's), its instructions and kinds per iteration.
        best = (0, 0, 0)
        label_at = {}
        for i, line in enumerate(lines):
            t = line.split()
            if len(t) >= 3 and t[1] == "=" and t[2] == "OpLabel":
                label_at[t[0]] = i
        header = None
        for i, line in enumerate(lines):
            t = line.split()
            if len(t) >= 3 and t[1] == "=" and t[2] == "OpLabel":
                header = i
            if t and t[0] == "OpLoopMerge" and header is not None and t[1] in label_at:
                end = label_at[t[1]]
                body = [l for l in lines[header:end] if l.strip() and not any(
                    k in l for k in (" OpLabel", "OpLoopMerge", "OpSelectionMerge", "OpLine", "OpNoLine"))]
                if len(body) > best[2]:
                    best = (header, end, len(body))
        counts["tile_loop"] = best[2]
        # spirv-opt's memory passes keep off modules with extensions they do not list (SPV_NV_cooperative_matrix2
        # among them): such a module comes out with its locals still in memory, not comparable instruction for
        # instruction; its barriers and matrix stores still are.
        counts["unoptimised"] = sum(1 for l in lines if "OpVariable" in l and " Function" in l) > 64
        for kind, pattern in KINDS:
            counts["tile_" + kind] = sum(1 for l in lines[best[0]:best[1]] if pattern in l)
        return counts, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--spirv-opt", default="")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    newer = os.path.join(here, "..", "..", ".drivers", "mesa26", "bin", "spirv-opt")
    spirv_opt = a.spirv_opt or (newer if os.path.exists(newer) else "spirv-opt")
    bench = os.path.join(a.build, "rfa-bench")
    rows = []
    for label, kernel, ids, shape, pairs, switches in CASES:
        kernels = kernel if isinstance(kernel, tuple) else (kernel, kernel)  # (switch off, switch on)
        kernel = " -> ".join(kernels) if kernels[0] != kernels[1] else kernels[0]
        spvs = [os.path.join(a.build, "shaders", k + ".spv") for k in kernels]
        if not all(os.path.exists(s) for s in spvs):
            rows.append(dict(kernel=kernel, label=label, switch="-", error="not in this build"))
            continue
        for sw in switches:
            if sw == "all":
                off, on = dict(shape, **V3_OFF), dict(shape, **V3_ON)
            elif sw == "QRegs":
                off, on = dict(shape, **V3_ON), dict(shape, **dict(V3_ON, QRegs=1))
            elif sw == "PerElement":  # the same defaults, the other kernel
                off, on = dict(shape, **V3_ON), dict(shape, **V3_ON)
            else:
                off, on = dict(shape, **V3_ON), dict(shape, **V3_ON)
                off[sw] = V3_OFF[sw]
            c0, e0 = specialize_and_count(bench, spirv_opt, spvs[0], ids, off)
            c1, e1 = specialize_and_count(bench, spirv_opt, spvs[1], ids, on)
            rows.append(dict(kernel=kernel, label=label, switch="every v3 default" if sw == "all" else sw,
                             pairs=pairs, off=c0, on=c1, error=e0 or e1))
    if a.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    print("One iteration of the key-tile loop (the largest loop; per pair: divided by a thread's pairs in it), "
          "each switch off -> on:\n")
    print("| kernel | switch | per pair | loop | OpDot | Fma | OpFMul | OpFAdd | OpFConvert | OpLoad | OpStore | "
          "barriers | matrix stores | whole kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.get("error") or not r.get("off") or not r.get("on"):
            print("| %s (%s) | %s | %s | | | | | | | | | | | |" % (r["label"], r["kernel"], r["switch"],
                                                                   r.get("error") or "no count"))
            continue
        o, n = r["off"], r["on"]
        cells = ["%.1f -> %.1f" % (o["tile_loop"] / r["pairs"], n["tile_loop"] / r["pairs"]),
                 "%d -> %d" % (o["tile_loop"], n["tile_loop"])]
        cells += ["%d -> %d" % (o["tile_" + k], n["tile_" + k]) for k, _ in KINDS]
        cells.append("%d -> %d" % (o["inlined"], n["inlined"]))
        flag = " (on: not optimised by spirv-opt, whose memory passes skip SPV_NV_cooperative_matrix2; compare " \
               "barriers and matrix stores)" if n.get("unoptimised") and not o.get("unoptimised") else ""
        print("| %s (%s) | %s%s | %s |" % (r["label"], r["kernel"], r["switch"], flag, " | ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
