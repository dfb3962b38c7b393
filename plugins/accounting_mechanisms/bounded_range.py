"""An ε-bounded-range (ε-BR) guarantee as a mechanism, with the optimal composition of
Dong, Durfee and Rogers (arXiv:1909.13830).

A mechanism is ε-BR when, for every pair of neighbours, its privacy loss
L(y) = log(P(y)/Q(y)) ranges over an interval of width at most ε (arXiv:1909.13830,
§2): sup_y L − inf_y L ≤ ε. Since E_Q[e^L] = 1 the interval contains 0, so ε-BR
implies ε-DP. The exponential mechanism with weights exp(ε·u/(2Δu)) is ε-BR (ibid.).

**The two-point family** (ibid. §4, generalised random response). An ε-BR pair
whose losses lie in [t − ε, t], t ∈ [0, ε], is a post-processing of the pair RR_t on
two outcomes with losses t and t − ε (each outcome is a mixture of the two extreme
ones); the masses follow from the pair being a probability pair:

  p_t = (1 − e^{t−ε})/(1 − e^{−ε}),   q_t = e^{−t} p_t   (outcome of loss t),

and 1 − p_t, 1 − q_t on the outcome of loss t − ε. RR_t is itself ε-BR, so the
worst case of one use is sup_t δ(RR_t)(ε'), attained at t = (ε' + ε)/2:

  δ(ε') = (1 − e^{(ε'−ε)/2})² / (1 − e^{−ε})   for |ε'| ≤ ε,

1 − e^{ε'} below −ε and 0 above ε (derived here; ``br_profile``). It is strictly
below the ε-DP profile (at ε' = 0: tanh(ε/4) against tanh(ε/2)). As the sup of
profiles it is the profile of one pair (the convex hull of the trade-off functions'
lower envelope) that dominates every ε-BR mechanism: ``BoundedRangePair`` is that
pair, and the PLD composition of it is sound for *adaptive* composition (each use,
given the past, is ε-BR; Zhu, Dong, Wang, arXiv:2106.08567).

**Non-adaptive composition** (ibid. §5; the k uses are fixed in advance: none
depends on an output of the composition). The worst
case of k ε-BR mechanisms run as a batch is sup_t δ(RR_t^{⊗k})(ε'): the worst t is
the same for all k uses (ibid., the non-adaptive optimal composition theorem, Thm 3;
the tests check it against products of pairs with unequal t). With I ~ Bin(k, 1 − p_t)
the number of low-loss outcomes (Bin(k, 1 − q_t) under Q), the loss is kt − Iε, and

  δ_k(ε') = max_m sup_t G_m(t),   G_m(t) = P_t(I ≤ m) − e^{ε'} Q_t(I ≤ m)

(the optimal test rejects on I ≤ m, by Neyman–Pearson). dG_m/dt has the sign of
(m + 1)ε + ε' − (k + 1)t, so G_m is unimodal with its maximum at
t_m = clip((ε' + (m + 1)ε)/(k + 1), 0, ε) — the candidates DDR20 maximise over — and
δ_k(ε') = max_m G_m(t_m): O(k) binomial CDFs per ε' (``br_composed_profile``). The
composed pair (``BoundedRangeBatchPair``) evaluates it once on a grid of ε' ≥ 0 and
answers between grid points by the chord in e^{ε'} (an upper bound: every profile is
convex in e^{ε'}) and by the neighbouring chords' extensions (a lower bound). This
is *not* sound when the uses are chosen adaptively (ibid. §6 show that adaptivity
costs strictly more): it is used only for a mechanism declared ``adaptive=False``.

**Rényi and zCDP**: every ε-BR mechanism is (ε²/8)-zCDP (Cesar, Rogers,
arXiv:2004.07223; by Hoeffding's lemma) and ε-DP. Hoeffding's lemma bounds the CGF
of the loss L ∈ [s − ε, s] under P by t·E_P[L] + t²ε²/8, and E_P[L] (the KL
divergence) is at most its largest value over the class, attained on the two-point
family: KL(RR_s) = s − ε(e^s − 1)/(e^ε − 1), maximal at e^s = (e^ε − 1)/ε, so

  KL* = log((e^ε − 1)/ε) − 1 + ε/(e^ε − 1)   (``br_max_kl``; 0.1233015615 at ε = 1)

(the KL of any ε-BR pair is the mean of a convex function of dP/dQ ∈ [e^{s−ε}, e^s]
under Q with mean 1, at most that of the two-point law on the ends, RR_s). Hence
D_α ≤ κ + (α − 1)ε²/8 for any κ ≥ KL*; the curve takes κ = KL* at α = 1 rising
linearly to Cesar–Rogers' ε²/8 at α = 2 (and ε²/8 above), so that D_1 = KL*, D_α is
continuous there, and the zCDP envelope stays ε²/8 (the tighter κ = KL* at every order
would move ρ off ε²/8). With pure DP: D_α ≤ min(that, D_α of ε-DP randomized
response), D_∞ ≤ ε — an upper bound (labelled so) that holds for every ε-BR
mechanism, i.e. for the class, equal to the class's largest KL at α = 1, and *below*
the Rényi curve of the dominating pair above (whose profile is the class's worst
case pointwise in ε', but not in α): the RDP and zCDP accountants compose it, and
they are sound under adaptive composition.

Degenerate values: ε = 0 is no privacy cost (P = Q).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from scipy.special import bdtr

from accounting.curves.profile import symmetric_profile
from accounting.numerics.fourier import weighted_sum_up
from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import Pair, identical_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_array, check_count, check_positive
from accounting.vocabulary import Bound, Direction, Exactness, FloatArray

from .approx_dp import approx_dp_pair, one_sensitivity

__all__ = ["BoundedRange", "BoundedRangePair", "BoundedRangeBatchPair", "br_masses",
           "br_profile", "br_composed_profile", "bounded_range_pair", "br_max_kl", "EPSILON",
           "MAX_BATCH"]

#: the BR parameter: [0, 1e8] as for an ε-DP guarantee (beyond, e^{−ε} underflows)
EPSILON = Range(0.0, 1e8)
#: largest number of uses composed by the non-adaptive closed form (its cost is
#: ~2·``GRID_POINTS``·k binomial CDFs, seconds at this size); beyond, the uses are
#: composed as adaptive ones (the PLD of the dominating pair), which is sound
MAX_BATCH = 5000
#: ε' ≥ 0 grid points of the batch profile (chords in e^{ε'} between them)
GRID_POINTS = 2049
#: δ below which the batch profile's grid stops (the rest is bounded by this value)
GRID_TAIL = 1e-30
#: largest ε' the batch profile is evaluated at (e^{ε'} stays finite in float64)
MAX_EPS = 700.0
#: relative roundoff allowed for P(S) − e^{ε'}Q(S) (binomial CDFs to a few ulps): the
#: upper side adds it times P(S) + e^{ε'}Q(S), the lower side subtracts it
ROUNDOFF = 64 * np.finfo(float).eps


def br_masses(epsilon: float, t: FloatArray | float) -> tuple[FloatArray, FloatArray,
                                                                  FloatArray, FloatArray]:
    """(p_t, 1 − p_t, q_t, 1 − q_t) of the two-point pair RR_t (losses t and t − ε),
    computed without cancellation (``expm1``); t ∈ [0, ε], ε > 0."""
    t = np.asarray(t, dtype=float)
    c = -math.expm1(-epsilon)
    p = -np.expm1(t - epsilon) / c
    p_low = np.exp(t - epsilon) * -np.expm1(-t) / c     # e^{−ε}(e^t − 1), no overflow
    q = np.exp(-t) * p
    q_low = -np.expm1(-t) / c
    return p, p_low, q, q_low


def br_profile(eps: FloatArray | float, epsilon: float) -> FloatArray:
    """δ(ε') of one ε-BR use, the sup over t of δ(RR_t)(ε') (module docstring):
    (1 − e^{(ε'−ε)/2})²/(1 − e^{−ε}) on [−ε, ε], 1 − e^{ε'} below, 0 above."""
    eps = np.asarray(eps, dtype=float)
    if epsilon == 0:
        return np.maximum(-np.expm1(np.minimum(eps, 0.0)), 0.0)
    inside = np.clip(eps, -epsilon, epsilon)
    mid = np.expm1((inside - epsilon) / 2.0) ** 2 / -math.expm1(-epsilon)
    with np.errstate(over="ignore"):
        below = -np.expm1(np.minimum(eps, 0.0))
    return np.where(eps <= -epsilon, below, np.where(eps >= epsilon, 0.0, mid))


def br_composed_profile(eps: FloatArray | float, epsilon: float, count: int,
                        chunk: int = 1 << 21) -> tuple[FloatArray, FloatArray]:
    """(upper, lower) of δ_k(ε') = sup_t δ(RR_t^{⊗k})(ε') at each ε' in [0, ``MAX_EPS``]:
    max over m of G_m(t_m) (module docstring), ± the binomial CDFs' roundoff
    (``ROUNDOFF``). Work: ~2k binomial CDFs per ε', in chunks of ``chunk`` cells."""
    eps = check_array("eps", eps, lo=0.0, hi=MAX_EPS)
    epsilon = check_positive("epsilon", epsilon)
    k = check_count("count", count)
    flat = eps.ravel()
    up = np.zeros(flat.size)
    lo = np.zeros(flat.size)
    m = np.arange(k, dtype=float)[None, :]          # m = k is 1 − e^{ε'} ≤ 0: no gain
    rows = max(1, chunk // k)
    for start in range(0, flat.size, rows):
        e = flat[start:start + rows, None]
        t = np.clip((e + (m + 1.0) * epsilon) / (k + 1.0), 0.0, epsilon)
        _, p_low, _, q_low = br_masses(epsilon, t)
        # P(I ≤ m), Q(I ≤ m) with I ~ Bin(k, low-outcome probability)
        bp = bdtr(m, k, np.clip(p_low, 0.0, 1.0))
        bq = np.exp(e) * bdtr(m, k, np.clip(q_low, 0.0, 1.0))
        g = bp - bq
        slack = ROUNDOFF * (bp + bq)
        up[start:start + rows] = np.max(g + slack, axis=1)
        lo[start:start + rows] = np.max(g - slack, axis=1)
    shape = eps.shape
    return (np.clip(up, 0.0, 1.0).reshape(shape), np.clip(lo, 0.0, 1.0).reshape(shape))


def br_max_kl(epsilon: float) -> float:
    """The largest KL divergence of an ε-BR pair (module docstring), rounded up:
    KL* = log1p(x) − x/(1 + x) with x = (e^ε − 1)/ε − 1 = Σ_{k≥1} ε^k/(k + 1)! (summed
    as a series below ε = 1, where e^ε − 1 − ε would cancel), itself by its series
    Σ_{n≥2} (−1)^n (n − 1)x^n/n below x = 0.05; for ε ≥ 1 in log space (no overflow).
    ε²/8 − ε⁴/1152 + … for small ε; ε − log ε − 1 + o(1) for large."""
    eps = check_positive("epsilon", epsilon)
    if eps >= 1.0:
        log_e = eps + math.log(-math.expm1(-eps))        # log(e^ε − 1)
        parts: tuple[float, ...] = (log_e, math.log(eps), 1.0,
                                    math.exp(math.log(eps) - log_e))
        value = parts[0] - parts[1] - parts[2] + parts[3]
    else:
        x = math.fsum(eps ** k / math.factorial(k + 1) for k in range(1, 20))
        if x < 0.05:
            parts = tuple((-1) ** n * (n - 1) * x ** n / n for n in range(2, 24))
            value = math.fsum(parts)
        else:
            parts = (math.log1p(x), x / (1.0 + x))
            value = parts[0] - parts[1]
    # a few ulps per operation on parts of at most these sizes
    return value + 16.0 * np.finfo(float).eps * sum(abs(p) for p in parts)


def _rr_cgf(epsilon: float) -> Callable[[FloatArray, Direction], FloatArray]:
    """The CGF of ε-DP randomized response (the pair every ε-DP mechanism is dominated
    by), from the (ε, 0) guarantee's exact law."""
    return approx_dp_pair(epsilon, 0.0)._cgf


@attrs.frozen(eq=False, slots=False)  # slots off: the batch grid is cached
class BoundedRangePair(Pair):
    """The pair dominating every ε-BR mechanism (one use), symmetric; its profile is
    the class's exact worst case (``br_profile``). ``adaptive=False`` declares that
    repeated uses are a non-adaptive batch: ``_self_compose`` then gives the optimal
    non-adaptive composition (``BoundedRangeBatchPair``)."""

    epsilon: float
    adaptive: bool = True

    symmetric = True

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return br_profile(eps, self.epsilon)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        """K(t) = (α − 1)D_α ≤ min(t·κ(t) + t²ε²/8, K of ε-DP randomized response) with
        κ(t) = KL* + (ε²/8 − KL*)·min(t, 1) ≥ KL*: Hoeffding's lemma with the class's
        largest mean loss KL* (``br_max_kl``) near α = 1, Cesar–Rogers' ε²/8 zCDP
        (arXiv:2004.07223) from α = 2, and pure ε-DP, for every ε-BR mechanism (an
        upper bound; see the module docstring)."""
        t = np.asarray(t, dtype=float)
        rho = self.epsilon ** 2 / 8.0
        with np.errstate(over="ignore", invalid="ignore"):
            zcdp = t * (t + 1.0) * rho
            kl = br_max_kl(self.epsilon)
            kappa = kl + (rho - kl) * np.minimum(t, 1.0)
            near_one = t * kappa + t * t * rho
        bound = np.where(t < 1.0, np.minimum(near_one, zcdp), zcdp)
        return np.minimum(bound, _rr_cgf(self.epsilon)(t, direction))

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """D_1 ≤ KL*, the class's largest KL (``br_max_kl``), and D_∞ ≤ ε (ε-BR implies
        ε-DP); upper side only (they bound every ε-BR mechanism, no one in particular)."""
        if side is Bound.LOWER:
            return None
        if order == 1.0:
            return br_max_kl(self.epsilon)
        return float(self.epsilon) if order == np.inf else None

    def cgf_exactness(self) -> Exactness:
        return Exactness.UPPER

    def rho_bound(self, direction: Direction) -> float | None:
        """ε²/8 (Cesar, Rogers, arXiv:2004.07223; by Hoeffding's lemma)."""
        return self.epsilon ** 2 / 8.0

    def _self_compose(self, count: int) -> Pair | None:
        count = check_count("count", count)
        if self.adaptive or count == 1:
            return None         # adaptive uses: the PLD power of this dominating pair
        return batch_pair(self.epsilon, count)

    def describe(self) -> str:
        return f"{self.epsilon:g}-BR"


def batch_pair(epsilon: float, count: int) -> BoundedRangeBatchPair | None:
    """The non-adaptive batch of ``count`` ε-BR uses, or None when the closed form is
    out of reach (count > ``MAX_BATCH``, or a profile not negligible by ``MAX_EPS``):
    the uses are then composed as adaptive ones, which is sound."""
    if count > MAX_BATCH:
        return None
    pair = BoundedRangeBatchPair(epsilon, count)
    return pair if pair._grid is not None else None


@attrs.frozen(eq=False, slots=False)  # slots off: the grid is cached on the instance
class BoundedRangeBatchPair(Pair):
    """k = ``count`` ε-BR uses run as a non-adaptive batch: the pair whose profile is
    the optimal non-adaptive composition sup_t δ(RR_t^{⊗k}) (arXiv:1909.13830, §5),
    bracketed between chords and tangent extensions on a grid in ε' (module docstring);
    symmetric. Not exact (a bracket); its Rényi curve is k times one use's bound."""

    epsilon: float
    count: int

    symmetric = True

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return False

    @functools.cached_property
    def _grid(self) -> tuple[FloatArray, FloatArray, FloatArray] | None:
        """(ε' nodes, upper δ, lower δ) on [0, E], E where δ falls below ``GRID_TAIL``
        (found on a coarse pass); None if that is beyond ``MAX_EPS``."""
        top = min(self.count * self.epsilon, MAX_EPS)
        coarse = np.linspace(0.0, top, 257)
        up, _ = br_composed_profile(coarse, self.epsilon, self.count)
        small = np.flatnonzero(up <= GRID_TAIL)
        if small.size == 0:
            if top < self.count * self.epsilon:
                return None
            end = top
        else:
            end = coarse[small[0]]
        nodes = np.linspace(0.0, end, GRID_POINTS)
        up, lo = br_composed_profile(nodes, self.epsilon, self.count)
        # δ is non-increasing: make the bracket so too (both stay bounds of the truth)
        return nodes, np.minimum.accumulate(up), np.maximum.accumulate(lo[::-1])[::-1]

    def _positive(self, eps: FloatArray, lower: bool) -> FloatArray:
        grid = self._grid
        if grid is None:   # what unpacking None raised before, with the reason
            raise TypeError(f"{self.count} uses of {self.epsilon:g}-BR have no batch grid "
                            f"(count·ε beyond MAX_EPS = {MAX_EPS:g}); batch_pair composes "
                            "them as adaptive uses instead")
        nodes, up, lo = grid
        top = self.count * self.epsilon
        out = np.zeros(eps.shape)
        inside = eps <= nodes[-1]
        e = eps[inside]
        i = np.clip(np.searchsorted(nodes, e, side="right") - 1, 0, nodes.size - 2)
        a, b = nodes[i], nodes[i + 1]
        if not lower:
            # the chord in x = e^{ε'} between the nodes (δ is convex in x)
            w = np.expm1(e - a) / np.expm1(b - a)
            out[inside] = up[i] + w * (up[i + 1] - up[i])
            # beyond the grid: below GRID_TAIL, and 0 past the largest loss kε
            out[~inside] = np.where(eps[~inside] >= top, 0.0, up[-1])
            return out
        # the chords of the neighbouring intervals, extended, lie below a convex δ;
        # taken through the upper value at the far node (a steeper line), so that
        # they stay below it with bracketed node values
        best = lo[i + 1].copy()
        for j, left in ((i - 1, True), (i + 1, False)):
            ok = (j >= 0) & (j + 1 < nodes.size)
            jj = np.clip(j, 0, nodes.size - 2)
            c, d = nodes[jj], nodes[jj + 1]
            y_c = np.where(left, up[jj], lo[jj])
            y_d = np.where(left, lo[jj + 1], up[jj + 1])
            with np.errstate(over="ignore", invalid="ignore"):
                w = np.expm1(e - c) / np.expm1(d - c)
                line = y_c + w * (y_d - y_c)
            best = np.where(ok & np.isfinite(line), np.maximum(best, line), best)
        out[inside] = best
        return out

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        result: FloatArray = np.clip(symmetric_profile(eps, lambda e: self._positive(e, False)), 0.0, 1.0)
        return result

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        result: FloatArray = np.clip(symmetric_profile(eps, lambda e: self._positive(e, True)), 0.0, 1.0)
        return result

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        """D_∞ = kε, where the profile vanishes (every loss of the k uses is at most ε):
        the PLD's grid, cut where δ falls below its tail, then keeps δ = 0 answerable
        (``discretise.declared_sup``). D_1 is not declared here."""
        if order == 1.0 or side is not Bound.UPPER:
            return None
        return weighted_sum_up([(self.count, self.epsilon)])   # kε, rounded up

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        """k times one use's bound (Rényi divergences add under composition)."""
        return self.count * BoundedRangePair(self.epsilon)._cgf(t, direction)

    def cgf_exactness(self) -> Exactness:
        return Exactness.UPPER

    def rho_bound(self, direction: Direction) -> float | None:
        return self.count * self.epsilon ** 2 / 8.0

    def _self_compose(self, count: int) -> Pair | None:
        return batch_pair(self.epsilon, self.count * check_count("count", count))

    def describe(self) -> str:
        return f"{self.epsilon:g}-BR^{self.count} (non-adaptive)"


def bounded_range_pair(epsilon: float, adaptive: bool = True, label: str = "") -> Pair:
    """The pair of one ε-BR use; ε = 0 is no privacy cost (``identical_pair``)."""
    if epsilon == 0:
        return identical_pair(f"{label or 'bounded range'} (ε = 0: no privacy loss)")
    return BoundedRangePair(float(epsilon), bool(adaptive))


def check_boolean(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: the field is ``True`` or ``False`` (a NumPy bool too), else TypeError."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{type(instance).name}: {attribute.name} must be True or False, "
                        f"got {value!r}")


def adaptive_field() -> Any:
    """The ``adaptive`` parameter of BR mechanisms: True (the default) unless the
    repeated uses are fixed before any runs (a non-adaptive batch)."""
    return attrs.field(default=True, kw_only=True, validator=check_boolean)


@attrs.frozen
class BoundedRange(Mechanism):
    """A mechanism known only by its ε-bounded-range guarantee (arXiv:1909.13830, §2):
    its privacy loss spans an interval of width ≤ ``epsilon`` for every neighbours.

    ``epsilon`` ∈ [0, 1e8] (0: no privacy cost). ``adaptive`` (default True): repeated
    uses may depend on earlier outputs, and compose as the PLD of the dominating pair;
    ``adaptive=False`` declares a non-adaptive batch, composed by DDR20's optimal
    non-adaptive bound (up to ``MAX_BATCH`` uses). Neighbouring: the relation the
    guarantee was stated for. ``sensitivity`` is not used (it must be 1).
    """

    name = "bounded_range"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    epsilon: float = parameter(EPSILON)
    adaptive: bool = adaptive_field()

    def pair(self) -> Pair:
        return bounded_range_pair(float(self.epsilon), self.adaptive)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(BoundedRange)
