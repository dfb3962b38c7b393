"""Truncated Poisson subsampling of the Gaussian mechanism (dp_accounting's
TruncatedSubsampledGaussianDpEvent, arXiv:2508.15089).

From n records each is sampled with probability q; a batch larger than B is cut to a
uniformly random B of its records; Gaussian noise σ is added to the clipped sum
(records of norm ≤ Δ). Add/remove neighbouring, n the size of the larger neighbour:
the differing record x* and n − 1 others, of which K ~ Binomial(n − 1, q) are sampled
(dp_accounting's reading of ``dataset_size``).

A certified bracket, not an exact pair. Upper side (a proof, step by step):

1. Reveal E = {K ≥ B} (probability t = P[Binomial(n − 1, q) ≥ B]). E depends on the
   other records only, so it has the same law on both neighbours, and the mechanism
   is a post-processing of (E, output): the index-revealing mixture of the two
   conditional pairs with weights (1 − t, t) dominates (``mechanism_mixture``:
   δ = (1 − t)δ₁ + tδ₂, Rényi moments average).
2. Given not E, the batch of the others has fewer than B records, nothing is cut, and
   x* is in the batch with probability q: the Poisson-subsampled Gaussian (rate q,
   σ/Δ), exactly.
3. Given E, reveal T, the B-subset of the others' batch that survives when x* is
   absent (uniform given the batch; the same law on both neighbours). With x*
   present, x* is kept with probability q·B/(K + 1) and then displaces a uniform
   member s of T (a uniform B-subset of S ∪ {x*} containing x* is x* plus a uniform
   (B − 1)-subset of S, which is T less a uniform member). The records are
   exchangeable, so K given (T, E) has the law of K given E, and x* is kept with
   probability q′ = E[qB/(K + 1) | E] = P[Binomial(n, q) > B]·B/(t·n) (the identity
   q·P[Bin(n − 1, q) = k]/(k + 1) = P[Bin(n, q) = k + 1]/n). So given T the pair is
   ((1 − q′)N(ΣT) + q′·avg_s N(ΣT − s + x*), N(ΣT)): by joint convexity of the
   hockey-stick divergence (both directions) at most the worst single shift
   v = x* − s, |v| ≤ 2Δ, and a larger shift only adds loss: the Poisson-subsampled
   Gaussian at rate q′ with sensitivity 2Δ (σ/(2Δ)). Averaging over T keeps the bound.

dp_accounting bounds step 3 by the replace-one pair at the same rate (its "slightly
loose upper bound", ``from_truncated_subsampled_gaussian_mechanism``); the add/remove
pair above is tighter on the cases tests/plugins/test_poisson_replace_one.py checks.

Lower side: a pair that occurs. With every other record 0 and |x*| = Δ the output is
N(0) without x* and N(x*) with probability q_eff = (1 − t)q + tq′ with it: the
Poisson-subsampled Gaussian at rate q_eff, σ/Δ. When B ≥ n (or t underflows to 0)
nothing is ever cut and the pair is the Poisson-subsampled Gaussian exactly.
"""

from __future__ import annotations

import attrs

from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import Pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.vocabulary import Direction, Exactness, FloatArray

from .mechanism_mixture import MixturePair
from .subsampled_gaussian import SubsampledGaussianPair

__all__ = ["TruncatedPoissonGaussian", "TruncatedPoissonPair", "truncation_weights"]

#: the least rate a branch is given: a rate that underflowed to 0 is raised to it
#: (a larger rate only adds privacy loss)
_LEAST_RATE = 1e-300

SIZE = Range(1, 2 ** 53, integer=True, log=True)
SIGMA = Range(1e-2, 1e8, per="sensitivity", log=True)
RATE = Range(1e-300, 1.0)


def truncation_weights(n: int, q: float, batch: int) -> tuple[float, float]:
    """(t, q′): t = P[Binomial(n − 1, q) ≥ B], q′ = P[Binomial(n, q) > B]·B/(t·n)."""
    from scipy.stats import binom

    t = float(binom.sf(batch - 1, n - 1, q))
    if t == 0.0:
        return 0.0, 0.0
    q2 = float(binom.sf(batch, n, q)) * batch / t / n
    return t, min(q2, 1.0)


@attrs.frozen(eq=False)
class TruncatedPoissonPair(Pair):
    """The bracket of the module docstring: ``upper`` the index-revealing mixture that
    dominates the mechanism, ``lower`` a pair that occurs (both directions)."""

    upper: MixturePair
    lower: SubsampledGaussianPair

    exact = False

    def provides(self, primitive: str) -> bool:
        if primitive in ("cgf", "cgf_lower"):
            return self.upper.provides("cgf") and self.lower.provides("cgf")
        return super().provides(primitive)

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self.upper._profile(eps, direction)

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self.lower._profile(eps, direction)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        return self.upper._cgf(t, direction)

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        # the lower pair's upper CGF would not be a lower bound: its certified lower one
        return self.lower.cgf_lower(t, direction)

    def cgf_exactness(self) -> Exactness:
        labels = (self.upper.cgf_exactness(), self.lower.cgf_exactness())
        return Exactness.NUMERICAL if Exactness.NUMERICAL in labels else (
            Exactness.UPPER if Exactness.UPPER in labels else Exactness.EXACT)

    def rho_bound(self, direction: Direction) -> float | None:
        return self.upper.rho_bound(direction)

    def describe(self) -> str:
        return (f"truncated Poisson Gaussian: [{self.lower.describe()}, "
                f"{self.upper.describe()}]")


@attrs.frozen
class TruncatedPoissonGaussian(Mechanism):
    """Poisson sampling at rate ``q`` from ``dataset_size`` records, truncated to at most
    ``max_batch`` records, then Gaussian noise ``sigma`` (ℓ2 sensitivity
    ``sensitivity`` per record). Add/remove neighbouring. See the module docstring.
    """

    name = "truncated_poisson_gaussian"
    q: float = parameter(RATE)
    sigma: float = parameter(SIGMA)
    dataset_size: int = parameter(SIZE)
    max_batch: int = parameter(SIZE)

    def __attrs_post_init__(self) -> None:
        from accounting.pairs.mechanism import Neighbouring
        if self.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ValueError("truncated_poisson_gaussian is accounted under add_remove "
                             "neighbouring")

    def pair(self) -> Pair:
        n, b, q = int(self.dataset_size), int(self.max_batch), float(self.q)
        untruncated = SubsampledGaussianPair.of(q, self.sigma / self.sensitivity)
        t, q2 = truncation_weights(n, q, b) if b < n else (0.0, 0.0)
        if t == 0.0:
            return untruncated
        z = float(self.sigma) / float(self.sensitivity)
        truncated = SubsampledGaussianPair.of(max(q2, _LEAST_RATE), z / 2.0)
        upper = MixturePair((untruncated, truncated), (1.0 - t, t))
        q_eff = min(1.0, max((1.0 - t) * q + t * q2, _LEAST_RATE))
        return TruncatedPoissonPair(upper, SubsampledGaussianPair.of(q_eff, z))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(TruncatedPoissonGaussian)
