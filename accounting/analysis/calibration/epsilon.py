"""ε calibration: the smallest noise value x whose composition meets ε(δ) ≤ ε.

See ``accounting.analysis.calibration`` for the accountants and the method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from accounting.accountant import check_accountant
from accounting.analysis.calibration.family import (
    MechanismFamily,
    check_family,
    ledger_at,
    scales_noise,
)
from accounting.analysis.calibration.search import (
    DEFAULT_RTOL,
    Problem,
    check_flag,
    log_slope,
    solve_bracket,
    solve_pure,
)
from accounting.curves.pld import DEFAULT_STEP
from accounting.ledger import Ledger
from accounting.validation import (
    check_count,
    check_positive,
    check_probability,
    check_real,
)
from accounting.vocabulary import Direction, Exactness, as_direction

__all__ = ["Calibration", "calibrate_workload", "calibrate"]


# -------------------------------------------------------------------- result
@attrs.frozen
class Calibration:
    """A calibrated noise value and how it was certified.

    ``value``: the feasible end of the final bracket; ``epsilon``: ε(δ) at
    ``value`` under ``accountant`` (an upper bound, max over directions, ≤ ``target``);
    ``bracket`` = (lo, value): ε(lo) > target, so under monotonicity the smallest
    feasible value lies in (lo, value]; (0, 0) when x = 0, no noise at all, meets the
    target (``value`` = 0: a registered mechanism or class whose noise parameter is x,
    at its degenerate corner); ``order``: the Rényi order α certifying
    ``epsilon`` (``rdp``/``zcdp``; None for ``pld``); ``evaluations``: distinct
    values of x at which ε was computed; ``ledger``: the composition at ``value``;
    ``uses``: its (mechanism, count) entries;
    ``exactness``: what ``epsilon`` is — ``Exactness.UPPER``, a certified upper bound
    (the accountant's curve is exact or a sound bound), or ``Exactness.NUMERICAL``
    when that curve is numerical (a quadrature Rényi curve): then neither ε nor the
    order certifies anything, and ``describe``/``order_note`` say so.
    """

    parameter: str
    value: float
    epsilon: float
    target: float
    delta: float
    accountant: str
    bracket: tuple[float, float]
    rtol: float
    evaluations: int
    order: float | None = None
    uses: tuple[Any, ...] = attrs.field(default=(), eq=False, repr=False)
    ledger: Ledger | None = attrs.field(default=None, eq=False, repr=False)
    exactness: Exactness = attrs.field(default=Exactness.UPPER,
                                       validator=attrs.validators.instance_of(Exactness))

    @property
    def certified(self) -> bool:
        """Whether ``epsilon`` is a certified upper bound (not a numerical value)."""
        return self.exactness.certified

    @property
    def epsilon_label(self) -> str:
        """What ``epsilon`` is, in words: "exact" (a closed form: pure DP at δ = 0),
        "upper bound" or "numerical (not a certified bound)"."""
        if self.exactness is Exactness.EXACT:
            return "exact"
        return "upper bound" if self.certified else "numerical (not a certified bound)"

    @property
    def order_note(self) -> str:
        """The Rényi order, worded by the label: "certified at α = …" only when it is;
        empty for ``pld``."""
        if self.order is None:
            return ""
        word = "certified" if self.certified else "numerical, not certified,"
        return f"{word} at α = {self.order:.6g}"

    def describe(self) -> str:
        alpha = f", {self.order_note}" if self.order is not None else ""
        label = "" if self.certified or self.order is not None else ", numerical: not certified"
        return (f"{self.parameter} = {self.value:.10g} gives ε = {self.epsilon:.10g} ≤ "
                f"{self.target:g} at δ = {self.delta:g} ({self.accountant}{alpha}{label}); "
                f"bracket ({self.bracket[0]:.10g}, {self.bracket[1]:.10g}], "
                f"{self.evaluations} evaluations")


def calibrate_workload(family: Any, *, epsilon: float, delta: float,
                       accountant: str = "pld", step: float = DEFAULT_STEP,
                       rtol: float = DEFAULT_RTOL, start: float | None = None,
                       parameter: str | None = None, direction: Direction | str = "max",
                       integer: bool = False) -> Calibration:
    """The smallest shared x with ε(δ) ≤ ``epsilon`` for the composition ``family(x)``.

    ``family``: a callable x ↦ ``Ledger``, a ``MechanismFamily`` or a sequence of them
    (their ledgers add).

    ``accountant``: ``"pld"`` (default; grid ``step``), ``"rdp"`` or ``"zcdp"``;
    ``rtol`` ∈ [1e-12, 0.1]: relative width of the final bracket; ``start`` > 0: where
    the bracket search begins (a good guess saves evaluations; default 1, and for
    ``pld`` the RDP calibration to 1e-3 when it succeeds); ``parameter``: the name
    reported for x (default: the first term's label); ``direction``: calibrate ε of
    one neighbouring direction (``"forward"``, ``"backward"``) instead of the worse of
    both (``"max"``, default); ``integer``: the smallest *integer* x ≥ 1 meeting the
    target (a discrete noise scale), checked at x and x − 1 (``bracket`` = (x − 1, x)).
    """
    fn, default_label = check_family(family)
    direction = as_direction(direction)
    integer = check_flag("integer", integer)
    target = check_positive("epsilon", epsilon)
    accountant = check_accountant(accountant)
    # δ = 0 (pure DP) only the PLD answers, where the composed loss is bounded
    delta = check_probability("delta", delta, lo_open=accountant != "pld")
    step = check_positive("step", step)
    rtol = check_real("rtol", rtol, lo=1e-12, hi=0.1)
    slope = None
    if start is not None:
        start = check_positive("start", start)
    elif accountant == "pld" and delta == 0.0:
        start = 1.0      # pure DP: solved in closed form or searched on the exact ε(0)
    elif accountant == "pld" and not integer:
        # a coarse calibration first: on a grid COARSE_STEPS times coarser each
        # evaluation costs a fraction, and its root (a few % off: the coarse grid is
        # more pessimistic) and its log–log slope put the fine search's second point
        # within 1e-4 or so of the fine root (four fine evaluations, typically)
        start, slope = _coarse_start(family, target, delta, step, direction)
    elif accountant == "pld":
        start = _rdp_start(family, target, delta, direction)
    else:
        start = 1.0
    label = parameter if parameter is not None else default_label
    if not isinstance(label, str):
        raise TypeError(f"parameter must be a string, got {type(label).__name__}")

    problem = Problem(fn, delta, accountant, step, direction, zero=scales_noise(family))
    try:
        # pure DP (δ = 0) in closed form where ε(0; x) ∝ 1/x, else the search
        closed = None if integer else solve_pure(problem, start, target)
        lo, hi = closed if closed is not None else solve_bracket(problem, start, target,
                                                                 label, rtol, integer, slope)
    finally:
        problem.bar.close()
    eps, order = problem.seen[hi]
    eps += 0.0     # (−0.0, the ε of an identical pair, reads as 0)
    ledger = ledger_at(fn, hi)
    return Calibration(parameter=label, value=hi, epsilon=eps, target=target, delta=delta,
                       accountant=accountant, bracket=(lo, hi), rtol=rtol,
                       evaluations=len(problem.seen), order=order, uses=ledger.mechanisms(),
                       ledger=ledger, exactness=problem.labels[hi])


#: the coarse stage of a PLD calibration: its grid step (this many times the fine one)
#: and the relative width of its bracket
COARSE_STEPS, COARSE_RTOL = 5.0, 2e-3


def _rdp_start(family: Any, target: float, delta: float, direction: Direction) -> float:
    """The RDP calibration to 1e-3 (looser than the PLD, so feasible under it), or 1
    where there is no finite Rényi curve."""
    try:
        return calibrate_workload(family, epsilon=target, delta=delta, accountant="rdp",
                                  rtol=1e-3, start=1.0, direction=direction).value
    except ValueError:
        return 1.0


def _coarse_start(family: Any, target: float, delta: float, step: float,
                  direction: Direction) -> tuple[float, float | None]:
    """(start, slope) for a PLD calibration at ``step``: the root and log–log slope of
    the same calibration on a grid ``COARSE_STEPS`` times coarser, started from the
    RDP answer's neighbourhood only when the coarse grid cannot answer (then no slope).
    Either way only the start changes: the fine search certifies its own bracket."""
    fn, label = check_family(family)
    problem = Problem(fn, delta, "pld", COARSE_STEPS * step, direction,
                      zero=scales_noise(family))
    try:
        lo, hi = solve_bracket(problem, 1.0, target, str(label), COARSE_RTOL, False, 1.0)
    except ValueError:     # (a GridSizeError too: the coarse grid does not fit)
        return _rdp_start(family, target, delta, direction), None
    finally:
        problem.bar.close()
    if lo <= 0.0:
        return _rdp_start(family, target, delta, direction), None
    return hi, log_slope(problem.seen, lo, hi)


def calibrate(family: Any, solve: str | None = None, *, epsilon: float, delta: float,
              count: int = 1, params: Mapping[str, Any] | None = None,
              accountant: str = "pld", step: float = DEFAULT_STEP,
              rtol: float = DEFAULT_RTOL, start: float | None = None,
              direction: Direction | str = "max", integer: bool = False) -> Calibration:
    """The smallest ``solve`` of ``family`` (``params`` fixed) meeting (ε, δ) for
    ``count`` independent uses. See ``MechanismFamily`` for ``family`` and
    ``calibrate_workload`` for the rest.
    """
    term = MechanismFamily(family, solve, count=check_count("count", count), params=params)
    return calibrate_workload(term, epsilon=epsilon, delta=delta, accountant=accountant,
                              step=step, rtol=rtol, start=start, direction=direction,
                              integer=integer)
