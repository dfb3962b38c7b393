"""The ``accounting`` command line: the parser, dispatch to one module per command,
and the error handling that turns every failure into one line and an exit status.

::

    accounting                        # the default job (registered by a plugin)
    accounting run [--job NAME | --workload FILE] [--json] …   # the same (alias: demo)
    accounting mechanisms [--json]    # mechanisms, converters, auditors, jobs, plugin errors
    accounting epsilon MECHANISM --PARAM VALUE … [--compose K] --delta D [D …]
    accounting delta   MECHANISM --PARAM VALUE … [--compose K] --epsilon E [E …]
    accounting epsilon --workload FILE.toml [--delta D …]
    accounting delta   --workload FILE.toml [--epsilon E …]
    accounting gap MECHANISM --PARAM VALUE … [--t T …]
    accounting calibrate MECHANISM --solve PARAM … --epsilon E --delta D
    accounting audit --x X.npy --y Y.npy --epsilon E --delta D [--auditor NAME]
    accounting audit --mechanism MODULE:FUNCTION --d0 SPEC --d1 SPEC --n N --epsilon E --delta D
    accounting completion bash|zsh    # a shell-completion script: eval "$(accounting completion bash)"

Each command is a module of this package (``COMMANDS``) with ``add_parser(sub)``,
which adds its subparser(s) and sets ``handler`` (``run(ns, extras, registry)``) and
``takes_extras`` (whether it reads a mechanism's ``--PARAM VALUE`` options itself).

Common options: ``--accountant pld|rdp|zcdp|all`` (default all), ``--step S`` (PLD
grid step), ``--json``. A mechanism's parameters are its attrs fields
(``Registry.mechanism(name).parameters()``), offered as ``--name VALUE``.

Every answer is an upper bound, the max over both neighbouring directions; the PLD
line also shows the certified bracket [optimistic, pessimistic].

Exit status (``docs/cli.md``): 0 on success; 2 for a usage error (a bad argument,
value or file, a refusal of the request by the library's own checks, an exception
raised by the user's ``--mechanism`` code), printed as the one line
``accounting: error: …``; 1 for an internal error (a bug: any other exception, or a
ValueError/TypeError raised inside numpy/scipy rather than by a check of ours),
printed as ``accounting: internal error — please report: <Type>: <msg>``; 3 from
``audit --fail-on-reject``; 130 on Ctrl-C. The traceback is shown only under the
global ``--debug`` flag (or ``ACCOUNTING_DEBUG=1``); ``--verbose`` shows the
library's log messages (level INFO; ``--debug``: DEBUG) on stderr.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import TextIO

from accounting import __version__
from accounting.cli.base import (
    EXIT_INTERNAL,
    EXIT_REJECTED,
    EXIT_USAGE,
    PROG,
    CLIError,
    Parser,
    RawHelpFormatter,
    UserCodeError,
    is_usage_error,
    one_line,
    stdout_to_stderr,
)
from accounting.registry.registry import PluginError, Registry, default_registry

__all__ = ["main", "build_parser", "COMMANDS", "CLIError", "UserCodeError", "EXIT_USAGE",
           "EXIT_INTERNAL", "EXIT_REJECTED"]

#: the command modules, in the order ``--help`` lists them; adding a command is one
#: line here (see the module docstring for what a command module provides)
COMMANDS = (
    "accounting.cli.run",
    "accounting.cli.mechanisms",
    "accounting.cli.query",
    "accounting.cli.gap",
    "accounting.cli.risk",
    "accounting.cli.calibrate",
    "accounting.cli.audit",
    "accounting.cli.sweep",
    "accounting.cli.completion",
)


def _build_parser() -> Parser:
    top = Parser(prog=PROG, description=(
        "Privacy accounting from the command line: ε(δ) or δ(ε) of a composition under the "
        "PLD, RDP and zCDP accountants. Without a subcommand, runs the default job that a "
        "plugin registers (see 'accounting mechanisms')."),
        epilog="examples:\n"
               "  accounting\n"
               "  accounting mechanisms\n"
               "  accounting epsilon gaussian --sigma 1.0 --compose 100 --delta 1e-5\n"
               "  accounting delta laplace --b 2 --compose 10 --epsilon 1 2 --accountant rdp\n"
               "  accounting epsilon --workload job.toml --delta 1e-5 --json",
        formatter_class=RawHelpFormatter)
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    top.add_argument("--debug", action="store_true", help="show the traceback of an error "
                     "(anywhere on the line; also ACCOUNTING_DEBUG=1)")
    top.add_argument("--verbose", action="store_true", help="show the library's log "
                     "messages on stderr (anywhere on the line)")
    sub = top.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).add_parser(sub)
    for parser in sub.choices.values():
        # what a mechanism's option parser compares an unknown option against, to tell
        # a typo of the command's own option (--delat) from an unknown parameter
        parser.set_defaults(command_options=tuple(parser.option_names()))
    return top


def build_parser() -> Parser:
    """The ``accounting`` parser with every command's subparser (for tools that read
    it, such as ``accounting completion``)."""
    return _build_parser()


# ---------------------------------------------------------------------- main
def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    print(f"{PROG}: warning: {one_line(Exception(str(message)))}", file=sys.stderr)


def _normalise_argv(argv: list[str]) -> list[str]:
    """No subcommand (nothing, or options only) means ``run``."""
    if not argv:
        return ["run"]
    first = argv[0]
    if first.startswith("-") and first not in ("-h", "--help", "--version"):
        return ["run", *argv]
    return argv


def _registry() -> Registry:
    """The default registry, built with stdout sent to stderr (a plugin that prints at
    import must not corrupt the output). A plugin that calls sys.exit() while loading
    is a broken plugin, not the end of the command."""
    try:
        with stdout_to_stderr():
            return default_registry()
    except SystemExit as exc:
        raise PluginError("?", f"a plugin called sys.exit({exc.code!r}) while the plugins "
                               f"were loading; uninstall or fix it") from None


def _dispatch(argv: list[str]) -> int:
    top = _build_parser()
    try:
        ns, extras = top.parse_known_args(_normalise_argv(argv))
    except SystemExit as exc:  # --help / --version: argparse is the one place allowed
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_USAGE)
    if extras and not ns.takes_extras:
        raise CLIError(f"unrecognized arguments: {' '.join(extras)} (see '{PROG} --help')")
    status: int = ns.handler(ns, extras, _registry())
    return status


def _split_flags(argv: list[str]) -> tuple[list[str], bool, bool]:
    """Remove the global ``--debug`` and ``--verbose`` flags (anywhere before ``--``)."""
    if "--" in argv:
        cut = argv.index("--")
        head, tail = argv[:cut], argv[cut:]
    else:
        head, tail = argv, []
    debug, verbose = "--debug" in head, "--verbose" in head
    return [a for a in head if a not in ("--debug", "--verbose")] + tail, debug, verbose


class _LogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{PROG}: {record.levelname.lower()}: {one_line(Exception(record.getMessage()))}"


def _logging(level: int) -> logging.Handler:
    """Log records of the library (logger ``accounting``) at ``level`` and above go to
    stderr as ``accounting: LEVEL: message`` while the command runs."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogFormatter())
    handler.setLevel(level)
    logger = logging.getLogger("accounting")
    logger.addHandler(handler)
    logger.setLevel(min(level, logger.level or logging.WARNING))
    return handler


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    argv = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    argv, debug, verbose = _split_flags(argv)
    debug = debug or os.environ.get("ACCOUNTING_DEBUG", "") not in ("", "0")
    logger = logging.getLogger("accounting")
    saved_level = logger.level
    handler = _logging(logging.DEBUG if debug and verbose else
                       logging.INFO if verbose else logging.WARNING)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return _dispatch(argv)
        except SystemExit as exc:  # from library code: a bug, not a way to exit
            if debug:
                traceback.print_exc(file=sys.stderr)
            print(f"{PROG}: internal error — please report: SystemExit: {exc.code!r} raised "
                  f"by library code", file=sys.stderr)
            return EXIT_INTERNAL
        except BrokenPipeError:  # e.g. `accounting mechanisms --json | head`
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass
            return EXIT_INTERNAL
        except KeyboardInterrupt:
            print(f"{PROG}: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:
            if debug:
                traceback.print_exc(file=sys.stderr)
            if is_usage_error(exc):
                print(f"{PROG}: error: {one_line(exc)}", file=sys.stderr)
                return EXIT_USAGE
            print(f"{PROG}: internal error — please report: {type(exc).__name__}: "
                  f"{one_line(exc)}", file=sys.stderr)
            return EXIT_INTERNAL
        finally:
            logger.removeHandler(handler)
            logger.setLevel(saved_level)


if __name__ == "__main__":
    raise SystemExit(main())
