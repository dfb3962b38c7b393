"""Truncated Poisson subsampling of the Gaussian mechanism (dp_accounting's
TruncatedSubsampledGaussianDpEvent, arXiv:2508.15089).

From n records each is sampled with probability q; a batch larger than B is cut to a
uniformly random B of its records; Gaussian noise σ is added to the clipped sum
(records of norm ≤ Δ). Add/remove neighbouring. With t = P[Binomial(n − 1, q) ≥ B] the
probability that the batch of the other records already fills B (the only case in
which truncation can act on the differing record), the mechanism is a mixture of

* weight 1 − t: the Poisson-subsampled Gaussian (rate q, noise σ, sensitivity Δ);
* weight t: truncation occurred; the differing record is in the batch with
  probability q′ = P[Binomial(n, q) > B]·B/(t·n), and it may displace another
  record, so the sum moves by up to 2Δ: bounded by the replace-one Poisson pair at
  rate q′ with noise σ and per-branch shift 2Δ (``poisson_replace_one`` with
  sensitivity 2Δ: P = (1 − q′)N(0) + q′N(2Δ), Q = (1 − q′)N(0) + q′N(−2Δ)), the
  pair dp_accounting uses (its REPLACE pair at noise σ/2), "a slightly loose upper
  bound".

Both branches and the weight are those of dp_accounting's construction (its PLD is
the mixture of the two PLDs); here the mixture is ``mechanism_mixture``'s
index-revealing pair, whose δ is (1 − t)δ₁ + tδ₂ and whose Rényi moments average.
When B ≥ n (or t underflows to 0) it is the Poisson-subsampled Gaussian exactly.
"""

from __future__ import annotations

import attrs

from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import Pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl

from .mechanism_mixture import MixturePair
from .poisson_replace_one import ReplaceOneGaussianPair
from .subsampled_gaussian import SubsampledGaussianPair

__all__ = ["TruncatedPoissonGaussian", "truncation_weights"]

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
        truncated = ReplaceOneGaussianPair(float(self.sigma), 2.0 * float(self.sensitivity), q2)
        if t >= 1.0:
            return truncated
        return MixturePair((untruncated, truncated), (1.0 - t, t))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(TruncatedPoissonGaussian)
