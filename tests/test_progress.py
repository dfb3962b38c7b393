"""``accounting.progress``: silent unless wanted, on stderr only, tqdm optional."""

from __future__ import annotations

import sys

import pytest

from accounting import progress as prog
from accounting.progress import ENV_VAR, progress


def test_disabled_is_a_transparent_no_op(capsys):
    bar = progress(range(5), desc="x", enabled=False, delay=0.0)
    assert list(bar) == [0, 1, 2, 3, 4] and bar.total == 5 and bar.n == 5
    with progress(total=3, enabled=False) as bar:
        bar.update(2)
    assert bar.n == 2
    assert capsys.readouterr() == ("", "")


def test_auto_is_silent_when_stderr_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert list(progress(range(3), desc="auto", delay=0.0)) == [0, 1, 2]
    assert capsys.readouterr() == ("", "")
    monkeypatch.setenv(ENV_VAR, "0")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert type(progress(range(3))) is prog.Progress      # the variable wins over the TTY


def test_forced_without_tqdm_writes_plain_lines_to_stderr(capsys, monkeypatch):
    monkeypatch.setattr(prog, "_tqdm", lambda: None)
    monkeypatch.setenv(ENV_VAR, "1")
    out = list(progress(range(4), desc="sweep", delay=0.0))
    captured = capsys.readouterr()
    assert out == [0, 1, 2, 3] and captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0].startswith("sweep: 1/4 done, ") and "left" in lines[0]
    assert lines[-1].startswith("sweep: 4/4 done, ") and "left" not in lines[-1]


def test_delay_keeps_short_calls_silent(capsys, monkeypatch):
    monkeypatch.setattr(prog, "_tqdm", lambda: None)
    assert list(progress(range(3), desc="quick", enabled=True, delay=60.0)) == [0, 1, 2]
    assert capsys.readouterr() == ("", "")


def test_forced_with_tqdm_uses_it_on_stderr(capsys):
    tqdm = pytest.importorskip("tqdm")
    bar = progress(range(3), desc="tq", enabled=True, delay=0.0)
    assert isinstance(bar, tqdm.tqdm)
    assert list(bar) == [0, 1, 2]
    captured = capsys.readouterr()
    assert captured.out == "" and "tq" in captured.err


def test_no_iterable_cannot_be_iterated():
    with pytest.raises(TypeError, match="update"):
        list(progress(total=3, enabled=False))


def test_calibration_reports_its_evaluations(capsys, monkeypatch):
    from accounting.analysis.calibration import calibrate, search
    monkeypatch.setattr(prog, "_tqdm", lambda: None)
    monkeypatch.setattr(search, "progress",
                        lambda desc: progress(desc=desc, enabled=True, delay=0.0, interval=0.0))
    result = calibrate("gaussian", "sigma", count=4, epsilon=2.0, delta=1e-5)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("calibration: evaluations: 1 done, ")
    assert lines[-1].startswith(f"calibration: evaluations: {result.evaluations} done, ")


def test_auto_on_a_terminal_without_tqdm_writes_plain_lines(capsys, monkeypatch):
    """Progress needs no extra: on a terminal without tqdm the plain lines show."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(prog, "_tqdm", lambda: None)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = progress(range(3), desc="auto", delay=0.0, interval=0.0)
    assert type(bar) is prog._TextProgress
    assert list(bar) == [0, 1, 2]
    err = capsys.readouterr().err
    assert "auto: 3/3 done" in err.splitlines()[-1]
