"""Calibration: the smallest noise parameter that meets a target (ε, δ).

A family is a map x ↦ ``Ledger``: the composition run at the shared noise value x.
Any callable returning a ledger will do; ``MechanismFamily`` builds the common one,
``count`` uses of one mechanism whose noise parameter is ``multiplier × x``, and a
sequence of them (or ledgers added in a callable) describes a heterogeneous job whose
mechanisms share one noise multiplier (DP-SGD groups with different clipping norms, a
Gaussian release beside a Laplace one, …). ``calibrate_workload`` finds the smallest
x with ε(δ; x) ≤ ε under one accountant, each an upper bound, max over both
neighbouring directions:

* ``"pld"``: the composed pessimistic PLD (sound; tight up to the grid ``step``);
* ``"rdp"``: the composed Rényi curve — k uses scale the CGF K(t) by k (Mironov
  2017, Prop. 1), closed forms come through each pair's own curve — converted by the
  improved conversion ε = D_α + log(1 − 1/α) − (log δ + log α)/(α − 1) (Canonne,
  Kamath, Steinke 2020, Prop. 12), minimised over continuous α;
* ``"zcdp"``: the composed ρ* = sup_t K(t)/(t(t + 1)) — k uses scale ρ by k (Bun and
  Steinke 2016, Lemma 2.3) — through the same conversion applied to K(t) = ρt(t + 1),
  which is the tight zCDP conversion (CKS 2020, Cor. 13).

Method. ε(δ; x) is *assumed* non-increasing in x (more noise never costs privacy). It
is not proved for every family, so it is checked: a bracket is found by growing steps
(factors 1.1, 1.21, 1.46, 2.1, 4.6, then 16) from ``start`` — for ``pld`` by default
the RDP answer to 1e-3, cheap and close, since a PLD at far too little noise is slow —
ε must not rise along those steps, every evaluation made on the way and during the
root find must be ordered (no feasible x below an infeasible one), and the ends must
straddle the target; otherwise a ``ValueError`` says so. A step the accountant refuses
for its grid size (``GridSizeError``) is retried halfway back, in log x, so the bracket
is found where grids fit. When x is a mechanism's own noise parameter and the search
cannot go lower (the target holds at every x tried, down to the parameter's range or
what the accountant discretises), x = 0 — no noise — is evaluated, and the answer is 0
if it meets the target. Brent's method (scipy.optimize.brentq;
Brent 1973, ch. 4) then narrows the bracket. The answer is the *feasible* end of the
final bracket — the smallest x evaluated with ε ≤ target — so ε at the answer never
exceeds the target; the true threshold lies in the reported bracket (lo, value],
whose width is below rtol·value (+ a 1e-3 fraction of that as absolute tolerance).

Orders. For ``rdp``/``zcdp`` the best order is found by a 9-point log-grid window
around the previous best (shifted until the minimum is inside), then a bounded
scalar minimisation on the bracketing cell. Every order gives a valid bound, so the
ε reported is sound whatever the search finds; the window costs ~25 CGF evaluations
per direction instead of ~240 for a global search, which matters when the CGF is a
quadrature (Gaussian mixtures, generic noise).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional, Sequence

import attrs
import numpy as np

from accounting.accountant import Accountant, check_accountant
from accounting.curves.converters import improved_epsilon
from accounting.numerics.loss import GridSizeError
from accounting.numerics.order_search import minimise_near
from accounting.progress import progress
from accounting.vocabulary import Direction, Exactness, as_direction
from accounting.pairs.mechanism import Mechanism
from accounting.curves.pld import DEFAULT_STEP, PLD
from accounting.registry.registry import default_registry
from accounting.curves.rdp import RDP
from accounting.validation import check_count, check_positive, check_probability, check_real
from accounting.ledger import Ledger, coerce_parameter, parameter_kind
from accounting.curves.zcdp import ZCDP

__all__ = ["RiskCalibration", "calibrate_risk", "calibrate_count", "Calibration", "MechanismFamily", "calibrate", "calibrate_workload", "DEFAULT_RTOL"]

#: default relative width of the final bracket
DEFAULT_RTOL = 1e-6
#: bracket search: step n multiplies by min(1.1^(2^n), 16), within 1e±15 of the start
_GROWTH, _MAX_GROWTH, _MAX_STEPS = 1.1, 16.0, 64
_RANGE = (1e-15, 1e15)
#: the bracket search gives up on a direction when the value it may still try lies
#: within this relative distance of one the accountant refused for its grid size
_WALL_RTOL = 1e-6
_DIRECTIONS = (Direction.FORWARD, Direction.BACKWARD)


# --------------------------------------------------------------------- terms
def _count(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    check_count(attribute.name, value)


def _positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    check_positive(attribute.name, value)


def _params(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, Mapping):
        value = value.items()
    items = tuple(value)
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise TypeError(f"params must be a mapping of parameter names to values, "
                            f"got {value!r}")
    return items


def _family_class(family: Any, solve: Any, params: tuple) -> Optional[type]:
    """The mechanism class of ``family`` (None for a callable family), with ``solve``
    and ``params`` checked against it."""
    if isinstance(family, str):
        cls = default_registry().mechanism(family)
    elif isinstance(family, type) and issubclass(family, Mechanism):
        cls = family
    elif callable(family) and not isinstance(family, type):
        if params:
            raise ValueError("params apply to a registered mechanism or a Mechanism "
                             "class, not to a callable family (fix them in the callable)")
        if solve is not None and not isinstance(solve, str):
            raise TypeError(f"solve must be a string label, got {type(solve).__name__}")
        return None
    else:
        raise TypeError(f"family must be a mechanism name, a Mechanism subclass or a "
                        f"callable x -> Mechanism, got {type(family).__name__} ({family!r})")
    known = cls.parameters()
    floats = sorted(n for n, a in known.items()
                    if parameter_kind(a) == "float" and n != "sensitivity")
    if not isinstance(solve, str) or solve not in floats:
        raise ValueError(f"{cls.name}: solve must name a real parameter to calibrate "
                         f"(one of {', '.join(floats) or 'none'}), got {solve!r}")
    for key, _ in params:
        if key == solve:
            raise ValueError(f"{cls.name}: {key!r} is the parameter being solved for; "
                             f"it cannot also be fixed in params")
        if key not in known:
            raise ValueError(f"{cls.name}: unknown parameter {key!r} "
                             f"(its parameters: {', '.join(sorted(known))})")
    return cls


@attrs.frozen(init=False)
class MechanismFamily:
    """x ↦ the ledger of ``count`` uses of ``family`` with its noise parameter
    ``solve`` = multiplier·x (``Term`` before 0.2, now a deprecated alias).

    ``family`` is a registered mechanism name, a ``Mechanism`` subclass (then
    ``solve`` names one of its float parameters and ``params`` fixes the others), or
    a callable x ↦ Mechanism for families that are not one parameter of a class
    (a mixture scaled as a whole); ``solve`` is then only the label of x.
    """

    family: Any
    solve: Optional[str] = None
    count: int = attrs.field(default=1, validator=_count)
    multiplier: float = attrs.field(default=1.0, validator=_positive)
    params: tuple = attrs.field(default=(), converter=_params)
    _cls: Optional[type] = attrs.field(default=None, eq=False, repr=False, alias="cls")

    def __init__(self, family: Any, solve: Optional[str] = None, count: int = 1,
                 multiplier: float = 1.0, params: Any = (), cls: Optional[type] = None
                 ) -> None:
        # params are coerced by the family's class, which the family names: both are
        # worked out before the record is built (``cls``, given by ``attrs.evolve``,
        # is worked out again from ``family``, never taken as given)
        items = _params(params)
        kind = _family_class(family, solve, items)
        if kind is not None:
            known = kind.parameters()
            try:
                items = tuple((k, coerce_parameter(known[k], v)) for k, v in items)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{kind.name}: {exc}") from None
        self.__attrs_init__(family, solve, count, multiplier, items, kind)

    @property
    def label(self) -> str:
        """The name of x: the solved parameter, or the callable's label."""
        if self.solve is not None:
            return self.solve
        return "x"

    def build(self, x: float) -> Mechanism:
        """The mechanism at shared value x (noise parameter multiplier·x)."""
        value = self.multiplier * x
        if self._cls is None:
            mech = self.family(value)
            if not isinstance(mech, Mechanism):
                raise TypeError(f"family({value:g}) must return a Mechanism, "
                                f"got {type(mech).__name__}")
            return mech
        try:
            return self._cls(**dict(self.params), **{self.solve: value})
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{self._cls.name}: {exc}") from None

    def __call__(self, x: float) -> Ledger:
        """The ledger at shared value x: ``count`` uses of ``build(x)``."""
        return Ledger.of(self.build(x), self.count)

    def describe(self) -> str:
        name = self._cls.name if self._cls is not None else getattr(
            self.family, "__name__", type(self.family).__name__)
        fixed = ", ".join(f"{k}={v!r}" for k, v in self.params)
        x = f"{self.multiplier:g}·x" if self.multiplier != 1.0 else "x"
        inner = f"{self.solve}={x}" if self._cls is not None else x
        return f"{name}({inner}{', ' + fixed if fixed else ''}) × {self.count}"


# -------------------------------------------------------------------- result
@attrs.frozen
class Calibration:
    """A calibrated noise value and how it was certified.

    ``value``: the feasible end of the final Brent bracket; ``epsilon``: ε(δ) at
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
    order: Optional[float] = None
    uses: tuple = attrs.field(default=(), eq=False, repr=False)
    ledger: Optional[Ledger] = attrs.field(default=None, eq=False, repr=False)
    exactness: Exactness = attrs.field(default=Exactness.UPPER,
                                       validator=attrs.validators.instance_of(Exactness))

    @property
    def certified(self) -> bool:
        """Whether ``epsilon`` is a certified upper bound (not a numerical value)."""
        return self.exactness.certified

    @property
    def epsilon_label(self) -> str:
        """What ``epsilon`` is, in words: "upper bound" or "numerical (not a certified bound)"."""
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


# ------------------------------------------------------------ ε at a value
def _best_order(cgf: Callable[[np.ndarray], np.ndarray], log_delta: float,
                log_t0: float) -> tuple[float, float]:
    """min over t = α − 1 of the improved conversion, searched around log t0
    (``order_search.minimise_near``). Returns (ε, t). Any t gives a valid bound, so
    the result is sound."""
    best, t = minimise_near(cgf, lambda k, t: improved_epsilon(k, t, log_delta), log_t0)
    return max(best, 0.0), t


@attrs.define
class _Problem:
    """ε(δ; x) of a workload under one accountant, memoised, with warm-started orders."""

    family: Callable[[float], Ledger]
    delta: float
    accountant: str
    step: float
    #: the neighbouring direction whose ε is calibrated (``max``: the worse of both)
    direction: Direction = Direction.MAX
    #: a risk figure of the composition's accountant to calibrate instead of ε(δ)
    metric: Optional[Callable[[Accountant], float]] = None
    #: the name of the calibrated figure, for messages
    what: str = "ε"
    #: x = 0 is no noise at all (x scales the mechanisms' own noise parameters): a
    #: value the search may answer when nothing smaller can be evaluated
    zero: bool = False
    seen: dict = attrs.field(factory=dict)
    _log_t: dict = attrs.field(factory=dict)
    #: what ε at each x is: a certified upper bound or a numerical value
    labels: dict = attrs.field(factory=dict)
    #: progress on stderr for long searches (silent for the first seconds; see
    #: ``accounting.progress``); closed by the caller
    bar: Any = attrs.field(factory=lambda: progress(desc="calibration: evaluations"))

    def epsilon(self, x: float) -> float:
        if x not in self.seen:
            self.seen[x] = self._evaluate(x)
            self.bar.update(1)
        return self.seen[x][0]

    def _evaluate(self, x: float) -> tuple[float, Optional[float]]:
        ledger = _ledger_at(self.family, x)
        acct = Accountant.of(ledger, step=self.step)
        pairs = ledger.pairs()
        if self.metric is not None:
            read = (acct.curve(PLD, lower=False) if self.accountant == "pld"
                    else acct.curve(RDP if self.accountant == "rdp" else ZCDP))
            self.labels[x] = _epsilon_label(read)
            return float(self.metric(acct)), None
        if self.accountant == "pld":
            if self.direction is Direction.MAX:
                eps = float(acct.epsilon(self.delta))
            else:
                eps = float(acct.curve(PLD, lower=False).epsilon(self.delta, self.direction))
            self.labels[x] = _epsilon_label(acct.curve(PLD, lower=False))
            return eps, None
        # a product of pairs symmetric under reflection has equal directions: one will do
        symmetric = all(getattr(p, "symmetric", False) is True for p, _ in pairs)
        directions = (_DIRECTIONS[:1] if symmetric and self.direction is Direction.MAX
                      else self.direction.components)
        # the public queries, which refuse a curve that is only a lower bound
        if self.accountant == "rdp":
            rdp = acct.curve(RDP)
            self.labels[x] = _epsilon_label(rdp)
            cgfs = {d: (lambda t, d=d: rdp.cgf(t, d)) for d in directions}
        else:
            zcdp = acct.curve(ZCDP)
            self.labels[x] = _epsilon_label(zcdp)
            cgfs = {d: (lambda t, r=zcdp.rho(d): r * t * (t + 1.0)) for d in directions}
        log_delta = math.log(self.delta)
        best = (-math.inf, None)
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


def _epsilon_label(curve) -> Exactness:
    """What ε from the upper side of ``curve`` is: a certified upper bound when the
    curve is exact or a sound bound, else (a numerical curve) numerical."""
    return Exactness.UPPER if curve.provenance.exactness.certified else Exactness.NUMERICAL


# --------------------------------------------------------------- the search
def _check_order(seen: dict, target: float, label: str, what: str = "ε") -> tuple[float, float]:
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


def _bracket(problem: _Problem, start: float, target: float, label: str) -> tuple[float, float]:
    """Steps from ``start`` until ε straddles ``target``: by factors 1.1, 1.21, 1.46,
    2.1, 4.6, then 16 — cheap when the start is good, quick when it is not.

    A step the accountant refuses for its grid size (``GridSizeError``: too little
    noise for the grid at this step) is not the end of the search: the next tries go
    halfway, in log x, between the last value evaluated and the refused one, so the
    bracket is found wherever grids fit (100 subsampled Gaussians, q = 0.01, TPR 0.67
    at FPR 0.1: the step from σ = 0.239 to 0.052 was refused; the answer is 0.1667)."""
    x = start
    feasible = problem.epsilon(x) <= target
    n = 0
    wall: Optional[GridSizeError] = None    # the last refusal, at ``wall_x``
    wall_x = math.nan
    for _ in range(_MAX_STEPS):
        factor = min(_GROWTH ** (2 ** min(n, 5)), _MAX_GROWTH)
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


def _zero_meets(problem: _Problem, target: float) -> bool:
    """Whether x = 0 — no noise, when x is the noise parameter — meets the target (a
    mechanism that refuses 0, or a figure that cannot be computed there, does not)."""
    if not problem.zero:
        return False
    try:
        return problem.epsilon(0.0) <= target
    except ValueError:
        return False


def _ledger_at(family: Callable[[float], Ledger], x: float) -> Ledger:
    ledger = family(x)
    if not isinstance(ledger, Ledger):
        raise TypeError(f"the family at x = {x:g} must return a Ledger (the composition at "
                        f"x), got {type(ledger).__name__}")
    return ledger


def _check_family(family: Any) -> tuple[Callable[[float], Ledger], str]:
    """(x ↦ Ledger, the label of x) from a family: a callable x ↦ Ledger (label "x"), a
    ``MechanismFamily`` or a non-empty sequence of them (whose ledgers add; label: the
    first one's)."""
    if isinstance(family, MechanismFamily):
        return family, family.label
    if isinstance(family, Sequence) and not isinstance(family, (str, bytes)):
        terms = tuple(family)
        if not terms:
            raise ValueError("terms must not be empty")
        for i, term in enumerate(terms):
            if not isinstance(term, MechanismFamily):
                raise TypeError(f"terms[{i}] must be a MechanismFamily (a Term), got "
                                f"{type(term).__name__}")

        def summed(x: float) -> Ledger:
            return Ledger(tuple(e for term in terms for e in term(x).entries))
        return summed, terms[0].label
    if callable(family) and not isinstance(family, type):
        return family, "x"
    raise TypeError(f"family must be a callable x -> Ledger, a MechanismFamily or a "
                    f"sequence of them, got {type(family).__name__}")


def _scales_noise(family: Any) -> bool:
    """Whether x is the noise parameter itself (times a multiplier) of every mechanism
    of ``family`` — a registered mechanism or a ``Mechanism`` class, alone or in a
    sequence — so that x = 0 is no noise at all. For a callable, 0 means nothing known."""
    terms = (family,) if isinstance(family, MechanismFamily) else family
    if not isinstance(terms, Sequence) or isinstance(terms, (str, bytes)) or not terms:
        return False
    return all(isinstance(t, MechanismFamily) and t._cls is not None for t in terms)


def _solve(problem: _Problem, start: float, target: float, label: str, rtol: float,
           integer: bool) -> tuple[float, float]:
    """(lo, hi): the final bracket, hi the smallest feasible x evaluated; (0, 0) when
    x = 0, no noise at all, meets the target (``_Problem.zero``; tried first when
    ``start`` is 0: another accountant's answer). With ``integer`` the answer is the
    smallest integer n ≥ 1 with value ≤ target, checked by evaluating it and n − 1
    (n = 1 when even 1 meets the target)."""
    from scipy.optimize import brentq
    if start == 0.0 and _zero_meets(problem, target):
        lo, hi = 0.0, 0.0
    else:
        lo, hi = _bracket(problem, start if start > 0.0 else 1.0, target, label)
    if hi > 0.0:
        # the value can be +∞ (no finite order); Brent needs finite values, and any
        # large value keeps the sign it needs
        cap = 1e6 * (target + 1.0)
        brentq(lambda x: min(problem.epsilon(x) - target, cap), lo, hi,
               xtol=1e-3 * rtol * lo, rtol=rtol, maxiter=200)
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


def calibrate_workload(family: Any, *, epsilon: float, delta: float,
                       accountant: str = "pld", step: float = DEFAULT_STEP,
                       rtol: float = DEFAULT_RTOL, start: Optional[float] = None,
                       parameter: Optional[str] = None, direction: "Direction | str" = "max",
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
    fn, default_label = _check_family(family)
    direction = as_direction(direction)
    integer = _check_flag("integer", integer)
    target = check_positive("epsilon", epsilon)
    accountant = check_accountant(accountant)
    # δ = 0 (pure DP) only the PLD answers, where the composed loss is bounded
    delta = check_probability("delta", delta, lo_open=accountant != "pld")
    step = check_positive("step", step)
    rtol = check_real("rtol", rtol, lo=1e-12, hi=0.1)
    if start is not None:
        start = check_positive("start", start)
    elif accountant == "pld":
        try:
            start = calibrate_workload(family, epsilon=target, delta=delta, accountant="rdp",
                                       rtol=1e-3, start=1.0, direction=direction).value
        except ValueError:  # no finite Rényi curve: search from 1
            start = 1.0
    else:
        start = 1.0
    label = parameter if parameter is not None else default_label
    if not isinstance(label, str):
        raise TypeError(f"parameter must be a string, got {type(label).__name__}")

    problem = _Problem(fn, delta, accountant, step, direction, zero=_scales_noise(family))
    try:
        lo, hi = _solve(problem, start, target, label, rtol, integer)
    finally:
        problem.bar.close()
    eps, order = problem.seen[hi]
    eps += 0.0     # (−0.0, the ε of an identical pair, reads as 0)
    ledger = _ledger_at(fn, hi)
    return Calibration(parameter=label, value=hi, epsilon=eps, target=target, delta=delta,
                       accountant=accountant, bracket=(lo, hi), rtol=rtol,
                       evaluations=len(problem.seen), order=order, uses=ledger.mechanisms(),
                       ledger=ledger, exactness=problem.labels[hi])


def calibrate(family: Any, solve: Optional[str] = None, *, epsilon: float, delta: float,
              count: int = 1, params: Optional[Mapping[str, Any]] = None,
              accountant: str = "pld", step: float = DEFAULT_STEP,
              rtol: float = DEFAULT_RTOL, start: Optional[float] = None,
              direction: "Direction | str" = "max", integer: bool = False) -> Calibration:
    """The smallest ``solve`` of ``family`` (``params`` fixed) meeting (ε, δ) for
    ``count`` independent uses. See ``MechanismFamily`` for ``family`` and
    ``calibrate_workload`` for the rest.
    """
    term = MechanismFamily(family, solve, count=check_count("count", count), params=params)
    return calibrate_workload(term, epsilon=epsilon, delta=delta, accountant=accountant,
                              step=step, rtol=rtol, start=start, direction=direction,
                              integer=integer)


def _check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} ({value!r})")
    return bool(value)


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
    fpr: Optional[float]
    direction: str
    bracket: tuple[float, float]
    evaluations: int
    integer: bool = False
    ledger: Optional[Ledger] = attrs.field(default=None, eq=False, repr=False)
    accountant: str = "pld"

    def describe(self) -> str:
        what = f"TPR at FPR {self.fpr:g}" if self.figure == "tpr" else "advantage"
        kind = "smallest integer" if self.integer else "smallest"
        return (f"{self.parameter} = {self.value:.10g} ({kind}) gives {what} ≤ "
                f"{self.achieved:.10g} ≤ {self.target:g} (upper bound, {self.direction}, "
                f"{self.accountant}); "
                f"bracket ({self.bracket[0]:.10g}, {self.bracket[1]:.10g}], "
                f"{self.evaluations} evaluations")


def _risk_metric(tpr: Optional[float], fpr: Optional[float], advantage: Optional[float],
                 direction: Direction, accountant: str = "pld"
                 ) -> tuple[str, float, Optional[float], Callable]:
    """(figure, target, fpr, accountant ↦ the figure's upper bound under ``accountant``:
    the pessimistic PLD, or the Rényi curve through ``accounting.analysis.risk``)."""
    from accounting.analysis import risk
    kind = PLD if accountant == "pld" else (RDP if accountant == "rdp" else ZCDP)

    def curve(acct: Accountant):
        return acct.curve(PLD, lower=False) if kind is PLD else acct.curve(kind)
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


def calibrate_risk(family: Any, *, tpr: Optional[float] = None, fpr: Optional[float] = None,
                   advantage: Optional[float] = None, direction: "Direction | str" = "max",
                   integer: bool = False, step: float = DEFAULT_STEP,
                   rtol: float = DEFAULT_RTOL, start: float = 1.0,
                   parameter: Optional[str] = None, accountant: str = "pld") -> RiskCalibration:
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
    fn, default_label = _check_family(family)
    d = as_direction(direction)
    accountant = check_accountant(accountant)
    figure, target, fpr, metric = _risk_metric(tpr, fpr, advantage, d, accountant)
    integer = _check_flag("integer", integer)
    step = check_positive("step", step)
    rtol = check_real("rtol", rtol, lo=1e-12, hi=0.1)
    start = check_positive("start", start)
    label = parameter if parameter is not None else default_label
    what = f"TPR at FPR {fpr:g}" if figure == "tpr" else "advantage"
    problem = _Problem(fn, 0.0, accountant, step, d, metric, what, zero=_scales_noise(family))
    try:
        lo, hi = _solve(problem, start, target, label, rtol, integer)
    finally:
        problem.bar.close()
    return RiskCalibration(parameter=label, value=hi, figure=figure,
                           achieved=problem.seen[hi][0] + 0.0,
                           target=target, fpr=fpr, direction=d.value, bracket=(lo, hi),
                           evaluations=len(problem.seen), integer=integer,
                           ledger=_ledger_at(fn, hi), accountant=accountant)


def calibrate_count(mechanism: Any, *, epsilon: float, delta: float, accountant: str = "pld",
                    step: float = DEFAULT_STEP, direction: "Direction | str" = "max",
                    max_count: int = 10 ** 7) -> int:
    """The **largest** number of uses k ≤ ``max_count`` of ``mechanism`` (a
    ``Mechanism``) whose composition meets ε(δ) ≤ ``epsilon`` (a number of steps or
    epochs): ε grows with k, so doubling from 1 then integer bisection; 0 when a single
    use already exceeds the target. Each ε is the accountant's upper bound, worst over
    ``direction``'s components."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    target = check_positive("epsilon", epsilon)
    accountant = check_accountant(accountant)
    delta = check_probability("delta", delta, lo_open=accountant != "pld")
    max_count = check_count("max_count", max_count)
    problem = _Problem(lambda k: Ledger.of(mechanism, int(k)), delta, accountant,
                       check_positive("step", step), as_direction(direction))
    try:
        return _largest_count(lambda k: problem.epsilon(float(k)) <= target, max_count)
    finally:
        problem.bar.close()


def _largest_count(ok: Callable[[int], bool], max_count: int) -> int:
    """The largest k ≤ ``max_count`` with ``ok(k)`` for a predicate that holds up to some
    k and fails after (0 if it fails at 1): doubling from 1, then integer bisection."""
    if not ok(1):
        return 0
    good, bad = 1, None
    while bad is None:
        nxt = min(good * 2, max_count)
        if nxt == good:
            return good
        if ok(nxt):
            good = nxt
        else:
            bad = nxt
    while bad - good > 1:
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def __getattr__(name: str) -> Any:
    """Deprecated name: ``Term`` (now ``MechanismFamily``). (``calibrate_dpsgd`` moved to
    the mechanisms plugin, which the core does not name: see the CHANGELOG.)"""
    import warnings
    if name == "Term":
        warnings.warn("Term is deprecated; use MechanismFamily (a family is x -> Ledger)",
                      DeprecationWarning, stacklevel=2)
        return MechanismFamily
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
