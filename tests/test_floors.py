"""The floors of the package: no module imports from a floor above its own.

Every import of every module of ``accounting/`` is read from its syntax tree
(module level and inside functions, ``import x`` and ``from x import y``, relative
imports resolved; nothing is imported to find them), each module is put on its floor
(``FLOORS``, from the ground up, as in the design document) and the imports are
checked against the rules:

* no module imports from a floor above its own;
* the registry (a leaf store every floor may read) imports nothing of ``accounting``
  but ``vocabulary``, ``validation`` and its own package;
* no cycle between packages (a top-level module counts as its own package), none
  between modules at module level, and none among the numerics modules;
* the core never imports a plugin;
* the deprecated alias modules are imported by nothing in the package;
* few imports inside functions reach the package's own modules (each one hides a
  dependency, or a cycle, from the reader and costs a lookup per call); up to the
  pairs, only the few listed in ``CORE_FUNCTION_LEVEL``.

Run as a script (``python tests/test_floors.py [ROOT]``) it prints the import
counts and the violations of the tree at ROOT (default: this checkout).
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from typing import Iterator, NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "accounting"
PLUGINS = ("accounting_mechanisms", "accounting_rkrd", "accounting_onerun", "accounting_bridges")

#: floor of each unit (a subpackage or a top-level module of ``accounting``), from
#: the ground up; the package ``__init__`` and the deprecated aliases are the top
FLOORS: dict[str, int] = {
    "vocabulary": 0, "validation": 0, "progress": 0,
    "registry": 1,            # the leaf store: every floor above may read it
    "numerics": 2,
    "curves": 3,              # with their converters: conversion is the curves' own algebra
    "pairs": 4,               # with composed pairs
    "ledger": 5,
    "accountant": 6,
    "serialization": 7,
    "analysis": 8, "parallel": 8, "workload": 8, "plot": 8, "testing": 8,
    "adaptive": 8,            # filters, odometers, group privacy (reads analysis.clt)
    "cli": 9, "__main__": 9,
    "__init__": 10, "deprecated": 10,
    # deprecated aliases of moved modules, kept for one release: nothing imports them
    "conversion": 10, "composition": 10,
}

#: what the registry may import of the package (besides itself)
REGISTRY_MAY_IMPORT = {"vocabulary", "validation", "registry"}

#: modules kept for one release as deprecated aliases of moved ones: nothing imports them
DEPRECATED_ALIASES = {"accounting.conversion.graph", "accounting.conversion.converters",
                      "accounting.composition"}

#: the one name a module may take from the package root: the version, written once in
#: ``accounting/__init__`` (the root is loaded before any of its modules anyway)
ROOT_NAMES = {"__version__"}

#: the most imports of the package's own modules that may sit inside functions
#: (measured by ``counts``: 94 before the floors were drawn, 58 after; those left are
#: above the pairs, where a command, a plot or a reader loads what it needs late)
MAX_FUNCTION_LEVEL_OWN = 58

#: on the floors up to the pairs, the only imports inside functions: within one
#: package, each where the imported module imports the importing one
CORE_FUNCTION_LEVEL = {
    ("accounting.curves.curve", "accounting.curves.graph"),      # Curve.to, answered_by
    ("accounting.pairs.pair", "accounting.pairs.derive"),        # Pair.curve
    ("accounting.pairs.pair", "accounting.pairs.composed"),      # Pair.self_compose
    ("accounting.registry.registry", "accounting.registry.auditor"),  # numpy, when needed
}


class Import(NamedTuple):
    """One import statement's reach into one module (a statement naming several
    modules, ``from accounting.curves import pld, rdp``, is one per module)."""

    module: str            # the importing module, dotted
    target: str            # the imported module (or package), dotted
    line: int
    in_function: bool
    names: tuple = ()      # the names taken from ``target`` by ``from target import ...``


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package under ``root``: dotted name → file."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def resolve_relative(module: str, is_package: bool, level: int, name: Optional[str]) -> str:
    """The absolute module of a relative import ``from .{level}{name} import ...``."""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(root: Path = ROOT) -> tuple[Import, ...]:
    """Every import statement of every module, with the module it reaches.

    ``from x import y`` reaches ``x.y`` when that is a module of the package, else ``x``.
    """
    return _imports(root)


@functools.lru_cache(maxsize=None)
def _imports(root: Path) -> tuple[Import, ...]:
    return tuple(_walk(root))


def _walk(root: Path) -> Iterator[Import]:
    mods = modules(root)
    for module, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        functions = [n for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
        inside = {id(n) for f in functions for n in ast.walk(f) if n is not f}
        for node in ast.walk(tree):
            in_function = id(node) in inside
            if isinstance(node, ast.Import):
                for target in dict.fromkeys(alias.name for alias in node.names):
                    yield Import(module, target, node.lineno, in_function)
            elif isinstance(node, ast.ImportFrom):
                source = (resolve_relative(module, is_package, node.level, node.module) if node.level
                          else node.module or "")
                reach: dict[str, list[str]] = {}
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    reach.setdefault(sub if sub in mods else source, []).append(alias.name)
                for target, names in reach.items():
                    yield Import(module, target, node.lineno, in_function, tuple(names))


def own(target: str) -> bool:
    return target == PACKAGE or target.startswith(PACKAGE + ".")


def unit(module: str) -> str:
    """The package (or top-level module) a module belongs to: ``accounting.curves.pld``
    → ``curves``; ``accounting`` → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor(module: str) -> int:
    return FLOORS[unit(module)]


def _package_cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def violations(root: Path = ROOT) -> dict[str, list[str]]:
    """What breaks each rule, as readable lines (empty lists when all is well)."""
    found = list(imports(root))
    mods = modules(root)
    upward, registry, plugins, aliases = [], [], [], []
    edges: set[tuple[str, str]] = set()
    for imp in found:
        where = f"{imp.module}:{imp.line}{' (in a function)' if imp.in_function else ''}"
        if imp.target.partition(".")[0] in PLUGINS:
            plugins.append(f"{where} imports the plugin {imp.target}")
        if not own(imp.target) or (imp.target == PACKAGE and set(imp.names) <= ROOT_NAMES
                                   and imp.names):
            continue
        if imp.target in DEPRECATED_ALIASES and imp.module != imp.target:
            aliases.append(f"{where} imports the deprecated alias {imp.target}")
        target = imp.target if imp.target in mods else imp.target.rpartition(".")[0]
        if floor(target) > floor(imp.module):
            upward.append(f"{where} imports {imp.target} (floor {floor(target)} > "
                          f"{floor(imp.module)})")
        if unit(imp.module) == "registry" and unit(target) not in REGISTRY_MAY_IMPORT:
            registry.append(f"{where} imports {imp.target}")
        if unit(imp.module) != unit(target):
            edges.add((unit(imp.module), unit(target)))
    cycles = [" → ".join(c) for c in _package_cycles(edges)]
    # between modules: no cycle at module level (import order would matter), and none at
    # all among the numerics (each algorithm a module of its own)
    top = {(i.module, i.target) for i in found if own(i.target) and not i.in_function
           and i.target in mods and i.target != i.module}
    numerics = {(i.module, i.target) for i in found if unit(i.module) == "numerics"
                and i.target in mods and unit(i.target) == "numerics" and i.target != i.module}
    cycles += [f"modules {' → '.join(c)}" for c in _package_cycles(top)]
    cycles += [f"numerics {' → '.join(c)}" for c in _package_cycles(numerics)]
    return {"upward": upward, "registry": registry, "cycles": cycles, "plugins": plugins,
            "aliases": aliases}


def counts(root: Path = ROOT) -> dict[str, int]:
    """Imports inside functions: all of them, and those of the package's own modules."""
    inside = [i for i in imports(root) if i.in_function]
    return {"function-level": len(inside),
            "function-level own": sum(own(i.target) for i in inside)}


# ------------------------------------------------------------------ the tests
def test_every_module_has_a_floor():
    assert {unit(m) for m in modules()} <= set(FLOORS)


def test_no_module_imports_from_a_floor_above():
    assert violations()["upward"] == []


def test_the_registry_is_a_leaf():
    assert violations()["registry"] == []


def test_no_cycle_between_packages():
    assert violations()["cycles"] == []


def test_the_core_imports_no_plugin():
    assert violations()["plugins"] == []


def test_nothing_imports_a_deprecated_alias():
    assert violations()["aliases"] == []


def test_few_function_level_imports_of_the_package():
    assert counts()["function-level own"] <= MAX_FUNCTION_LEVEL_OWN
    core = {(i.module, i.target) for i in imports()
            if i.in_function and own(i.target) and floor(i.module) <= FLOORS["pairs"]}
    assert core <= CORE_FUNCTION_LEVEL, sorted(core - CORE_FUNCTION_LEVEL)


def test_the_walk_sees_function_level_and_relative_imports(tmp_path):
    """The walker itself: a cycle hidden inside a function and a relative import."""
    pkg = tmp_path / PACKAGE
    (pkg / "curves").mkdir(parents=True)
    (pkg / "pairs").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "curves" / "__init__.py").write_text("")
    (pkg / "pairs" / "__init__.py").write_text("")
    (pkg / "curves" / "curve.py").write_text("def to():\n    from ..pairs import pair\n")
    (pkg / "pairs" / "pair.py").write_text("from accounting.curves.curve import to\n")
    found = violations(tmp_path)
    assert found["upward"] == ["accounting.curves.curve:2 (in a function) imports "
                               "accounting.pairs.pair (floor 4 > 3)"]
    assert found["cycles"] == ["curves → pairs"]
    assert counts(tmp_path) == {"function-level": 1, "function-level own": 1}


if __name__ == "__main__":
    where = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    print(counts(where))
    for rule, lines in violations(where).items():
        print(f"{rule}: {len(lines)}")
        for line in lines:
            print("   ", line)
