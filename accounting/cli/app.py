"""The ``accounting`` command line.

::

    accounting                        # the main job: DP-SGD under every accountant
    accounting run [--json] …         # the same (alias: demo)
    accounting mechanisms [--json]    # registered mechanisms, converters, plugin errors
    accounting epsilon MECHANISM --PARAM VALUE … [--compose K] --delta D [D …]
    accounting delta   MECHANISM --PARAM VALUE … [--compose K] --epsilon E [E …]
    accounting epsilon --workload FILE.toml [--delta D …]
    accounting delta   --workload FILE.toml [--epsilon E …]
    accounting audit --x X.npy --y Y.npy --epsilon E --delta D [--auditor NAME]
    accounting audit --mechanism MODULE:FUNCTION --d0 SPEC --d1 SPEC --n N --epsilon E --delta D

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
global ``--debug`` flag (or ``ACCOUNTING_DEBUG=1``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import textwrap
import time
import tomllib
import traceback
import warnings
from typing import Any, Optional, Sequence

import attrs
import numpy as np

from accounting import __version__
from accounting.accountant import ACCOUNTANTS
from accounting.cli.audit import _audit_parser, _cmd_audit
from accounting.cli.sweep import _cmd_sweep, _sweep_parser
from accounting.cli.base import (EXIT_INTERNAL, EXIT_REJECTED, EXIT_USAGE, PROG, CLIError, UserCodeError,
                       _count_text, _one_line, _parse_float, _parse_int, _Parser,
                       _stdout_to_stderr)
from accounting.curves.curve import Exactness
from accounting.curves.pld import DEFAULT_STEP
from accounting.registry.registry import PluginError, Registry, default_registry
from accounting.curves.profile import PrivacyProfile
from accounting.validation import check_array, check_positive, check_real
from accounting.workload import (ACCOUNTANT_CHOICES, MAX_COUNT_TEXT, Workload, WorkloadError,
                       default_workload, load_workload, make_use, parameter_kind)
from accounting.curves.zcdp import ZCDP

__all__ = ["main", "CLIError", "UserCodeError", "EXIT_USAGE",
           "EXIT_INTERNAL", "EXIT_REJECTED"]

_SUBCOMMANDS = ("run", "demo", "mechanisms", "epsilon", "delta", "gap", "calibrate", "audit",
                "sweep")
#: α at which the main job reports the trade-off function
_ALPHAS = (0.001, 0.01, 0.1)
#: α at which the equivalent Gaussian-DP μ is solved
_GDP_ALPHA = 0.01

_ZCDP_NOTE = ("zCDP cannot see amplification by subsampling: ρ* of a Poisson-subsampled "
              "Gaussian is 1/(2σ²) whatever q (the sup of K(t)/(t(t+1)) is its t → ∞ limit), "
              "so its ε here is that of the full-batch mechanism — sound but useless.")


# ------------------------------------------------------------------- parsers
def _query_options(p: argparse.ArgumentParser, query: str) -> None:
    """Options shared by ``epsilon``, ``delta`` and ``run``."""
    if query == "epsilon":
        p.add_argument("--delta", type=_parse_float, nargs="+", metavar="D",
                       help="target δ in (0, 1); several values allowed")
    else:
        p.add_argument("--epsilon", type=_parse_float, nargs="+", metavar="E",
                       help="ε at which to report δ; several values allowed")
    p.add_argument("--accountant", choices=ACCOUNTANT_CHOICES, default=None,
                   help="representation to account under (default: all, or the workload's)")
    p.add_argument("--step", type=_parse_float, default=None, metavar="S",
                   help=f"PLD grid step of the privacy loss (default {DEFAULT_STEP:g})")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _build_parser() -> _Parser:
    top = _Parser(prog=PROG, description=(
        "Privacy accounting from the command line: ε(δ) or δ(ε) of a composition under the "
        "PLD, RDP and zCDP accountants. Without a subcommand, runs the built-in DP-SGD job."),
        epilog="examples:\n"
               "  accounting\n"
               "  accounting mechanisms\n"
               "  accounting epsilon gaussian --sigma 1.0 --compose 100 --delta 1e-5\n"
               "  accounting delta laplace --b 2 --compose 10 --epsilon 1 2 --accountant rdp\n"
               "  accounting epsilon --workload job.toml --delta 1e-5 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    top.add_argument("--debug", action="store_true", help="show the traceback of an error "
                     "(anywhere on the line; also ACCOUNTING_DEBUG=1)")
    sub = top.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", aliases=["demo"], help="the main job (default): DP-SGD, "
                         "q = 256/60000, σ = 1.1, 14062 steps, δ = 1e-5",
                         description="Account for a workload (by default the built-in DP-SGD "
                                     "job) under every accountant, with timings and a "
                                     "trade-off summary.")
    run.add_argument("--workload", metavar="FILE", help="a TOML workload instead of the "
                     "built-in one")
    _query_options(run, "epsilon")

    mech = sub.add_parser("mechanisms", help="list registered mechanisms, converters and "
                          "plugin errors")
    mech.add_argument("--json", action="store_true", help="print one JSON object")

    for query, what in (("epsilon", "ε(δ)"), ("delta", "δ(ε)")):
        p = sub.add_parser(query, add_help=False, help=f"{what} of a mechanism or a workload",
                           description=f"{what} of MECHANISM composed --compose times, or of "
                                       f"a TOML --workload. Mechanism parameters are given "
                                       f"as --NAME VALUE (see 'accounting mechanisms').")
        _query_mode_options(p, query)
    gap = sub.add_parser("gap", add_help=False, help="the information gap between the RDP "
                         "curve of a mechanism and its zCDP envelope",
                         description=_GAP_DESCRIPTION)
    _gap_options(gap)
    cal = sub.add_parser("calibrate", add_help=False, help="the smallest noise parameter "
                         "meeting a target (ε, δ)", description=_CALIBRATE_DESCRIPTION)
    _calibrate_options(cal)
    _audit_parser(sub)
    _sweep_parser(sub)
    return top


def _query_mode_options(p: argparse.ArgumentParser, query: str) -> None:
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("mechanism", nargs="?", metavar="MECHANISM",
                   help="a registered mechanism (see 'accounting mechanisms')")
    p.add_argument("--workload", metavar="FILE", help="a TOML workload file instead of "
                   "MECHANISM")
    p.add_argument("--compose", type=_count_text, default=None, metavar="K",
                   help=f"number of independent uses of MECHANISM (default 1; at most "
                        f"{MAX_COUNT_TEXT})")
    _query_options(p, query)


def _param_parser(prog: str, cls: type, *, query: Optional[str] = None) -> _Parser:
    """A parser of ``--NAME VALUE`` for each parameter of mechanism class ``cls``.

    With ``query`` ("epsilon" or "delta") the command's own options are included too
    (for ``--help``)."""
    p = _Parser(prog=prog, add_help=False, description=(cls.__doc__ or "").strip() or None,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    if query is not None:
        _query_mode_options(p, query)
    group = p.add_argument_group(f"parameters of {cls.name}")
    for attr in sorted(cls.parameters().values(), key=lambda a: a.kw_only):
        kind = parameter_kind(attr)
        required = attr.default is attrs.NOTHING
        default = "required" if required else f"default {_default_text(attr.default)}"
        names = [f"--{n}" for n in _option_names(attr.name)]
        kw: dict[str, Any] = {"dest": f"param_{attr.name}", "metavar": kind.upper(),
                              "default": None, "help": default}
        if kind == "int":
            kw["type"] = _parse_int
        elif kind == "float":
            kw["type"] = _parse_float
        elif kind == "bool":
            kw["type"] = _parse_bool
        elif kind == "neighbouring":
            kw["metavar"] = "{add_remove,replace_one}"
        elif kind == "vector":
            kw.update(type=_parse_float, nargs="+", metavar="X")
        elif kind == "mechanism":
            kw.update(type=_parse_table, metavar="'{name=\"…\", …}'")
        group.add_argument(*names, **kw)
    return p


#: options of ``epsilon``/``delta`` themselves: a mechanism parameter of one of these
#: names is offered as ``--param-NAME`` instead of ``--NAME``
_RESERVED = frozenset({"h", "help", "workload", "compose", "delta", "epsilon", "accountant",
                       "step", "json", "version"})


def _option_names(param: str) -> list[str]:
    """Command-line spellings of a parameter: ``NAME`` (and ``NA-ME`` for ``NA_ME``),
    or ``param-NAME`` where ``NAME`` is one of the command's own options."""
    base = f"param-{param}" if param in _RESERVED else param
    names = [base]
    if "_" in base:
        names.append(base.replace("_", "-"))
    return names


def _parse_bool(text: str) -> bool:
    low = str(text).lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


_parse_bool.__name__ = "boolean"  # argparse names the type in its message


def _parse_table(text: str) -> dict:
    """A TOML inline table, e.g. ``{name = "gaussian", sigma = 1.0}`` (a mechanism)."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        raise ValueError(f"not a TOML inline table: {text!r}") from None
    except RecursionError:
        raise ValueError("the inline table is nested too deeply") from None
    if not isinstance(value, dict):
        raise ValueError(f"not a TOML inline table: {text!r}")
    return value


_parse_table.__name__ = "inline table"


def _default_text(value: Any) -> str:
    if isinstance(value, attrs.Factory):  # type: ignore[arg-type]
        return "(computed)"
    if hasattr(value, "value") and not isinstance(value, (int, float)):
        return str(value.value)
    return repr(value) if isinstance(value, str) else f"{value}"


# ---------------------------------------------------------------- formatting
def _num(x: float, digits: int = 8) -> str:
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def _json_num(x: Any) -> Any:
    """A float for JSON; ±∞ as the strings "inf"/"-inf" (JSON has no infinity)."""
    x = float(x)
    if math.isfinite(x):
        return x
    return "inf" if x > 0 else ("-inf" if x < 0 else "nan")


def _seconds(t: float) -> str:
    return f"{t:.2f} s" if t < 100 else f"{t:.0f} s"


# ---------------------------------------------------------------- evaluation
def _accountant_names(choice: Optional[str], workload: Workload) -> list[str]:
    choice = choice or workload.accountant_name or "all"
    return list(ACCOUNTANTS) if choice == "all" else [choice]


#: above this many query values, the RDP accountant minimises over one shared grid of
#: orders (``_rdp_sweep``) instead of refining the order separately for each value
_SWEEP_MIN_VALUES = 16
#: points of the fine order grid of a sweep, spread over the cells where the coarse
#: grid found the optima
_SWEEP_FINE_ORDERS = 400


def _rdp_sweep(rdp: Any, query: str, values: np.ndarray) -> tuple[np.ndarray, int]:
    """ε(δ) or δ(ε) of an RDP curve at many values from one shared set of orders.

    The engine refines the order separately for each value (about 80 curve
    evaluations each), which costs minutes for a curve computed by quadrature. Here
    the curve is evaluated once on the engine's coarse grid ``ORDER_GRID``, then on
    ``_SWEEP_FINE_ORDERS`` orders spread (geometrically) over the cells where the
    coarse grid found the optima, and every value takes its min over that shared
    set. Every order gives a valid bound (Canonne, Kamath, Steinke 2020, Prop. 12),
    so the answer is an upper bound; it can only be slightly above the engine's
    per-value optimum. Returns the answers and the number of orders used.
    """
    from accounting.conversion.converters import ORDER_GRID, improved_epsilon, improved_log_delta
    from accounting.vocabulary import Direction
    directions = ((Direction.FORWARD,) if getattr(rdp, "symmetric", False) is True
                  else (Direction.FORWARD, Direction.BACKWARD))

    def objective(k: np.ndarray, t: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if query == "delta":
                out = improved_log_delta(k[None, :], t[None, :], values[:, None])
            else:
                out = improved_epsilon(k[None, :], t[None, :], np.log(values)[:, None])
        return np.where(np.isnan(out), np.inf, out)

    best = np.full(values.shape, -np.inf)
    n_orders = 0
    for d in directions:
        coarse = np.asarray(rdp.upper(ORDER_GRID, d), dtype=float)
        vals = objective(coarse, ORDER_GRID)
        j = np.argmin(vals, axis=1)
        lo = ORDER_GRID[max(int(j.min()) - 1, 0)]
        hi = ORDER_GRID[min(int(j.max()) + 1, ORDER_GRID.size - 1)]
        fine_t = np.geomspace(lo, hi, _SWEEP_FINE_ORDERS)
        fine = np.asarray(rdp.upper(fine_t, d), dtype=float)
        per_d = np.minimum(vals.min(axis=1), objective(fine, fine_t).min(axis=1))
        best = np.maximum(best, per_d)
        n_orders = ORDER_GRID.size + fine_t.size
    if query == "delta":
        out = np.minimum(np.exp(best), 1.0)
        return np.where(values == -np.inf, 1.0, out), n_orders
    return np.maximum(best, 0.0), n_orders


def _refusal(exc: Exception) -> Optional[str]:
    """The one-line reason if ``exc`` is a refusal (a usage error), else None."""
    return _one_line(exc) if _is_usage_error(exc) else None


def _evaluate(workload: Workload, query: str, values: np.ndarray, names: list[str],
              step: float) -> tuple[Any, dict[str, dict]]:
    """Run ``query`` ("epsilon" or "delta") at ``values`` under each accountant.

    With several accountants, one that refuses (a usage error: e.g. a grid too large)
    gets ``{"error": reason}`` and the others still answer; with one accountant, or
    when every one refuses, the first refusal is raised. Internal errors propagate.
    """
    acct = workload.accountant(step)
    results: dict[str, dict] = {}
    first_error: Optional[Exception] = None
    for name in names:
        t0 = time.perf_counter()
        try:
            results[name] = _evaluate_one(acct, name, query, values)
        except Exception as exc:
            _nan_is_internal(exc)
            reason = _refusal(exc)
            if reason is None or len(names) == 1:
                raise
            first_error = first_error or exc
            results[name] = {"error": reason}
        results[name]["seconds"] = time.perf_counter() - t0
    if first_error is not None and all("error" in r for r in results.values()):
        raise first_error
    return acct, results


def _evaluate_one(acct: Any, name: str, query: str, values: np.ndarray) -> dict:
    res: dict[str, Any] = {}
    kind = ACCOUNTANTS[name]
    curve = acct.curve(kind)  # the full PLD first: the queries below reuse it
    sweep = name == "rdp" and values.size > _SWEEP_MIN_VALUES
    note = ""
    if sweep:
        answer, n_orders = _rdp_sweep(curve, query, values)
        note = f"; minimised over one shared grid of {n_orders} orders for {values.size} values"
    elif query == "epsilon":
        answer = acct.epsilon(values, accountant=name)
    else:
        answer = acct.delta(values, accountant=name)
    res[query] = np.atleast_1d(answer)
    if name == "pld":
        lo, hi = (curve.epsilon_interval(values) if query == "epsilon"
                  else curve.delta_interval(values))
        res["interval"] = np.stack([np.atleast_1d(lo), np.atleast_1d(hi)], axis=1)
    shown = curve if name == "pld" else curve.to(PrivacyProfile)
    res["provenance"] = str(shown.provenance) + note
    res["exactness"] = shown.provenance.exactness.value
    if isinstance(curve, ZCDP):
        res["rho"] = curve.rho()
    return res


def _looseness_notes(query: str, results: dict[str, dict]) -> list[str]:
    """Say when the PLD answer is looser than another accountant's (every answer is a
    valid upper bound, so the smallest is the one to use), as happens when the grid
    is too coarse for the composition: its certified lower end then collapses."""
    pld = results.get("pld")
    if not pld or "error" in pld:
        return []
    # only a certified answer can be offered in place of the PLD's
    others = {n: r for n, r in results.items()
              if n != "pld" and "error" not in r and _certified(r)}
    notes = []
    for i in range(len(pld[query])):
        p = float(pld[query][i])
        better = [(float(r[query][i]), n) for n, r in others.items()
                  if float(r[query][i]) < p * (1.0 - 1e-9)]
        if not better:
            continue
        b, who = min(better)
        lo = float(pld["interval"][i][0])
        why = (f"its certified lower end is {_num(lo)}" if lo > 0 else
               "its certified lower end is 0")
        notes.append(f"the PLD answer {_num(p)} is looser than {who}'s {_num(b)} here "
                     f"({why}: the grid is too coarse for this composition; a smaller --step "
                     f"tightens it); every line is an upper bound, so {_num(b)} holds")
        break
    return notes


def _certified(res: dict) -> bool:
    return Exactness(res["exactness"]).certified


def _results_json(results: dict[str, dict]) -> dict:
    out = {}
    for name, res in results.items():
        if "error" in res:
            out[name] = {"error": res["error"], "seconds": res["seconds"]}
            continue
        item: dict[str, Any] = {}
        for key, val in res.items():
            if key in ("epsilon", "delta"):
                item[key] = [_json_num(v) for v in val]
            elif key == "interval":
                item[key] = [[_json_num(a), _json_num(b)] for a, b in val]
            elif key == "rho":
                item[key] = _json_num(val)
            else:
                item[key] = val
        out[name] = item
    return out


def _results_table(query: str, values: np.ndarray, results: dict[str, dict]) -> list[str]:
    given, answer = ("δ", "ε") if query == "epsilon" else ("ε", "δ")
    rows = [("accountant", given, answer, "certified interval", "time")]
    for name, res in results.items():
        if "error" in res:
            rows.append((name, "", "refused (below)", "", _seconds(res["seconds"])))
            continue
        for i, v in enumerate(values):
            a = res[query][i]
            interval = ""
            if "interval" in res:
                lo, hi = res["interval"][i]
                interval = f"[{_num(lo)}, {_num(hi)}]"
            extra = f"  (ρ = {_num(res['rho'], 6)})" if "rho" in res and i == 0 else ""
            if not _certified(res):
                extra += "  (numerical)"
            rows.append((name, _num(v, 6), _num(a) + extra, interval, _seconds(res["seconds"])))
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].ljust(widths[2]),
                 r[3].ljust(widths[3]), r[4].rjust(widths[4])]
        lines.append("  " + "  ".join(cells).rstrip())
    for name, res in results.items():
        if "error" in res:
            lines.append(textwrap.fill(f"{name} refused: {res['error']}", width=96,
                                       initial_indent="  ", subsequent_indent="    "))
    return lines


#: provenance longer than this is shortened in text output (a workload of thousands of
#: entries has a provenance line per entry); ``--json`` gives it in full
_PROVENANCE_CHARS = 400


def _short(text: str, limit: int = _PROVENANCE_CHARS) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-limit // 3:]
    omitted = len(text) - len(head) - len(tail)
    return f"{head} … [{omitted} characters omitted; --json has all] … {tail}"


def _print_note(note: str) -> None:
    print(textwrap.fill(note, width=96, initial_indent="  note: ", subsequent_indent=" " * 8))


def _provenance_lines(results: dict[str, dict]) -> list[str]:
    return [f"  {name}: {_short(res['provenance'])}" for name, res in results.items()
            if "provenance" in res]


# ------------------------------------------------------------------ commands
def _cmd_mechanisms(ns: argparse.Namespace, registry: Registry) -> int:
    mechs = []
    for name in sorted(registry.mechanisms):
        cls = registry.mechanisms[name]
        doc = (cls.__doc__ or "").strip().splitlines()
        params = []
        for a in sorted(cls.parameters().values(), key=lambda a: a.kw_only):
            required = a.default is attrs.NOTHING
            params.append({"name": a.name, "type": parameter_kind(a), "required": required,
                           "default": None if required else _json_default(a.default)})
        mechs.append({"name": name, "plugin": registry.mechanism_sources.get(name, "?"),
                      "class": f"{cls.__module__}.{cls.__qualname__}",
                      "doc": doc[0] if doc else "", "parameters": params})
    convs = [{"name": c.name, "source": c.source.__name__, "target": c.target.__name__,
              "exactness": c.exactness.value, "plugin": c.plugin} for c in registry.converters]
    auditors = [{"name": n, "plugin": p} for n, p in sorted(registry.auditor_sources.items())]
    errors = [str(e) for e in registry.errors]
    if ns.json:
        print(json.dumps({"mechanisms": mechs, "converters": convs, "auditors": auditors,
                          "errors": errors}, indent=2, ensure_ascii=False))
        return 0
    print(f"mechanisms ({len(mechs)}):")
    for m in mechs:
        print(f"  {m['name']}  [plugin {m['plugin']}]")
        if m["doc"]:
            print(f"      {m['doc']}")
        ps = ", ".join(f"--{_option_names(p['name'])[0]} {p['type'].upper()}"
                       + (" (required)" if p["required"] else f" = {p['default']}")
                       for p in m["parameters"])
        print(f"      parameters: {ps}")
    print(f"converters ({len(convs)}):")
    w = max((len(c["name"]) for c in convs), default=0)
    for c in convs:
        edge = f"{c['source']} → {c['target']}"
        print(f"  {c['name'].ljust(w)}  {edge.ljust(28)}  {c['exactness'].ljust(11)}  "
              f"[plugin {c['plugin']}]")
    print(f"auditors ({len(auditors)}):" + ("" if auditors else " none"))
    for a in auditors:
        print(f"  {a['name']}  [plugin {a['plugin']}]")
    print(f"plugin errors ({len(errors)}):" + ("" if errors else " none"))
    for e in errors:
        print(f"  {e}")
    return 0


def _json_default(value: Any) -> Any:
    if hasattr(value, "value") and not isinstance(value, (int, float)):
        return value.value
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def _query_values(query: str, given: Optional[list[float]], workload: Workload,
                  default: Optional[tuple[float, ...]] = None) -> np.ndarray:
    values = given if given is not None else (workload.delta if query == "epsilon"
                                              else workload.epsilon)
    if values is None:
        values = default
    if values is None:
        flag = "--delta D" if query == "epsilon" else "--epsilon E"
        raise CLIError(f"no {'δ' if query == 'epsilon' else 'ε'} given: pass {flag}"
                       + (" or set it in the workload file" if workload.source != "command line"
                          else ""))
    if query == "epsilon":
        return check_array("delta", list(values), lo=0.0, hi=1.0, hi_open=True)
    return check_array("epsilon", list(values), allow_inf=True)


def _step(ns_step: Optional[float], workload: Workload) -> float:
    step = ns_step if ns_step is not None else workload.step
    return check_positive("step", step if step is not None else DEFAULT_STEP)


def _cmd_query(query: str, ns: argparse.Namespace, extras: list[str],
               registry: Registry) -> int:
    prog = f"{PROG} {query}"
    if ns.help:
        cls = registry.mechanism(ns.mechanism) if ns.mechanism else None
        if cls is None:
            p = _Parser(prog=prog, add_help=False, description=(
                f"{'ε(δ)' if query == 'epsilon' else 'δ(ε)'} of MECHANISM or of a --workload. "
                f"Give MECHANISM to see its parameters: {', '.join(sorted(registry.mechanisms))}."))
            _query_mode_options(p, query)
        else:
            p = _param_parser(f"{prog} {ns.mechanism}", cls, query=query)
        p.print_help()
        return 0
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
        use = _mechanism_use(prog, ns.mechanism, extras, registry, count)
        workload = Workload((use,), source="command line")
        header = use.describe()
    else:
        raise CLIError(f"give a MECHANISM (one of {', '.join(sorted(registry.mechanisms))}) "
                       f"or --workload FILE")
    values = _query_values(query, ns.delta if query == "epsilon" else ns.epsilon, workload)
    step = _step(ns.step, workload)
    names = _accountant_names(ns.accountant, workload)
    _, results = _evaluate(workload, query, values, names, step)
    notes = _looseness_notes(query, results)
    if ns.json:
        payload: dict[str, Any] = {"query": query}
        if ns.mechanism is not None:
            only = workload.uses[0].as_dict()
            payload.update(mechanism=only["name"], params=only["params"], count=only["count"])
        payload["workload"] = workload.as_dict()
        payload["delta" if query == "epsilon" else "epsilon"] = [_json_num(v) for v in values]
        payload["step"] = step
        payload["bound"] = "upper bound, max over neighbouring directions"
        payload["results"] = _results_json(results)
        if notes:
            payload["notes"] = notes
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    what = "ε(δ)" if query == "epsilon" else "δ(ε)"
    print(_short(header))
    kinds = ("upper bounds" if all(_certified(r) for r in results.values() if "error" not in r)
             else "upper bounds, except those marked numerical (estimates, not certified)")
    print(f"{what}: {kinds}, max over both neighbouring directions (PLD step {step:g})")
    print("\n".join(_results_table(query, values, results)))
    for note in notes:
        _print_note(note)
    print("provenance:")
    print("\n".join(_provenance_lines(results)))
    return 0


def _mechanism_use(prog: str, name: str, extras: list[str], registry: Registry,
                   count: int) -> Any:
    """The mechanism ``name`` from its ``--PARAM VALUE`` options in ``extras``, as a
    workload ``Use`` run ``count`` times."""
    cls = registry.mechanism(name)
    pp = _param_parser(f"{prog} {name}", cls)
    pns, rest = pp.parse_known_args(extras)
    if rest:
        names = ", ".join(f"--{_option_names(a.name)[0]}" for a in
                          sorted(cls.parameters().values(), key=lambda a: a.kw_only))
        bad = next((r for r in rest if r.startswith("-")), rest[0])
        what = "unknown parameter" if bad.startswith("-") else "unexpected argument"
        raise CLIError(f"{name}: {what} {bad!r} (its parameters: {names})")
    params = {k[len("param_"):]: v for k, v in vars(pns).items() if v is not None}
    missing = [a.name for a in cls.parameters().values()
               if a.default is attrs.NOTHING and a.name not in params]
    if missing:
        raise CLIError(f"{name}: missing parameter "
                       + ", ".join(f"--{_option_names(m)[0]}" for m in missing))
    return make_use(registry, name, params, count)


# ------------------------------------------------------------------------ gap
_GAP_DESCRIPTION = (
    "The information gap Γ(t) = ρ*·t(t+1) − K(t) ≥ 0 between the exact Rényi curve of "
    "MECHANISM (composed --compose times) and its zCDP envelope ρ* = sup K(t)/(t(t+1)), at "
    "orders t = α − 1 (Su, Yang, Su, Wang, arXiv:2610.02414, §3). Γ(t)/t = ρ*α − D_α. "
    "Mechanism parameters are given as --NAME VALUE (see 'accounting mechanisms').")
#: orders reported when --t is not given
_GAP_T = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)


def _gap_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("mechanism", nargs="?", metavar="MECHANISM",
                   help="a registered mechanism (see 'accounting mechanisms')")
    p.add_argument("--t", type=_parse_float, nargs="+", metavar="T", dest="orders",
                   help="orders t = α − 1 in (0, 1e6] (default: "
                        + " ".join(f"{v:g}" for v in _GAP_T) + ")")
    p.add_argument("--compose", type=_count_text, default=None, metavar="N",
                   help="number of independent copies (default 1): ρ* and Γ scale by N")
    p.add_argument("--direction", choices=("max", "forward", "backward"), default="max",
                   help="neighbouring direction (default max: remove or add, the worse)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _where(t_star: float) -> str:
    if t_star == 0.0:
        return "sup at t → 0, where K(t)/(t(t+1)) → E[L] (the KL divergence)"
    if math.isinf(t_star):
        return "sup the t → ∞ limit"
    return f"sup at t* = {_num(t_star, 6)}"


def _mechanism_help(prog: str, mechanism: Optional[str], registry: Registry,
                    description: str, add_options) -> int:
    """``--help`` of a subcommand taking MECHANISM: its options, and with a MECHANISM
    that mechanism's parameters first."""
    cls = registry.mechanism(mechanism) if mechanism else None
    p = _Parser(prog=prog if cls is None else f"{prog} {mechanism}", add_help=False,
                description=description if cls is None else None)
    add_options(p)
    if cls is not None:
        _param_parser(f"{prog} {mechanism}", cls).print_help()
        print()
    p.print_help()
    return 0


def _cmd_gap(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    from accounting.analysis.gap import T_MAX, information_gap
    from accounting.validation import check_count
    prog = f"{PROG} gap"
    if ns.help:
        return _mechanism_help(prog, ns.mechanism, registry, _GAP_DESCRIPTION, _gap_options)
    if ns.mechanism is None:
        raise CLIError(f"give a MECHANISM (one of {', '.join(sorted(registry.mechanisms))})")
    count = check_count("compose", 1 if ns.compose is None else ns.compose)
    use = _mechanism_use(prog, ns.mechanism, extras, registry, count)
    orders = check_array("t", list(ns.orders) if ns.orders else list(_GAP_T),
                         lo=0.0, hi=T_MAX, lo_open=True)
    target = use.mechanism if count == 1 else use.mechanism.pair().self_compose(count)
    res = information_gap(target, orders, ns.direction)
    if ns.json:
        only = use.as_dict()
        payload = {"command": "gap", "mechanism": only["name"], "params": only["params"],
                   "count": count, **res.as_dict(),
                   "gap_relative": [_json_num(v) for v in res.relative_gap]}
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    print(use.describe())
    print(f"ρ* = {_num(res.rho, 10)} ({res.method}; {_where(res.t_star)}); direction "
          f"{res.direction.value}" + (f", attained {res.rho_direction.value}"
                                      if res.direction.value == "max" else ""))
    rows = [("t", "α", "K(t)", "ρ*·t(t+1)", "Γ(t)", "Γ(t)/t", "Γ/(ρ*t(t+1))")]
    for vals in zip(res.t, res.alpha, res.cgf, res.envelope, res.gap, res.gap_per_order,
                    res.relative_gap):
        rows.append(tuple(_num(v, 6) if i < 2 else _num(v) for i, v in enumerate(vals)))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
    if res.local is not None:
        c, loc = res.local.cumulants, res.local
        print(f"local expansion ({res.rho_direction.value}; {c.method}):")
        print(f"  κ₁..κ₄ = {_num(c.k1)}, {_num(c.k2)}, {_num(c.k3)}, {_num(c.k4)}")
        print(f"  Γ(t) ≈ a·t(t+1) + b₃·t²(t+1) + b₄·t²(t²−1): a = ρ* − κ₁ = {_num(loc.a)}, "
              f"b₃ = −κ₃/6 = {_num(loc.b3)}, b₄ = −κ₄/24 = {_num(loc.b4)}")
    return 0


# ------------------------------------------------------------------ calibrate
_CALIBRATE_DESCRIPTION = (
    "The smallest value of the noise parameter --solve of MECHANISM (its other parameters "
    "fixed as --NAME VALUE) for which --compose K independent uses meet ε ≤ --epsilon at "
    "--delta under --accountant (default pld), by Brent's method on a bracket; the answer "
    "is the feasible end of the final bracket, so its ε never exceeds the target. "
    "--dpsgd --q Q --steps N: the DP-SGD noise multiplier σ (the Poisson-subsampled "
    "Gaussian, sensitivity 1). See accounting.calibrate.")


def _calibrate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("mechanism", nargs="?", metavar="MECHANISM",
                   help="a registered mechanism (see 'accounting mechanisms')")
    p.add_argument("--solve", metavar="PARAM", help="the real parameter to calibrate "
                   "(e.g. sigma, b)")
    p.add_argument("--epsilon", type=_parse_float, metavar="E", help="target ε > 0")
    p.add_argument("--delta", type=_parse_float, metavar="D", help="target δ in (0, 1)")
    p.add_argument("--compose", type=_count_text, default=None, metavar="K",
                   help="number of independent uses of MECHANISM (default 1)")
    p.add_argument("--accountant", choices=tuple(ACCOUNTANTS), default="pld",
                   help="representation to calibrate under (default pld)")
    p.add_argument("--step", type=_parse_float, default=None, metavar="S",
                   help=f"PLD grid step of the privacy loss (default {DEFAULT_STEP:g})")
    p.add_argument("--rtol", type=_parse_float, default=None, metavar="R",
                   help="relative width of the final bracket (default 1e-6)")
    p.add_argument("--dpsgd", action="store_true", help="DP-SGD: calibrate σ of the "
                   "Poisson-subsampled Gaussian for --q Q and --steps N")
    p.add_argument("--steps", type=_count_text, default=None, metavar="N",
                   help="with --dpsgd: the number of training steps")
    # owned here so that a bare number after it is not taken for MECHANISM; handed back
    # to the mechanism's own parameters when a MECHANISM is given
    p.add_argument("--q", type=_parse_float, default=None, metavar="Q",
                   help="with --dpsgd: the Poisson sampling rate in (0, 1]")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _calibrate_params(prog: str, name: str, solve: str, extras: list[str],
                      registry: Registry) -> dict:
    """The fixed ``--PARAM VALUE`` options of mechanism ``name``; every required
    parameter but ``solve`` must be given."""
    cls = registry.mechanism(name)
    pns, rest = _param_parser(f"{prog} {name}", cls).parse_known_args(extras)
    if rest:
        bad = next((r for r in rest if r.startswith("-")), rest[0])
        what = "unknown parameter" if bad.startswith("-") else "unexpected argument"
        raise CLIError(f"{name}: {what} {bad!r} (see '{prog} {name} --help')")
    params = {k[len("param_"):]: v for k, v in vars(pns).items() if v is not None}
    if solve in params:
        raise CLIError(f"{name}: --{_option_names(solve)[0]} is the parameter being solved "
                       f"for; do not give it")
    missing = [a.name for a in cls.parameters().values()
               if a.default is attrs.NOTHING and a.name not in params and a.name != solve]
    if missing:
        raise CLIError(f"{name}: missing parameter "
                       + ", ".join(f"--{_option_names(m)[0]}" for m in missing))
    return params


#: values of the parameter being solved for probed before the search: calibration
#: searches (0, ∞) in both directions from 1
_SOLVE_PROBES = (1.0, 1e-6, 1e6)


def _check_solvable(registry: Registry, name: str, solve: str, params: dict) -> None:
    """Refuse, before the search, a parameter the search cannot move freely: it
    brackets the answer on (0, ∞) from 1, so the mechanism must accept the probes."""
    rng = registry.mechanism(name).ranges().get(solve)
    for x in _SOLVE_PROBES:
        if rng is not None:     # probe inside the parameter's declared range
            unit = float(params.get(rng.per, 1.0)) ** rng.per_power if rng.per else 1.0
            x = min(max(x, rng.lo * unit), rng.hi * unit)
        try:
            make_use(registry, name, {**params, solve: x})
        except (TypeError, ValueError) as exc:
            raise CLIError(f"--solve {solve}: calibrate searches {solve} over (0, ∞), more "
                           f"{solve} meaning more noise, but {name} refuses {solve} = {x:g} "
                           f"({_one_line(exc)}); calibrate a noise scale such as sigma or "
                           f"b") from None


def _cmd_calibrate(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    from accounting.analysis.calibration import DEFAULT_RTOL, Term, calibrate
    from accounting.validation import check_count
    prog = f"{PROG} calibrate"
    if ns.help:
        return _mechanism_help(prog, ns.mechanism, registry, _CALIBRATE_DESCRIPTION,
                               _calibrate_options)
    if ns.epsilon is None or ns.delta is None:
        raise CLIError("calibrate needs a target: --epsilon E and --delta D")
    if ns.dpsgd:
        if ns.mechanism or ns.solve or ns.compose is not None:
            raise CLIError("--dpsgd takes --q Q and --steps N, not MECHANISM, --solve or "
                           "--compose")
        if ns.steps is None or ns.q is None:
            raise CLIError("--dpsgd needs --q Q (the sampling rate) and --steps N")
        if extras:
            raise CLIError(f"--dpsgd: unexpected argument {extras[0]!r} (it takes --q Q, "
                           f"--steps N)")
        name, solve, params = "subsampled_gaussian", "sigma", {"q": ns.q}
        count = check_count("steps", ns.steps)
    else:
        if ns.steps is not None:
            raise CLIError("--steps belongs to --dpsgd; give the number of uses as --compose K")
        if ns.mechanism is None:
            raise CLIError(f"give a MECHANISM (one of {', '.join(sorted(registry.mechanisms))})"
                           f" or --dpsgd")
        if not ns.solve:
            raise CLIError(f"{ns.mechanism}: give the parameter to calibrate as --solve PARAM")
        name, solve = ns.mechanism, ns.solve
        Term(name, solve)  # an unknown mechanism or a parameter that cannot be solved for
        if ns.q is not None:
            extras = ["--q", repr(ns.q), *extras]
        params = _calibrate_params(prog, name, solve, extras, registry)
        count = check_count("compose", 1 if ns.compose is None else ns.compose)
        _check_solvable(registry, name, solve, params)
    check_positive("epsilon", ns.epsilon)
    # δ = 0 (pure DP): calibrate refuses it for the accountants that cannot answer it
    check_real("delta", ns.delta, lo=0.0, hi=1.0, hi_open=True)
    step = check_positive("step", ns.step if ns.step is not None else DEFAULT_STEP)
    rtol = DEFAULT_RTOL if ns.rtol is None else ns.rtol
    t0 = time.perf_counter()
    try:
        res = calibrate(name, solve, epsilon=ns.epsilon, delta=ns.delta, count=count,
                        params=params, accountant=ns.accountant, step=step, rtol=rtol)
    except (ValueError, TypeError) as exc:
        if not _is_usage_error(exc) or _raised_in(exc).startswith("accounting.analysis.calibration") \
                or _raised_in(exc).startswith("accounting.validation"):
            raise  # calibrate's own checks and answers speak for themselves
        # a refusal from deeper down (the accountant, at a value the search chose):
        # say where it happened rather than quote an internal quantity bare
        raise CLIError(f"calibrate: the {ns.accountant} accountant could not evaluate a "
                       f"candidate {solve} during the search ({_one_line(exc)}); try another "
                       f"--accountant or a larger --step") from None
    seconds = time.perf_counter() - t0
    if ns.json:
        payload: dict[str, Any] = {"command": "calibrate", "mechanism": name,
                                   "params": params, "solve": solve, "count": count}
        if ns.dpsgd:
            payload.update(dpsgd=True, q=params["q"], steps=count)
        payload.update(epsilon=res.target, delta=res.delta, accountant=res.accountant,
                       value=res.value, epsilon_achieved=_json_num(res.epsilon),
                       bracket=[res.bracket[0], res.bracket[1]], rtol=res.rtol,
                       order=None if res.order is None else res.order,
                       evaluations=res.evaluations, seconds=seconds,
                       bound=f"ε_achieved: {res.epsilon_label}, max over neighbouring "
                             f"directions", exactness=res.exactness.value)
        if res.accountant == "pld":
            payload["step"] = step
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    fixed = ", ".join(f"{k}={_show_param(v)}" for k, v in params.items())
    what = "DP-SGD noise multiplier" if ns.dpsgd else "calibrate"
    print(f"{what}: {name}({solve}=?{', ' + fixed if fixed else ''}) × {count}, "
          f"target ε ≤ {_num(res.target)} at δ = {_num(res.delta)} under {res.accountant}"
          + (f" (PLD step {step:g})" if res.accountant == "pld" else ""))
    print(f"  {solve} = {_num(res.value, 10)}")
    alpha = f"; {res.order_note}" if res.order is not None else ""
    print(f"  ε = {_num(res.epsilon, 10)} there ({res.epsilon_label}, max over both "
          f"neighbouring directions{alpha})")
    print(f"  bracket ({_num(res.bracket[0], 10)}, {_num(res.bracket[1], 10)}]: the smallest "
          f"feasible {solve} lies inside (rtol {res.rtol:g})")
    print(f"  {res.evaluations} evaluations, {_seconds(seconds)}")
    return 0


def _show_param(value: Any) -> str:
    if isinstance(value, float):
        return _num(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show_param(v) for v in value) + "]"
    return str(value)


def _gdp_mu(alpha: float, beta: float) -> float:
    """μ with G_μ(α) = β, G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth, Su 2019, Def. 2.7)."""
    from scipy.special import ndtri
    if beta >= 1.0 - alpha:
        return 0.0
    if beta <= 0.0:
        return math.inf
    return float(max(ndtri(1.0 - alpha) - ndtri(beta), 0.0))


def _cmd_run(ns: argparse.Namespace, registry: Registry) -> int:
    t_start = time.perf_counter()
    if ns.workload is not None:
        workload = load_workload(ns.workload, registry)
    else:
        workload = default_workload(registry)
    values = _query_values("epsilon", ns.delta, workload, default=(1e-5,))
    step = _step(ns.step, workload)
    names = _accountant_names(ns.accountant, workload)
    acct, results = _evaluate(workload, "epsilon", values, names, step)
    notes = _looseness_notes("epsilon", results)

    t0 = time.perf_counter()
    tradeoff = tradeoff_error = None
    try:
        tradeoff = acct.tradeoff()
        alphas = np.array(_ALPHAS)
        betas = np.atleast_1d(tradeoff.beta(alphas))
        beta_gdp = float(np.atleast_1d(tradeoff.beta(np.array([_GDP_ALPHA])))[0])
        mu = _gdp_mu(_GDP_ALPHA, beta_gdp)
    except Exception as exc:  # the trade-off needs the PLD; report its refusal
        tradeoff_error = _refusal(exc)
        if tradeoff_error is None:
            raise
    t_tradeoff = time.perf_counter() - t0
    subsampled = any(u.name.startswith("subsampled") for u in workload.uses)
    total = time.perf_counter() - t_start

    if ns.json:
        payload = {
            "query": "epsilon",
            "workload": workload.as_dict(),
            "delta": [_json_num(v) for v in values],
            "step": step,
            "bound": "upper bound, max over neighbouring directions",
            "results": _results_json(results),
            "seconds": total,
        }
        if tradeoff is not None:
            payload["tradeoff"] = {
                "alpha": list(_ALPHAS), "beta": [_json_num(b) for b in betas],
                "provenance": str(tradeoff.provenance),
                "gdp_mu": _json_num(mu), "gdp_alpha": _GDP_ALPHA,
                "gdp_note": "summary, not a bound: μ with G_μ(α) = β at one α",
                "seconds": t_tradeoff,
            }
        else:
            payload["tradeoff"] = {"error": tradeoff_error}
        if "zcdp" in results and subsampled:
            notes = [*notes, _ZCDP_NOTE]
        if notes:
            payload["notes"] = notes
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0

    title = workload.description or workload.describe()
    print(_short(f"{PROG} {__version__}: {title}"))
    print(_short(f"  workload: {workload.describe()}  ({workload.source})"))
    print(f"  ε(δ): upper bounds, max over add/remove (PLD step {step:g}; the PLD interval is "
          f"its certified bracket)")
    print("\n".join(_results_table("epsilon", values, results)))
    for note in notes:
        _print_note(note)
    if "zcdp" in results and subsampled:
        _print_note(_ZCDP_NOTE)
    if tradeoff is None:
        print(f"  trade-off (f-DP) of the composed PLD: refused: {tradeoff_error}")
    else:
        print(f"  trade-off (f-DP) of the composed PLD, min over directions "
              f"({_seconds(t_tradeoff)}):")
        print("    " + "   ".join(f"β(α={a:g}) = {_num(b, 6)}" for a, b in zip(_ALPHAS, betas)))
        print(f"    summary, not a bound: ≈ μ-GDP with μ = {_num(mu, 4)} (G_μ(α) = β at "
              f"α = {_GDP_ALPHA:g})")
    print(f"  total {_seconds(total)}")
    return 0


# ---------------------------------------------------------------------- main
def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"{PROG}: warning: {_one_line(Exception(str(message)))}", file=sys.stderr)


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
        with _stdout_to_stderr():
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
    command = ns.command
    if command in ("epsilon", "delta"):
        return _cmd_query(command, ns, extras, _registry())
    if command == "gap":
        return _cmd_gap(ns, extras, _registry())
    if command == "calibrate":
        return _cmd_calibrate(ns, extras, _registry())
    if extras:
        raise CLIError(f"unrecognized arguments: {' '.join(extras)} (see '{PROG} --help')")
    registry = _registry()
    if command == "audit":
        return _cmd_audit(ns, registry)
    if command == "sweep":
        return _cmd_sweep(ns, registry)
    if command == "mechanisms":
        return _cmd_mechanisms(ns, registry)
    return _cmd_run(ns, registry)


#: modules whose ValueError/TypeError is never a deliberate check of ours: raised
#: there, it means the library handed them something it should not have (a bug)
_FOREIGN_MODULES = ("numpy", "scipy", "mpmath", "pluggy", "importlib", "tomllib")


def _raised_in(exc: BaseException) -> str:
    """The module whose code raised ``exc`` (the innermost traceback frame)."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", ""))


_NAN_WORD = re.compile(r"\bnan\b", re.IGNORECASE)


def _nan_is_internal(exc: BaseException) -> None:
    """Mark as internal a refusal that mentions NaN raised while evaluating inputs that
    were all checked to be free of NaN: the library produced the NaN itself (a bug),
    e.g. "inf_mass must be in [0, 1], got nan"."""
    if isinstance(exc, (ValueError, TypeError)) and _NAN_WORD.search(str(exc)):
        exc.accounting_internal = True  # type: ignore[attr-defined]


def _is_usage_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's (exit 2) rather than a bug (exit 1).

    Usage: ``CLIError`` (argument checks), ``WorkloadError`` (file checks),
    ``UserCodeError`` (an exception from the user's --mechanism code), ``PluginError``
    (an installed plugin is broken), and a ``ValueError``/``TypeError`` raised by a
    check in the library or a plugin — the documented way they refuse a value or a
    request. A ValueError/TypeError raised *inside* numpy, scipy, mpmath, … is not a
    check of ours but a value the library should never have passed on: internal.
    Everything else (KeyError, IndexError, AttributeError, ArithmeticError,
    RecursionError, MemoryError, …) is internal, and so is a refusal mentioning NaN
    raised while evaluating checked inputs (``_nan_is_internal``).
    """
    if isinstance(exc, (CLIError, WorkloadError, UserCodeError, PluginError)):
        return True
    if getattr(exc, "accounting_internal", False):
        return False
    if isinstance(exc, (ValueError, TypeError)):
        module = _raised_in(exc)
        return not any(module == m or module.startswith(m + ".") for m in _FOREIGN_MODULES)
    return False


def _split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """Remove the global ``--debug`` flag (anywhere before ``--``)."""
    if "--" in argv:
        cut = argv.index("--")
        head, tail = argv[:cut], argv[cut:]
    else:
        head, tail = argv, []
    debug = "--debug" in head
    return [a for a in head if a != "--debug"] + tail, debug


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    argv = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    argv, debug = _split_debug(argv)
    debug = debug or os.environ.get("ACCOUNTING_DEBUG", "") not in ("", "0")
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
            if _is_usage_error(exc):
                print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
                return EXIT_USAGE
            print(f"{PROG}: internal error — please report: {type(exc).__name__}: "
                  f"{_one_line(exc)}", file=sys.stderr)
            return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
