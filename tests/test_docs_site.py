"""The documentation site builds with ``mkdocs build --strict`` and lists every page.

The build needs the ``docs`` extra (mkdocs-material, mkdocstrings-python) and is
skipped without it; the navigation check needs nothing.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import accounting

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "mkdocs.yml"
API = ROOT / "docs" / "api"
#: public names outside ``accounting.__all__`` that the reference must carry, and
#: the modules that define them
EXTRA = {"OpacusAccountant": "accounting_bridges.opacus",
         "TrainingAccountant": "accounting_bridges.training",
         "from_dp_event": "accounting_bridges.dp_event",
         "calibrate_dpsgd": "accounting_mechanisms.dpsgd"}


def _directives() -> dict[str, list[str] | None]:
    """``::: module`` targets of the API pages → the ``members:`` list given, or None
    (all public members)."""
    out: dict[str, list[str] | None] = {}
    for page in API.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^:::\s*([\w.]+)\n((?:[ \t]+.*\n)*)", text, flags=re.M):
            members = re.search(r"members:\s*\[([^\]]*)\]", m.group(2))
            out[m.group(1)] = ([x.strip() for x in members.group(1).split(",")]
                               if members else None)
    return out


def _module_source(module: str) -> Path:
    parts = module.split(".")
    for base in (ROOT, ROOT / "plugins"):
        for path in (base.joinpath(*parts).with_suffix(".py"),
                     base.joinpath(*parts, "__init__.py")):
            if path.exists():
                return path
    raise AssertionError(f"no source for {module}")


def _defines(module: str, name: str) -> bool:
    """Whether ``module`` defines ``name``, or imports it and exports it in ``__all__``
    (a package's re-export, which mkdocstrings renders as a member)."""
    tree = ast.parse(_module_source(module).read_text(encoding="utf-8"))
    exported: set[str] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                 for t in node.targets)):
            exported = {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and name in exported and any(
                (a.asname or a.name) == name for a in node.names):
            return True
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def test_the_api_reference_names_every_public_symbol():
    """Every name of ``accounting.__all__`` (and the bridges' entry points) is defined
    in a module that an API page renders, as one of the members it shows."""
    directives = _directives()
    exports = getattr(accounting, "_EXPORTS")
    wanted = {name: exports.get(name, "accounting") for name in accounting.__all__}
    wanted.update(EXTRA)
    missing = []
    for name, module in sorted(wanted.items()):
        if module not in directives or not _defines(module, name):
            missing.append(f"{name} ({module})")
        elif directives[module] is not None and name not in directives[module]:
            missing.append(f"{name} (not among the members shown of {module})")
    assert not missing, f"the API reference leaves out: {missing}"
    # and the check itself fails on a name it does not find
    assert not _defines("accounting_bridges.opacus", "NoSuchThing")


def test_docs_pages_have_no_rest_markup():
    """No reST literal-block markers ("text::") or double-backtick literals in the
    prose of the pages (fenced code blocks are code, and stay as written)."""
    leftovers = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        fenced = False
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"\s*(```|~~~)", line):
                fenced = not fenced
                continue
            if fenced:
                continue
            prose = re.sub(r"`[^`]*`", "", line)          # inline code is fine
            if re.search(r"\w::\s*$", line) or "``" in prose:
                leftovers.append(f"{page.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not leftovers, "reST markup in the docs:\n" + "\n".join(leftovers)


def test_rendered_docstrings_have_no_rest_literal_markers():
    """The modules the API pages render: no docstring line ends in "::" (Markdown
    would print it; an indented block after a plain colon is already code)."""
    bad = []
    for module in _directives():
        path = _module_source(module)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\w::\s*$", line):
                bad.append(f"{path.relative_to(ROOT)}:{n}")
    assert not bad, f"reST '::' in rendered docstrings: {bad}"


def test_site_config_wraps_code_and_leaves_scripts_out():
    config = CONFIG.read_text(encoding="utf-8")
    assert re.search(r"^exclude_docs:[^\n]*\n\s+\*\.py", config, flags=re.M)
    css = re.search(r"^extra_css:\s*\n\s+-\s*(\S+)", config, flags=re.M)
    assert css, "no extra_css"
    sheet = (ROOT / "docs" / css.group(1)).read_text(encoding="utf-8")
    assert re.search(r"pre\s*>\s*code\s*\{[^}]*white-space:\s*pre-wrap", sheet)


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
    site = tmp_path / "site"
    assert not list(site.rglob("*.py")), "scripts copied into the site"
    bridges = (site / "api" / "bridges" / "index.html").read_text(encoding="utf-8")
    for name in EXTRA:
        assert name in bridges, f"{name} missing from the API reference"
    top = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("mechanism", "save", "load"):
        assert f"accounting.{name}" in top or f">{name}<" in top, name
    assert (site / "stylesheets" / "extra.css").exists()
