"""What every part of the command line shares: the exit statuses, the usage-error
classes and the rule telling a usage error from a bug, the argparse parser that
raises instead of exiting (and shows defaults in ``--help``), the strict number
syntax, "did you mean" suggestions, one-line messages and the stdout guard (see
``accounting.cli.app``)."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

from accounting.registry.registry import PluginError, did_you_mean
from accounting.workload import MAX_COUNT, MAX_COUNT_TEXT, WorkloadError

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


class _ShowDefaults:
    """``--help`` shows an option's default: "(default X)" is appended to its help
    unless the help already says what the default is, or there is none to show
    (None, False, a suppressed value)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if ("default" in text or "%(default)" in text or default is None or default is False
                or default is argparse.SUPPRESS or not action.option_strings
                or action.nargs == 0):
            return text
        if isinstance(default, (list, tuple)):
            if not default:
                return text
            default = " ".join(map(str, default))
        return f"{text} (default {str(default).replace('%', '%%')})" if text else text


class HelpFormatter(_ShowDefaults, argparse.HelpFormatter):
    """argparse's formatter (description re-wrapped), with defaults shown."""


class RawHelpFormatter(_ShowDefaults, argparse.RawDescriptionHelpFormatter):
    """argparse's formatter that keeps the description's line breaks, with defaults shown."""


class Parser(argparse.ArgumentParser):
    """argparse with errors raised (to be printed as one line), not printed with usage,
    without abbreviations (``--s`` must not silently mean ``--step``), and with
    defaults shown in ``--help`` (``HelpFormatter``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def option_names(self) -> list[str]:
        """Every ``--long`` option string of this parser (for "did you mean")."""
        return sorted({s for action in self._actions for s in action.option_strings
                       if s.startswith("--")})

    def error(self, message: str) -> NoReturn:
        bad = _INVALID_CHOICE.search(message)
        if bad is not None:   # argparse lists the choices; add the closest to the message
            choices = re.findall(r"[\w-]+", bad.group("choices"))
            message = message.replace(bad.group(0), bad.group(0) + did_you_mean(
                bad.group("value"), choices))
        raise CLIError(f"{message} (see '{self.prog} --help')")


#: argparse's message for a value outside ``choices``
_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from "
                             r"(?P<choices>[^)]*)\)")


class UserCodeError(Exception):
    """An exception raised by the user's own code (``audit --mechanism MODULE:NAME``):
    reported as theirs, one line, exit status 2."""


# ------------------------------------------------------------- number syntax
#: a plain decimal or scientific literal: ASCII digits, no spaces, no underscores
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INFINITY = re.compile(r"[+-]?(?:inf|infinity)\Z", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


def parse_float(text: str) -> float:
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


def parse_int(text: str) -> int:
    """A whole number written with ASCII digits only (``4``, ``-3``)."""
    text = str(text)
    if _INTEGER.match(text):
        return int(text)
    raise argparse.ArgumentTypeError(f"invalid int value: {text!r} (write a whole number "
                                     f"such as 4)")


def count_text(text: str) -> int:
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


parse_float.__name__ = "number"
parse_int.__name__ = "int"
count_text.__name__ = "count"


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (a KeyError's key unquoted; the type if empty)."""
    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    msg = " ".join(str(msg).split())
    return msg or type(exc).__name__


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send what Python code prints to stderr meanwhile: plugins loaded while the
    registry is built, and the user's --mechanism code, must not corrupt the output
    (``--json`` above all)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def unknown_name_error(what: str, name: str, known: Iterable[str], hint: str = "") -> CLIError:
    """``unknown WHAT 'name'; did you mean 'x'? registered: …`` as a CLIError."""
    known = sorted(known)
    return CLIError(f"unknown {what} {name!r}{did_you_mean(name, known)}; registered: "
                    f"{', '.join(known) or 'none'}{hint}")


# ------------------------------------------------ usage error or internal error
#: modules whose ValueError/TypeError is never a deliberate check of ours: raised
#: there, it means the library handed them something it should not have (a bug)
_FOREIGN_MODULES = ("numpy", "scipy", "mpmath", "pluggy", "importlib", "tomllib")


def raised_in(exc: BaseException) -> str:
    """The module whose code raised ``exc`` (the innermost traceback frame)."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", ""))


_NAN_WORD = re.compile(r"\bnan\b", re.IGNORECASE)


def nan_is_internal(exc: BaseException) -> None:
    """Mark as internal a refusal that mentions NaN raised while evaluating inputs that
    were all checked to be free of NaN: the library produced the NaN itself (a bug),
    e.g. "inf_mass must be in [0, 1], got nan"."""
    if isinstance(exc, (ValueError, TypeError)) and _NAN_WORD.search(str(exc)):
        marked: Any = exc   # a marker attribute that the exit code reads back
        marked.accounting_internal = True


def is_usage_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's (exit 2) rather than a bug (exit 1).

    Usage: ``CLIError`` (argument checks), ``WorkloadError`` (file checks),
    ``UserCodeError`` (an exception from the user's --mechanism code), ``PluginError``
    (an installed plugin is broken), and a ``ValueError``/``TypeError`` raised by a
    check in the library or a plugin — the documented way they refuse a value or a
    request. A ValueError/TypeError raised *inside* numpy, scipy, mpmath, … is not a
    check of ours but a value the library should never have passed on: internal.
    Everything else (KeyError, IndexError, AttributeError, ArithmeticError,
    RecursionError, MemoryError, …) is internal, and so is a refusal mentioning NaN
    raised while evaluating checked inputs (``nan_is_internal``).
    """
    if isinstance(exc, (CLIError, WorkloadError, UserCodeError, PluginError)):
        return True
    if getattr(exc, "accounting_internal", False):
        return False
    if isinstance(exc, (ValueError, TypeError)):
        module = raised_in(exc)
        return not any(module == m or module.startswith(m + ".") for m in _FOREIGN_MODULES)
    return False


def refusal_reason(exc: BaseException) -> str | None:
    """The one-line reason if ``exc`` is a refusal (a usage error), else None."""
    return one_line(exc) if is_usage_error(exc) else None
