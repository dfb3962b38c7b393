"""The reference experiment of the RKRD paper (Domingo-Enrich and Mroueh 2022, arXiv:2205.13941, §6 and App. E).

The Gaussian mechanism in d = 30 with ‖f(D) − f(D′)‖ = Δ ∈ {0, 10}; for Δ = 10, σ is
the smallest noise for which (ε, δ)-DP holds by the analytic Gaussian of Balle & Wang
2018 (Thm 8), δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), solved by Brent's
method; for Δ = 0, σ = 0.01. The profile is the registered Gaussian mechanism's own
closed form, looked up by name.
"""

from __future__ import annotations

import math

import numpy as np

from accounting.validation import check_count, check_positive, check_probability, check_real

__all__ = ["PAPER_ALPHAS", "PAPER_LAMBDAS", "PAPER_CLAIMS", "PAPER_SIZES", "PAPER_DIMENSION",
           "PAPER_SENSITIVITY", "gaussian_sigma", "gaussian_outputs"]

PAPER_DIMENSION = 30
PAPER_SENSITIVITY = 10.0
PAPER_ALPHAS = (2.0, 6.0, 12.0)
PAPER_SIZES = (200, 400, 600)
PAPER_LAMBDAS = (2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1)
#: (ε, δ) targets of the calibrated mechanisms; the audited claim is the first
PAPER_CLAIMS = ((1.0, 0.005), (3.0, 0.03), (2.0, 0.2))


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest σ with δ_σ(ε) <= δ for N(0, σ²) noise and ℓ2 sensitivity Δ.

    δ_σ(ε) decreases in σ, so the root of δ_σ(ε) = δ is bracketed in σ/Δ = μ⁻¹ and
    found by Brent's method to 1e-13 relative.
    """
    import accounting
    from accounting import PrivacyProfile

    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_probability("delta", delta)
    sensitivity = check_positive("sensitivity", sensitivity)

    # searched in log z, the noise multiplier z = σ/Δ (``sigma`` is always σ itself)
    def excess(log_z: float) -> float:
        mech = accounting.mechanism("gaussian", sigma=math.exp(log_z) * sensitivity,
                                    sensitivity=sensitivity)
        return float(mech.curve(PrivacyProfile).delta(epsilon)) - delta

    lo, hi = math.log(1e-3), math.log(1e3)
    if excess(lo) <= 0.0 or excess(hi) >= 0.0:
        raise ValueError(f"(epsilon, delta) = ({epsilon:g}, {delta:g}) needs sigma/sensitivity "
                         f"outside [1e-3, 1e3], the supported range")
    from scipy.optimize import brentq  # ~0.3 s: not when the plugin registers
    return math.exp(brentq(excess, lo, hi, xtol=1e-14, rtol=1e-13)) * sensitivity


def gaussian_outputs(n: int, sigma: float, shift: float = 0.0,
                     dimension: int = PAPER_DIMENSION,
                     rng: np.random.Generator | None = None) -> np.ndarray:
    """n outputs of f(D) + N(0, σ²I_d) with f(D) = shift·e₁ (e₁ the first axis), shape (n, d)."""
    n = check_count("n", n, minimum=1)
    dimension = check_count("dimension", dimension)
    sigma = check_positive("sigma", sigma)
    shift = check_real("shift", shift)
    rng = np.random.default_rng() if rng is None else rng
    out = rng.normal(0.0, sigma, size=(n, dimension))
    out[:, 0] += shift
    return out
