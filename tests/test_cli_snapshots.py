"""The documented command lines print what they printed before issue 23's restructure.

Each runnable ``accounting ...`` line of ``README.md`` and ``docs/*.md``
(``benchmarks/cli_snapshot.py`` finds them) is run and its stdout, wall times
masked, compared byte for byte with ``tests/data/cli_snapshots/``. The snapshots
were written from commit 74d51ef, the last before issue 23
(``PYTHONPATH=BEFORE:BEFORE/plugins python benchmarks/cli_snapshot.py --write DIR``
in a worktree of that commit); ``CHANGED`` lists the ones written from a later commit
because a bug fix changed the printed output, and why.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "tests" / "data" / "cli_snapshots"

_spec = importlib.util.spec_from_file_location("cli_snapshot",
                                               ROOT / "benchmarks" / "cli_snapshot.py")
assert _spec is not None and _spec.loader is not None
cli_snapshot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_snapshot)

COMMANDS = cli_snapshot.documented()

#: snapshot id → why its stored output is not the output of 74d51ef
CHANGED: dict[str, str] = {
    "delta-laplace-b-2-compose-10-epsilon-1-2-account-77e520c7dc":
        "issue 28: one JSON envelope, whose first key is \"command\" (was \"query\")",
    "epsilon-gaussian-sigma-1-0-compose-100-delta-1e-58889bae37":
        "issue 24: an all-Gaussian job is answered by its exact μ-GDP profile, not a grid "
        "(the provenance says profile; the numbers are the same to the digits shown)",
    "epsilon-gaussian-sigma-2-compose-10-delta-1e-5-43474d548a":
        "issue 24: an all-Gaussian job is answered by its exact μ-GDP profile, not a grid",
    "mechanisms-90cc147028":
        "issue 28: each mechanism's summary is its docstring's first paragraph, wrapped "
        "(was its first line, cut mid-sentence); issue 27: the one-run canary auditor is "
        "listed beside rkrd; issue 25: the shuffled and random-allocation samplers are listed; "
        "issue 28: the zcdp_guarantee mechanism (dp_accounting's ZCDpEvent)",
    "delta-laplace-b-4-compose-5-epsilon-1-2-accounta-0099b68a59":
        "issue 28: one JSON envelope, whose first key is \"command\" (was \"query\")",
}

#: commands that take more than a few seconds (calibrations of long compositions)
SLOW_HEADS = ("calibrate",)


def _param(c: Any) -> Any:
    marks = [pytest.mark.slow] if c.args[:1] and c.args[0] in SLOW_HEADS else []
    return pytest.param(c, id=c.ident, marks=marks)


def test_the_documented_commands_are_found() -> None:
    """The extraction finds the documented commands it must (so an empty list is a
    broken reader, not a pass), and leaves templates and file-reading lines out."""
    args = {c.args for c in COMMANDS}
    assert ("epsilon", "gaussian", "--sigma", "1.0", "--compose", "100", "--delta", "1e-5") in args
    assert () in args                                   # `accounting`: the default job
    assert not any("MECHANISM" in a or a.endswith((".npy", ".toml")) for c in COMMANDS
                   for a in c.args)
    assert len(COMMANDS) >= 15


def test_every_command_has_a_snapshot() -> None:
    missing = sorted(c.ident for c in COMMANDS if not (SNAPSHOTS / f"{c.ident}.txt").exists())
    assert not missing, (f"no snapshot for {missing}: a documented command is new; write it "
                         f"with benchmarks/cli_snapshot.py --write (see the module docstring)")


def test_masking_hides_only_wall_times() -> None:
    text = 'pld  1e-05  2.3819532  [2.38, 2.39]  0.56 s\n  total 12 s\n"seconds": 0.031,'
    assert cli_snapshot.masked(text) == ('pld  1e-05  2.3819532  [2.38, 2.39] <t> s\n'
                                         '  total <t> s\n"seconds": <t>,')
    assert cli_snapshot.masked(cli_snapshot.masked(text)) == cli_snapshot.masked(text)
    # a wider time column (a run of 10 s or more) masks the same
    assert cli_snapshot.masked("rdp  2.5   12.34 s") == cli_snapshot.masked("rdp  2.5    0.10 s")


@pytest.mark.parametrize("command", [_param(c) for c in COMMANDS])
def test_a_documented_command_prints_its_snapshot(command: Any) -> None:
    path = SNAPSHOTS / f"{command.ident}.txt"
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}")
    stored = cli_snapshot.masked(path.read_text(encoding="utf-8").split("\n", 1)[1])
    got = cli_snapshot.run(command)
    assert got == stored, f"accounting {' '.join(command.args)} ({command.source}) changed"
