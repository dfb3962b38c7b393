"""Shuffled batches: each epoch a fresh random permutation of the n records, cut into
batches of b, one base-mechanism step per batch (the sampler of PyTorch and JAX data
loaders). One ``Shuffled`` use is one *epoch*; compose it E times for E epochs.

Neighbouring. The dataset size n is fixed: under ``replace_one`` the differing record
is replaced; under ``add_remove`` it is read as *zeroing out* (the record is replaced by
a ghost that contributes nothing, its slot kept, so n and the batches keep their
sizes; Kairouz et al., arXiv:2103.00039, §2, the relation under which Chua et al.,
arXiv:2403.17673, §2, compare Poisson and shuffled sampling, and under which Poisson
accounting is the usual add/remove one). A true add/remove of a record shifts every
later batch boundary of a shuffle; it is not what is accounted here.

Upper bound (certified, any base, either relation). Fix the permutation π. The
differing record lies in exactly one batch t(π) (at most one with ``drop_last``); every
other step applies the same, adaptively chosen query to the same records given the same
past outputs, so its two output laws coincide. By adaptive composition (Dong, Roth, Su,
arXiv:1905.02383, Thm 3.2, with the identity trade-off for the identical steps) the
epoch's output pair given π is dominated by the base pair (P₀, Q₀). The permutation is
drawn independently of the data with the same law on both datasets, so the epoch's pair
is the mixture Σ_π w_π (P_π, Q_π), and the hockey-stick divergence is jointly convex:
δ(ε) ≤ Σ_π w_π δ_π(ε) ≤ δ₀(ε) for every ε, in both directions. The same conditioning
and the joint convexity of e^{(α−1)D_α} bound the Rényi curve by the base's. So one
epoch is dominated by one use of the base (the deterministic-batch mechanism ABLQ_D of
arXiv:2403.17673, which the paper shows dominates ABLQ_S), and E epochs with fresh
permutations by E uses (a Gaussian of σ: √E·Δ/σ-GDP). No amplification is claimed.

How loose. Not known to be tight; the gap to the lower bound below is the honest
measure (measured, Gaussian base, add/remove, δ = 1e-5, one epoch of T batches): at
σ/Δ = 0.5 the two agree to 4 digits (ε = 9.997, T = 10 and T = 100: a single batch's
release dominates); at σ/Δ = 1 the upper bound is 4.377 against a lower bound of 4.343
(T = 10) and 2.882 (T = 1000); at σ/Δ = 2, T = 100, 1.993 against 0.484. The bound is
loosest at large σ and many batches, where shuffling may amplify and no proof that it
does is known to us.

Lower bound (certified, Gaussian base). A specific pair of datasets and a fixed
(non-adaptive) query bounds the sup from below (Chua et al., arXiv:2403.17673, §4). In
one dimension every record contributes −Δ except the differing one, which contributes
+Δ (zeroing-out: against a ghost contributing 0). After subtracting the known batch sums
the output is (in units of σ, μ = Δ/σ) P = (1/T)Σ_t N(2μ e_t, I_T) against
Q = (1/T)Σ_t N(μ e_t, I_T): the mixture over which batch holds the record. Under
replace-one (Δ the diameter of the contributions) the records at −Δ/2, +Δ/2 and −Δ/2
give P = (1/T)Σ_t N(μ e_t, I_T) against Q = N(0, I_T). The max-statistic M = max_t x_t
is a post-processing; its law under a shift s on one (any) coordinate is

  F_s(c) = P(M ≤ c) = Φ(c − s)·Φ(c)^{T−1},

and with ``drop_last`` (the record in a batch with probability γ = Tb/n, else unused)
γF_s + (1 − γ)Φ^T. The line is cut into bins (width ``resolution``/(shift gap)); the
bin masses form an exact finite pair, itself a post-processing, so its exact profile is
at most the true one: a certified lower bound (Blackwell: a post-processing of a
dominated pair is dominated). Epochs use independent permutations, so E epochs of the
fixed query give the E-fold product, and the engine composes the finite pair E times
on its optimistic side (arXiv:2411.04205 composes the same single-epoch pair over
epochs). This is the "cube" of the paper's §4 (the sets {max_t x_t ≤ C}), made a pair
the engine can compose.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import attrs
import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from accounting.pairs.mechanism import Mechanism, Neighbouring, Range, as_neighbouring
from accounting.pairs.pair import Pair, identical_pair, not_provided
from accounting.validation import check_count, check_options, check_real
from accounting.vocabulary import Bound, Direction, Exactness, FloatArray

from .gaussian import Gaussian

__all__ = ["Shuffled", "ShuffledPair", "MaxStatisticPair", "max_statistic_pair", "shuffled_batches",
           "ShufflingReport", "shuffling_report", "PoissonForShuffledWarning",
           "RESOLUTION"]

#: loss resolution of the lower-bound pair's bins (nats per bin at large c): the bins'
#: loss steps are at most about this, so the bound loses O(resolution) of ε
RESOLUTION = 2e-3
#: log-mass left beyond the outer bin edges (it stays in the two end bins)
_LOG_TAIL = -92.0          # e^{-92} ≈ 1e-40


class PoissonForShuffledWarning(UserWarning):
    """Shuffled training is being accounted as if batches were Poisson-sampled: that ε is
    not a bound for shuffling, and can be below its certified lower bound
    (arXiv:2403.17673, §4)."""


# ------------------------------------------------------------------ the lower pair
def _log_cdf(c: FloatArray, shift: float, batches: int, kept: float) -> FloatArray:
    """log P(max_t x_t ≤ c) with one coordinate shifted by ``shift`` with probability
    ``kept`` (else none), the others N(0, 1) (module docstring)."""
    c = np.asarray(c, dtype=float)
    rest = (batches - 1) * log_ndtr(c) if batches > 1 else np.zeros(c.shape)
    marked = log_ndtr(c - shift)
    out: FloatArray = (rest + marked if kept >= 1.0 else
                       rest + np.logaddexp(math.log(kept) + marked, math.log1p(-kept) + log_ndtr(c)))
    return out


def _log_sf(log_cdf: FloatArray) -> FloatArray:
    """log(1 − F) from log F, accurate at both ends."""
    with np.errstate(divide="ignore"):
        out: FloatArray = np.log(-np.expm1(log_cdf))
        return out


def _log_pdf(c: FloatArray, shift: float, batches: int, kept: float) -> FloatArray:
    """log of the density of M (d/dc of ``_log_cdf``): with F = Φ(c)^{T−1}·G,
    G = γΦ(c − s) + (1 − γ)Φ(c), f = F·[(T − 1)φ(c)/Φ(c) + G′/G]."""
    c = np.asarray(c, dtype=float)
    lphi = -0.5 * c * c - 0.5 * math.log(2.0 * math.pi)
    lphi_s = -0.5 * (c - shift) ** 2 - 0.5 * math.log(2.0 * math.pi)
    if kept >= 1.0:
        log_g, log_dg = log_ndtr(c - shift), lphi_s
    else:
        lk, lk1 = math.log(kept), math.log1p(-kept)
        log_g = np.logaddexp(lk + log_ndtr(c - shift), lk1 + log_ndtr(c))
        log_dg = np.logaddexp(lk + lphi_s, lk1 + lphi)
    terms = log_dg - log_g
    if batches > 1:
        terms = np.logaddexp(math.log(batches - 1) + lphi - log_ndtr(c), terms)
    out: FloatArray = _log_cdf(c, shift, batches, kept) + terms
    return out


@attrs.frozen(eq=False)
class MaxStatisticPair(Pair):
    """The threshold tests on M = max_t x_t (module docstring): P has one coordinate of
    N(0, I_T) shifted by ``shift_p``, Q by ``shift_q``. Its profile is

      δ_{P‖Q}(ε) = max{P(M > c) − e^ε Q(M > c), (1 − e^ε)₊},
      δ_{Q‖P}(ε) = max{Q(M ≤ c′) − e^ε P(M ≤ c′), (1 − e^ε)₊},

    at the thresholds c, c′ where M's log-likelihood ratio l = log f_P/f_Q equals ε and
    −ε (interpolated on the table of l). Each value is the hockey-stick of one test
    that an adversary can run on the epoch's output, so every value is a certified
    lower bound whatever c is (and the pair, whose trade-off is the hull of these tests,
    is dominated by the epoch's: Blackwell); where l is increasing in c (it is on every
    table measured) they are the optimal tests on M, by Neyman–Pearson. Built by
    ``max_statistic_pair``."""

    shift_p: float
    shift_q: float
    batches: int
    kept: float
    #: thresholds c and the running maximum of l at them (a monotone table to invert)
    cuts: FloatArray = attrs.field(repr=False)
    ratio: FloatArray = attrs.field(repr=False)

    def _threshold(self, level: FloatArray) -> FloatArray:
        out: FloatArray = np.interp(level, self.ratio, self.cuts)
        return out

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        eps = np.asarray(eps, dtype=float)
        e = np.where(np.isfinite(eps), eps, 0.0)
        fwd = direction is Direction.FORWARD
        c = self._threshold(e if fwd else -e)
        lf_p = _log_cdf(c, self.shift_p, self.batches, self.kept)
        lf_q = _log_cdf(c, self.shift_q, self.batches, self.kept)
        # forward: the test {M > c}, A = P(S), B = Q(S); backward: {M ≤ c}, A = Q, B = P
        log_a, log_b = (_log_sf(lf_p), _log_sf(lf_q)) if fwd else (lf_q, lf_p)
        with np.errstate(over="ignore", invalid="ignore"):
            val = np.exp(log_a) * -np.expm1(np.minimum(e + log_b - log_a, 0.0))
        val = np.where(np.isfinite(val), val, 0.0)
        val = np.maximum(val, -np.expm1(np.minimum(e, 0.0)))
        val = np.where(eps == np.inf, 0.0, np.where(eps == -np.inf, 1.0, val))
        out: FloatArray = np.clip(val, 0.0, 1.0)
        return out

    def cdf(self, c: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(P(M ≤ c), Q(M ≤ c)) at the values ``c``."""
        return (np.exp(_log_cdf(c, self.shift_p, self.batches, self.kept)),
                np.exp(_log_cdf(c, self.shift_q, self.batches, self.kept)))

    def loss(self, c: FloatArray) -> FloatArray:
        """M's privacy loss l(c) = log f_P(c) − log f_Q(c) at the values ``c`` of M."""
        c = np.asarray(c, dtype=float)
        out: FloatArray = (_log_pdf(c, self.shift_p, self.batches, self.kept)
                           - _log_pdf(c, self.shift_q, self.batches, self.kept))
        return out

    def describe(self) -> str:
        kept = f", kept {self.kept:g}" if self.kept < 1 else ""
        return (f"max-statistic(T={self.batches}, shifts {self.shift_p:g} vs "
                f"{self.shift_q:g}{kept})")


def max_statistic_pair(shift_p: float, shift_q: float, batches: int, *, kept: float = 1.0,
                       resolution: float = RESOLUTION) -> MaxStatisticPair:
    """The threshold-test pair of M = max_t x_t under P: one coordinate of N(0, I_T)
    shifted by ``shift_p`` and Q: by ``shift_q`` (shifts in units of the noise σ; with
    probability ``kept``, else no shift), T = ``batches`` (``MaxStatisticPair``). A
    dominated pair of the shuffled epoch's worst-case pair: its profile is a certified
    lower bound (module docstring, arXiv:2403.17673 §4).

    The table of l has a point every ``resolution``/|shift_p − shift_q| between the
    points where the smaller CDF and the smaller survival function reach e^{−92}; F and
    1 − F are each computed from log Φ (``log_ndtr``), so both tails keep their
    relative accuracy."""
    shift_p = check_real("shift_p", shift_p, lo=-1e6, hi=1e6)
    shift_q = check_real("shift_q", shift_q, lo=-1e6, hi=1e6)
    if shift_p == shift_q:
        raise ValueError("shift_p and shift_q must differ (equal shifts: no privacy loss)")
    batches = check_count("batches", batches)
    kept = check_real("kept", kept, lo=0.0, hi=1.0, lo_open=True)
    resolution = check_real("resolution", resolution, lo=1e-5, hi=1.0)
    hi_shift, lo_shift = max(shift_p, shift_q, 0.0), min(shift_p, shift_q, 0.0)

    def log_cdf(c: float, shift: float) -> float:
        return float(_log_cdf(np.array([c]), shift, batches, kept)[0])

    # F is smallest for the larger shift, 1 − F for the smaller one
    left = brentq(lambda c: log_cdf(c, hi_shift) - _LOG_TAIL, lo_shift - 40.0, hi_shift + 40.0,
                  xtol=1e-10)
    right = brentq(lambda c: float(_log_sf(np.array([log_cdf(c, lo_shift)]))[0]) - _LOG_TAIL,
                   lo_shift - 40.0, hi_shift + 40.0, xtol=1e-10)
    count = max(int(math.ceil((right - left) * abs(shift_p - shift_q) / resolution)), 2)
    cuts = np.linspace(left, right, count + 1)
    ratio = (_log_pdf(cuts, shift_p, batches, kept) - _log_pdf(cuts, shift_q, batches, kept))
    ratio = np.maximum.accumulate(np.where(np.isfinite(ratio), ratio, -np.inf))
    return MaxStatisticPair(shift_p, shift_q, batches, kept, cuts, ratio)


# ------------------------------------------------------------------ the pair
def _pair_validator(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Pair):
        raise TypeError(f"{attribute.name} must be a Pair, got {type(value).__name__}")


@attrs.frozen(eq=False)
class ShuffledPair(Pair):
    """One shuffled epoch: ``upper`` dominates it (the base pair: module docstring, upper
    bound) and ``lower`` is dominated by it (a worst-case pair's post-processing, or the
    identical pair where none is built). Not exact: ε from it is a certified bracket."""

    upper: Pair = attrs.field(validator=_pair_validator)
    lower: Pair = attrs.field(validator=_pair_validator)
    batches: int = attrs.field(default=1)

    exact = False

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self.upper._profile(eps, direction)

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self.lower._profile_lower(eps, direction)

    def provides(self, primitive: str) -> bool:
        """A Rényi curve where the base has one (an upper bound), a lower one where the
        lower pair has one."""
        if primitive == "cgf":
            return self.upper.provides("cgf")
        if primitive == "cgf_lower":
            return self.lower.provides("cgf_lower")
        return super().provides(primitive)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        if not self.upper.provides("cgf"):
            raise not_provided(self, "cgf")
        return self.upper._cgf(t, direction)

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        if not self.lower.provides("cgf_lower"):
            raise not_provided(self, "cgf_lower")
        return self.lower.cgf_lower(t, direction)

    def cgf_exactness(self) -> Exactness:
        # the base's curve bounds the epoch's from above (module docstring)
        return Exactness.UPPER.then(self.upper.cgf_exactness()) or Exactness.NUMERICAL

    def rho_bound(self, direction: Direction) -> float | None:
        """The base's ρ* (or its bound): the epoch's Rényi curve is at most the base's."""
        rho = self.upper._rho(direction)
        return rho if rho is not None else self.upper.rho_bound(direction)

    def _renyi_limit(self, order: float, direction: Direction,
                     side: Bound = Bound.UPPER) -> float | None:
        if side is Bound.LOWER:
            return self.lower._renyi_limit(order, direction, Bound.LOWER)
        return self.upper._renyi_limit(order, direction, Bound.UPPER)

    def describe(self) -> str:
        return f"Shuffled(T={self.batches}; upper {self.upper.describe()})"


# ------------------------------------------------------------------ the mechanism
def _base_mechanism(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mechanism):
        raise TypeError(f"base must be a Mechanism, got {type(value).__name__}")


def _batch_size(value: Any) -> int:
    return check_count("batch_size", value)


def _dataset_size(value: Any) -> int:
    return check_count("dataset_size", value)


#: batch and dataset sizes: integers up to 2^53
SIZE = Range(1, 2 ** 53, integer=True, log=True)


def shuffled_batches(batch_size: int, dataset_size: int, drop_last: bool = False
                     ) -> tuple[int, float]:
    """(T, γ): the number of batches of an epoch and the probability that a given record
    is in one. ``drop_last=False`` (PyTorch's default): T = ⌈n/b⌉ batches, the last one
    smaller when b does not divide n, γ = 1. ``drop_last=True``: T = ⌊n/b⌋ full batches
    and the n mod b records left over sit the epoch out, γ = Tb/n. b > n is refused."""
    b = check_count("batch_size", batch_size)
    n = check_count("dataset_size", dataset_size)
    if b > n:
        raise ValueError(f"batch_size must be at most dataset_size ({n}), got {b}")
    if not isinstance(drop_last, (bool, np.bool_)):
        raise TypeError(f"drop_last must be a bool, got {type(drop_last).__name__}")
    if drop_last:
        t = n // b
        return t, t * b / n
    return -(-n // b), 1.0


@attrs.frozen
class Shuffled(Mechanism):
    """One epoch of shuffled batches of ``batch_size`` from ``dataset_size`` records, one
    use of ``base`` per batch (see the module docstring). Compose it once per epoch.

    ``neighbouring`` must be the base's: ``add_remove`` (read as zeroing out, n fixed) or
    ``replace_one``; the base's sensitivity is that of its relation (add/remove: the
    bound on one record's contribution; replace-one: on the difference of two). When b
    does not divide n, ``drop_last`` says what the loader does with the remainder (a
    smaller last batch, the default, or dropped records). The pair is the certified
    upper bound (the base) with a certified lower bound beside it for a ``gaussian``
    base (``ShuffledPair``); for other bases the lower side is the trivial one.
    """

    name = "shuffled"
    base: Mechanism = attrs.field(validator=_base_mechanism)
    batch_size: int = attrs.field(converter=_batch_size, metadata={"range": SIZE})
    dataset_size: int = attrs.field(converter=_dataset_size, metadata={"range": SIZE})
    drop_last: bool = attrs.field(default=False)
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.ADD_REMOVE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        shuffled_batches(self.batch_size, self.dataset_size, self.drop_last)
        if self.base.neighbouring is not self.neighbouring:
            raise ValueError(f"shuffled is accounted under {self.neighbouring.value} "
                             f"neighbouring, but its base {type(self.base).__name__} declares "
                             f"{self.base.neighbouring.value} (give both the same relation)")

    @property
    def batches(self) -> int:
        """T, the number of batches (steps) of one epoch."""
        return shuffled_batches(self.batch_size, self.dataset_size, self.drop_last)[0]

    @property
    def kept(self) -> float:
        """γ, the probability that a record is used in an epoch (1 unless ``drop_last``)."""
        return shuffled_batches(self.batch_size, self.dataset_size, self.drop_last)[1]

    def pair(self) -> Pair:
        return self.pair_in(None)

    def pair_in(self, registry: Any = None) -> Pair:
        """``ShuffledPair``(the base's pair, the lower pair)."""
        upper = self.base.pair_in(registry)
        lower = self.lower_pair()
        return ShuffledPair(upper, lower, self.batches)

    def lower_pair(self, resolution: float = RESOLUTION) -> Pair:
        """The dominated pair of one epoch: the max-statistic pair of arXiv:2403.17673
        §4's datasets for a Gaussian base (module docstring), else the identical pair."""
        base = self.base
        if not isinstance(base, Gaussian) or base.sensitivity == 0:
            return identical_pair("shuffled: no lower bound built for this base")
        if base.sigma == 0:
            return base.pair()     # no noise: non-private, whatever the batches
        mu = float(base.sensitivity / base.sigma)
        if self.neighbouring is Neighbouring.ADD_REMOVE:
            shifts = (2.0 * mu, mu)      # others at −Δ, the record at +Δ against a ghost
        else:
            shifts = (mu, 0.0)           # others and the replacement at −Δ/2, the record +Δ/2
        return max_statistic_pair(*shifts, self.batches, kept=self.kept, resolution=resolution)


# ------------------------------------------------------------------ the report
@attrs.frozen
class ShufflingReport:
    """ε at δ of one DP-SGD job under three accountings, side by side: as if Poisson
    (rate q = b/n, T·E steps; add/remove), and for the shuffling it actually does, the
    certified lower and upper bounds (``Shuffled``). Each ε is itself the certified
    upper end of the engine's bracket, except ``shuffled_lower``, its lower end."""

    sigma: float
    batch_size: int
    dataset_size: int
    epochs: int
    delta: float
    drop_last: bool
    poisson: float
    shuffled_lower: float
    shuffled_upper: float

    @property
    def poisson_understates(self) -> bool:
        """Whether the Poisson ε is below the certified lower bound of the shuffled job:
        then reporting it for shuffled training is provably wrong."""
        return self.poisson < self.shuffled_lower

    def __str__(self) -> str:
        steps, _ = shuffled_batches(self.batch_size, self.dataset_size, self.drop_last)
        head = (f"DP-SGD, σ = {self.sigma:g} (noise multiplier), batch {self.batch_size} of "
                f"{self.dataset_size} ({steps} steps/epoch), {self.epochs} epoch(s), "
                f"δ = {self.delta:g}")
        rows = [("Poisson, q = b/n (not this sampler)", self.poisson),
                ("shuffled, certified lower bound", self.shuffled_lower),
                ("shuffled, certified upper bound", self.shuffled_upper)]
        width = max(len(r) for r, _ in rows)
        lines = [head] + [f"  {r:<{width}}  ε = {e:.4g}" for r, e in rows]
        if self.poisson_understates:
            lines.append(f"  Poisson accounting understates ε for this shuffled job by at "
                         f"least {self.shuffled_lower / self.poisson:.3g}×")
        return "\n".join(lines)


def shuffling_report(sigma: float, batch_size: int, dataset_size: int, epochs: int = 1,
                     *, delta: float, drop_last: bool = False, **options: Any
                     ) -> ShufflingReport:
    """Poisson, shuffled-lower and shuffled-upper ε(δ) of DP-SGD with noise multiplier
    ``sigma`` (sensitivity 1, add/remove read as zeroing out), ``epochs`` epochs of
    batches of ``batch_size`` from ``dataset_size`` records (``drop_last`` as for
    ``Shuffled``). ``options``: ``step`` (the PLD grid step). Warns
    (``PoissonForShuffledWarning``) that the Poisson figure is no bound for shuffling,
    saying so more loudly when it is below the certified lower bound."""
    import accounting
    from accounting.curves.pld import DEFAULT_STEP

    check_options("shuffling_report()", options, ["step"])
    step = options.get("step", DEFAULT_STEP)
    sigma = check_real("sigma", sigma, lo=0.0, lo_open=True)
    epochs = check_count("epochs", epochs)
    delta = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    steps, _ = shuffled_batches(batch_size, dataset_size, drop_last)
    q = batch_size / dataset_size
    poisson_mech = (accounting.mechanism("gaussian", sigma=sigma) if q == 1.0 else
                    accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma))
    poisson = float(accounting.Accountant(step=step).compose(poisson_mech, steps * epochs)
                    .epsilon(delta))
    epoch = Shuffled(Gaussian(sigma=sigma), batch_size, dataset_size, drop_last)
    lower, upper = accounting.Accountant(step=step).compose(epoch.pair(), epochs) \
        .epsilon_interval(delta)
    # the upper bound is the base's: √E/σ-GDP, answered in closed form
    upper_closed = float(accounting.Accountant(step=step).compose(Gaussian(sigma=sigma), epochs)
                         .epsilon(delta))
    report = ShufflingReport(sigma, int(batch_size), int(dataset_size), epochs, delta,
                             bool(drop_last), poisson, float(lower),
                             min(float(upper), upper_closed))
    if report.poisson_understates:
        warnings.warn(f"shuffled training accounted as Poisson: ε = {poisson:.4g} is below the "
                      f"certified lower bound {report.shuffled_lower:.4g} of the shuffled job "
                      f"(arXiv:2403.17673 §4); report the shuffled upper bound "
                      f"{report.shuffled_upper:.4g}", PoissonForShuffledWarning, stacklevel=2)
    else:
        warnings.warn(f"shuffled training accounted as Poisson: ε = {poisson:.4g} is not a bound "
                      f"for shuffled batches (certified: between {report.shuffled_lower:.4g} and "
                      f"{report.shuffled_upper:.4g})", PoissonForShuffledWarning, stacklevel=2)
    return report
