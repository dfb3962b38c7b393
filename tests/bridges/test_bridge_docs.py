"""The examples of docs/opacus.md and docs/dp-accounting.md, run with their extras.

Those blocks are marked ``<!-- no-test -->`` for tests/test_docs.py, which runs every
page without optional dependencies; here every ```python block of each page runs in
order in one namespace, as test_docs.py runs a page, when the page's extras are
installed (skipped cleanly otherwise).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from test_docs import python_blocks

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: each page and the modules its examples need
PAGES = {"opacus.md": ["torch", "opacus"], "dp-accounting.md": ["dp_accounting"]}
#: the Opacus page trains and calibrates twice (~40 s on a shared machine); what it
#: shows is tested in test_bridge_opacus.py, so the page itself runs under -m slow
MARKS = {"opacus.md": [pytest.mark.slow]}


@pytest.mark.parametrize("page", [pytest.param(p, marks=MARKS.get(p, [])) for p in PAGES])
def test_bridge_page_examples_run(page, tmp_path, monkeypatch):
    for module in PAGES[page]:
        pytest.importorskip(module)
    path = DOCS / page
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    assert len(blocks) >= 4, f"{page} has too few examples"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    start = time.perf_counter()
    for line, source, _ in blocks:
        try:
            exec(compile(source, f"{page}:{line}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{page}, block at line {line} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
    assert time.perf_counter() - start < 120, f"{page} examples are too slow"
