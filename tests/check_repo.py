"""Checks on the repository's own files (CTest: repo_checks; repo_checks_selftest proves each check
catches what it should):

  paths     no absolute path of the machine a file was made on (under the work, root, home or
            Users directories at the top of its file system) in any tracked file, binaries included;
  docs      every docs/....md mentioned exists, every relative markdown link resolves, and every
            name.md mentioned is the name of a file in the repository;
  sections  every section reference (the section sign and a number, e.g. "docs/math.md" then the
            sign and 5) names a heading numbered so in the file it points to: the nearest .md
            mentioned before it on the same line, or, in a docs/ page, the page itself;
  includes  outside runtime/src, tests/ and tools/rfa-bench/, no #include of a header that lives
            in runtime/src (programs, the viewer and the examples use runtime/include/rfa only);
  environment  no getenv (nor secure_getenv, GetEnvironmentVariable, _dupenv_s) anywhere under
            runtime/src: the library reads no environment; the programs read RFA_* through
            runtime/include/rfa/environment.hpp (inline, so in the program);
  twin      the CPU twin (its headers reference/*.hpp and rfa/reference.hpp) is included only by the
            twin's own library (runtime/src/reference/), the tests, rfa-run's --cpu-reference path
            (tools/rfa-run/main.cpp, demo.cpp), rfa-bench and the twin's own example
            (examples/reference/), which link rfa_reference;
  api       every function runtime/include/rfa/rfa.h declares is named in docs/c-api.md, and every
            public member of the Python Session (python/rfa/session.py) in docs/python.md;
  shaders   no shaders/*.comp is a bare wrapper (only #version, #extension, #define and #include
            lines): a kernel that is a body of shaders/common/ under a few switches is a line of
            shaders/variants.cmake, which CMake turns into its wrapper;
  pipes     no shell script under `set -o pipefail` pipes into `grep -q` (grep quits at the first
            match, the writer's next write gets SIGPIPE, and the pipeline fails at random although
            it matched: CI failed so once on `ldd prog | grep -q lib`); such scripts grep the whole
            input (their drain_grep).

Usage: check_repo.py [SOURCE_DIR]    or    check_repo.py --self-test
"""
import ast
import os
import re
import subprocess
import sys
import tempfile

SECTION = "\u00a7"  # the section sign, spelled out so that this file does not reference anything
# Absolute home/work directories of a machine; assembled so this file does not match itself.
ABSOLUTE = re.compile(("(?<![\\w.~-])/(?:%s)/[\\w.-]" % "|".join(["wo" + "rk", "ro" + "ot", "ho" + "me", "Us" + "ers"]))
                      .encode())
DOCS_REF = re.compile(r"(?<![\w/.-])docs/[\w./-]+?\.md\b")
MD_NAME = re.compile(r"(?<![\w/.-])([\w.-]+\.md)\b")
MD_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
SECTION_REF = re.compile(SECTION + r"(\d+(?:\.\d+)*)")
MD_MENTION = re.compile(r"([\w./-]+\.md)\b")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
INTERNAL_OK = ("runtime/src/", "tests/", "tools/rfa-bench/")
# Reading the environment: none of it in the library.
ENV_READ = re.compile(r"getenv|GetEnvironmentVariable|_dupenv_s")
LIBRARY_SOURCES = "runtime/src/"
# A pipe into a grep that quits early, and the shell option that turns the writer's SIGPIPE into a failure.
PIPE_GREP_Q = re.compile(r"\|\s*grep\s+-\w*q")
PIPEFAIL = re.compile(r"set\s+-\w*o\s+pipefail|set\s+-o\s+pipefail")
# The twin's headers, and who may include them (they link rfa_reference).
TWIN_INCLUDE = re.compile(r"^(reference/[\w./-]+|rfa/reference\.hpp)$")
TWIN_OK = ("runtime/src/reference/", "tests/", "tools/rfa-run/main.cpp", "tools/rfa-run/demo.cpp", "tools/rfa-bench/",
           "examples/reference/")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return sorted(f for f in files if os.path.isfile(os.path.join(root, f)))
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []  # not a git checkout (an unpacked archive): every file but build trees
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not (x.startswith("build") or x.startswith(".") or x == "__pycache__")]
        found += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(found)


def text_of(data):
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def headings(text):
    """Section numbers of a markdown page's numbered headings ("## 3. ...", "### 3.5 ...")."""
    out, fence = set(), False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            m = HEADING.match(line)
            if m:
                out.add(m.group(1))
    return out


WRAPPER_LINE = re.compile(r"^\s*(#\s*(version|extension|define|include)\b.*)?$")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
C_FUNCTION = re.compile(r"\b(rfa_[a-z0-9_]+)\s*\(")
# Where the API lives and the page that must name every part of it.
C_HEADER, C_PAGE = "runtime/include/rfa/rfa.h", "docs/c-api.md"
PY_SESSION, PY_PAGE = "python/rfa/session.py", "docs/python.md"


def c_functions(header_text):
    """The functions a C header declares (comments stripped; a call shape `rfa_name(`)."""
    return sorted(set(C_FUNCTION.findall(C_COMMENT.sub(" ", header_text))))


def session_members(source_text):
    """The public methods and properties of class Session in a Python source."""
    for node in ast.parse(source_text).body:
        if isinstance(node, ast.ClassDef) and node.name == "Session":
            return sorted(n.name for n in node.body
                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_"))
    return []


def undocumented(names, page_text):
    return [n for n in names if not re.search(r"(?<![\w])%s(?![\w])" % re.escape(n), page_text)]


def check_api(contents):
    """The API check (see the module docstring); skipped where a tree has no such files."""
    problems = []
    for source, page, names, what in (
            (C_HEADER, C_PAGE, c_functions, "function %s is declared"),
            (PY_SESSION, PY_PAGE, session_members, "Session.%s is public")):
        if contents.get(source) is None:
            continue
        page_text = contents.get(page) or ""
        for n in undocumented(names(contents[source]), page_text):
            problems.append("%s: %s but %s does not mention it" % (source, what % n, page))
    return problems


def check(root):
    files = tracked_files(root)
    names = {os.path.basename(f) for f in files}
    contents = {}
    problems = []
    for f in files:
        with open(os.path.join(root, f), "rb") as fh:
            data = fh.read()
        for m in ABSOLUTE.finditer(data):
            line = data.count(b"\n", 0, m.start()) + 1
            problems.append("%s:%d: absolute machine path %r" % (f, line, m.group(0).decode("utf-8", "replace")))
        contents[f] = text_of(data)
    sections_of = {f: headings(t) for f, t in contents.items() if f.endswith(".md") and t is not None}

    for f, text in contents.items():
        if text is None or f == "tests/check_repo.py":
            continue
        here = os.path.dirname(f)
        for n, line in enumerate(text.splitlines(), 1):
            where = "%s:%d" % (f, n)
            for m in DOCS_REF.finditer(line):
                if m.group(0) not in contents:
                    problems.append("%s: %s does not exist" % (where, m.group(0)))
            for m in MD_NAME.finditer(line):
                if m.group(1) not in names:
                    problems.append("%s: %s is no file of the repository" % (where, m.group(1)))
            if f.endswith(".md"):
                for m in MD_LINK.finditer(line):
                    target = os.path.normpath(os.path.join(here, m.group(1)))
                    if "://" not in m.group(1) and target not in contents:
                        problems.append("%s: link %s does not resolve" % (where, m.group(1)))
            for m in SECTION_REF.finditer(line):
                before = [x.group(1) for x in MD_MENTION.finditer(line[:m.start()])]
                if before:
                    ref = before[-1]
                    page = ref if ref in contents else os.path.normpath(os.path.join(here, ref))
                elif f.startswith("docs/") and f.endswith(".md"):
                    page = f
                else:
                    problems.append("%s: %s%s names no page (write docs/<page>.md before it on the line)"
                                    % (where, SECTION, m.group(1)))
                    continue
                if page not in sections_of:
                    problems.append("%s: %s%s points into %s, which is no markdown page of the repository"
                                    % (where, SECTION, m.group(1), page))
                elif m.group(1) not in sections_of[page]:
                    problems.append("%s: %s has no section %s" % (where, page, m.group(1)))
        if os.path.dirname(f) == "shaders" and f.endswith(".comp"):
            if all(WRAPPER_LINE.match(line) for line in C_COMMENT.sub("", text).splitlines()):
                problems.append("%s: a bare wrapper of a shaders/common body: write it as a line of "
                                "shaders/variants.cmake" % f)
        if (f.endswith(".sh") or f.startswith(".ci/")) and PIPEFAIL.search(text):
            for n, line in enumerate(text.splitlines(), 1):
                if PIPE_GREP_Q.search(line.split("#", 1)[0]):
                    problems.append("%s:%d: a pipe into grep -q under pipefail fails at random (SIGPIPE to the "
                                    "writer); grep the whole input (drain_grep)" % (f, n))
        if f.startswith(LIBRARY_SOURCES):
            for m in ENV_READ.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                problems.append("%s:%d: %s: the library reads no environment (take it in ContextOptions; the "
                                "programs read RFA_* through rfa/environment.hpp)" % (f, line, m.group(0)))
        if not f.startswith(TWIN_OK) and f.endswith((".c", ".cc", ".cpp", ".h", ".hpp")):
            for m in INCLUDE.finditer(text):
                if TWIN_INCLUDE.match(m.group(1)):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append("%s:%d: includes the CPU twin's %s outside rfa_reference, the tests and "
                                    "--cpu-reference" % (f, line, m.group(1)))
        if not f.startswith(INTERNAL_OK) and f.endswith((".c", ".cc", ".cpp", ".h", ".hpp")):
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                if os.path.exists(os.path.join(root, "runtime", "src", inc)):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append("%s:%d: includes the private header %s (use runtime/include/rfa)" % (f, line, inc))
    return problems + check_api(contents)


def self_test():
    """Each check must flag its bad case and pass the good one."""
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)) or root, exist_ok=True)
            with open(os.path.join(root, path), "w") as fh:
                fh.write(text)
        write("docs/math.md", "# Math\n\n## 5. Regimes\n\n### 5.1 Sub\n\nSee " + SECTION + "5 and " + SECTION + "5.1.\n")
        write("runtime/src/model/model.hpp", "// private\n")
        write("runtime/include/rfa/x.hpp", "// public\n")
        write("good.cpp", '#include "rfa/x.hpp"\n// docs/math.md ' + SECTION + "5.1, " + SECTION + "5\n")
        write("tests/t.cpp", '#include "model/model.hpp"\n#include "reference/ops_ref.hpp"\n')
        write("runtime/src/reference/ops_ref.hpp", "// the twin\n")
        write("runtime/src/reference/ops_ref.cpp", '#include "reference/ops_ref.hpp"\n')
        write("tools/rfa-run/main.cpp", '#include "rfa/reference.hpp"\n')
        write("tools/rfa-run/args.cpp", "// reads RFA_MODEL with std::getenv, as a program may\n")
        write("shaders/kernel.comp", '#version 450\n#include "b.glsl"\nvoid main() {}\n')
        write(C_PAGE, "# C\n\n`rfa_documented`\n")
        write(PY_PAGE, "# Python\n\n`documented()`, `position`\n")
        write(C_HEADER, "/* rfa_in_a_comment(void) */\nint rfa_documented(int x);\n")
        write(PY_SESSION, "class Session:\n    def documented(self): pass\n    @property\n"
                          "    def position(self): pass\n    def _private(self): pass\n")
        if check(root):
            print("self-test: a clean tree was flagged:", check(root))
            return 1
        bad = {
            "abs.txt": "made in /" + "home/someone/x\n",
            "dangling.cpp": "// docs/nothing.md\n",
            "section.cpp": "// docs/math.md " + SECTION + "6\n",
            "bare.cpp": "// see " + SECTION + "5\n",
            "old.cpp": "// the Regimes panel (RFA" + ".md 5)\n",
            "viewer/v.cpp": '#include "model/model.hpp"\n',
            "runtime/src/gpu/env.cpp": 'const char* v = std::getenv("RFA_DEVICE");\n',
            "runtime/src/core/win.cpp": "GetEnvironmentVariableA(name, buf, n);\n",
            "runtime/src/capi/twin.cpp": '#include "reference/ops_ref.hpp"\n',
            "runtime/src/core/self.cpp": '#include "rfa/reference.hpp"\n',
            "viewer/twin.cpp": '#include "rfa/reference.hpp"\n',
            "tools/rfa-run/args.cpp": '#include "reference/model_ref.hpp"\n',
            "docs/link.md": "# L\n\n[x](sub/math.md)\n",
            "tests/pipe.sh": "#!/bin/sh\nset -euo pipefail\nldd x | grep -q libz || exit 1\n",
            "shaders/wrap.comp": "#version 450\n// a variant\n#extension GL_GOOGLE_include_directive : require\n"
                                 "#define RFA_KV_F16 1\n#include \"body.glsl\"\n",
            C_HEADER: "int rfa_documented(int x);\nRFA_API rfa_status rfa_new_call(const rfa_session* s);\n",
            PY_SESSION: "class Session:\n    def documented(self): pass\n    def new_method(self): pass\n",
        }
        failed = 0
        for path, text in bad.items():
            write(path, text)
            found = [p for p in check(root) if p.startswith(path)]
            print("self-test: %-14s -> %s" % (path, found[0] if found else "NOT CAUGHT"))
            failed += not found
            os.remove(os.path.join(root, path))
            if path in (C_HEADER, PY_SESSION):  # leave the documented version for the next case
                write(C_HEADER, "int rfa_documented(int x);\n")
                write(PY_SESSION, "class Session:\n    def documented(self): pass\n")
        return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    print("check_repo: %d problem(s) in %s" % (len(problems), root))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
