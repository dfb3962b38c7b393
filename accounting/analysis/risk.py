"""Summaries of a trade-off curve in the language of Gaussian differential privacy.

μ-GDP (Dong, Roth, Su, arXiv:1905.02383, Def. 2.6–2.7): a mechanism is μ-GDP when its
trade-off function is at least G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), the trade-off between
N(0, 1) and N(μ, 1). Solving G_μ(α) = β for μ at one α gives

    μ = Φ⁻¹(1 − α) − Φ⁻¹(β),

the μ whose Gaussian trade-off passes through (α, β). Read at a single α it is a
summary of the curve, **not a bound**: the curve may dip below G_μ elsewhere. μ = 0
when β ≥ 1 − α (no test beats a coin there) and μ = ∞ when β = 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import ndtri

from accounting.validation import check_array

__all__ = ["gdp_mu", "tradeoff_gdp_mu", "GDP_ALPHA"]

#: the α at which ``tradeoff_gdp_mu`` reads the curve by default
GDP_ALPHA = 0.01


def gdp_mu(alpha: Any, beta: Any) -> "float | np.ndarray":
    """μ with G_μ(α) = β, G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (arXiv:1905.02383, Def. 2.7).

    ``alpha`` in (0, 1), ``beta`` in [0, 1], broadcast together; μ = Φ⁻¹(1 − α) −
    Φ⁻¹(β), clipped at 0 (β ≥ 1 − α), ∞ at β = 0. A float for scalar input. A summary
    of one point of a trade-off curve, not a privacy bound (see the module docstring).
    """
    a = check_array("alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    b = check_array("beta", beta, lo=0.0, hi=1.0)
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.maximum(ndtri(1.0 - a) - ndtri(b), 0.0)
    mu = np.where(b <= 0.0, np.inf, mu)
    mu = np.where(b >= 1.0 - a, 0.0, mu)
    return float(mu) if mu.ndim == 0 else mu


def tradeoff_gdp_mu(tradeoff: Any, alpha: float = GDP_ALPHA, *,
                    direction: str = "max") -> float:
    """The μ of ``gdp_mu`` at the point (α, β(α)) of a ``TradeOff`` curve.

    β is the curve's sound side (``bound="upper"``), min over the neighbouring
    directions by default (``direction``): the less private of the two.
    """
    from accounting.curves.tradeoff import TradeOff
    if not isinstance(tradeoff, TradeOff):
        raise TypeError(f"tradeoff must be a TradeOff, got {type(tradeoff).__name__}")
    a = float(check_array("alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    beta = float(np.atleast_1d(tradeoff.beta(np.array([a]), direction))[0])
    return float(gdp_mu(a, beta))
