"""Shared helpers of the command-line bad-input suites: run ``main`` in-process, an
alarm that fails a case that hangs, and the one-line usage-error check."""

from __future__ import annotations

import re
import signal

import pytest

from accounting.cli.app import main

#: seconds any single in-process case may take
CASE_SECONDS = 30


class _Timeout(BaseException):
    """Not an Exception: main() must not swallow it."""


@pytest.fixture
def alarm():
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def fire(signum, frame):
        raise _Timeout(f"case took more than {CASE_SECONDS} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(CASE_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code, out, err, message):
    """Exit 2, nothing on stdout, exactly one stderr line ``accounting: error: …``
    matching ``message``, no traceback."""
    assert code == 2, (code, err)
    assert out == "", out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("accounting: error: "), err
    assert "Traceback" not in err
    assert re.search(message, lines[0]), (message, lines[0])
