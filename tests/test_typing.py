"""Static types: ``curve(kind)`` is typed as ``kind`` (issue 23), checked by running
mypy on ``tests/typing/curve_kinds.py``: the lines marked ``# expect-error`` must be
exactly the lines mypy reports (an assignment of ``acct.curve(PLD)`` to an ``RDP``
fails, one to a ``PLD`` passes). Skipped when mypy is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

CASES = Path(__file__).parent / "typing" / "curve_kinds.py"


def expected_error_lines(path: Path) -> set[int]:
    return {n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if line.rstrip().endswith("# expect-error")}


def test_curve_is_typed_as_its_kind(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # pytest's cache keeps mypy's warm between runs; without the cache plugin, a fresh one
    cache = getattr(request.config, "cache", None)
    cache_dir = cache.mkdir("mypy") if cache is not None else tmp_path / "mypy"
    args = ["--strict", "--follow-imports=silent", "--no-error-summary",
            "--show-error-codes", "--hide-error-context", "--no-pretty",
            "--cache-dir", str(cache_dir)]
    stdout, stderr, status = api.run([*args, str(CASES)])
    assert "INTERNAL ERROR" not in stdout + stderr, stdout + stderr
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    where = [line.split(":", 2)[:2] for line in errors]
    assert all(Path(path).resolve() == CASES.resolve() for path, _ in where), stdout
    got = {int(n) for _, n in where}
    expected = expected_error_lines(CASES)
    assert len(expected) == 3
    assert got == expected, stdout
    assert all("[assignment]" in line for line in errors), stdout
    assert status == 1
