"""Every shell command of ``README.md`` runs verbatim on a clean checkout (issue 28).

The README's console and bash blocks are read line by line (``$ `` prompts dropped,
comments kept: the shell ignores them). Each command runs through the shell, in
README order, in one temporary folder holding a copy of ``examples/`` so that a line
may use what an earlier one wrote (``python examples/audit_samples.py`` writes the
samples that ``accounting audit`` reads), with the ``accounting`` script of this
environment on the PATH.

Left out, each for a stated reason checked here:
- ``pip install`` lines: CI runs the install itself; the extras they name must exist;
- ``python -m pytest``: the suite running itself;
- the snapshot-tested ``accounting`` lines (``tests/test_cli_snapshots.py`` runs them
  and compares their output byte for byte);
- ``mkdocs build --strict``: ``tests/test_docs_site.py`` runs it (with the docs extra);
- ``benchmarks/`` scripts: slow-marked here (they time peers for minutes).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

_spec = importlib.util.spec_from_file_location("cli_snapshot",
                                               ROOT / "benchmarks" / "cli_snapshot.py")
assert _spec is not None and _spec.loader is not None
cli_snapshot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_snapshot)


def shell_lines(path: Path = README) -> list[tuple[int, str]]:
    """(line number, command) of every line in a ```console, ```bash or ```sh block."""
    out: list[tuple[int, str]] = []
    inside = False
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("```"):
            inside = not inside and line[3:].strip() in ("console", "bash", "sh", "shell")
            continue
        if inside and line and not line.startswith("#"):
            out.append((n, line[2:] if line.startswith("$ ") else line))
    return out


def _parts(command: str) -> list[str]:
    """The commands of one line joined by ``&&``, comments dropped."""
    text = command.split(" #", 1)[0]
    return [p.strip() for p in text.split("&&")]


def _snapshot_args() -> set[tuple[str, ...]]:
    return {c.args for c in cli_snapshot.documented()}


def _kind(part: str) -> str:
    words = shlex.split(part)
    if words[:2] == ["pip", "install"]:
        return "install"
    if words[:3] == [sys.executable, "-m", "pytest"] or words[:3] == ["python", "-m", "pytest"]:
        return "tests"
    if words[:1] == ["accounting"] and tuple(words[1:]) in _snapshot_args():
        return "snapshot"
    if any(w.startswith("benchmarks/") for w in words):
        return "benchmark"
    if words[:2] == ["mkdocs", "build"]:
        return "site"
    return "run"


LINES = shell_lines()
PARTS = [(n, part) for n, line in LINES for part in _parts(line)]


def test_the_readme_commands_are_found() -> None:
    """The reader sees the two fresh-machine commands and the file-reading examples,
    so that an empty list is a broken reader, not a pass."""
    texts = [p for _, p in PARTS]
    assert "pip install . " not in texts
    assert "accounting" in texts                              # the main job
    assert 'pip install -e ".[test]"' in texts and "python -m pytest -q" in texts
    assert any("--workload examples/job.toml" in p for p in texts)
    assert any(p.startswith("python examples/audit_samples.py") for p in texts)
    assert sum(_kind(p) == "run" for p in texts) >= 3
    assert all(_kind(p) != "site" or "--strict" in p for p in texts)
    assert (ROOT / "tests" / "test_docs_site.py").exists()


def test_the_installed_extras_exist() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["project"]["optional-dependencies"])
    named = {e for _, p in PARTS if _kind(p) == "install"
             for e in re.findall(r"\[([\w,-]+)\]", p) for e in e.split(",")}
    assert named, "no pip install line names an extra"
    assert named <= extras, f"the README installs unknown extras {sorted(named - extras)}"


def _run(part: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    # `python` is this interpreter, whatever the PATH says
    command = re.sub(r"^python(?=\s)", shlex.quote(sys.executable), part)
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def _folder(tmp_path: Path) -> Path:
    """A working folder for the README's commands, with a copy of ``examples/``."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    return tmp_path


def _check(part: str, done: subprocess.CompletedProcess[str]) -> str | None:
    """Why ``done`` is a failure of README command ``part``, or None."""
    if done.returncode != 0:
        return f"{part!r} exited {done.returncode}: {done.stderr.strip()[-800:]}"
    if "error" in done.stderr.lower():
        return f"{part!r} wrote an error: {done.stderr.strip()[-800:]}"
    if not done.stdout.strip():
        return f"{part!r} printed nothing"
    return None


def test_the_readme_commands_run_verbatim_in_order(tmp_path: Path) -> None:
    """In one folder, in README order (a later line may read what an earlier wrote)."""
    cwd = _folder(tmp_path)
    failures = [why for _, part in PARTS if _kind(part) == "run"
                if (why := _check(part, _run(part, cwd))) is not None]
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("part", [p for _, p in PARTS if _kind(p) == "benchmark"])
def test_a_readme_benchmark_runs_verbatim(part: str, tmp_path: Path) -> None:
    why = _check(part, _run(part, ROOT))
    assert why is None, why
