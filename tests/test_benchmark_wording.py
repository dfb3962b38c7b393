"""What the benchmarks print is for users: no internal wording (issue numbers, pass
or fail against an internal target), read from the source without running them.

Every string a ``print()`` call is given (f-string parts included) and the first line
of each script's docstring (its ``--help`` description) are checked.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py"))
INTERNAL = re.compile(r"\bissues?\s+\d+|\bnot met\b|^\s*met\s*$", re.I)


def printed_strings(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "print"):
            for arg in ast.walk(node):
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out.append((arg.lineno, arg.value))
    return out


def test_the_checker_catches_internal_wording():
    bad = ast.parse("print(f'issue 11 target: {\"met\" if x else \"not met\"}')")
    assert [s for _, s in printed_strings(bad) if INTERNAL.search(s)]
    good = ast.parse("print(f'speed-up {x:.2f}×, target (ε, δ) = (1, 1e-5), metre')")
    assert not [s for _, s in printed_strings(good) if INTERNAL.search(s)]


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_prints_no_internal_wording(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [(line, text) for line, text in printed_strings(tree) if INTERNAL.search(text)]
    doc = ast.get_docstring(tree) or ""
    if doc and INTERNAL.search(doc.splitlines()[0]):
        found.append((1, doc.splitlines()[0]))
    assert not found, f"{path.name} prints internal wording: {found}"
