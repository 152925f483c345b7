#!/usr/bin/env python3
"""Structure rules of issue 28's "Done when", checked over the tree.

    scripts/check_structure.py [--root DIR] [--list]

Rules (each offence is named by path and a stable "what", never by a line
number, so that edits elsewhere in a file do not change it):

* ``lines``: no C (.c, .h) or Python file over MAX_FILE_LINES lines;
* ``function NAME``: no function over MAX_FUNCTION_LINES lines. C: a
  brace-matching scan of top-level function bodies (a brace block after a
  parameter list; initialisers such as ``static const struct x t[] = {``
  and struct/enum bodies are data, not functions). Python: every ``def``,
  by ``ast`` (nested ones on their own, as ``outer.inner``);
* ``extern NAME``: no ``extern`` mutable variable declared in a header
  under src/ (a ``const`` object, or a pointer that is itself const, is
  allowed);
* ``mutable NAME``: no mutable file-scope variable in src/mgr/, except a
  thread-local one (``__thread``, ``_Thread_local``, ``RTE_DEFINE_PER_LCORE``)
  documented by a comment right above it or on its line, and except what a
  callback that is given no context must reach (a POSIX signal handler;
  DPDK 22.11's telemetry callbacks): its comment right above it carries the
  marker ``check_structure: no-context`` and says which callback;
* ``errors``: in src/mgr/ and src/nflib/, no ``return -1;`` nor
  ``return -EXXX;``: sluiced's and libsluice's internal functions fail with
  a positive errno (docs/architecture.md, "Errors"). A line that keeps
  another convention on purpose says which in a comment on it: ``none``
  (a lookup's documented not-found -1), ``NF API`` (the public NF API's
  -errno), ``DPDK`` or ``rte_`` (a value in DPDK's convention).

Data tables are excepted: a C initialiser is never a function; a file or a
Python function that is a table says so with the marker comment
``check_structure: data-table`` (a file: in its first 30 lines; a function:
on its ``def`` line or the line above it).

BASELINE holds today's offenders, path -> the set of what. An offence not in
it fails, and so does a baseline entry that no longer offends ("fixed:
delete from BASELINE"), so the baseline only shrinks. Exit status 1 on any
failure, 0 otherwise; --list prints every offence found, baseline or not,
as a BASELINE literal.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 120
MARKER = "check_structure: data-table"
NO_CONTEXT = "check_structure: no-context"
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", "subprojects", ".ruff_cache",
             ".pytest_cache", ".mypy_cache", ".hypothesis"}
C_SUFFIXES = {".c", ".h"}

# Offences present when the checker was written. Shrink it as files are split;
# never add to it.
BASELINE: dict[str, set[str]] = {
}

# Files allowed an "errors" offence: none now; never add.
ERRORS_BASELINE: set[str] = set()
for _rel in ERRORS_BASELINE:
    BASELINE.setdefault(_rel, set()).add("errors")


def _skipped(rel: Path) -> bool:
    return any(part in SKIP_DIRS or part == "build" or part.startswith("build-")
               for part in rel.parts[:-1])


def source_files(root: Path) -> Iterator[Path]:
    """Every C and Python file under root, build trees and caches left out."""
    for p in sorted(root.rglob("*")):
        if p.suffix not in C_SUFFIXES | {".py"} or not p.is_file():
            continue
        if not _skipped(p.relative_to(root)):
            yield p


# --- C --------------------------------------------------------------------

def strip_c(text: str) -> str:
    """Comments, string and character literals and preprocessor lines blanked
    out (newlines kept, so offsets keep their line numbers)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # a directive, with its backslash continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else c)
            i = j
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def _match(text: str, i: int, open_c: str, close_c: str) -> int:
    """Index just past the bracket matching text[i] (== open_c)."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


_IDENT = re.compile(r"[A-Za-z_]\w*")
_ATTR_TAIL = re.compile(r"(\s*(__attribute__\s*\(\(.*?\)\)|__rte_\w+|\w+_attribute\w*))*\s*$", re.S)


def _function_name(header: str) -> str | None:
    """The function's name if header (the text before a top-level '{') ends
    with a parameter list, else None (an initialiser, a struct, ...)."""
    h = _ATTR_TAIL.sub("", header).rstrip()
    if not h.endswith(")") or "=" in h.replace("==", ""):
        return None
    depth = 0
    for j in range(len(h) - 1, -1, -1):
        if h[j] == ")":
            depth += 1
        elif h[j] == "(":
            depth -= 1
            if depth == 0:
                names = _IDENT.findall(h[:j])
                return names[-1] if names else None
    return None


def c_scan(text: str) -> tuple[list[tuple[str, int, int]], list[tuple[str, int]]]:
    """Top-level functions (name, first line, lines) and top-level
    statements (text, first line) of a C file."""
    s = strip_c(text)
    functions: list[tuple[str, int, int]] = []
    statements: list[tuple[str, int]] = []
    acc: list[str] = []
    acc_start = 0
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if not c.isspace() and not any(x.strip() for x in acc):
            acc_start = i
        if c == "{":
            header = "".join(acc)
            if re.search(r"\bextern\s*$", header):  # extern "C" { ... }
                acc = []
                i += 1
                continue
            end = _match(s, i, "{", "}")
            name = _function_name(header)
            if name is not None:
                first = s.count("\n", 0, acc_start) + 1
                last = s.count("\n", 0, end) + 1
                functions.append((name, first, last - first + 1))
                acc = []
            else:
                acc.append("{}")
            i = end
            continue
        if c == "}":  # the closing brace of extern "C"
            acc = []
            i += 1
            continue
        if c == "(":
            end = _match(s, i, "(", ")")
            acc.append(s[i:end])
            i = end
            continue
        if c == ";":
            stmt = " ".join("".join(acc).split())
            if stmt:
                statements.append((stmt, s.count("\n", 0, acc_start) + 1))
            acc = []
            i += 1
            continue
        acc.append(c)
        i += 1
    return functions, statements


_THREAD_LOCAL = re.compile(r"\b(__thread|_Thread_local|thread_local)\b|RTE_DEFINE_PER_LCORE")


def _no_context(lines: list[str], lineno: int) -> bool:
    """A file-scope variable that a context-free callback must reach: the
    comment block right above line lineno (1-based) has the NO_CONTEXT marker."""
    k = lineno - 2
    while k >= 0 and lines[k].lstrip().startswith(("/*", "*", "//")):
        if NO_CONTEXT in lines[k]:
            return True
        k -= 1
    return False


def c_variables(stmt: str) -> list[tuple[str, bool, bool]]:
    """The variables a top-level statement declares or defines: (name,
    is const, is thread-local). Empty for prototypes, types and macros."""
    if re.match(r"(typedef|_Static_assert|static_assert)\b", stmt):
        return []
    if re.match(r"RTE_DEFINE_PER_LCORE\s*\(", stmt):
        inner = stmt[stmt.index("(") + 1:stmt.rindex(")")]
        return [(inner.split(",")[-1].strip(), False, True)]
    decl = stmt.split("=", 1)[0].strip()
    # strip a struct/union/enum body: what remains is its declarators
    decl = decl.replace("{}", " ")
    parts = [p.strip() for p in _split_top(decl, ",")]
    if not parts or not parts[0]:
        return []
    first = parts[0]
    words = _IDENT.findall(re.sub(r"\[.*?\]", "", first))
    if not words or re.fullmatch(r"(struct|union|enum)(\s+\w+)?", first):
        return []
    if "(" in first and not re.search(r"\(\s*\*", first):
        return []  # a prototype or a macro call
    thread_local = bool(_THREAD_LOCAL.search(first))
    base_const = "const" in first.split("*")[0].split()
    out = []
    for k, p in enumerate(parts):
        text = p if k else first
        names = _IDENT.findall(re.sub(r"\[.*?\]|\(\s*\*|\)\s*\(.*\)", " ", text))
        if not names:
            continue
        name = names[-1]
        # const only counts where it binds the object: after the last '*'
        const = "const" in text.rsplit("*", 1)[1].split() if "*" in text else base_const
        out.append((name, const, thread_local))
    return out


def _split_top(text: str, sep: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _documented(lines: list[str], lineno: int, name: str) -> bool:
    """A comment on the declaration's line, one ending on the line above, or
    one that names the variable in the 15 lines above."""
    here = lines[lineno - 1] if lineno - 1 < len(lines) else ""
    above = lines[lineno - 2].strip() if lineno >= 2 else ""
    if "/*" in here or "//" in here or above.endswith("*/") or above.startswith("//"):
        return True
    word = re.compile(rf"\b{re.escape(name)}\b")
    return any(word.search(ln) and re.match(r"\s*(\*|/\*|//)", ln)
               for ln in lines[max(0, lineno - 16):lineno - 1])


# --- checks ---------------------------------------------------------------

_NEG_RETURN = re.compile(r"\breturn\s+-\s*(1|E[A-Z0-9]+)\s*;")
_CONVENTION = re.compile(r"/\*.*\b(none|NF API|DPDK|rte_\w*)")


def negative_returns(text: str) -> list[int]:
    """Lines (1-based) of a C file that return -1 or a negative errno
    without a comment on the line naming the convention they keep."""
    lines = text.splitlines()
    out = []
    for k, code in enumerate(strip_c(text).splitlines()):
        if _NEG_RETURN.search(code) and not _CONVENTION.search(lines[k]):
            out.append(k + 1)
    return out


def _marked(lines: list[str], lineno: int) -> bool:
    return any(MARKER in lines[k] for k in (lineno - 2, lineno - 1) if 0 <= k < len(lines))


def offences(root: Path) -> dict[str, dict[str, str]]:
    """path -> what -> a message with the figures."""
    found: dict[str, dict[str, str]] = {}

    def add(rel: str, what: str, msg: str) -> None:
        found.setdefault(rel, {})[what] = msg

    for p in source_files(root):
        rel = p.relative_to(root).as_posix()
        text = p.read_text(errors="replace")
        lines = text.splitlines()
        file_table = any(MARKER in ln for ln in lines[:30])
        if len(lines) > MAX_FILE_LINES and not file_table:
            add(rel, "lines", f"{len(lines)} lines (at most {MAX_FILE_LINES})")
        if p.suffix == ".py":
            try:
                tree = ast.parse(text, filename=rel)
            except SyntaxError as e:
                add(rel, "syntax", f"does not parse: {e.msg} (line {e.lineno})")
                continue
            for qual, node in _py_functions(tree):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES and not _marked(lines, node.lineno):
                    add(rel, f"function {qual}",
                        f"function {qual} (line {node.lineno}) is {length} lines "
                        f"(at most {MAX_FUNCTION_LINES})")
            continue
        functions, statements = c_scan(text)
        for name, first, length in functions:
            if length > MAX_FUNCTION_LINES and not _marked(lines, first):
                add(rel, f"function {name}",
                    f"function {name} (line {first}) is {length} lines "
                    f"(at most {MAX_FUNCTION_LINES})")
        in_src = rel.startswith("src/")
        in_mgr = rel.startswith("src/mgr/")
        if in_mgr or rel.startswith("src/nflib/"):
            neg = negative_returns(text)
            if neg:
                add(rel, "errors",
                    f"{len(neg)} return(s) of -1 or -EXXX (lines "
                    f"{', '.join(map(str, neg[:8]))}{'...' if len(neg) > 8 else ''}); "
                    "return a positive errno, or name the convention kept in a "
                    "comment on the line")
        for stmt, lineno in statements:
            is_extern = re.match(r"(\w+\s+)*extern\b", stmt) is not None
            if not (in_src and p.suffix == ".h" and is_extern) and not (in_mgr and not is_extern):
                continue
            for name, const, tls in c_variables(stmt):
                if const:
                    continue
                if is_extern:
                    add(rel, f"extern {name}",
                        f"extern mutable variable {name} (line {lineno}) in a src/ header")
                elif _no_context(lines, lineno):
                    continue
                elif not (tls and _documented(lines, lineno, name)):
                    add(rel, f"mutable {name}",
                        f"mutable file-scope variable {name} (line {lineno}) in src/mgr"
                        + (" (thread-local, but no comment says why)" if tls else ""))
    return found


def _py_functions(tree: ast.AST) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef
                                                           | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qual = prefix + child.name
                yield qual, child
                yield from walk(child, qual + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)
    yield from walk(tree, "")


def check(root: Path, baseline: dict[str, set[str]]) -> list[str]:
    """The failures: new offences, and baseline entries that are fixed."""
    found = offences(root)
    failures = []
    for rel in sorted(found):
        for what in sorted(found[rel]):
            if what not in baseline.get(rel, set()):
                failures.append(f"{rel}: {found[rel][what]}")
    for rel in sorted(baseline):
        for what in sorted(baseline[rel]):
            if what not in found.get(rel, {}):
                failures.append(f"{rel}: fixed: delete from BASELINE: {what!r}")
    return failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="tree to check (this repository)")
    ap.add_argument("--list", action="store_true",
                    help="print every offence found as a BASELINE literal and exit")
    a = ap.parse_args(argv)
    if a.list:
        found = offences(a.root)
        print("BASELINE: dict[str, set[str]] = {")
        for rel in sorted(found):
            whats = ", ".join(repr(w) for w in sorted(found[rel]))
            print(f"    {rel!r}: {{{whats}}},")
        print("}")
        return 0
    failures = check(a.root, BASELINE)
    if failures:
        print("check_structure: the tree breaks issue 28's structure rules "
              f"(files <= {MAX_FILE_LINES} lines, functions <= {MAX_FUNCTION_LINES}, no extern "
              "mutable global in src/ headers, no mutable file-scope variable in src/mgr, "
              "errors as 0 or a positive errno in src/mgr and src/nflib):",
              file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        print(f"check_structure: {len(failures)} failure(s); split what is new, and delete "
              "fixed entries from BASELINE in scripts/check_structure.py", file=sys.stderr)
        return 1
    n = sum(len(v) for v in BASELINE.values())
    print(f"check_structure: ok ({n} baseline offences left)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
