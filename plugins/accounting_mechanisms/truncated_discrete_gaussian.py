"""The truncated discrete Gaussian: N_ℤ(0, σ²) restricted to {−T, …, T}.

Noise Y with pmf ∝ e^{−y²/(2σ²)} on the integers |y| ≤ T (the discrete Gaussian of
Canonne, Kamath, Steinke, arXiv:2004.00010, §2, cut to a finite support as
dp_accounting's ``truncation_bound`` does) is added to an integer query of
sensitivity Δ. The pair is (P, Q) = (Δ + Y, Y) on the outcomes {−T, …, T + Δ}:

* where both have mass, the loss is L(x) = (2xΔ − Δ²)/(2σ²) (the normalisers cancel);
* P alone has mass on x ∈ (T, T + Δ]: loss +∞ with P-mass Σ_{T−Δ<y≤T} P[Y = y];
* Q alone on x ∈ [−T, Δ − T): loss −∞ (the backward law's +∞ atom).

The map x ↦ Δ − x swaps P and Q, so the pair is symmetric. Both loss laws are finite
and computed from the log-pmfs (losses in closed form, masses in log space), so every
curve is exact: the profile, ε(δ), trade-off function and Rényi curve (+∞ for α > 1
whenever the mass at +∞ is positive, i.e. whenever Δ ≥ 1). Truncation is what makes
δ(ε) ≥ P[Y > T − Δ] for every ε, however large σ is.

Float64 resolution: outcomes whose mass is below e^{−745} of the peak underflow and
are dropped (at most ~1e-320 of δ); when such outcomes carry the +∞ atom, its mass is
kept at the smallest positive double so that ε(δ = 0) stays +∞, as it is exactly.

Degenerate values: Δ = 0 gives P = Q (no privacy cost: every loss 0); T = 0 is no
noise at all (Y = 0), non-private for Δ ≥ 1 (all P-mass at +∞).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from scipy.special import logsumexp

from accounting.numerics.loss import LossPMF
from accounting.pairs.additive import AdditiveNoise
from accounting.pairs.mechanism import Range, parameter
from accounting.pairs.pair import LawPair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.vocabulary import AnyArray, FloatArray

from .finite_product import FiniteLawPair

__all__ = ["TruncatedDiscreteGaussian", "truncated_dgauss_pair", "MAX_TABLE"]

#: nats below the peak where masses underflow float64
_DROP = 745.0
#: largest table of outcomes (T_eff + T_eff + Δ + 1)
MAX_TABLE = 1 << 20
#: σ on an absolute scale (Δ may be 0): up to 1e3, where the table has at most ~8e4
#: outcomes and a curve takes well under a second (at σ = 2e4, 1.5e6 outcomes took
#: 12 s for one PLD); wider noise is the untruncated discrete_gaussian up to the
#: tail mass beyond T
SIGMA = Range(1e-8, 1e3, log=True)
TRUNCATION = Range(0, 10 ** 12, integer=True)
SENSITIVITY = Range(0, 10 ** 4, integer=True)


def _reach(sigma: float) -> int:
    """|y| beyond which e^{−y²/(2σ²)} < e^{−745}: the masses underflow."""
    return math.ceil(sigma * math.sqrt(2.0 * _DROP)) + 1


def truncated_dgauss_pair(sigma: float, truncation: int, sensitivity: int) -> LawPair:
    """The exact pair (Δ + Y, Y), Y ~ N_ℤ(0, σ²) on {−T, …, T} (module docstring)."""
    label = f"TruncDG(σ={sigma:g}, T={truncation}, Δ={sensitivity})"
    if sensitivity == 0:      # P = Q: one atom at loss 0 holding all the mass, exactly
        free = LossPMF.from_atoms(np.zeros(1), np.ones(1))
        return FiniteLawPair((free, free), (free, free), label, symmetric=True)
    t_eff = min(int(truncation), _reach(sigma))
    size = 2 * t_eff + sensitivity + 1
    if size > MAX_TABLE:
        raise ValueError(f"truncated_discrete_gaussian: the exact table would have {size:,} "
                         f"outcomes (max {MAX_TABLE:,}); use a smaller sigma or sensitivity, "
                         f"or the untruncated discrete_gaussian")
    y = np.arange(-t_eff, t_eff + 1, dtype=float)
    log_pmf = -y * y / (2.0 * sigma * sigma)
    log_pmf -= logsumexp(log_pmf)
    x = np.arange(-t_eff, t_eff + sensitivity + 1, dtype=float)
    lq = np.full(x.size, -np.inf)
    lp = np.full(x.size, -np.inf)
    lq[: y.size] = log_pmf                      # Q = Y on [−T, T]
    lp[sensitivity: sensitivity + y.size] = log_pmf         # P = Δ + Y on [Δ − T, Δ + T]
    both = np.isfinite(lq) & np.isfinite(lp)
    loss = (2.0 * x[both] * sensitivity - sensitivity * sensitivity) / (2.0 * sigma * sigma)
    inf_p = _inf_mass(lp[np.isfinite(lp) & ~np.isfinite(lq)], sensitivity, truncation)
    inf_q = _inf_mass(lq[np.isfinite(lq) & ~np.isfinite(lp)], sensitivity, truncation)
    fwd = LossPMF.from_atoms(loss, np.exp(lp[both]), inf_p)
    bwd = LossPMF.from_atoms(-loss, np.exp(lq[both]), inf_q)
    return FiniteLawPair((fwd, bwd), (fwd, bwd), label, symmetric=True)


def _inf_mass(log_masses: FloatArray, sensitivity: int, truncation: int) -> float:
    """Σ of the one-sided masses; the smallest positive double when the exact mass is
    positive (Δ ≥ 1, an outcome one side lacks) but underflows."""
    m = float(np.exp(logsumexp(log_masses))) if log_masses.size else 0.0
    if m == 0.0 and sensitivity >= 1:
        m = math.ulp(0.0)
    return min(m, 1.0)


def _integer_in(rng: Range) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        rng.check(attribute.name, value)
    return check


@attrs.frozen
class TruncatedDiscreteGaussian(AdditiveNoise):
    """Discrete Gaussian noise N_ℤ(0, σ²) truncated to |y| ≤ ``truncation`` on an
    integer query of sensitivity ``sensitivity`` (an integer ≥ 0; add/remove or
    replace-one, whichever relation Δ is measured under). Exact (module docstring).
    """

    name = "truncated_discrete_gaussian"
    domain = "integer"
    symmetric_noise = True
    sensitivity: float = attrs.field(default=1, kw_only=True, validator=_integer_in(SENSITIVITY),
                                     metadata={"range": SENSITIVITY})
    sigma: float = parameter(SIGMA)
    truncation: int = parameter(TRUNCATION)

    def log_density(self, x: FloatArray) -> FloatArray:
        x = np.asarray(x, dtype=float)
        return np.where(np.abs(x) <= self.truncation, -0.5 * (x / self.sigma) ** 2, -np.inf)

    def noise_width(self) -> float:
        return float(min(self.sigma, max(self.truncation, 1)))

    def sample_noise(self, rng: np.random.Generator, shape: tuple[int, ...] | int = ()
                     ) -> AnyArray:
        """Draws of the noise Y (integers as int64), from the exact pmf on the support
        where it does not underflow (``sample`` adds the sensitivity for P)."""
        t_eff = min(int(self.truncation), _reach(float(self.sigma)))
        y = np.arange(-t_eff, t_eff + 1)
        log_pmf = -0.5 * (y / float(self.sigma)) ** 2
        pmf = np.exp(log_pmf - logsumexp(log_pmf))
        return rng.choice(y, size=shape, p=pmf / pmf.sum())

    def pair(self) -> LawPair:
        return truncated_dgauss_pair(float(self.sigma), int(self.truncation),
                                     int(self.sensitivity))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(TruncatedDiscreteGaussian)
