"""Risk calibration: the smallest noise value x whose composition bounds an attacker's
TPR at a given FPR, or the advantage TPR − FPR (Kulynych et al., arXiv:2407.02191, §3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from accounting.accountant import Accountant, check_accountant
from accounting.analysis.calibration.family import check_family, ledger_at, scales_noise
from accounting.analysis.calibration.search import (
    DEFAULT_RTOL,
    Problem,
    check_flag,
    solve_bracket,
)
from accounting.curves.pld import DEFAULT_STEP, PLD
from accounting.curves.rdp import RDP
from accounting.curves.zcdp import ZCDP
from accounting.ledger import Ledger
from accounting.validation import check_positive, check_real
from accounting.vocabulary import Direction, as_direction

__all__ = ["RiskCalibration", "calibrate_risk"]


@attrs.frozen
class RiskCalibration:
    """A noise value calibrated to a risk target, and what it achieves.

    ``figure``: what was bounded (``"tpr"`` at ``fpr``, or ``"advantage"``);
    ``achieved``: that figure at ``value``, an upper bound from the composition under
    ``accountant`` (the pessimistic PLD, or the Rényi curve: ``calibrate_risk``), worst
    over ``direction``'s components, ≤ ``target``;
    ``bracket`` = (lo, value) with the figure above the target at lo; ``integer``:
    whether ``value`` is the smallest integer meeting the target.
    """

    parameter: str
    value: float
    figure: str
    achieved: float
    target: float
    fpr: float | None
    direction: str
    bracket: tuple[float, float]
    evaluations: int
    integer: bool = False
    ledger: Ledger | None = attrs.field(default=None, eq=False, repr=False)
    accountant: str = "pld"

    def describe(self) -> str:
        what = f"TPR at FPR {self.fpr:g}" if self.figure == "tpr" else "advantage"
        kind = "smallest integer" if self.integer else "smallest"
        return (f"{self.parameter} = {self.value:.10g} ({kind}) gives {what} ≤ "
                f"{self.achieved:.10g} ≤ {self.target:g} (upper bound, {self.direction}, "
                f"{self.accountant}); "
                f"bracket ({self.bracket[0]:.10g}, {self.bracket[1]:.10g}], "
                f"{self.evaluations} evaluations")


def _risk_metric(tpr: float | None, fpr: float | None, advantage: float | None,
                 direction: Direction, accountant: str = "pld"
                 ) -> tuple[str, float, float | None, Callable[..., Any]]:
    """(figure, target, fpr, accountant ↦ the figure's upper bound under ``accountant``:
    the pessimistic PLD, or the Rényi curve through ``accounting.analysis.risk``)."""
    from accounting.analysis import risk
    kind = PLD if accountant == "pld" else (RDP if accountant == "rdp" else ZCDP)

    def curve(acct: Accountant) -> PLD | RDP | ZCDP:
        if kind is PLD:
            return acct.curve(PLD, lower=False)
        return acct.curve(RDP) if kind is RDP else acct.curve(ZCDP)
    if (tpr is None) == (advantage is None):
        raise ValueError("give exactly one risk target: tpr (with fpr) or advantage")
    if tpr is not None:
        if fpr is None:
            raise ValueError("a tpr target needs the fpr at which it holds")
        fpr = check_real("fpr", fpr, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        target = check_real("tpr", tpr, lo=fpr, hi=1.0, lo_open=True, hi_open=True)

        def tpr_metric(acct: Accountant) -> float:
            return float(risk.tpr_at_fpr(curve(acct), fpr, direction=direction))
        return "tpr", target, fpr, tpr_metric
    if fpr is not None:
        raise ValueError("fpr applies to a tpr target, not to advantage")
    target = check_real("advantage", advantage, lo=0.0, hi=1.0, lo_open=True, hi_open=True)

    def advantage_metric(acct: Accountant) -> float:
        return float(risk.advantage(curve(acct), direction=direction))
    return "advantage", target, None, advantage_metric


def calibrate_risk(family: Any, *, tpr: float | None = None, fpr: float | None = None,
                   advantage: float | None = None, direction: Direction | str = "max",
                   integer: bool = False, step: float = DEFAULT_STEP,
                   rtol: float = DEFAULT_RTOL, start: float = 1.0,
                   parameter: str | None = None, accountant: str = "pld") -> RiskCalibration:
    """The smallest shared x (``family`` as in ``calibrate_workload``) whose composition
    bounds an attacker's risk: TPR at ``fpr`` ≤ ``tpr`` (``accounting.analysis.risk.
    tpr_at_fpr``), or TPR − FPR ≤ ``advantage`` — each an upper bound, worst over
    ``direction``'s components (Kulynych et al., "Attack-aware noise calibration",
    arXiv:2407.02191, §3, calibrate to the same figures). The figure is assumed
    non-increasing in x and checked as for ε. ``integer``: the smallest integer x ≥ 1
    meeting the target.

    ``accountant``: ``"pld"`` (default) reads the composed pessimistic PLD (certified;
    tight up to ``step``); ``"rdp"``/``"zcdp"`` read the composed Rényi curve — the TPR
    by the binary Rényi bound on every test (Balle et al., arXiv:1905.09982, §3; see
    ``accounting.analysis.risk``), the advantage δ(0) by the improved conversion. Both
    upper-bound the figure, so the answer is sound; a Rényi curve loses information,
    so it asks for more noise than the PLD: for one Gaussian use, σ is 11–24 % larger
    (TPR ≤ 0.1 at FPR 0.01: 1.119 against the exact 0.957). The binary bound is the
    best any Rényi curve allows — the Bernoulli pair at the cap has that curve — so
    the gap is the Rényi curve's, not the conversion's.
    """
    fn, default_label = check_family(family)
    d = as_direction(direction)
    accountant = check_accountant(accountant)
    figure, target, fpr, metric = _risk_metric(tpr, fpr, advantage, d, accountant)
    integer = check_flag("integer", integer)
    step = check_positive("step", step)
    rtol = check_real("rtol", rtol, lo=1e-12, hi=0.1)
    start = check_positive("start", start)
    label = parameter if parameter is not None else default_label
    what = f"TPR at FPR {fpr:g}" if figure == "tpr" else "advantage"
    problem = Problem(fn, 0.0, accountant, step, d, metric, what, zero=scales_noise(family))
    try:
        lo, hi = solve_bracket(problem, start, target, label, rtol, integer)
    finally:
        problem.bar.close()
    return RiskCalibration(parameter=label, value=hi, figure=figure,
                           achieved=problem.seen[hi][0] + 0.0,
                           target=target, fpr=fpr, direction=d.value, bracket=(lo, hi),
                           evaluations=len(problem.seen), integer=integer,
                           ledger=ledger_at(fn, hi), accountant=accountant)
