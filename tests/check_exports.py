#!/usr/bin/env python3
"""What librfa and librfa_reference export, and what they link.

    check_exports.py LIBRARY [--objdump TOOL] [--reference]
                                                check librfa.so (nm -D, readelf -d) or rfa.dll
                                                (TOOL -p: its export table and imported DLLs);
                                                --reference: librfa_reference.so / rfa_reference.dll
    check_exports.py PROGRAM --program [--objdump TOOL]
                                                a program (rfa-viewer) only: it links no Vulkan loader
    check_exports.py --self-test                every check catches its case

The shared library exports the public API only (rfa/export.h's RFA_API): C functions rfa_* and
C++ names of namespace rfa itself. A symbol of an internal namespace (rfa::gpu, rfa::ops, rfa::ref,
rfa::model, rfa::session, ...), of volk (vk*, volk*, rfa_vk*), or any other name fails. The
library must not need the Vulkan loader at link time (libvulkan.so* / vulkan-1.dll): it opens the
loader at run time. A few names the public API cannot do without must be present.

librfa carries no CPU twin: it exports nothing of it (reference_forward, rfa_model_reference_forward,
rfa::ref) and, where the ELF library has a symbol table, defines none of rfa::ref even as a local
symbol. It reads no environment: an ELF librfa imports no getenv / secure_getenv.

librfa_reference (--reference) exports the twin's public face only (rfa::reference_forward and
rfa_model_reference_forward), and needs librfa (librfa.so* / rfa.dll) instead of carrying a copy of
the runtime (no rfa::gpu symbol in its symbol table).
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
            "rfa::Context::create(", "rfa::Session::create(")
LOADER = re.compile(r"^(libvulkan\.so.*|vulkan-1\.dll)$", re.IGNORECASE)
# An internal namespace or a public class's Impl anywhere in a symbol (its parameter types included).
INTERNAL_ANYWHERE = re.compile(r"rfa::(%s)::|\bImpl\b" % "|".join(re.escape(n) for n in INTERNAL))
# The CPU twin's names (demangled), which live in librfa_reference only.
TWIN = re.compile(r"^(rfa_model_reference_forward$|rfa::reference_forward\(|rfa::ref::|rfa::ReferenceAttention\b)")
# What librfa_reference exports, all of it, and needs.
REFERENCE_EXPORTS = re.compile(r"^(rfa_model_reference_forward|rfa::reference_forward\(.*)$")
REFERENCE_REQUIRED = ("rfa_model_reference_forward", "rfa::reference_forward(")
LIBRFA = re.compile(r"^(librfa\.so(\..*)?|rfa\.dll)$", re.IGNORECASE)
# Reading the environment (an import of the library).
ENVIRONMENT = ("getenv", "secure_getenv")


def strip_abi(name):
    for p in ABI_PREFIXES:
        if name.startswith(p):
            return name[len(p):]
    return name


def bad_symbol(name):
    """Why `name` (demangled) must not be exported by librfa, or None when it may."""
    base = strip_abi(name)
    if TWIN.match(base):
        return "the CPU twin (it lives in librfa_reference)"
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


def internal_in_signature(name):
    """The internal namespace or Impl a symbol's parameter types name (ELF: a public class's private
    constructor from its implementation must stay hidden, RFA_HIDDEN), or None."""
    m = INTERNAL_ANYWHERE.search(strip_abi(name))
    return m.group(0) if m else None


def check(symbols, needed, local=None, imports=None, signatures=False):
    """Error lines for librfa's exported `symbols` (demangled) and `needed` libraries; `local`: every
    symbol of its symbol table (None: stripped, or not ELF); `imports`: its undefined dynamic symbols;
    `signatures`: also refuse a symbol whose parameter types name an internal namespace or an Impl."""
    errors = []
    for s in sorted(set(symbols)):
        why = bad_symbol(s)
        if not why and signatures and internal_in_signature(s):
            why = "its signature names the internal %s" % internal_in_signature(s)
        if why:
            errors.append(f"exported: {s}  ({why})")
    for n in needed:
        if LOADER.match(n):
            errors.append(f"links the Vulkan loader {n}: librfa must open it at run time")
    for r in REQUIRED:
        if not any(s == r or s.startswith(r) for s in symbols):
            errors.append(f"missing from the exports: {r}")
    twin = sorted({s for s in (local or []) if TWIN.match(strip_abi(s))})
    if twin:
        errors.append(f"carries the CPU twin ({len(twin)} symbols, e.g. {twin[0]}): it belongs in librfa_reference")
    for i in sorted(set(imports or [])):
        if i in ENVIRONMENT:
            errors.append(f"imports {i}: the library reads no environment (ContextOptions carries it)")
    return errors


def check_reference(symbols, needed, local=None):
    """Error lines for librfa_reference (see the module docstring)."""
    errors = []
    for s in sorted(set(symbols)):
        if not REFERENCE_EXPORTS.match(s):
            errors.append(f"exported: {s}  (librfa_reference exports the twin's public face only)")
    for r in REFERENCE_REQUIRED:
        if not any(s == r or s.startswith(r) for s in symbols):
            errors.append(f"missing from the exports: {r}")
    for n in needed:
        if LOADER.match(n):
            errors.append(f"links the Vulkan loader {n}")
    if not any(LIBRFA.match(n) for n in needed):
        errors.append("does not need librfa (librfa.so* / rfa.dll): the twin sits on top of the runtime, not beside a copy")
    runtime = sorted({s for s in (local or []) if strip_abi(s).startswith("rfa::gpu::")})
    if runtime:
        errors.append(f"carries a copy of the runtime ({runtime[0]}, ...)")
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


def elf_locals_and_imports(lib):
    """Every defined symbol of the symbol table (None when the library is stripped) and the
    undefined dynamic symbols (their names without a version)."""
    proc = subprocess.run(["nm", "--defined-only", lib], capture_output=True, text=True)
    local = None
    if proc.returncode == 0 and "no symbols" not in proc.stderr:
        local = demangle([p[2] for p in (l.split(maxsplit=2) for l in proc.stdout.splitlines()) if len(p) == 3])
    imports = [l.split()[-1].split("@")[0] for l in run(["nm", "-D", "--undefined-only", lib]).splitlines() if l.split()]
    return local, imports


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
            "typeinfo for rfa::Tokenizer"]
    cases = {
        "rfa::gpu::Context::create(rfa::ContextOptions const&)": "internal namespace rfa::gpu",
        "rfa::ops::record_linear(int)": "internal namespace rfa::ops",
        "rfa::ref::linear(int)": "the CPU twin",
        "rfa::reference::Thing::f()": "internal namespace rfa::reference",
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
    if not loader_links(["libglfw.so.3", "libvulkan.so.1"]) or loader_links(["libglfw.so.3", "KERNEL32.dll"]):
        failures.append("a program's link to the loader (--program) not caught, or a clean one refused")
    if not check(good[1:], []):
        failures.append("a missing rfa_version not caught")
    for sym in ("rfa::reference_forward(rfa::Model const&, int)", "rfa_model_reference_forward",
                "rfa::ref::forward(rfa::Model const&)"):
        errs = check(good + [sym], [])
        if not errs or "CPU twin" not in errs[0]:
            failures.append(f"exported twin {sym!r} not caught: {errs}")
    errs = check(good, [], local=good + ["rfa::ref::linear(rfa::LinearWeights const&)"])
    if not errs or "carries the CPU twin" not in errs[0]:
        failures.append(f"a local rfa::ref symbol not caught: {errs}")
    ctor = "rfa::Context::Context(std::unique_ptr<rfa::gpu::Context, std::default_delete<rfa::gpu::Context> >)"
    errs = check(good + [ctor], [], signatures=True)
    if not errs or "signature names the internal rfa::gpu::" not in errs[0]:
        failures.append(f"a signature naming rfa::gpu not caught: {errs}")
    errs = check(good + ["rfa::Session::Session(std::unique_ptr<rfa::Session::Impl>)"], [], signatures=True)
    if not errs or "Impl" not in errs[0]:
        failures.append(f"a signature naming an Impl not caught: {errs}")
    if check(good + [ctor], []):
        failures.append("signatures were checked where they are not asked for (PE: RFA_HIDDEN is empty there)")
    errs = check(good, [], imports=["getenv", "memcpy"])
    if not errs or "reads no environment" not in errs[0]:
        failures.append(f"an import of getenv not caught: {errs}")
    if check(good, [], local=good, imports=["memcpy"]):
        failures.append("a clean symbol table was refused")
    ref_good = ["rfa_model_reference_forward", "rfa::reference_forward(rfa::Model const&, int)"]
    if check_reference(ref_good, ["librfa.so.0.1", "libc.so.6"], local=ref_good + ["rfa::ref::linear()"]):
        failures.append("a good librfa_reference was refused: %s" % check_reference(ref_good, ["librfa.so.0.1"]))
    if check_reference(ref_good, ["rfa.dll", "KERNEL32.dll"]):
        failures.append("a good rfa_reference.dll was refused")
    ref_cases = {
        "extra export": (ref_good + ["rfa::ref::linear(int)"], ["librfa.so.0.1"], None, "public face only"),
        "missing export": (ref_good[1:], ["librfa.so.0.1"], None, "missing from the exports"),
        "no librfa": (ref_good, ["libc.so.6"], None, "does not need librfa"),
        "copy of the runtime": (ref_good, ["librfa.so.0.1"], ["rfa::gpu::Context::create()"], "copy of the runtime"),
    }
    for what, (syms, needed, local, want) in ref_cases.items():
        errs = check_reference(syms, needed, local)
        if not errs or want not in errs[0]:
            failures.append(f"librfa_reference case {what!r} not caught as {want!r}: {errs}")
    for f in failures:
        print("check_exports self-test:", f)
    print("check_exports self-test:", "FAIL" if failures else "ok")
    return 1 if failures else 0


def loader_links(needed):
    """The Vulkan loaders among a binary's needed libraries (it must open the loader at run time)."""
    return [f"needs the Vulkan loader {n} at link time" for n in needed if LOADER.match(n)]


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    args = argv[1:]
    if "--program" in args:
        args.remove("--program")
        if len(args) not in (1, 3):
            print(__doc__)
            return 2
        needed = (re.findall(r"DLL Name: (\S+)", run([args[2], "-p", args[0]])) if len(args) == 3 else
                  re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run(["readelf", "-d", args[0]])))
        errors = loader_links(needed)
        for e in errors:
            print(f"{args[0]}: {e}")
        print(f"{args[0]}: needs {', '.join(needed) or 'nothing'}: " + ("FAIL" if errors else "ok"))
        return 1 if errors else 0
    reference = "--reference" in args
    if reference:
        args.remove("--reference")
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--objdump"):
        print(__doc__)
        return 2
    lib = args[0]
    local = imports = None
    if len(args) == 3:
        symbols, needed = pe_exports(lib, args[2])
    else:
        symbols, needed = elf_exports(lib)
        local, imports = elf_locals_and_imports(lib)
    errors = (check_reference(symbols, needed, local) if reference
              else check(symbols, needed, local, imports, signatures=len(args) == 1))
    for e in errors:
        print(f"{lib}: {e}")
    print(f"{lib}: {len(symbols)} exported symbols, needs {', '.join(needed) or 'nothing'}: "
          + ("FAIL" if errors else "ok"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
