"""``accounting gap``: the information gap between the Rényi curve of a mechanism
(composed ``--compose`` times) and its zCDP envelope (``accounting.analysis.gap``)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from accounting.cli.base import PROG, CLIError, count_text, parse_float
from accounting.cli.output import aligned, json_num, print_json, show_num
from accounting.cli.parser import mechanism_help, mechanism_names, mechanism_use
from accounting.pairs.composed import compose
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import Pair
from accounting.registry.registry import Registry
from accounting.validation import check_array, check_count

__all__: list[str] = []

_DESCRIPTION = (
    "The information gap Γ(t) = ρ*·t(t+1) − K(t) ≥ 0 between the exact Rényi curve of "
    "MECHANISM (composed --compose times) and its zCDP envelope ρ* = sup K(t)/(t(t+1)), at "
    "orders t = α − 1 (Su, Yang, Su, Wang, arXiv:2610.02414, §3). Γ(t)/t = ρ*α − D_α. "
    "Mechanism parameters are given as --NAME VALUE (see 'accounting mechanisms').")
#: orders reported when --t is not given
_GAP_T = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("mechanism", nargs="?", metavar="MECHANISM",
                   help="a registered mechanism (see 'accounting mechanisms')")
    p.add_argument("--t", type=parse_float, nargs="+", metavar="T", dest="orders",
                   help="orders t = α − 1 in (0, 1e6] (default: "
                        + " ".join(f"{v:g}" for v in _GAP_T) + ")")
    p.add_argument("--compose", type=count_text, default=None, metavar="N",
                   help="number of independent copies (default 1): ρ* and Γ scale by N")
    p.add_argument("--direction", choices=("max", "forward", "backward"), default="max",
                   help="neighbouring direction (default max: remove or add, the worse)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("gap", add_help=False, help="the information gap between the RDP "
                       "curve of a mechanism and its zCDP envelope", description=_DESCRIPTION)
    _options(p)
    p.set_defaults(handler=run, takes_extras=True)


def _where(t_star: float) -> str:
    if t_star == 0.0:
        return "sup at t → 0, where K(t)/(t(t+1)) → E[L] (the KL divergence)"
    if math.isinf(t_star):
        return "sup the t → ∞ limit"
    return f"sup at t* = {show_num(t_star, 6)}"


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    from accounting.analysis.gap import T_MAX, information_gap
    prog = f"{PROG} gap"
    if ns.help:
        return mechanism_help(prog, ns.mechanism, registry, _DESCRIPTION, _options)
    if ns.mechanism is None:
        raise CLIError(f"give a MECHANISM (one of {mechanism_names(registry)})")
    count = check_count("compose", 1 if ns.compose is None else ns.compose)
    use = mechanism_use(prog, ns.mechanism, extras, registry, count,
                         options=getattr(ns, "command_options", ()))
    orders = check_array("t", list(ns.orders) if ns.orders else list(_GAP_T),
                         lo=0.0, hi=T_MAX, lo_open=True)
    target: Mechanism | Pair = use.mechanism
    if count > 1:
        composed = compose((use.mechanism.pair(), count))
        assert isinstance(composed, Pair)   # a composition of pairs is a pair
        target = composed
    res = information_gap(target, orders, ns.direction)
    if ns.json:
        only = use.as_dict()
        payload = {"command": "gap", "mechanism": only["name"], "params": only["params"],
                   "count": count, **res.as_dict(),
                   "gap_relative": [json_num(v) for v in res.relative_gap]}
        print_json("gap", payload)
        return 0
    print(use.describe())
    print(f"ρ* = {show_num(res.rho, 10)} ({res.method}; {_where(res.t_star)}); direction "
          f"{res.direction.value}" + (f", attained {res.rho_direction.value}"
                                      if res.direction.value == "max" else ""))
    rows: list[tuple[str, ...]] = [("t", "α", "K(t)", "ρ*·t(t+1)", "Γ(t)", "Γ(t)/t",
                                    "Γ/(ρ*t(t+1))")]
    for vals in zip(res.t, res.alpha, res.cgf, res.envelope, res.gap, res.gap_per_order,
                    res.relative_gap):
        rows.append(tuple(show_num(v, 6) if i < 2 else show_num(v) for i, v in enumerate(vals)))
    for line in aligned(rows, "r" * len(rows[0])):
        print(line)
    if res.local is not None:
        c, loc = res.local.cumulants, res.local
        print(f"local expansion ({res.rho_direction.value}; {c.method}):")
        print(f"  κ₁..κ₄ = {show_num(c.k1)}, {show_num(c.k2)}, {show_num(c.k3)}, {show_num(c.k4)}")
        print(f"  Γ(t) ≈ a·t(t+1) + b₃·t²(t+1) + b₄·t²(t²−1): a = ρ* − κ₁ = {show_num(loc.a)}, "
              f"b₃ = −κ₃/6 = {show_num(loc.b3)}, b₄ = −κ₄/24 = {show_num(loc.b4)}")
    return 0
