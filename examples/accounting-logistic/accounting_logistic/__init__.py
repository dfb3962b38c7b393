"""An example mechanism plugin: additive logistic noise, M(D) = f(D) + Z.

Z has density e^{−x/s} / (s (1 + e^{−x/s})²) with scale ``s`` > 0. The library
derives the dominating pair (Z + Δ, Z) for the sensitivity Δ and every privacy curve
from the log-density (quadrature on cells, pessimistic and optimistic laws; see
``accounting.pairs.additive``). The privacy loss of logistic noise is bounded by Δ/s
(its log-density is 1/s-Lipschitz), so the mechanism is (Δ/s)-DP: the tests check
that and the PLD against quadrature of the exact δ(ε).

Installed with ``pip install``, the entry point ``logistic`` in the group
``accounting`` makes it available by name everywhere: ``accounting.mechanism("logistic",
s=1.0)``, workload files, and the command line (``accounting epsilon logistic --s 1``).
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting import AdditiveNoise, hookimpl
from accounting.pairs.mechanism import positive

__all__ = ["Logistic"]


@attrs.frozen
class Logistic(AdditiveNoise):
    """Logistic noise of scale ``s`` (the noise grows with ``s``)."""

    name = "logistic"
    s: float = attrs.field(validator=positive)

    def log_density(self, x: np.ndarray) -> np.ndarray:
        # log of e^{−|x|/s}/(1 + e^{−|x|/s})², symmetric, without overflow for large |x|
        z = np.abs(np.asarray(x, dtype=float)) / self.s
        return -z - 2.0 * np.log1p(np.exp(-z)) - np.log(self.s)

    def noise_width(self) -> float:
        """A typical width of the noise, to place the numerical grid."""
        return self.s


@hookimpl
def accounting_register_mechanisms(register) -> None:
    register(Logistic)
