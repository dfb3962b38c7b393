"""The central-limit (GDP) approximation of a composition: an approximation, never a bound.

Dong, Roth and Su (arXiv:1905.02383, §3.3, Thm 3.5 — the Berry–Esseen CLT for
trade-off functions) show that a composition of many mechanisms, each close to
perfect privacy, is close to μ-Gaussian DP with

    μ = 2·Σᵢ klᵢ / sqrt(Σᵢ (κ₂,ᵢ − klᵢ²)),

where klᵢ = E_P[Lᵢ] (the KL divergence) and κ₂,ᵢ = E_P[Lᵢ²] are the first two moments
of the i-th privacy loss under P. (Under μ-GDP itself L ~ N(μ²/2, μ²), and the formula
gives back μ.) For Poisson-subsampled Gaussians Bu, Dong, Long and Su
(arXiv:1911.11607, §3, Cor. 4) give the closed form μ = q·sqrt(T·(e^{1/σ²} − 1)); it
is what Opacus' ``gdp`` accountant uses.

The ε(δ) of μ-GDP is the Gaussian profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
(Balle, Wang, arXiv:1805.06530, Thm 8).

**This is not a bound.** The CLT is a limit; for few steps, large sampling rates or
small δ it under-reports ε against the certified PLD bracket (docs/gdp-clt.md shows
by how much). Its curves are labelled ``Exactness.NUMERICAL`` with a provenance that
says "CLT approximation", so nothing downstream calls them certified, and no
accountant uses it unless asked by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from accounting.validation import check_array, check_count, check_positive

__all__ = ["clt_mu", "poisson_gaussian_mu", "gdp_profile", "gdp_tpr", "CLT_STEP"]

#: the PLD grid on which each component's loss moments are taken
CLT_STEP = 2e-4
#: mass at +∞ up to which a component's loss still counts as finite (the grid's tail)
TAIL_MASS = 1e-9


def poisson_gaussian_mu(q: float, sigma: float, steps: int) -> float:
    """μ = q·sqrt(T·(e^{1/σ²} − 1)) for T Poisson-subsampled Gaussians of rate q and
    noise standard deviation σ at sensitivity 1, i.e. noise multiplier z = σ/Δ = σ
    (Bu et al., arXiv:1911.11607, Cor. 4)."""
    q = float(check_array("q", q, lo=0.0, hi=1.0))
    sigma = check_positive("sigma", sigma)
    steps = check_count("steps", steps)
    return float(q * np.sqrt(steps * np.expm1(1.0 / sigma ** 2)))


def _moments(item: Any, step: float) -> tuple[float, float]:
    """(E_P[L], Var_P[L]) of one component's privacy loss, from its PLD's pessimistic
    forward law (the direction with the larger mean loss is taken by the caller)."""
    from accounting.curves.pld import PLD
    pld = item.curve(PLD, step=step)
    out = []
    for direction in ("forward", "backward"):
        law = pld.law(direction, "upper")
        # the pessimistic law parks its grid's tail (≲ 1e-12) at +∞; an approximation
        # can drop that, but a loss that is really infinite has no CLT
        if law.inf_mass > TAIL_MASS:
            raise ValueError(f"{item!r}: its privacy loss is +∞ with probability "
                             f"{law.inf_mass:.3g}; the CLT needs finite moments")
        w = law.masses / law.masses.sum()
        m = float(np.dot(w, law.losses))
        out.append((m, float(np.dot(w, (law.losses - m) ** 2))))
    return max(out)


def clt_mu(components: Iterable[tuple[Any, int]], *, step: float = CLT_STEP) -> float:
    """The CLT's μ for a composition given as ``(mechanism or pair, count)`` items:
    μ = 2·Σ count·E[L] / sqrt(Σ count·Var[L]) (Dong, Roth, Su, arXiv:1905.02383,
    Thm 3.5). An approximation, not a bound."""
    step = check_positive("step", step)
    kl = var = 0.0
    items = list(components)
    if not items:
        raise ValueError("components must hold at least one (mechanism, count) item")
    for k, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"components[{k}] must be a (mechanism, count) tuple, got {item!r}")
        mech, count = item
        count = check_count(f"components[{k}] count", count)
        m, v = _moments(mech, step)
        kl += count * m
        var += count * v
    if var <= 0.0:
        return 0.0
    return float(2.0 * kl / np.sqrt(var))


def gdp_profile(mu: float) -> Any:
    """The privacy profile of μ-GDP, labelled a numerical (CLT) approximation:
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle, Wang, arXiv:1805.06530, Thm 8)."""
    from scipy.special import log_ndtr

    from accounting.curves.curve import Provenance
    from accounting.curves.profile import FunctionSide, PrivacyProfile
    from accounting.vocabulary import Exactness
    mu = float(check_array("mu", mu, lo=0.0))

    def delta(eps: np.ndarray, direction: Any) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        if mu == 0.0:
            return np.where(eps >= 0, 0.0, -np.expm1(np.minimum(eps, 0.0)))
        finite = np.where(np.isfinite(eps), eps, 0.0)
        a = log_ndtr(-finite / mu + mu / 2)
        b = finite + log_ndtr(-finite / mu - mu / 2)
        # difference of exponentials in log space: e^a − e^b = e^a (1 − e^{b−a})
        out = np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))
        return np.where(eps == np.inf, 0.0, np.where(eps == -np.inf, 1.0, out))

    side = FunctionSide(delta)
    prov = Provenance(Exactness.NUMERICAL,
                      (f"μ-GDP, μ = {mu:.6g} (CLT approximation, not a bound)",))
    return PrivacyProfile(side, side, provenance=prov)


def gdp_tpr(mu: float, fpr: np.ndarray) -> np.ndarray:
    """TPR of the best test against μ-GDP at FPR α: 1 − G_μ(α) = Φ(μ − Φ⁻¹(1 − α))
    (Dong, Roth, Su, arXiv:1905.02383, Def. 2.7)."""
    from scipy.special import ndtr, ndtri
    fpr = np.asarray(fpr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(fpr >= 1.0, 1.0, np.where(fpr <= 0.0, 0.0, ndtr(mu - ndtri(1.0 - fpr))))
