"""``accounting calibrate``: the smallest noise parameter meeting a target (ε, δ)
(``accounting.analysis.calibration``).

::

    accounting calibrate MECHANISM --solve PARAM --PARAM VALUE … [--compose K] --epsilon E --delta D
    accounting calibrate --dpsgd --q Q --compose N --epsilon E --delta D
    accounting calibrate MECHANISM --solve PARAM … (--tpr T --fpr A | --advantage A)
    … [--direction forward|backward|max] [--integer]

A risk target (``--tpr T --fpr A``: TPR at FPR A at most T; ``--advantage A``: TPR −
FPR at most A) replaces (ε, δ) (``calibrate_risk``, a certified upper bound from the
PLD); ``--direction`` calibrates one neighbouring direction; ``--integer`` returns the
smallest integer value meeting the target.

``--dpsgd`` calibrates the job named ``dpsgd`` that a plugin registers
(``hookspecs.accounting_register_jobs``): its one mechanism, solving for the job's
``solve`` parameter, with ``--q`` as its sampling rate ``q`` and ``--compose`` steps
(``--steps``, the old spelling, is accepted with a warning for one release).
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

from accounting.accountant import ACCOUNTANTS
from accounting.cli.base import (
    PROG,
    CLIError,
    count_text,
    is_usage_error,
    one_line,
    parse_float,
    raised_in,
)
from accounting.cli.output import json_num, print_json, show_num, show_param, show_seconds
from accounting.cli.parser import mechanism_help, mechanism_names, parse_params
from accounting.curves.pld import DEFAULT_STEP
from accounting.registry.registry import Registry
from accounting.validation import check_count, check_positive, check_probability, check_real
from accounting.workload import make_use

__all__: list[str] = []

#: the job ``--dpsgd`` calibrates
DPSGD_JOB = "dpsgd"

_DESCRIPTION = (
    "The smallest value of the noise parameter --solve of MECHANISM (its other parameters "
    "fixed as --NAME VALUE) for which --compose K independent uses meet ε ≤ --epsilon at "
    "--delta under --accountant (default pld), by Brent's method on a bracket; the answer "
    "is the feasible end of the final bracket, so its ε never exceeds the target. "
    "--dpsgd --q Q --compose N: the DP-SGD noise multiplier, calibrating the mechanism of "
    f"the job '{DPSGD_JOB}' that a plugin registers (see 'accounting mechanisms') at "
    "sampling rate Q for N steps. See accounting.calibrate.")


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("mechanism", nargs="?", metavar="MECHANISM",
                   help="a registered mechanism (see 'accounting mechanisms')")
    p.add_argument("--solve", metavar="PARAM", help="the real parameter to calibrate "
                   "(e.g. sigma, b)")
    p.add_argument("--epsilon", type=parse_float, metavar="E", help="target ε > 0")
    p.add_argument("--delta", type=parse_float, metavar="D", help="target δ in (0, 1)")
    p.add_argument("--compose", type=count_text, default=None, metavar="K",
                   help="number of independent uses of MECHANISM (default 1)")
    p.add_argument("--accountant", choices=tuple(ACCOUNTANTS), default="pld",
                   help="representation to calibrate under (default pld)")
    p.add_argument("--step", type=parse_float, default=None, metavar="S",
                   help=f"PLD grid step of the privacy loss (default {DEFAULT_STEP:g})")
    p.add_argument("--rtol", type=parse_float, default=None, metavar="R",
                   help="relative width of the final bracket (default 1e-6)")
    p.add_argument("--dpsgd", action="store_true", help="DP-SGD: calibrate the noise "
                   f"multiplier of the job '{DPSGD_JOB}' for --q Q and --compose N "
                   f"(N training steps)")
    p.add_argument("--steps", type=count_text, default=None, metavar="N",
                   help="deprecated: --compose N (the number of training steps)")
    # owned here so that a bare number after it is not taken for MECHANISM; handed back
    # to the mechanism's own parameters when a MECHANISM is given
    p.add_argument("--q", type=parse_float, default=None, metavar="Q",
                   help="with --dpsgd: the Poisson sampling rate in (0, 1]")
    p.add_argument("--tpr", type=parse_float, default=None, metavar="T",
                   help="risk target instead of (ε, δ): TPR at --fpr at most T")
    p.add_argument("--fpr", type=parse_float, default=None, metavar="A",
                   help="with --tpr: the false-positive rate in (0, 1)")
    p.add_argument("--advantage", type=parse_float, default=None, metavar="A",
                   help="risk target instead of (ε, δ): TPR − FPR at most A")
    p.add_argument("--direction", choices=("max", "forward", "backward"), default="max",
                   help="neighbouring direction to calibrate (max: the worse of both)")
    p.add_argument("--integer", action="store_true",
                   help="the smallest integer value meeting the target")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("calibrate", add_help=False, help="the smallest noise parameter "
                       "meeting a target (ε, δ)", description=_DESCRIPTION)
    _options(p)
    p.set_defaults(handler=run, takes_extras=True)


#: values of the parameter being solved for probed before the search: calibration
#: searches (0, ∞) in both directions from 1
_SOLVE_PROBES = (1.0, 1e-6, 1e6)


def _check_solvable(registry: Registry, name: str, solve: str, params: dict[str, Any]) -> None:
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
                           f"({one_line(exc)}); calibrate a noise scale such as sigma or "
                           f"b") from None


def _dpsgd_job(registry: Registry, q: float) -> tuple[str, str, dict[str, Any]]:
    """The mechanism, the parameter to solve and the fixed parameters of ``--dpsgd``:
    those of the job ``DPSGD_JOB``, its sampling rate ``q`` replaced."""
    job = registry.jobs.get(DPSGD_JOB)
    entries = job.table["mechanism"] if job is not None else []
    if job is None or job.solve is None or len(entries) != 1 \
            or not isinstance(entries[0].get("name"), str):
        raise CLIError(f"--dpsgd calibrates the job {DPSGD_JOB!r} (one mechanism and the "
                       f"parameter to solve for), which no installed plugin registers; "
                       f"give MECHANISM --solve PARAM instead")
    entry = entries[0]
    params = {k: v for k, v in entry.items() if k not in ("name", "count", job.solve)}
    params["q"] = q
    return entry["name"], job.solve, params


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    from accounting.analysis.calibration import DEFAULT_RTOL, MechanismFamily, calibrate
    prog = f"{PROG} calibrate"
    if ns.help:
        return mechanism_help(prog, ns.mechanism, registry, _DESCRIPTION, _options)
    risk = ns.tpr is not None or ns.fpr is not None or ns.advantage is not None
    if risk and (ns.epsilon is not None or ns.delta is not None):
        raise CLIError("give either a risk target (--tpr T --fpr A, or --advantage A) or "
                       "--epsilon E --delta D, not both")
    if not risk and (ns.epsilon is None or ns.delta is None):
        raise CLIError("calibrate needs a target: --epsilon E and --delta D (or a risk "
                       "target: --tpr T --fpr A, or --advantage A)")
    if ns.dpsgd:
        if ns.mechanism or ns.solve:
            raise CLIError("--dpsgd takes --q Q and --compose N, not MECHANISM or --solve")
        if ns.steps is not None:
            if ns.compose is not None:
                raise CLIError("give the number of steps once, as --compose N (--steps is "
                               "its deprecated spelling)")
            warnings.warn("calibrate --dpsgd --steps N is deprecated and will be removed in "
                          "the next release; use --compose N", FutureWarning, stacklevel=1)
        steps = ns.compose if ns.compose is not None else ns.steps
        if steps is None or ns.q is None:
            raise CLIError("--dpsgd needs --q Q (the sampling rate) and --compose N (the "
                           "number of steps)")
        if extras:
            raise CLIError(f"--dpsgd: unexpected argument {extras[0]!r} (it takes --q Q, "
                           f"--compose N)")
        # q = 0 costs nothing at any σ: there is no smallest σ to search for
        name, solve, params = _dpsgd_job(registry, check_probability("q", ns.q, hi_open=False))
        count = check_count("compose" if ns.compose is not None else "steps", steps)
    else:
        if ns.steps is not None:
            raise CLIError("--steps belongs to --dpsgd; give the number of uses as --compose K")
        if ns.mechanism is None:
            raise CLIError(f"give a MECHANISM (one of {mechanism_names(registry)}) or --dpsgd")
        if not ns.solve:
            raise CLIError(f"{ns.mechanism}: give the parameter to calibrate as --solve PARAM")
        name, solve = ns.mechanism, ns.solve
        MechanismFamily(name, solve)  # an unknown mechanism or a parameter that cannot be solved for
        if ns.q is not None:
            extras = ["--q", repr(ns.q), *extras]
        cls = registry.mechanism(name)
        params = parse_params(prog, cls, extras, lambda: f"see '{prog} {name} --help'",
                               solve=solve, options=getattr(ns, "command_options", ()))
        count = check_count("compose", 1 if ns.compose is None else ns.compose)
        _check_solvable(registry, name, solve, params)
    step = check_positive("step", ns.step if ns.step is not None else DEFAULT_STEP)
    rtol = DEFAULT_RTOL if ns.rtol is None else ns.rtol
    if risk:
        return _run_risk(ns, name, solve, params, count, step, rtol)
    check_positive("epsilon", ns.epsilon)
    # δ = 0 (pure DP): calibrate refuses it for the accountants that cannot answer it
    check_real("delta", ns.delta, lo=0.0, hi=1.0, hi_open=True)
    t0 = time.perf_counter()
    try:
        res = calibrate(name, solve, epsilon=ns.epsilon, delta=ns.delta, count=count,
                        params=params, accountant=ns.accountant, step=step, rtol=rtol,
                        direction=ns.direction, integer=ns.integer)
    except (ValueError, TypeError) as exc:
        if not is_usage_error(exc) or raised_in(exc).startswith("accounting.analysis.calibration") \
                or raised_in(exc).startswith("accounting.validation"):
            raise  # calibrate's own checks and answers speak for themselves
        # a refusal from deeper down (the accountant, at a value the search chose):
        # say where it happened rather than quote an internal quantity bare
        raise CLIError(f"calibrate: the {ns.accountant} accountant could not evaluate a "
                       f"candidate {solve} during the search ({one_line(exc)}); try another "
                       f"--accountant or a larger --step") from None
    seconds = time.perf_counter() - t0
    if ns.json:
        payload: dict[str, Any] = {"command": "calibrate", "mechanism": name,
                                   "params": params, "solve": solve, "count": count}
        if ns.dpsgd:
            payload.update(dpsgd=True, q=params["q"], steps=count)
        payload.update(epsilon=res.target, delta=res.delta, accountant=res.accountant,
                       value=res.value, epsilon_achieved=json_num(res.epsilon),
                       bracket=[res.bracket[0], res.bracket[1]], rtol=res.rtol,
                       order=None if res.order is None else res.order,
                       evaluations=res.evaluations, seconds=seconds,
                       bound=f"ε_achieved: {res.epsilon_label}, {_directions(ns.direction)}",
                       exactness=res.exactness.value)
        if ns.direction != "max":
            payload["direction"] = ns.direction
        if ns.integer:
            payload["integer"] = "smallest integer meeting the target"
        if res.accountant == "pld":
            payload["step"] = step
        print_json("calibrate", payload)
        return 0
    fixed = ", ".join(f"{k}={show_param(v)}" for k, v in params.items())
    what = "DP-SGD noise multiplier" if ns.dpsgd else "calibrate"
    print(f"{what}: {name}({solve}=?{', ' + fixed if fixed else ''}) × {count}, "
          f"target ε ≤ {show_num(res.target)} at δ = {show_num(res.delta)} under {res.accountant}"
          + (f" (PLD step {step:g})" if res.accountant == "pld" else ""))
    print(f"  {solve} = {show_num(res.value, 10)}"
          + (" (the smallest integer meeting the target)" if ns.integer else ""))
    alpha = f"; {res.order_note}" if res.order is not None else ""
    print(f"  ε = {show_num(res.epsilon, 10)} there ({res.epsilon_label}, "
          f"{_directions(ns.direction)}{alpha})")
    print(f"  bracket ({show_num(res.bracket[0], 10)}, {show_num(res.bracket[1], 10)}]: the smallest "
          f"feasible {solve} lies inside (rtol {res.rtol:g})")
    print(f"  {res.evaluations} evaluations, {show_seconds(seconds)}")
    return 0


def _directions(direction: str) -> str:
    return ("max over both neighbouring directions" if direction == "max"
            else f"the {direction} direction only")


def _run_risk(ns: argparse.Namespace, name: str, solve: str, params: dict[str, Any], count: int,
              step: float, rtol: float) -> int:
    """``calibrate`` with a risk target (``calibrate_risk``)."""
    from accounting.analysis.calibration import MechanismFamily, calibrate_risk
    t0 = time.perf_counter()
    res = calibrate_risk(MechanismFamily(name, solve, count=count, params=params),
                         tpr=ns.tpr, fpr=ns.fpr, advantage=ns.advantage,
                         direction=ns.direction, integer=ns.integer, step=step, rtol=rtol,
                         accountant=ns.accountant)
    seconds = time.perf_counter() - t0
    what = (f"TPR at FPR {show_num(res.fpr)}" if res.figure == "tpr" and res.fpr is not None
            else "advantage (TPR − FPR)")   # (a TPR target always has its FPR)
    if ns.json:
        payload: dict[str, Any] = {
            "command": "calibrate", "mechanism": name, "params": params, "solve": solve,
            "count": count, "target": {"figure": res.figure, "value": res.target,
                                       **({"fpr": res.fpr} if res.fpr is not None else {})},
            "value": res.value, "achieved": json_num(res.achieved),
            "bound": f"achieved: upper bound on every attack's {what}, "
                     f"{_directions(res.direction)}",
            "bracket": [res.bracket[0], res.bracket[1]], "evaluations": res.evaluations,
            "accountant": res.accountant, "step": step, "seconds": seconds}
        if ns.integer:
            payload["integer"] = "smallest integer meeting the target"
        print_json("calibrate", payload)
        return 0
    fixed = ", ".join(f"{k}={show_param(v)}" for k, v in params.items())
    print(f"calibrate: {name}({solve}=?{', ' + fixed if fixed else ''}) × {count}, target "
          f"{what} ≤ {show_num(res.target)} "
          + (f"(PLD step {step:g})" if res.accountant == "pld" else f"(under {res.accountant})"))
    print(f"  {solve} = {show_num(res.value, 10)}"
          + (" (the smallest integer meeting the target)" if ns.integer else ""))
    print(f"  {what} ≤ {show_num(res.achieved, 10)} there (upper bound on every attack, "
          f"{_directions(res.direction)})")
    print(f"  bracket ({show_num(res.bracket[0], 10)}, {show_num(res.bracket[1], 10)}], "
          f"{res.evaluations} evaluations, {show_seconds(seconds)}")
    return 0
