"""The documentation's code snippets and commands, compiled and run (CTest: doc_snippets).

A fenced block whose info string is "c snippet", "cpp snippet", "python snippet" or "sh snippet"
in README.md or docs/*.md is extracted and run from the source folder (so "models/spiral-filter"
resolves): C and C++ compiled against runtime/include and the build's librfa.so (a snippet without
a main() becomes the body of one), Python with the package of python/ and that library. A "sh
snippet" holds the commands a page tells a reader to type (`build/rfa-run ...`): bash runs the
block (-e: every command must succeed) in a work folder of its own where build/ is the build's
folder and models/ the zoo, so what the commands write stays out of the sources. A snippet fails
the test when it does not compile, exits non-zero or raises. Pages whose API the snippets show
must keep at least one snippet of their language (REQUIRED), and README.md its commands.

Usage: doc_snippets.py SOURCE_DIR BUILD_DIR [WORK_DIR]    or    doc_snippets.py --self-test
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(c|cpp|python|sh) snippet\s*$")
REQUIRED = {"docs/c-api.md": "c", "docs/cpp-api.md": "cpp", "docs/python.md": "python", "README.md": "sh",
            "docs/rfa-run.md": "sh"}


def snippets(text):
    """[(language, first line number, code)] of the tagged fenced blocks of a markdown text."""
    out, lang, start, lines = [], None, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        if lang is None:
            m = FENCE.match(line)
            if m:
                lang, start, lines = m.group(1), n + 1, []
        elif line.strip() == "```":
            out.append((lang, start, "\n".join(lines) + "\n"))
            lang = None
        else:
            lines.append(line)
    if lang is not None:
        raise ValueError("a %s snippet opened at line %d is never closed" % (lang, start - 1))
    return out


def as_program(lang, code):
    """A snippet as a whole program: its own main(), or its #includes then the rest inside one."""
    if lang in ("python", "sh") or re.search(r"\bint\s+main\s*\(", code):
        return code
    includes = [l for l in code.splitlines() if l.lstrip().startswith("#include")]
    body = [l for l in code.splitlines() if not l.lstrip().startswith("#include")]
    return "\n".join(includes) + "\nint main(void) {\n" + "\n".join(body) + "\nreturn 0;\n}\n"


def run_snippet(lang, code, src, build, work, name):
    """Compiles (C, C++) and runs one snippet from `src`; returns an error text or None."""
    env = dict(os.environ, PYTHONPATH=os.path.join(src, "python"), PYTHONDONTWRITEBYTECODE="1",
               RFA_LIBRARY=os.path.join(build, "librfa.so"))
    cwd = src
    if lang == "python":
        cmd = [sys.executable, "-c", code]
    elif lang == "sh":
        cwd = os.path.join(work, name)
        os.makedirs(cwd, exist_ok=True)
        for link, target in (("build", build), ("models", os.path.join(src, "models"))):
            if not os.path.lexists(os.path.join(cwd, link)):
                os.symlink(target, os.path.join(cwd, link))
        cmd = ["bash", "-e", "-x", "-o", "pipefail", "-c", code]
    else:
        ext = ".c" if lang == "c" else ".cpp"
        path, exe = os.path.join(work, name + ext), os.path.join(work, name)
        with open(path, "w") as f:
            f.write(as_program(lang, code))
        compiler = ["cc", "-std=c11"] if lang == "c" else ["c++", "-std=c++20"]
        cc = subprocess.run(compiler + ["-Wall", "-Werror", "-I", os.path.join(src, "runtime", "include"), path,
                                        "-L", build, "-lrfa", "-lm", "-Wl,-rpath," + build, "-o", exe],
                            capture_output=True, text=True)
        if cc.returncode != 0:
            return "does not compile:\n" + cc.stderr[-3000:]
        cmd = [exe]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return "exits %d:\n%s%s" % (r.returncode, r.stdout[-1500:], r.stderr[-3000:])
    return None


def pages(src):
    docs = os.path.join(src, "docs")
    return ["README.md"] + sorted("docs/" + f for f in os.listdir(docs) if f.endswith(".md"))


def main(src, build, work):
    src, build, work = os.path.abspath(src), os.path.abspath(build), os.path.abspath(work)
    os.makedirs(work, exist_ok=True)
    failures, count = [], 0
    for page in pages(src):
        with open(os.path.join(src, page), encoding="utf-8") as f:
            found = snippets(f.read())
        langs = {lang for lang, _, _ in found}
        if page in REQUIRED and REQUIRED[page] not in langs:
            failures.append("%s: no %s snippet (the page's API is shown by tested snippets)" % (page, REQUIRED[page]))
        for lang, line, code in found:
            count += 1
            name = "%s_%d" % (re.sub(r"\W", "_", page), line)
            err = run_snippet(lang, code, src, build, work, name)
            print("%s:%d: %s snippet %s" % (page, line, lang, "FAILED" if err else "ok"), flush=True)
            if err:
                failures.append("%s:%d: the %s snippet %s" % (page, line, lang, err))
    for f in failures:
        print(f)
    print("doc_snippets: %d snippet(s), %d problem(s)" % (count, len(failures)))
    return 1 if failures or count == 0 else 0


def self_test():
    """Extraction and wrapping: the fences that count, a body wrapped into main()."""
    text = "x\n```c snippet\nint a = 1;\n```\n```c\nnot(a snippet)\n```\n```python snippet\nprint(1)\n```\n"
    got = snippets(text)
    ok = got == [("c", 3, "int a = 1;\n"), ("python", 9, "print(1)\n")]
    prog = as_program("c", '#include <stdio.h>\nprintf("x");\n')
    ok &= prog.startswith("#include <stdio.h>\nint main(void) {") and prog.rstrip().endswith("}")
    ok &= as_program("cpp", "int main() { return 0; }\n") == "int main() { return 0; }\n"
    try:
        snippets("```cpp snippet\nint x;\n")
        ok = False
    except ValueError:
        pass
    with tempfile.TemporaryDirectory() as d:  # a failing Python snippet is reported
        ok &= run_snippet("python", "raise SystemExit(3)\n", d, d, d, "x") is not None
        ok &= run_snippet("python", "pass\n", d, d, d, "y") is None
        # Commands: every line must succeed, in a folder of their own with build/ and models/.
        ok &= as_program("sh", "true\n") == "true\n"
        ok &= run_snippet("sh", "true\nfalse\ntrue\n", d, d, d, "s1") is not None
        ok &= run_snippet("sh", "test -d build && test -L models && touch out.txt\n", d, d, d, "s2") is None
        ok &= os.path.exists(os.path.join(d, "s2", "out.txt"))
    print("doc_snippets self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp()))
