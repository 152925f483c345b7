"""The package's imports go one way (issue 28): every module has a layer in
sluice.LAYERS (a module of sluice.core or sluice.runtime that of its
package), imports only from its own layer or a lower one, the import graph
between modules has no cycle, and no function imports a sluice module (a
function-local import is how a cycle hides).

Modules are parsed with ast, not imported: an import inside ``if
TYPE_CHECKING:`` at module level counts like any other."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import sluice

PKG = Path(sluice.__file__).resolve().parent

# Function-local imports of sluice modules that are kept, each for import
# cost: FastAPI (api, and up, which serves it) adds about 0.4 s and the
# placement solvers more to every CLI command that does not use them, and
# the dashboard is imported only when the app is built with it. The list
# only shrinks: one that is gone must be deleted from it.
LOCAL_BASELINE: set[tuple[str, str]] = {
    ("api", "web"),
    ("cli", "api"),
    ("cli", "placement"),
    ("cli", "up"),
}


def dotted(path: Path) -> list[str]:
    parts = ["sluice", *path.relative_to(PKG).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


# Packages whose modules are each a node of the import graph, in the layer
# named like the package: sluice.core.graph is "core.graph", layer "core".
LAYER_PACKAGES = ("core", "runtime")


def unit(name: list[str]) -> str:
    """A node of the import graph: a module of a layer package (the package's
    __init__ is "core" itself), else the top-level module or package."""
    if len(name) == 1:
        return "__init__"
    if name[1] in LAYER_PACKAGES and len(name) > 2:
        return f"{name[1]}.{name[2]}"
    return name[1]


def top(u: str) -> str:
    """The LAYERS name a node is listed under: its package, for a layer package."""
    return u.split(".")[0]


def is_module(name: list[str]) -> bool:
    p = PKG.joinpath(*name[1:])
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def imports(path: Path) -> list[tuple[list[str], bool, int]]:
    """(imported sluice module, inside a function, line) for each import."""
    tree = ast.parse(path.read_text(), str(path))
    me = dotted(path)
    package = me if path.name == "__init__.py" else me[:-1]
    out: list[tuple[list[str], bool, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            local = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef
                                              | ast.Lambda)
            if isinstance(child, ast.Import):
                for a in child.names:
                    if a.name.split(".")[0] == "sluice":
                        out.append((a.name.split("."), local, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[:len(package) - child.level + 1]
                elif (child.module or "").split(".")[0] == "sluice":
                    base = []
                else:
                    continue
                target = base + (child.module.split(".") if child.module else [])
                if child.module is None:
                    for a in child.names:
                        sub = target + [a.name]
                        out.append((sub if is_module(sub) else target, local, child.lineno))
                else:
                    out.append((target, local, child.lineno))
            visit(child, local)

    visit(tree, False)
    return out


def modules() -> dict[Path, str]:
    return {p: unit(dotted(p)) for p in sorted(PKG.rglob("*.py"))}


def layer_of() -> dict[str, int]:
    return {m: i for i, (_, mods) in enumerate(sluice.LAYERS) for m in mods}


def test_every_module_is_in_one_layer() -> None:
    names = [m for _, mods in sluice.LAYERS for m in mods]
    assert len(names) == len(set(names)), "a module is in two layers"
    found = {top(u) for u in modules().values()}
    assert found - set(names) == set(), "modules missing from sluice.LAYERS"
    assert set(names) - found == set(), "sluice.LAYERS names modules that do not exist"


def test_a_layer_package_is_in_the_layer_of_its_name() -> None:
    # sluice.core's modules are the core layer, sluice.runtime's the runtime one
    for pkg in LAYER_PACKAGES:
        assert (PKG / pkg / "__init__.py").is_file(), f"sluice.{pkg} is not a package"
        (layer,) = [name for name, mods in sluice.LAYERS if pkg in mods]
        assert layer == pkg


def test_imports_go_down_and_form_no_cycle() -> None:
    layer = layer_of()
    graph: nx.DiGraph = nx.DiGraph()
    upward = []
    for path, me in modules().items():
        graph.add_node(me)
        for target, _, line in imports(path):
            other = unit(target)
            if other == me:
                continue
            graph.add_edge(me, other)
            mine, theirs = layer[top(me)], layer[top(other)]
            if theirs > mine:
                upward.append(f"{path.relative_to(PKG)}:{line}: {me} "
                              f"({sluice.LAYERS[mine][0]}) imports {other} "
                              f"({sluice.LAYERS[theirs][0]})")
    assert upward == []
    assert list(nx.simple_cycles(graph)) == []


def test_no_function_local_import_of_a_sluice_module() -> None:
    local = {}
    for path, me in modules().items():
        for target, in_function, line in imports(path):
            # inside one package (placement/ imports its solvers when a
            # command runs: they are slow to import) is the package's own affair
            if in_function and unit(target) != me:
                local.setdefault((me, unit(target)), f"{path.relative_to(PKG)}:{line}")
    new = {k: v for k, v in local.items() if k not in LOCAL_BASELINE}
    assert new == {}, "function-local imports of sluice modules: import at module top"
    fixed = LOCAL_BASELINE - set(local)
    assert fixed == set(), "fixed: delete these from LOCAL_BASELINE"


def test_the_checker_reads_relative_imports() -> None:
    # `from . import container` at module top, `from ..core.deploy import` one level down
    assert (["sluice", "runtime", "container"], False) in [
        (t, f) for t, f, _ in imports(PKG / "runtime" / "procs.py")]
    assert (["sluice", "core", "deploy"], False) in [
        (t, f) for t, f, _ in imports(PKG / "placement" / "io.py")]
    assert unit(["sluice", "core", "deploy"]) == "core.deploy"
    assert unit(["sluice", "core"]) == "core"
    assert unit(["sluice", "placement", "io"]) == "placement"
    assert (["sluice", "placement", "cli"], True) in [
        (t, f) for t, f, _ in imports(PKG / "cli" / "main.py")]


# What the core layer may not import: it opens no socket, starts no process
# and runs no thread or event loop (DESIGN.md, "Code structure": sluice.core
# is pure), so its decisions can be tested without a host.
IO_MODULES = {"socket", "socketserver", "subprocess", "multiprocessing", "threading",
              "asyncio", "selectors", "select", "signal", "http", "urllib", "ssl",
              "httpx", "uvicorn", "fastapi", "websockets"}
# core.sluiced_defaults runs the built sluiced once, lazily, for its option
# table (`sluiced --defaults-json`): the one description of sluiced's options.
IO_ALLOWED = {("core.sluiced_defaults", "subprocess")}


def test_core_opens_no_socket_and_starts_no_process() -> None:
    found = set()
    for path, me in modules().items():
        if not me.startswith("core"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for n in names:
                if n.split(".")[0] in IO_MODULES:
                    found.add((me, n.split(".")[0]))
    assert found - IO_ALLOWED == set(), "I/O in sluice.core: it belongs in sluice.runtime"
    assert IO_ALLOWED - found == set(), "gone: delete these from IO_ALLOWED"
