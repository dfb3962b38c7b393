"""Idealised Gaussian canaries, the anchors of the one-run audit's power.

Canary j is included with probability 1/2 (b_j ∈ {0, 1}) and scored
s_j = b_j·μ + N(0, 1), μ the GDP parameter of a Gaussian mechanism that is exactly
(ε, δ)-DP at the stated δ: the per-canary test is then exactly μ-GDP, the idealised
setting of arXiv:2305.08846 § 6 and arXiv:2410.22235 § 6.
"""

from __future__ import annotations

import functools

import numpy as np

from accounting.validation import check_count, check_positive, check_probability

__all__ = ["gaussian_canaries", "true_mu"]


@functools.lru_cache(maxsize=64)
def true_mu(epsilon: float, delta: float) -> float:
    """μ = Δ/σ of the Gaussian mechanism that is exactly (ε, δ)-DP (its privacy profile,
    ``accounting_rkrd.gaussian_sigma``)."""
    from accounting_rkrd.experiments import gaussian_sigma  # scipy.optimize: not at registration
    return 1.0 / gaussian_sigma(check_positive("epsilon", epsilon),
                                check_probability("delta", delta))


def gaussian_canaries(m: int, epsilon: float, delta: float,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(scores, inclusion) of m idealised canaries of a run that is exactly (ε, δ)-DP."""
    m = check_count("m", m)
    mu = true_mu(epsilon, delta)
    inclusion = rng.integers(0, 2, size=m)
    return inclusion * mu + rng.standard_normal(m), inclusion
