"""Every ```python block in docs/*.md (and README.md) runs.

Blocks of one file run in order in one shared namespace, like a notebook; a block
whose opening fence is preceded by the HTML comment ``<!-- no-test -->`` (blank lines
between are allowed) is skipped. Each file runs in a fresh temporary directory.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [*DOCS, ROOT / "README.md"]

#: the concept pages the documentation promises
REQUIRED = ["getting-started", "pairs-and-mechanisms", "pld", "privacy-profile", "tradeoff",
            "rdp-and-zcdp", "converters", "composition-and-accountant", "plugins", "cli"]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_NO_TEST = "<!-- no-test -->"


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """(line number, source, skipped) of each ```python block, in order."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip().split()
        start = i
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and lines[j].strip().strip(fence[0]) == ""):
            j += 1
        if info and info[0].lower() in ("python", "py", "python3"):
            prev = start - 1
            while prev >= 0 and not lines[prev].strip():
                prev -= 1
            skipped = prev >= 0 and lines[prev].strip() == _NO_TEST
            indent = len(m.group("indent"))
            body = "\n".join(line[indent:] for line in lines[start + 1:j])
            blocks.append((start + 1, body, skipped))
        i = j + 1
    return blocks


def test_extractor():
    text = ("x\n```python\na = 1\n```\n<!-- no-test -->\n\n```python\nraise SystemExit\n```\n"
            "```console\n$ ls\n```\n````python\nb = '```'\n````\n")
    blocks = python_blocks(text)
    assert [(b[1], b[2]) for b in blocks] == [("a = 1", False), ("raise SystemExit", True),
                                              ("b = '```'", False)]


def test_required_pages_exist():
    names = {p.stem for p in DOCS}
    missing = [n for n in REQUIRED if n not in names]
    assert not missing, f"docs pages missing: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_examples_run(page, tmp_path, monkeypatch, capsys):
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    runnable = [b for b in blocks if not b[2]]
    if page.parent.name == "docs" and page.stem in REQUIRED:
        assert runnable, f"{page.name} has no runnable example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    start = time.perf_counter()
    for line, source, _ in runnable:
        code = compile(source, f"{page.name}:{line}", "exec")
        try:
            exec(code, namespace)
        except Exception as exc:
            raise AssertionError(f"{page.name}, block at line {line} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
    elapsed = time.perf_counter() - start
    # generous: the pages aim at < 5 s each; this only catches a runaway example
    assert elapsed < 60, f"{page.name} examples took {elapsed:.1f} s"
