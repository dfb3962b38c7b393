"""Accounting a workload under one or several accountants, as ``run``, ``epsilon`` and
``delta`` do: the answers, their certified intervals, provenance and timings, one
accountant's refusal kept beside the others' answers, and the notes saying when an
answer is looser than another's.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from accounting.accountant import ACCOUNTANTS
from accounting.cli.base import CLIError, nan_is_internal, refusal_reason
from accounting.cli.output import is_certified, show_num
from accounting.curves.curve import Provenance
from accounting.curves.pld import DEFAULT_STEP
from accounting.curves.profile import PrivacyProfile
from accounting.curves.zcdp import ZCDP
from accounting.validation import check_array, check_positive
from accounting.vocabulary import Direction, Exactness, bind_direction
from accounting.workload import Workload

__all__: list[str] = []


def accountant_names(choice: str | None, workload: Workload) -> list[str]:
    """The accountants to run: ``--accountant``, else the workload's, else all of them."""
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
    set. Every order gives a valid bound (Canonne, Kamath, Steinke, arXiv:2004.00010,
    Prop. 12), so the answer is an upper bound; it can only be slightly above the
    engine's per-value optimum. Returns the answers and the number of orders used.
    """
    from accounting.curves.converters import (
        improved_epsilon,
        improved_log_delta,
        with_order_infinity,
    )
    from accounting.numerics.order_search import minimise_on_shared_orders
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
        per_d, n_orders = minimise_on_shared_orders(bind_direction(rdp.upper, d),
                                                    objective, _SWEEP_FINE_ORDERS)
        # the order α = ∞ where the curve declares a finite D_∞ (a pure-DP curve)
        sup = rdp.upper.limit(np.inf, d)
        if query == "delta":
            with np.errstate(divide="ignore"):
                per_d = np.log(with_order_infinity(query, values, np.exp(per_d), sup))
        else:
            per_d = with_order_infinity(query, np.log(values), per_d, sup)
        best = np.maximum(best, per_d)
    if query == "delta":
        out = np.minimum(np.exp(best), 1.0)
        return np.where(values == -np.inf, 1.0, out), n_orders
    return np.maximum(best, 0.0), n_orders


def evaluate_workload(workload: Workload, query: str, values: np.ndarray, names: list[str],
                      step: float) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Run ``query`` ("epsilon" or "delta") at ``values`` under each accountant.

    With several accountants, one that refuses (a usage error: e.g. a grid too large)
    gets ``{"error": reason}`` and the others still answer; with one accountant, or
    when every one refuses, the first refusal is raised. Internal errors propagate.
    """
    acct = workload.accountant(step)
    results: dict[str, dict[str, Any]] = {}
    first_error: Exception | None = None
    for name in names:
        t0 = time.perf_counter()
        try:
            results[name] = _evaluate_one(acct, name, query, values)
        except Exception as exc:
            nan_is_internal(exc)
            reason = refusal_reason(exc)
            if reason is None or len(names) == 1:
                raise
            first_error = first_error or exc
            results[name] = {"error": reason}
        results[name]["seconds"] = time.perf_counter() - t0
    if first_error is not None and all("error" in r for r in results.values()):
        raise first_error
    return acct, results


def _evaluate_one(acct: Any, name: str, query: str, values: np.ndarray) -> dict[str, Any]:
    res: dict[str, Any] = {}
    kind = ACCOUNTANTS[name]
    pure = (acct.pure_epsilon() if name == "pld" and query == "epsilon"
            and bool(np.all(values == 0)) else None)
    if pure is not None:
        # ε(0) of pure-DP parts: Σ kᵢεᵢ in closed form, no grid at all
        lo, hi = acct.epsilon_interval(values)
        res[query] = np.atleast_1d(acct.epsilon(values))
        res["interval"] = np.stack([np.atleast_1d(lo), np.atleast_1d(hi)], axis=1)
        exactness = Exactness.EXACT if pure[0] == pure[1] else Exactness.UPPER
        res["provenance"] = str(Provenance(exactness, ("pure DP: ε(0) = Σ kᵢεᵢ",)))
        res["exactness"] = exactness.value
        return res
    # an all-Gaussian job, or an all-finite-law one (randomized responses), is answered
    # by its exact closed form, with no grid at all; otherwise the full PLD first: the
    # queries below reuse it
    closed = acct.closed_profile() if name == "pld" else None
    curve = closed if closed is not None else acct.curve(kind)
    sweep = name == "rdp" and values.size > _SWEEP_MIN_VALUES
    note = ""
    if sweep:
        answer, n_orders = _rdp_sweep(curve, query, values)
        note = f"; minimised over one shared grid of {n_orders} orders for {values.size} values"
    else:
        answer = getattr(acct.under(name), query)(values)
    res[query] = np.atleast_1d(answer)
    if name == "pld":
        lo, hi = (acct.epsilon_interval(values) if query == "epsilon"
                  else acct.delta_interval(values))
        res["interval"] = np.stack([np.atleast_1d(lo), np.atleast_1d(hi)], axis=1)
    shown = curve if name == "pld" else curve.to(PrivacyProfile)
    res["provenance"] = str(shown.provenance) + note
    res["exactness"] = shown.provenance.exactness.value
    if isinstance(curve, ZCDP):
        res["rho"] = curve.rho()
    return res


def looseness_notes(query: str, results: dict[str, dict[str, Any]]) -> list[str]:
    """Say when the PLD answer is looser than another accountant's (every answer is a
    valid upper bound, so the smallest is the one to use), as happens when the grid
    is too coarse for the composition: its certified lower end then collapses."""
    pld = results.get("pld")
    if not pld or "error" in pld:
        return []
    # only a certified answer can be offered in place of the PLD's
    others = {n: r for n, r in results.items()
              if n != "pld" and "error" not in r and is_certified(r)}
    notes = []
    for i in range(len(pld[query])):
        p = float(pld[query][i])
        better = [(float(r[query][i]), n) for n, r in others.items()
                  if float(r[query][i]) < p * (1.0 - 1e-9)]
        if not better:
            continue
        b, who = min(better)
        lo = float(pld["interval"][i][0])
        why = (f"its certified lower end is {show_num(lo)}" if lo > 0 else
               "its certified lower end is 0")
        notes.append(f"the PLD answer {show_num(p)} is looser than {who}'s {show_num(b)} here "
                     f"({why}: the grid is too coarse for this composition; a smaller --step "
                     f"tightens it); every line is an upper bound, so {show_num(b)} holds")
        break
    return notes


def query_values(query: str, given: list[float] | None, workload: Workload,
                 default: tuple[float, ...] | None = None) -> np.ndarray:
    """The δ (``query == "epsilon"``) or ε values to query: given on the command line, else
    the workload's, else ``default``; none at all is a CLIError naming the flag."""
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


def workload_step(ns_step: float | None, workload: Workload) -> float:
    """The PLD grid step: ``--step``, else the workload's, else ``DEFAULT_STEP`` (checked > 0)."""
    step = ns_step if ns_step is not None else workload.step
    return check_positive("step", step if step is not None else DEFAULT_STEP)
