"""``accounting epsilon`` and ``accounting delta``: ε(δ) or δ(ε) of a mechanism
composed ``--compose`` times, or of a TOML ``--workload``, under every accountant.

::

    accounting epsilon MECHANISM --PARAM VALUE … [--compose K] --delta D [D …]
    accounting delta   MECHANISM --PARAM VALUE … [--compose K] --epsilon E [E …]
    accounting epsilon --workload FILE.toml [--delta D …]

``--plot FILE`` also draws ε(δ) for the accountants asked (``plot_accountants``;
needs matplotlib, the ``plot`` extra) and writes it to FILE (format from its suffix).
"""

from __future__ import annotations

import argparse
import importlib.util
import textwrap
from collections.abc import Callable
from typing import Any

from accounting.cli import evaluate as ev
from accounting.cli.base import PROG, CLIError, Parser, count_text, parse_float
from accounting.cli.output import (
    is_certified,
    json_num,
    print_json,
    print_note,
    provenance_lines,
    results_json,
    results_table,
    shorten,
)
from accounting.cli.parser import mechanism_names, mechanism_use, param_parser
from accounting.curves.pld import DEFAULT_STEP
from accounting.registry.registry import Registry
from accounting.workload import ACCOUNTANT_CHOICES, MAX_COUNT_TEXT, Workload, load_workload

__all__: list[str] = []


def check_plot(path: str | None) -> None:
    """Refuse ``--plot`` up front (before any accounting) when matplotlib is missing,
    the path is empty, a directory or has no known suffix (the format follows the
    suffix and is never guessed: ``plot.format``), or no file can be written there
    (``serialization.check_writable_file``). The same for every command with --plot."""
    if path is None:
        return
    if importlib.util.find_spec("matplotlib") is None:
        raise CLIError("--plot needs matplotlib: pip install 'accounting-dp[plot]'")
    from accounting.plot import plot_format
    from accounting.serialization import check_writable_file
    try:
        check_writable_file(path, "--plot", "a file such as plot.png")
        plot_format(path)
    except ValueError as exc:
        message = str(exc)
        raise CLIError(message if message.startswith("--plot") else f"--plot: {message}") \
            from None


def write_plot(path: str, draw: Callable[[Any], Any], title: str,
               figsize: tuple[float, float] = (6.0, 4.0)) -> None:
    """Draw on a fresh figure (the non-interactive Agg backend unless pyplot is
    already in use) and save it to ``path``; an unwritable path is a usage error."""
    import sys

    import matplotlib
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from accounting.plot import save
    fig = plt.figure(figsize=figsize)
    ax = fig.gca()
    draw(ax)
    # two lines at most: a long workload name wraps instead of running off the figure
    ax.set_title(textwrap.fill(textwrap.shorten(title, 150, placeholder=" …"), 75),
                 fontsize="small")
    try:
        save(ax, path)
    except (OSError, ValueError) as exc:   # unknown suffix, read-only place, …
        plt.close(fig)
        raise CLIError(f"--plot: cannot write {path!r}: {exc}") from None


_WHAT = {"epsilon": "ε(δ)", "delta": "δ(ε)"}


def query_options(p: argparse.ArgumentParser, query: str) -> None:
    """Options shared by ``epsilon``, ``delta`` and ``run``."""
    if query == "epsilon":
        p.add_argument("--delta", type=parse_float, nargs="+", metavar="D",
                       help="target δ in (0, 1); several values allowed")
    else:
        p.add_argument("--epsilon", type=parse_float, nargs="+", metavar="E",
                       help="ε at which to report δ; several values allowed")
    p.add_argument("--accountant", choices=ACCOUNTANT_CHOICES, default=None,
                   help="representation to account under (default: all, or the workload's)")
    p.add_argument("--step", type=parse_float, default=None, metavar="S",
                   help=f"PLD grid step of the privacy loss (default {DEFAULT_STEP:g})")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _query_mode_options(p: argparse.ArgumentParser, query: str) -> None:
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("mechanism", nargs="?", metavar="MECHANISM",
                   help="a registered mechanism (see 'accounting mechanisms')")
    p.add_argument("--workload", metavar="FILE", help="a TOML workload file instead of "
                   "MECHANISM")
    p.add_argument("--compose", type=count_text, default=None, metavar="K",
                   help=f"number of independent uses of MECHANISM (default 1; at most "
                        f"{MAX_COUNT_TEXT})")
    query_options(p, query)
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also draw ε(δ) of the accountants asked to FILE (.png, .pdf, .svg; "
                        "needs matplotlib)")


def add_parser(sub: Any) -> None:
    """The ``epsilon`` and ``delta`` subcommands."""
    for query, what in _WHAT.items():
        p = sub.add_parser(query, add_help=False, help=f"{what} of a mechanism or a workload",
                           description=f"{what} of MECHANISM composed --compose times, or of "
                                       f"a TOML --workload. Mechanism parameters are given "
                                       f"as --NAME VALUE (see 'accounting mechanisms').")
        _query_mode_options(p, query)
        p.set_defaults(handler=run, takes_extras=True)


def _help(query: str, ns: argparse.Namespace, registry: Registry) -> int:
    prog = f"{PROG} {query}"
    cls = registry.mechanism(ns.mechanism) if ns.mechanism else None
    if cls is None:
        p = Parser(prog=prog, add_help=False, description=(
            f"{_WHAT[query]} of MECHANISM or of a --workload. "
            f"Give MECHANISM to see its parameters: {mechanism_names(registry)}."))
        _query_mode_options(p, query)
    else:
        p = param_parser(f"{prog} {ns.mechanism}", cls,
                          add_options=lambda q: _query_mode_options(q, query))
    p.print_help()
    return 0


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    query = ns.command
    prog = f"{PROG} {query}"
    if ns.help:
        return _help(query, ns, registry)
    if ns.workload is not None and ns.mechanism is not None:
        raise CLIError("give either MECHANISM or --workload FILE, not both")
    if ns.workload is not None:
        if extras:
            raise CLIError(f"unrecognized arguments: {' '.join(extras)} (mechanism parameters "
                           f"belong in the workload file)")
        if ns.compose is not None:
            raise CLIError("--compose applies to a single MECHANISM; set count in the workload")
        workload = load_workload(ns.workload, registry)
        header = f"workload {workload.source}: {workload.describe()}"
    elif ns.mechanism is not None:
        count = 1 if ns.compose is None else ns.compose
        use = mechanism_use(prog, ns.mechanism, extras, registry, count,
                             options=getattr(ns, "command_options", ()))
        workload = Workload((use,), source="command line")
        header = use.describe()
    else:
        raise CLIError(f"give a MECHANISM (one of {mechanism_names(registry)}) "
                       f"or --workload FILE")
    values = ev.query_values(query, ns.delta if query == "epsilon" else ns.epsilon, workload)
    step = ev.workload_step(ns.step, workload)
    names = ev.accountant_names(ns.accountant, workload)
    check_plot(ns.plot)
    acct, results = ev.evaluate_workload(workload, query, values, names, step)
    notes = ev.looseness_notes(query, results)
    if ns.plot is not None:
        from accounting.plot import plot_accountants
        asked = [n for n in names if "error" not in results[n]]
        deltas = values if query == "epsilon" and values.size > 1 else None
        write_plot(ns.plot, lambda ax: plot_accountants({"": acct}, ax, deltas=deltas,
                                                         methods=asked), header)
    if ns.json:
        payload: dict[str, Any] = {}
        if ns.mechanism is not None:
            only = workload.uses[0].as_dict()
            payload.update(mechanism=only["name"], params=only["params"], count=only["count"])
        payload["workload"] = workload.as_dict()
        payload["delta" if query == "epsilon" else "epsilon"] = [json_num(v) for v in values]
        payload["step"] = step
        payload["bound"] = "upper bound, max over neighbouring directions"
        payload["results"] = results_json(results)
        if notes:
            payload["notes"] = notes
        print_json(query, payload)
        return 0
    print(shorten(header))
    kinds = ("upper bounds" if all(is_certified(r) for r in results.values() if "error" not in r)
             else "upper bounds, except those marked numerical (estimates, not certified)")
    print(f"{_WHAT[query]}: {kinds}, max over both neighbouring directions (PLD step {step:g})")
    print("\n".join(results_table(query, values, results)))
    for note in notes:
        print_note(note)
    print("provenance:")
    print("\n".join(provenance_lines(results)))
    return 0
