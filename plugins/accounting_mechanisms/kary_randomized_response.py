"""k-ary randomized response: the true bucket, or with probability r a uniform one.

On k ≥ 2 buckets, with noise r ∈ [0, 1], the mechanism reports the input bucket with
probability 1 − r + r/k and each other bucket with probability r/k (the
parametrisation of dp_accounting's randomized-response event; Warner 1965 for k = 2,
Kairouz, Oh, Viswanath, arXiv:1311.0776, for the k-ary pair). Writing p = 1 − r + r/k and s = r/k:

* replace-one (the record's bucket a changes to b): the outcomes a, b and the k − 2
  others have (P, Q) masses (p, s), (s, p) and (s, s) each; the losses are
  ±log(p/s) and 0 (the others merged into one outcome of masses (k − 2)s, a
  post-processing that loses nothing since their loss is 0). Pure ε-DP with
  ε = log(p/s) = log(1 + k(1 − r)/r); the pair is symmetric.
* add/remove (an absent record answers like a uniform draw — dp_accounting's
  REPLACE_SPECIAL): forward (remove) P = the answer with the record, Q = uniform:
  outcome a has masses (p, 1/k) and the rest ((k − 1)s, (k − 1)/k), losses log(kp)
  and log r; backward Q‖P is the reverse of the same two outcomes.

Every curve is exact (finite laws: ``discrete_pair``); k uses compose exactly by the
convolution of ``finite_product`` (``FiniteLawPair``, while the support stays
within ``finite_product.MAX_ATOMS``; beyond, the grid PLD). Degenerate values: r = 1 answers uniformly and is perfectly
private (both laws a single atom at loss 0); r = 0 reports the truth and is
non-private (all P-mass at loss +∞, ε = +∞ for every δ < 1).
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.pairs.mechanism import Mechanism, Neighbouring, Range, as_neighbouring, parameter
from accounting.pairs.pair import discrete_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.vocabulary import FloatArray

from .approx_dp import one_sensitivity
from .finite_product import FiniteLawPair

__all__ = ["KaryRandomizedResponse", "kary_rr_distributions"]

BUCKETS = Range(2, 2 ** 31, integer=True, log=True)
NOISE = Range(0.0, 1.0)


def kary_rr_distributions(r: float, k: int, neighbouring: Neighbouring) -> tuple[FloatArray, FloatArray]:
    """(P, Q) on the outcomes that matter (see the module docstring), as probability
    vectors; others with equal masses are merged."""
    p, s = 1.0 - r + r / k, r / k
    if neighbouring is Neighbouring.REPLACE_ONE:
        return np.array([p, s, (k - 2) * s]), np.array([s, p, (k - 2) * s])
    return np.array([p, (k - 1) * s]), np.array([1.0 / k, (k - 1) / k])


@attrs.frozen
class KaryRandomizedResponse(Mechanism):
    """Randomized response on ``k`` buckets with noise ``r`` (see the module docstring).

    Neighbouring: replace-one (the default: the record's bucket changes) or
    add/remove (an absent record answers uniformly). ``sensitivity`` is not used (1).
    k = 2 with r = 2(1 − p) is the binary ``randomized_response`` with truth
    probability p.
    """

    name = "kary_randomized_response"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    r: float = parameter(NOISE)
    k: int = parameter(BUCKETS, default=2)
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    @property
    def epsilon(self) -> float:
        """The pure-DP ε of one use: log(1 + k(1 − r)/r) under replace-one,
        max{log(kp), −log r} under add/remove (+∞ at r = 0)."""
        fwd, bwd = self.pair().upper
        return max(fwd.max_loss, bwd.max_loss, 0.0)

    def pair(self) -> FiniteLawPair:
        r, k = float(self.r), int(self.k)
        P, Q = kary_rr_distributions(r, k, self.neighbouring)
        base = discrete_pair(P, Q, f"kRR(r={r:g}, k={k})")
        return FiniteLawPair(base.upper, base.lower, base.label,
                           symmetric=self.neighbouring is Neighbouring.REPLACE_ONE)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(KaryRandomizedResponse)
