#!/usr/bin/env python3
"""Writes the packed-binding copy of the shaders (docs/device-profiles.md, "Packed bindings").

Phones and the Vulkan minimum allow 4 storage buffers per shader stage; the attention kernels bind
up to 19. On such a device every tensor lives in one VkBuffer (the allocator's arena), and a kernel
reads each tensor through an alias of binding 0 at the offset that a small uniform table (binding 1)
holds for the tensor's original binding number. The shaders stay written for the plain layout; this
script rewrites a copy of them, so there is one source of truth for every kernel:

  layout(std430, binding = 5) readonly buffer Qb { vec2 Qc[]; };
      -> layout(std430, binding = 0) readonly buffer Qb { vec2 pk_Qc[]; };
         #define Qc_pk(i) pk_Qc[PK_OFFSET(5u, 2u) + (i)]         (2: 32-bit words per vec2)
  Qc[expr]  -> Qc_pk(expr)                                       (every access, nested ones too)
  layout(std430, binding = 15) readonly buffer Pb { uint pos0; uint kv_len; } span;
      -> one uint array; span.pos0 -> span_pk(0u), span.kv_len -> span_pk(1u)

The table holds each tensor's offset in 32-bit words from the start of the arena; the runtime
(gpu/recorder.cpp) fills it per dispatch from the buffers it binds, in binding order.

Usage (VARIANT_DIR: the wrappers CMake writes from shaders/variants.cmake, read beside SRC_DIR's
.comp files; their includes come from SRC_DIR/common):
  pack_bindings.py --list SRC_DIR [VARIANT_DIR]
        the .comp shaders (names, ';'-separated) that bind more than 4 storage buffers: the ones
        that get a packed variant
  pack_bindings.py SRC_DIR OUT_DIR [VARIANT_DIR]
        writes OUT_DIR/<name>.comp for each of them and the files they include
        (OUT_DIR/common/...), rewritten
"""
import os
import re
import sys

MIN_STORAGE_BUFFERS = 4  # the Vulkan minimum of maxPerStageDescriptorStorageBuffers
POOL_BINDING, TABLE_BINDING, TABLE_VEC4S = 0, 1, 8  # 32 slots (gpu::kPackedMaxSlots)

# 32-bit words per element; KV_T is the cache element of common/kv_storage.glsl (vec2, or a uint
# holding two halves), whose size that file names as KV_T_WORDS.
WORDS = {"float": "1u", "uint": "1u", "int": "1u", "vec2": "2u", "uvec2": "2u", "ivec2": "2u",
         "vec4": "4u", "uvec4": "4u", "ivec4": "4u", "KV_T": "KV_T_WORDS"}

BLOCK = re.compile(r"layout\s*\(\s*std430\s*,\s*binding\s*=\s*(\d+)\s*\)\s*"
                   r"((?:(?:readonly|writeonly|restrict|coherent)\s+)*)buffer\s+(\w+)\s*\{([^}]*)\}\s*(\w*)\s*;")
ARRAY_MEMBER = re.compile(r"^\s*(\w+)\s+(\w+)\s*\[\s*\]\s*;\s*$")
SCALAR_MEMBER = re.compile(r"(\w+)\s+(\w+)\s*;")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

TABLE_DECL = f"""#ifndef RFA_PACKED_TABLE
#define RFA_PACKED_TABLE
layout(std140, binding = {TABLE_BINDING}) uniform PackedOffsets {{ uvec4 pk_offsets[{TABLE_VEC4S}]; }};
#define PK_OFFSET(slot, words) (pk_offsets[(slot) >> 2u][(slot) & 3u] / (words))
#endif
"""


class Error(Exception):
    pass


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def resolve(path, name, src_dir):
    for base in (os.path.dirname(path), os.path.join(src_dir, "common")):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(cand):
            return cand
    raise Error(f"{path}: cannot find the included file {name}")


def closure(comp, src_dir):
    """The shader and every file it includes, in discovery order."""
    seen, todo = [], [comp]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.append(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        todo.extend(resolve(path, inc, src_dir) for inc in INCLUDE.findall(text))
    return seen


def binding_count(paths):
    numbers = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for m in BLOCK.finditer(strip_comments(f.read())):
                numbers.add(int(m.group(1)))
    return max(numbers) + 1 if numbers else 0


def all_shaders(src_dir, variant_dir):
    """Every .comp shader by name: SRC_DIR's own, then the generated variants."""
    paths = {}
    for d in (src_dir, variant_dir):
        if not d:
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".comp"):
                if f[:-5] in paths:
                    raise Error(f"{f[:-5]} is both a shader of {src_dir} and a generated variant")
                paths[f[:-5]] = os.path.join(d, f)
    return paths


def packed_shaders(src_dir, variant_dir=None):
    shaders = all_shaders(src_dir, variant_dir)
    return [n for n in sorted(shaders) if binding_count(closure(shaders[n], src_dir)) > MIN_STORAGE_BUFFERS]


def rewrite_declarations(text, path, arrays, structs):
    """Replaces every storage block by its alias of the pool binding and its accessor macro."""
    def one(m):
        slot, quals, block, body, instance = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
        body = strip_comments(body)
        am = ARRAY_MEMBER.match(body.replace("\n", " "))
        if am and not instance:
            etype, name = am.group(1), am.group(2)
            if etype not in WORDS:
                raise Error(f"{path}: buffer {block} has elements of type {etype}, which packing cannot size")
            arrays.add(name)
            return (f"{TABLE_DECL}layout(std430, binding = {POOL_BINDING}) {quals}buffer {block} {{ {etype} pk_{name}[]; }};\n"
                    f"#define {name}_pk(i) pk_{name}[PK_OFFSET({slot}u, {WORDS[etype]}) + (i)]")
        members = SCALAR_MEMBER.findall(body)
        types = {t for t, _ in members}
        if instance and members and len(types) == 1 and next(iter(types)) in ("uint", "int", "float") \
                and not re.sub(r"(\w+)\s+(\w+)\s*;", "", body).strip():
            etype = next(iter(types))
            structs[instance] = [n for _, n in members]
            return (f"{TABLE_DECL}layout(std430, binding = {POOL_BINDING}) {quals}buffer {block} {{ {etype} pk_{instance}[]; }};\n"
                    f"#define {instance}_pk(j) pk_{instance}[PK_OFFSET({slot}u, 1u) + (j)]")
        raise Error(f"{path}: cannot pack buffer {block} (only one unsized array, or scalars of one type behind "
                    "an instance name)")
    return BLOCK.sub(one, text)


def rewrite_accesses(text, arrays, structs):
    """name[expr] -> name_pk(expr) for the packed arrays (nested accesses too); inst.member -> inst_pk(k)."""
    for inst, members in structs.items():
        for k, member in enumerate(members):
            text = re.sub(rf"\b{inst}\s*\.\s*{member}\b", f"{inst}_pk({k}u)", text)
    if not arrays:
        return text
    start = re.compile(r"\b(" + "|".join(sorted(arrays, key=len, reverse=True)) + r")\s*\[")
    out, i = [], 0
    while True:
        m = start.search(text, i)
        if not m:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while depth:
            if j >= len(text):
                raise Error(f"unbalanced brackets after {m.group(1)}[")
            depth += {"[": 1, "]": -1}.get(text[j], 0)
            j += 1
        inner = rewrite_accesses(text[m.end():j - 1], arrays, {})
        out.append(f"{m.group(1)}_pk({inner})")
        i = j


def write_packed(src_dir, out_dir, variant_dir=None):
    shaders = all_shaders(src_dir, variant_dir)
    names = packed_shaders(src_dir, variant_dir)
    files = []
    for name in names:
        for path in closure(shaders[name], src_dir):
            if path not in files:
                files.append(path)
    texts, arrays, structs = {}, set(), {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            texts[path] = rewrite_declarations(f.read(), path, arrays, structs)
    for path, text in texts.items():
        text = rewrite_accesses(text, arrays, structs)
        # A shader lands at OUT_DIR/<name>.comp, an include at OUT_DIR/common/<file>.
        rel = os.path.basename(path) if path.endswith(".comp") else os.path.relpath(path, src_dir)
        dst = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        origin = f"shaders/{rel}" if os.path.dirname(os.path.abspath(path)) != os.path.abspath(variant_dir or "") \
            else f"the variant {rel} of shaders/variants.cmake"
        banner = f"// Generated by cmake/pack_bindings.py from {origin}: packed bindings. Do not edit.\n"
        if path.endswith(".comp"):  # the banner after #version, which must come first
            head, _, rest = text.partition("\n")
            text = head + "\n" + banner + rest
        else:
            text = banner + text
        # Rewrite only when the text changed, so that the compiled shaders are not rebuilt needlessly.
        old = None
        if os.path.exists(dst):
            with open(dst, encoding="utf-8") as f:
                old = f.read()
        if old != text:
            with open(dst, "w", encoding="utf-8") as f:
                f.write(text)
    stamp = os.path.join(out_dir, "packed.stamp")
    with open(stamp, "w", encoding="utf-8") as f:
        f.write(";".join(names) + "\n")


def main(argv):
    try:
        if len(argv) in (3, 4) and argv[1] == "--list":
            sys.stdout.write(";".join(packed_shaders(*argv[2:])))
            return 0
        if len(argv) in (3, 4) and not argv[1].startswith("-"):
            write_packed(*argv[1:])
            return 0
    except Error as e:
        print(f"pack_bindings.py: {e}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
