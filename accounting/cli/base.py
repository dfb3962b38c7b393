"""What every part of the command line shares: the exit statuses, the usage-error
classes, the argparse parser that raises instead of exiting, the strict number
syntax, one-line messages and the stdout guard (see ``accounting.cli.app``)."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from decimal import Decimal, InvalidOperation
from typing import Any

from accounting.workload import MAX_COUNT, MAX_COUNT_TEXT

__all__ = ["PROG", "EXIT_USAGE", "EXIT_INTERNAL", "EXIT_REJECTED", "CLIError", "UserCodeError"]

PROG = "accounting"
#: exit status for bad input (argparse's convention)
EXIT_USAGE = 2
#: exit status for an unexpected internal error
EXIT_INTERNAL = 1
#: exit status of ``audit --fail-on-reject`` when the claim is rejected
EXIT_REJECTED = 3


class CLIError(Exception):
    """Bad command-line usage; printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with errors raised (to be printed as one line), not printed with usage,
    and without abbreviations (``--s`` must not silently mean ``--step``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise CLIError(f"{message} (see '{self.prog} --help')")


class UserCodeError(Exception):
    """An exception raised by the user's own code (``audit --mechanism MODULE:NAME``):
    reported as theirs, one line, exit status 2."""


# ------------------------------------------------------------- number syntax
#: a plain decimal or scientific literal: ASCII digits, no spaces, no underscores
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INFINITY = re.compile(r"[+-]?(?:inf|infinity)\Z", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


def _parse_float(text: str) -> float:
    """A command-line number: ``1.5``, ``-2``, ``1e-5``, ``.5``, ``inf``. Python's
    ``float`` also takes ``1_0``, `` 1`` and ``nan``; those are refused here (range
    checks later refuse ``inf`` where it is not allowed)."""
    text = str(text)
    if _DECIMAL.match(text) or _INFINITY.match(text):
        return float(text)
    if text.strip().lower().lstrip("+-") == "nan":
        raise argparse.ArgumentTypeError("NaN is not a number here")
    raise argparse.ArgumentTypeError(f"invalid number {text!r} (write a plain decimal or "
                                     f"scientific literal such as 1.5 or 1e-5: no spaces, "
                                     f"no underscores)")


def _parse_int(text: str) -> int:
    """A whole number written with ASCII digits only (``4``, ``-3``)."""
    text = str(text)
    if _INTEGER.match(text):
        return int(text)
    raise argparse.ArgumentTypeError(f"invalid int value: {text!r} (write a whole number "
                                     f"such as 4)")


def _count_text(text: str) -> int:
    """A count: a whole number, also in scientific form when integral (``1e6``), in
    [1, MAX_COUNT]. Parsed exactly (``Decimal``), so ``1e30`` is named, not overflowed."""
    text = str(text)
    if not (_INTEGER.match(text) or _DECIMAL.match(text)):
        raise argparse.ArgumentTypeError(f"invalid count {text!r} (write a whole number "
                                         f"such as 100 or 1e6)")
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only literals
        raise argparse.ArgumentTypeError(f"invalid count {text!r}") from None
    if value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"a count must be a whole number, got {text}")
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"a count must be a positive integer (at most "
                                         f"{MAX_COUNT_TEXT}), got {text}")
    return int(value)


_parse_float.__name__ = "number"
_parse_int.__name__ = "int"
_count_text.__name__ = "count"


def _one_line(exc: BaseException) -> str:
    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    msg = " ".join(str(msg).split())
    return msg or type(exc).__name__


@contextlib.contextmanager
def _stdout_to_stderr():
    """Send what Python code prints to stderr meanwhile: plugins loaded while the
    registry is built, and the user's --mechanism code, must not corrupt the output
    (``--json`` above all)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
