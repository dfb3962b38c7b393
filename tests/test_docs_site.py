"""The documentation site builds with ``mkdocs build --strict`` and lists every page.

The build needs the ``docs`` extra (mkdocs-material, mkdocstrings-python) and is
skipped without it; the navigation check needs nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "mkdocs.yml"


def _nav_pages() -> set[str]:
    return set(re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?([\w./-]+\.md)\s*$",
                          CONFIG.read_text(encoding="utf-8"), flags=re.M))


def test_every_docs_page_is_in_the_navigation():
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    nav = _nav_pages()
    assert pages - nav == set(), f"pages missing from mkdocs.yml nav: {sorted(pages - nav)}"
    assert nav - pages == set(), f"nav entries without a page: {sorted(nav - pages)}"


def test_the_site_builds_strictly_with_an_api_reference(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(CONFIG), "-d", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=str(ROOT), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    curves = (tmp_path / "site" / "api" / "curves" / "index.html").read_text(encoding="utf-8")
    for name in ("PrivacyProfile", "TradeOff", "epsilon_interval"):
        assert name in curves, f"{name} missing from the API reference"
    assert (tmp_path / "site" / "img" / "curve-tradeoff.png").exists()
