#!/usr/bin/env python3
"""What librfa exports, and what it links.

    check_exports.py LIBRARY [--objdump TOOL]   check librfa.so (nm -D, readelf -d) or rfa.dll
                                                (TOOL -p: its export table and imported DLLs)
    check_exports.py --self-test                every check catches its case

The shared library exports the public API only (rfa/export.h's RFA_API): C functions rfa_* and
C++ names of namespace rfa itself. A symbol of an internal namespace (rfa::gpu, rfa::ops, rfa::ref,
rfa::model, rfa::session, ...), of volk (vk*, volk*, rfa_vk*), or any other name fails. The
library must not need the Vulkan loader at link time (libvulkan.so* / vulkan-1.dll): it opens the
loader at run time. A few names the public API cannot do without must be present.
"""
import re
import subprocess
import sys

# Namespaces under rfa:: that hold the runtime's internals (runtime/src/<folder>).
INTERNAL = ("gpu", "ops", "ref", "model", "session", "probe", "sample", "capi", "core", "demo",
            "detail", "reference", "(anonymous namespace)")
# Prefixes the C++ ABI puts before a class's name for its RTTI and virtual table.
ABI_PREFIXES = ("typeinfo for ", "typeinfo name for ", "vtable for ", "VTT for ",
                "non-virtual thunk to ", "virtual thunk to ", "guard variable for ")
REQUIRED = ("rfa_version", "rfa_context_create", "rfa::version()", "rfa::list_devices()",
            "rfa::Context::create(", "rfa::Session::create(", "rfa::reference_forward(")
LOADER = re.compile(r"^(libvulkan\.so.*|vulkan-1\.dll)$", re.IGNORECASE)


def bad_symbol(name):
    """Why `name` (demangled) must not be exported, or None when it may."""
    base = name
    for p in ABI_PREFIXES:
        if base.startswith(p):
            base = base[len(p):]
            break
    if re.match(r"^rfa_[A-Za-z0-9_]+$", base):
        if base.startswith("rfa_vk") or base.startswith("rfa_volk"):
            return "volk's function table (runtime-internal)"
        return None
    if base.startswith("rfa::"):
        rest = base[len("rfa::"):]
        for ns in INTERNAL:
            if rest.startswith(ns + "::"):
                return "internal namespace rfa::" + ns
        if re.match(r"^[A-Za-z_0-9]+::Impl::", rest):
            return "a public class's internal Impl"
        return None
    return "not the rfa public API"


def check(symbols, needed):
    """Error lines for exported `symbols` (demangled) and `needed` libraries."""
    errors = []
    for s in sorted(set(symbols)):
        why = bad_symbol(s)
        if why:
            errors.append(f"exported: {s}  ({why})")
    for n in needed:
        if LOADER.match(n):
            errors.append(f"links the Vulkan loader {n}: librfa must open it at run time")
    for r in REQUIRED:
        if not any(s == r or s.startswith(r) for s in symbols):
            errors.append(f"missing from the exports: {r}")
    return errors


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def demangle(names):
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True, text=True).stdout
    return out.splitlines()


def elf_exports(lib):
    symbols = []
    # Defined dynamic symbols of any kind but absolute ones (_end, _edata, ... of the linker).
    for line in run(["nm", "-D", "--defined-only", lib]).splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[1] not in ("A",):
            symbols.append(parts[2])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run(["readelf", "-d", lib]))
    return demangle(symbols), needed


def pe_exports(lib, objdump):
    text = run([objdump, "-p", lib])
    needed = re.findall(r"DLL Name: (\S+)", text)
    symbols = []
    m = re.search(r"\[Ordinal/Name Pointer\] Table\n(.*?)(\n\s*\n|\Z)", text, re.S)
    if m:
        for line in m.group(1).splitlines():
            mm = re.match(r"\s*\[\s*\d+\]\s+(\S+)", line)
            if mm:
                symbols.append(mm.group(1))
    return demangle(symbols), needed


def self_test():
    good = ["rfa_version", "rfa_context_create", "rfa::version()", "rfa::list_devices()",
            "rfa::Context::create(rfa::ContextOptions const&)", "rfa::Session::create(rfa::Context&)",
            "rfa::reference_forward(rfa::Model const&, int)", "typeinfo for rfa::Tokenizer"]
    cases = {
        "rfa::gpu::Context::create(rfa::ContextOptions const&)": "internal namespace rfa::gpu",
        "rfa::ops::record_linear(int)": "internal namespace rfa::ops",
        "rfa::ref::linear(int)": "internal namespace rfa::ref",
        "vtable for rfa::model::Thing": "internal namespace rfa::model",
        "rfa_vkCreateInstance": "volk",
        "rfa::Session::Impl::init()": "internal Impl",
        "vkCreateInstance": "not the rfa public API",
        "std::vector<int, std::allocator<int> >::_M_realloc_insert(int)": "not the rfa public API",
    }
    failures = []
    if check(good, ["libc.so.6"]):
        failures.append("the public API alone was refused: " + "; ".join(check(good, ["libc.so.6"])))
    for sym, want in cases.items():
        errs = check(good + [sym], [])
        if not errs or want not in errs[0]:
            failures.append(f"{sym!r} not caught as {want!r}: {errs}")
    if not check(good, ["libvulkan.so.1"]):
        failures.append("NEEDED libvulkan.so.1 not caught")
    if not check(good, ["VULKAN-1.dll"]):
        failures.append("vulkan-1.dll import not caught")
    if not check(good[1:], []):
        failures.append("a missing rfa_version not caught")
    for f in failures:
        print("check_exports self-test:", f)
    print("check_exports self-test:", "FAIL" if failures else "ok")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--objdump"):
        print(__doc__)
        return 2
    lib = argv[1]
    symbols, needed = pe_exports(lib, argv[3]) if len(argv) == 4 else elf_exports(lib)
    errors = check(symbols, needed)
    for e in errors:
        print(f"{lib}: {e}")
    print(f"{lib}: {len(symbols)} exported symbols, needs {', '.join(needed) or 'nothing'}: "
          + ("FAIL" if errors else "ok"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
