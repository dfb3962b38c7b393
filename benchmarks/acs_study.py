"""Noise variance at a certified privacy level: RDP against zCDP calibration.

A reproduction, kept with the benchmarks rather than in the library (it names plugin
mechanisms); ``benchmarks/acs_workload.py`` prints it and ``tests/test_acs_study.py``
checks it against the paper. Import it with ``benchmarks/`` on ``sys.path``.

The ACS-sized workload study of the unifying-accounting paper (arXiv:2610.02414,
§5.1, Fig. 8; §D.3): a workload of d independent queries, each released with centred additive
noise of one family, calibrated to (ε, δ) = (3, 1e-5) once from the composed exact
Rényi curve and once from the composed zCDP parameter ρ* (both through the same
RDP → (ε, δ) conversion, see ``accounting.analysis.calibration``). Per-query MSE is the noise
variance, and the paper reports the variance ratio RDP/zCDP: 1 for Gaussian noise
(its Rényi curve *is* its zCDP envelope), 0.989–0.997 for Laplace, 0.552–0.557 for its
Gaussian mixture, over d = 5·(complete counties of a state) ∈ [330, 1060] for the 20
states with most counties.

The mixture here is ½N(−s, s²) + ½N(s, s²) (``paper_mixture``), scaled as a whole by
s. It reproduces the paper's figures: total variance 2s², so the zCDP-calibrated
variance is twice the Gaussian one (ρ* = Δ²/(2s²) is set by one component), which
matches the paper's ΔMSE of 652.3–2115.7 at ratios 0.557–0.552. As d grows the ratio
tends to s²·I, I the Fisher information of the mixture's location (0.5504 here),
since many small shifts make the composed Rényi curve that of a Gaussian with
variance 1/I per query.

Noise variance (``noise_variance``): the mechanism's own ``variance()`` or ``std()``
if it has one, else quadrature of its noise log-density (``log_density`` of an
``AdditiveNoise``): log-space Gauss–Legendre panels around the peak of x²·f(x)
(``accounting.pairs.additive.log_integral``), about the mean, with the mean and 0 as panel
edges (where densities such as Laplace have their kink); a sum on ℤ for integer
noise.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import attrs
import numpy as np

from accounting.pairs.additive import AdditiveNoise, support_extent, log_integral
from accounting.analysis.calibration import DEFAULT_RTOL, Calibration, MechanismFamily, calibrate_workload
from accounting.pairs.mechanism import Mechanism
from accounting.registry.registry import default_registry
from accounting.validation import check_count, check_positive, check_probability

__all__ = ["noise_variance", "paper_mixture", "STUDY_FAMILIES", "ACS_DS", "ACS_TARGET",
           "VarianceComparison", "compare_variance", "variance_table"]

#: the paper's target (ε, δ) for the ACS study (§5.1)
ACS_TARGET = (3.0, 1e-5)
#: query counts spanning the paper's range d ∈ [330, 1060] (d = 5·counties; the paper's
#: per-state values are not in our copy of it, only the range, so the ends plus a grid)
ACS_DS = (330, 400, 500, 600, 700, 800, 900, 1000, 1060)


def paper_mixture(s: float) -> Mechanism:
    """½N(−s, s²) + ½N(s, s²): the Gaussian-mixture noise of the ACS study, scale s."""
    s = check_positive("s", s)
    cls = default_registry().mechanism("gaussian_mixture")
    return cls(weights=(0.5, 0.5), means=(-s, s), scales=(s, s))


#: the study's noise families: label → (family, solved parameter) for ``MechanismFamily``
STUDY_FAMILIES = {
    "gaussian": ("gaussian", "sigma"),
    "laplace": ("laplace", "b"),
    "gaussian_mixture": (paper_mixture, "s"),
}


# ------------------------------------------------------------------ variance
def _log_moment(logf, lo: float, hi: float, width: float, centre: float, power: int,
                side: float) -> float:
    """log ∫ |x − centre|^power f(x) dx over the side (+1 or −1) of ``centre``."""
    def h(x):
        x = np.asarray(x, dtype=float)
        r = side * (x - centre)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = power * np.log(np.where(r > 0, r, 0.0)) + logf(x)
        return np.where(r > 0, v, -np.inf)
    return log_integral(h, lo, hi, width, centre)


def noise_variance(mechanism: Mechanism) -> float:
    """Var[Z] of the additive noise Z of ``mechanism`` (see the module docstring)."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    own = getattr(mechanism, "variance", None)
    if callable(own):
        return float(own())
    std = getattr(mechanism, "std", None)
    if callable(std):
        return float(std()) ** 2
    if not isinstance(mechanism, AdditiveNoise):
        raise TypeError(f"{mechanism.name}: no noise variance: not additive noise and no "
                        f"variance() or std()")
    logf = mechanism.log_density
    width = float(mechanism.noise_width())
    peak = float(np.max(logf(np.linspace(-10.0 * width, 10.0 * width, 2001))))
    limit = width * 1e12
    lo = -support_extent(logf, width, peak, -1.0, limit)
    hi = support_extent(logf, width, peak, 1.0, limit)
    if mechanism.domain == "integer":
        k = np.arange(math.floor(lo), math.ceil(hi) + 1, dtype=float)
        lw = logf(k)
        w = np.exp(lw - np.max(lw))
        w /= w.sum()
        mean = float(np.dot(w, k))
        return float(np.dot(w, (k - mean) ** 2))
    log_z = log_integral(logf, lo, hi, width, 0.0)
    mean = (math.exp(_log_moment(logf, lo, hi, width, 0.0, 1, 1.0) - log_z)
            - math.exp(_log_moment(logf, lo, hi, width, 0.0, 1, -1.0) - log_z))
    return (math.exp(_log_moment(logf, lo, hi, width, mean, 2, 1.0) - log_z)
            + math.exp(_log_moment(logf, lo, hi, width, mean, 2, -1.0) - log_z))


# -------------------------------------------------------------------- study
@attrs.frozen
class VarianceComparison:
    """Per-query noise variance of d queries calibrated under RDP and under zCDP."""

    family: str
    d: int
    rdp: Calibration
    zcdp: Calibration
    rdp_variance: float
    zcdp_variance: float

    @property
    def ratio(self) -> float:
        """RDP variance / zCDP variance (≤ 1: the full Rényi curve never needs more)."""
        return self.rdp_variance / self.zcdp_variance

    @property
    def mse_difference(self) -> float:
        """zCDP − RDP per-query MSE (= variance: the noise is centred)."""
        return self.zcdp_variance - self.rdp_variance


def compare_variance(family: str, d: int, *, epsilon: float = ACS_TARGET[0],
                     delta: float = ACS_TARGET[1], rtol: float = DEFAULT_RTOL,
                     start: Optional[float] = None) -> VarianceComparison:
    """Calibrate d uses of ``family`` (a key of ``STUDY_FAMILIES``) under zCDP, then
    under RDP, and compare the per-query noise variances.

    ``start``: where the zCDP search begins (default 1). The RDP search starts from
    the zCDP answer: at a given noise the zCDP bound K(t) ≤ ρ*t(t + 1) only loosens
    the same conversion, so that value already meets the target under RDP (checked,
    like every bracket end)."""
    if family not in STUDY_FAMILIES:
        raise ValueError(f"family must be one of {', '.join(STUDY_FAMILIES)}, got {family!r}")
    d = check_count("d", d)
    fam, solve = STUDY_FAMILIES[family]
    term = MechanismFamily(fam, solve, count=d)
    z = calibrate_workload(term, epsilon=epsilon, delta=delta, accountant="zcdp", rtol=rtol,
                           start=1.0 if start is None else start)
    r = calibrate_workload(term, epsilon=epsilon, delta=delta, accountant="rdp", rtol=rtol,
                           start=z.value)
    vr = noise_variance(r.uses[0][0])
    vz = noise_variance(z.uses[0][0])
    return VarianceComparison(family, d, r, z, vr, vz)


def variance_table(families: Sequence[str] = tuple(STUDY_FAMILIES),
                   ds: Sequence[int] = ACS_DS, *, epsilon: float = ACS_TARGET[0],
                   delta: float = ACS_TARGET[1], rtol: float = DEFAULT_RTOL
                   ) -> list[VarianceComparison]:
    """``compare_variance`` for every family and d (rows ordered family-major).

    Each search after a family's first starts from the previous answer scaled by
    √(d/d_prev): for small per-query shifts the noise scale needed grows like √d."""
    check_positive("epsilon", epsilon)
    check_probability("delta", delta)
    rows = []
    for family in families:
        prev: Optional[VarianceComparison] = None
        for d in ds:
            start = None if prev is None else prev.zcdp.value * math.sqrt(d / prev.d)
            prev = compare_variance(family, d, epsilon=epsilon, delta=delta, rtol=rtol,
                                    start=start)
            rows.append(prev)
    return rows
