"""The shared root finding of every calibration: a bracket by growing steps, then a
safeguarded secant in log–log coordinates that closes the bracket on purpose.

``Problem`` is the figure (ε(δ), or a risk figure) of a family's composition at x
under one accountant, memoised; ``solve_bracket`` finds the final bracket (lo, hi],
hi the smallest feasible x evaluated. The figure is *assumed* non-increasing in x and
every evaluation is checked against that (see ``accounting.analysis.calibration``).

Inside the bracket (``_refine``), log ε is close to linear in log x (ε ∝ x^{−κ} for a
Gaussian, nearly so for its compositions), so the secant through the two latest points
in (log x, log ε) converges superlinearly (order (1 + √5)/2; Brent 1973, ch. 3); a step
that leaves the bracket falls back to regula falsi, and every third step without a
halving of the bracket bisects it in log x (the guard of Brent's method, ch. 4). Once
the estimate of the root is within the target width of a bracket end, the next point
is placed just inside the target width from that end, on the far side of the estimate,
so the bracket closes with that one evaluation instead of shrinking onto the root from
both sides. Orders for ``rdp``/``zcdp``:
the improved conversion (Canonne, Kamath, Steinke 2020, Prop. 12) minimised around the
previous best order (``numerics.order_search.minimise_near``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.accountant import Accountant
from accounting.analysis.calibration.family import ledger_at
from accounting.curves.converters import improved_epsilon
from accounting.curves.curve import Provenance
from accounting.curves.pld import PLD
from accounting.curves.rdp import RDP
from accounting.curves.zcdp import ZCDP
from accounting.ledger import Ledger
from accounting.numerics.loss import GridSizeError
from accounting.numerics.order_search import minimise_near
from accounting.progress import progress
from accounting.vocabulary import (
    Direction,
    Exactness,
    FloatArray,
    InvariantError,
    bind_direction,
)

__all__ = ["DEFAULT_RTOL", "Problem", "solve_bracket", "solve_pure", "log_slope", "epsilon_label", "label_of",
           "check_flag"]

#: default relative width of the final bracket
DEFAULT_RTOL = 1e-6
#: bracket search: step n multiplies by min(1.1^(2^n), 16), within 1e±15 of the start
_GROWTH, _MAX_GROWTH, _MAX_STEPS = 1.1, 16.0, 64
_RANGE = (1e-15, 1e15)
#: the bracket search gives up on a direction when the value it may still try lies
#: within this relative distance of one the accountant refused for its grid size
_WALL_RTOL = 1e-6
_DIRECTIONS = (Direction.FORWARD, Direction.BACKWARD)


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a bool (a numpy bool too); a TypeError naming ``name`` otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} ({value!r})")
    return bool(value)


def _best_order(cgf: Callable[[np.ndarray], np.ndarray], log_delta: float,
                log_t0: float) -> tuple[float, float]:
    """min over t = α − 1 of the improved conversion, searched around log t0
    (``order_search.minimise_near``). Returns (ε, t). Any t gives a valid bound, so
    the result is sound."""
    best, t = minimise_near(cgf, lambda k, t: improved_epsilon(k, t, log_delta), log_t0)
    return max(best, 0.0), t


def _zcdp_cgf(rho: float, t: FloatArray) -> FloatArray:
    """K(t) = ρ t (t + 1), the CGF of ρ-zCDP at α − 1 = t."""
    return rho * t * (t + 1.0)


@attrs.define
class Problem:
    """ε(δ; x) of a workload under one accountant, memoised, with warm-started orders."""

    family: Callable[[float], Ledger]
    delta: float
    accountant: str
    step: float
    #: the neighbouring direction whose ε is calibrated (``max``: the worse of both)
    direction: Direction = Direction.MAX
    #: a risk figure of the composition's accountant to calibrate instead of ε(δ)
    metric: Callable[[Accountant], float] | None = None
    #: the name of the calibrated figure, for messages
    what: str = "ε"
    #: x = 0 is no noise at all (x scales the mechanisms' own noise parameters): a
    #: value the search may answer when nothing smaller can be evaluated
    zero: bool = False
    #: x → (ε or the figure, the best order α or None)
    seen: dict[float, tuple[float, float | None]] = attrs.field(factory=dict)
    _log_t: dict[Direction, float] = attrs.field(factory=dict)
    #: what ε at each x is: a certified upper bound or a numerical value
    labels: dict[float, Exactness] = attrs.field(factory=dict)
    #: progress on stderr for long searches (silent for the first seconds; see
    #: ``accounting.progress``); closed by the caller
    bar: Any = attrs.field(factory=lambda: progress(desc="calibration: evaluations"))

    def epsilon(self, x: float) -> float:
        if x not in self.seen:
            self.seen[x] = self._evaluate(x)
            self.bar.update(1)
        return self.seen[x][0]

    def _evaluate(self, x: float) -> tuple[float, float | None]:
        ledger = ledger_at(self.family, x)
        acct = Accountant.of(ledger, step=self.step)
        pairs = ledger.pairs()
        if self.metric is not None:
            read: PLD | RDP | ZCDP
            if self.accountant == "pld":
                read = acct.curve(PLD, lower=False)
            else:
                read = acct.curve(RDP) if self.accountant == "rdp" else acct.curve(ZCDP)
            self.labels[x] = epsilon_label(read)
            return float(self.metric(acct)), None
        if self.accountant == "pld" and self.delta == 0.0:
            # pure DP: ε(0) = Σ kᵢεᵢ in closed form, no grid (``Accountant.pure_epsilon``)
            pure = acct.pure_epsilon(self.direction)
            if pure is not None:
                self.labels[x] = Exactness.EXACT if pure[0] == pure[1] else Exactness.UPPER
                return pure[1], None
        if self.accountant == "pld":
            if self.direction is Direction.MAX:
                eps = float(acct.epsilon(self.delta))
                # (the provenance alone: the full PLD cost half of each evaluation)
                self.labels[x] = label_of(acct.pld_provenance)
            else:
                eps = float(acct.curve(PLD, lower=False).epsilon(self.delta, self.direction))
                self.labels[x] = epsilon_label(acct.curve(PLD, lower=False))
            return eps, None
        # a product of pairs symmetric under reflection has equal directions: one will do
        symmetric = all(getattr(p, "symmetric", False) is True for p, _ in pairs)
        directions = (_DIRECTIONS[:1] if symmetric and self.direction is Direction.MAX
                      else self.direction.components)
        # the public queries, which refuse a curve that is only a lower bound
        if self.accountant == "rdp":
            rdp = acct.curve(RDP)
            self.labels[x] = epsilon_label(rdp)
            cgfs: dict[Direction, Callable[[FloatArray], FloatArray]] = {
                d: bind_direction(rdp.cgf, d) for d in directions}
        else:
            zcdp = acct.curve(ZCDP)
            self.labels[x] = epsilon_label(zcdp)
            cgfs = {d: functools.partial(_zcdp_cgf, zcdp.rho(d)) for d in directions}
        log_delta = math.log(self.delta)
        best: tuple[float, float | None] = (-math.inf, None)
        for d, cgf in cgfs.items():
            if d not in self._log_t:
                # first guess: the best order of a Gaussian with ρ = K(1)/2,
                # α − 1 ≈ √(log(1/δ)/ρ)
                k1 = float(np.asarray(cgf(np.array([1.0])))[0])
                rho = k1 / 2.0 if np.isfinite(k1) and k1 > 0 else 1.0
                self._log_t[d] = 0.5 * math.log(-log_delta / rho)
            eps, t = _best_order(cgf, log_delta, self._log_t[d])
            self._log_t[d] = math.log(t)
            if self.accountant == "rdp":
                # the order α = ∞ of the conversion: ε ≤ D_∞ where that is finite
                sup = float(np.asarray(rdp.renyi(np.inf, d)))
                if sup < eps:
                    eps, t = sup, math.inf
            if eps > best[0]:
                best = (eps, 1.0 + t)
        return best


def epsilon_label(curve: PLD | RDP | ZCDP) -> Exactness:
    """What ε from the upper side of ``curve`` is: a certified upper bound when the
    curve is exact or a sound bound, else (a numerical curve) numerical."""
    return label_of(curve.provenance)


def label_of(provenance: Provenance) -> Exactness:
    """``epsilon_label`` of a curve with this ``provenance``."""
    return Exactness.UPPER if provenance.exactness.certified else Exactness.NUMERICAL


def log_slope(seen: dict[float, tuple[float, float | None]], lo: float, hi: float) -> float | None:
    """κ = −d log ε / d log x between two evaluated points (None where it is not finite
    and positive): what the next calibration of a nearby figure predicts its first step
    with (``_bracket``)."""
    e_lo, e_hi = seen[lo][0], seen[hi][0]
    if not (hi > lo > 0.0 and e_lo > e_hi > 0.0 and math.isfinite(e_lo)):
        return None
    return math.log(e_lo / e_hi) / math.log(hi / lo)


def _check_order(seen: dict[float, tuple[float, float | None]], target: float, label: str,
                 what: str = "ε") -> tuple[float, float]:
    """(largest infeasible x, smallest feasible x); ValueError if they cross."""
    feasible = [x for x, (e, _) in seen.items() if e <= target]
    infeasible = [x for x, (e, _) in seen.items() if e > target]
    lo, hi = max(infeasible), min(feasible)
    if lo >= hi:
        raise ValueError(f"{what} is not non-increasing in {label}: {what}({lo:.6g}) = "
                         f"{seen[lo][0]:.6g} > {target:g} but {what}({hi:.6g}) = "
                         f"{seen[hi][0]:.6g}; calibration assumes more noise never increases "
                         f"{what}")
    return lo, hi


def _bracket(problem: Problem, start: float, target: float, label: str,
             slope: float | None = None) -> tuple[float, float]:
    """Steps from ``start`` until ε straddles ``target``: by factors 1.1, 1.21, 1.46,
    2.1, 4.6, then 16 — cheap when the start is good, quick when it is not. With
    ``slope`` (κ in ε ∝ x^{−κ} near the start, as a coarser calibration measured it)
    the first step is the predicted one, (ε(start)/target)^{1/κ}, overshot by 5 % in
    log x so that it straddles the root, within factors 1 + 1e-9 … 16.

    A step the accountant refuses for its grid size (``GridSizeError``: too little
    noise for the grid at this step) is not the end of the search: the next tries go
    halfway, in log x, between the last value evaluated and the refused one, so the
    bracket is found wherever grids fit (100 subsampled Gaussians, q = 0.01, TPR 0.67
    at FPR 0.1: the step from σ = 0.239 to 0.052 was refused; the answer is 0.1667)."""
    x = start
    feasible = problem.epsilon(x) <= target
    n = 0
    wall: GridSizeError | None = None    # the last refusal, at ``wall_x``
    wall_x = math.nan
    predicted = None
    if slope is not None and slope > 0.0 and math.isfinite(slope):
        shift = abs(_log_ratio(problem.epsilon(x), target)) * 1.05 / slope
        predicted = max(math.exp(min(shift, math.log(_MAX_GROWTH))), 1.0 + 1e-9)
    for _ in range(_MAX_STEPS):
        factor = min(_GROWTH ** (2 ** min(n, 5)), _MAX_GROWTH)
        if predicted is not None:
            factor, predicted, n = predicted, None, -1
        nxt = x / factor if feasible else x * factor
        if wall is not None and (nxt <= wall_x if feasible else nxt >= wall_x):
            nxt = math.sqrt(x * wall_x)
        if not _RANGE[0] * start <= nxt <= _RANGE[1] * start:
            break
        if wall is not None and abs(math.log(nxt / x)) < _WALL_RTOL:
            break
        try:
            e_next = problem.epsilon(nxt)
        except GridSizeError as exc:
            wall, wall_x = exc, nxt
            continue
        except ValueError:
            # below the mechanism's range (or past what the accountant discretises):
            # if no noise at all meets the target, that is the answer
            if feasible and _zero_meets(problem, target):
                return 0.0, 0.0
            raise
        small, large = (nxt, x) if feasible else (x, nxt)
        e_small, e_large = problem.epsilon(small), problem.epsilon(large)
        if e_large > e_small + 1e-9 * abs(e_small):
            what = problem.what
            raise ValueError(f"{what} is not non-increasing in {label}: {what}({small:.6g}) = "
                             f"{e_small:.6g} < {what}({large:.6g}) = {e_large:.6g}; calibration "
                             f"assumes more noise never increases {what}")
        if (e_next <= target) != feasible:
            return _check_order(problem.seen, target, label, problem.what)
        x = nxt
        n += 1
    if feasible and _zero_meets(problem, target):
        return 0.0, 0.0
    if wall is not None:
        # (once refused, every step stays short of the refusal: it ended the search)
        side = "down to" if feasible else "up to"
        met = "meets" if feasible else "misses"
        raise GridSizeError(f"{label} = {x:.6g} {met} the target {problem.what} ≤ {target:g}, "
                            f"and the search {side} {wall_x:.6g} was refused: {wall}") from wall
    if feasible:
        raise ValueError(f"{problem.what} ≤ {target:g} for every {label} down to {x:.3g}: "
                         f"nothing to calibrate (is the target {problem.what} too large for "
                         f"this workload?)")
    if problem.metric is not None:
        raise ValueError(f"no {label} up to {x:.3g} gives {problem.what} ≤ {target:g}")
    raise ValueError(f"no {label} up to {x:.3g} gives ε ≤ {target:g} at δ = "
                     f"{problem.delta:g} under {problem.accountant}")


def _zero_meets(problem: Problem, target: float) -> bool:
    """Whether x = 0 — no noise, when x is the noise parameter — meets the target (a
    mechanism that refuses 0, or a figure that cannot be computed there, does not)."""
    if not problem.zero:
        return False
    try:
        return problem.epsilon(0.0) <= target
    except ValueError:
        return False


def _log_ratio(value: float, target: float) -> float:
    """log(value/target), finite: +∞ (no finite order) and 0 read as ±700, which keep
    the sign the search needs."""
    if not value > 0.0:
        return -700.0
    if not math.isfinite(value):
        return 700.0
    return max(min(math.log(value / target), 700.0), -700.0)


def _refine(problem: Problem, lo: float, hi: float, target: float, rtol: float) -> None:
    """Shrink the bracket (lo, hi] — ε(lo) > target ≥ ε(hi) — until hi ≤ lo·(1 + rtol),
    by the safeguarded log–log secant of the module docstring. The points land in
    ``problem.seen``; the caller reads the bracket from there (``_check_order``)."""
    width = math.log1p(rtol)
    recent: list[tuple[float, float]] = []      # (log x, log ε/target), latest last
    for x in (lo, hi):
        recent.append((math.log(x), _log_ratio(problem.epsilon(x), target)))
    stalled = 0
    for _ in range(_MAX_STEPS):
        u_lo, u_hi = math.log(lo), math.log(hi)
        if u_hi - u_lo <= width:
            return
        (u1, g1), (u2, g2) = recent[-2], recent[-1]
        est = u2 - g2 * (u2 - u1) / (g2 - g1) if g2 != g1 else math.nan
        if not u_lo < est < u_hi:
            g_lo = _log_ratio(problem.epsilon(lo), target)
            g_hi = _log_ratio(problem.epsilon(hi), target)
            est = u_hi - g_hi * (u_hi - u_lo) / (g_hi - g_lo)
        if stalled >= 2:           # no halving in three steps: bisect
            est, stalled = 0.5 * (u_lo + u_hi), 0
        # close on purpose: a root estimate near an end puts the next point just inside
        # the target width from that end, past the estimate
        if est - u_lo < 0.5 * width:
            est = min(u_lo + 0.9 * width, 0.5 * (u_lo + u_hi))
        elif u_hi - est < 0.5 * width:
            est = max(u_hi - 0.9 * width, 0.5 * (u_lo + u_hi))
        est = min(max(est, u_lo + 1e-3 * width), u_hi - 1e-3 * width)
        x = math.exp(est)
        if not lo < x < hi:        # the bracket is as narrow as floating point allows
            return
        g = _log_ratio(problem.epsilon(x), target)
        recent.append((est, g))
        before = u_hi - u_lo
        if g > 0.0:
            lo = x
        else:
            hi = x
        stalled = 0 if math.log(hi / lo) <= 0.5 * before else stalled + 1
    raise InvariantError(f"the calibration bracket ({lo:.17g}, {hi:.17g}] did not close to "
                         f"rtol = {rtol:g} in {_MAX_STEPS} steps")


def solve_bracket(problem: Problem, start: float, target: float, label: str, rtol: float,
                  integer: bool, slope: float | None = None) -> tuple[float, float]:
    """(lo, hi): the final bracket, hi the smallest feasible x evaluated (``slope``: see
    ``_bracket``); (0, 0) when
    x = 0, no noise at all, meets the target (``Problem.zero``; tried first when
    ``start`` is 0: another accountant's answer). With ``integer`` the answer is the
    smallest integer n ≥ 1 with value ≤ target, checked by evaluating it and n − 1
    (n = 1 when even 1 meets the target)."""
    if start == 0.0 and _zero_meets(problem, target):
        lo, hi = 0.0, 0.0
    else:
        lo, hi = _bracket(problem, start if start > 0.0 else 1.0, target, label, slope)
    if hi > 0.0:
        _refine(problem, lo, hi, target, rtol)
        lo, hi = _check_order(problem.seen, target, label, problem.what)
    if not integer:
        return lo, hi
    n = max(math.floor(hi), 1)
    if problem.epsilon(float(n)) > target:
        n = math.ceil(hi) if math.ceil(hi) > n else n + 1
    while problem.epsilon(float(n)) > target:     # monotone: at most a step or two
        n += 1
    if n > 1 and problem.epsilon(float(n - 1)) <= target:
        raise ValueError(f"{problem.what} is not non-increasing in {label}: the integer "
                         f"{n - 1} meets the target but the continuous search put the "
                         f"threshold above it")
    return (float(n - 1), float(n)) if n > 1 else (0.0, 1.0)


#: how far apart (relative) x·ε(0; x) may be at two points for ε(0) to count as ∝ 1/x
_HOMOGENEOUS_RTOL = 1e-12
#: how many float64 steps ``solve_pure`` may move the closed-form root to make it feasible
_ULP_STEPS = 64


def solve_pure(problem: Problem, start: float, target: float) -> tuple[float, float] | None:
    """(lo, hi) of a pure-DP calibration (δ = 0 under ``pld``) in closed form, or None.

    ε(0; x) = Σ kᵢΔᵢ/(x·bᵢ) for Laplace-type parts whose noise scales with x: x·ε(0; x)
    is then a constant c, read at ``start`` and 2·``start`` (equal to
    ``_HOMOGENEOUS_RTOL``, from exact evaluations: ``Problem`` labels them), and the
    root is x* = c/ε. It is checked, not trusted: x* is moved up by float64 steps
    until ε(0; x*) ≤ ε, and the float just below must miss the target, so (lo, x*] is
    the bracket with nothing between its ends: the answer is exact (10 × Laplace at
    ε = 1 gives b = 10). None — the general search then runs — when δ > 0, the
    accountant is not ``pld``, ε(0) is not exact, or it is not ∝ 1/x."""
    if problem.accountant != "pld" or problem.delta != 0.0 or problem.metric is not None:
        return None
    try:
        x1, x2 = start, 2.0 * start
        c1, c2 = x1 * problem.epsilon(x1), x2 * problem.epsilon(x2)
    except ValueError:
        return None
    exact = all(problem.labels.get(x) is Exactness.EXACT for x in (x1, x2))
    if not (exact and math.isfinite(c1) and c1 > 0
            and abs(c1 - c2) <= _HOMOGENEOUS_RTOL * c1):
        return None
    x = c1 / target
    try:
        for _ in range(_ULP_STEPS):
            if problem.epsilon(x) <= target:
                break
            x = math.nextafter(x, math.inf)
        else:
            return None
        lo = math.nextafter(x, 0.0)
        if not problem.epsilon(lo) > target or problem.labels.get(x) is not Exactness.EXACT:
            return None
    except ValueError:
        return None
    return lo, x
