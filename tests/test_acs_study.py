"""The ACS variance study (``benchmarks/acs_study.py``), a reproduction of the
unifying-accounting paper (arXiv:2610.02414, §5.1, Fig. 8) built on calibration.

The study lives in ``benchmarks/`` (it names plugin mechanisms and reproduces a
paper, so it is not part of the installed library) and is imported from there.

Reference values: a Fisher information by scipy quadrature, closed-form noise
variances, and the paper's figures: variance ratios RDP/zCDP of 1 (Gaussian),
0.989–0.997 (Laplace) and 0.552–0.557 (Gaussian mixture), ΔMSE 16.170–16.205 and
652.3–2115.7, for d = 330…1060 queries at (ε, δ) = (3, 1e-5).
"""

from __future__ import annotations

import math
import os
import sys

import pytest
from scipy import integrate
from scipy.stats import norm

import accounting

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benchmarks"))
from acs_study import (  # noqa: E402  (benchmarks/ is not a package)
    ACS_TARGET,
    compare_variance,
    noise_variance,
    paper_mixture,
    variance_table,
)

EPS, DELTA = ACS_TARGET
RTOL = 1e-9


@pytest.fixture(scope="module")
def acs():
    """The study at the ends of the paper's range, d = 330 and 1060, keyed (family, d)."""
    rows = variance_table(ds=(330, 1060), rtol=RTOL)
    return {(r.family, r.d): r for r in rows}


def test_rdp_never_needs_more_noise_than_zcdp(acs):
    for (family, d), row in acs.items():
        assert row.rdp.value <= row.zcdp.value * (1 + 1e-9), (family, d)
        assert row.ratio <= 1 + 1e-8, (family, d)


def test_gaussian_variance_ratio_is_one(acs):
    for d in (330, 1060):
        row = acs["gaussian", d]
        assert row.ratio == pytest.approx(1.0, abs=1e-6)
        assert row.zcdp_variance == pytest.approx(row.zcdp.value ** 2, rel=1e-9)


# ------------------------------------------------------- the paper's ratios
def test_laplace_variance_ratio_in_paper_range(acs):
    lo, hi = acs["laplace", 330], acs["laplace", 1060]
    assert round(lo.ratio, 3) == 0.989 and round(hi.ratio, 3) == 0.997
    assert 0.988 < lo.ratio < hi.ratio < 0.997
    # ΔMSE in ($1000)² per query, Δ = 1: the paper's 16.170–16.205
    assert lo.mse_difference == pytest.approx(16.170, abs=0.01)
    assert hi.mse_difference == pytest.approx(16.205, abs=0.01)
    assert lo.rdp_variance == pytest.approx(2 * lo.rdp.value ** 2, rel=1e-9)


def test_gaussian_mixture_ratio_reported(acs):
    """½N(−s, s²) + ½N(s, s²): the paper's 0.552–0.557 and ΔMSE 652.3–2115.7."""
    lo, hi = acs["gaussian_mixture", 330], acs["gaussian_mixture", 1060]
    assert round(lo.ratio, 3) == 0.557 and round(hi.ratio, 3) == 0.552
    assert lo.mse_difference == pytest.approx(652.3, abs=0.1)
    assert hi.mse_difference == pytest.approx(2115.7, abs=0.1)
    # zCDP sees only one component (ρ* = 1/(2s²)): its s is the Gaussian σ, and the
    # mixture's variance 2s² is twice the Gaussian one
    for d in (330, 1060):
        g = acs["gaussian", d]
        m = acs["gaussian_mixture", d]
        assert m.zcdp.value == pytest.approx(g.zcdp.value, rel=1e-8)
        assert m.zcdp_variance == pytest.approx(2 * g.zcdp_variance, rel=1e-8)
    # many small shifts: the ratio falls towards s²·I, I the location Fisher information
    w = (0.5, 0.5)
    f = lambda x: sum(wi * norm.pdf(x, m, 1) for wi, m in zip(w, (-1, 1)))
    fp = lambda x: sum(wi * norm.pdf(x, m, 1) * (m - x) for wi, m in zip(w, (-1, 1)))
    fisher = integrate.quad(lambda x: fp(x) ** 2 / f(x), -30, 30, limit=200)[0]
    assert fisher == pytest.approx(0.5504, abs=1e-4)
    assert fisher < hi.ratio < lo.ratio


# --------------------------------------------------------- noise variance
def test_noise_variance_closed_forms():
    m = accounting.mechanism
    assert noise_variance(m("gaussian", sigma=3.0)) == pytest.approx(9.0, rel=1e-12)
    assert noise_variance(m("laplace", b=2.0)) == pytest.approx(8.0, rel=1e-12)
    assert noise_variance(paper_mixture(2.0)) == pytest.approx(8.0, rel=1e-12)
    mix = m("gaussian_mixture", weights=[0.3, 0.7], means=[1.0, 4.0], scales=[1.0, 2.0])
    # Σ w(s² + m²) − m̄² = 0.3·2 + 0.7·20 − 3.1²
    assert noise_variance(mix) == pytest.approx(0.6 + 14.0 - 3.1 ** 2, rel=1e-12)
    a = 0.5   # discrete Laplace, pmf ∝ e^{−a|k|}: variance 2e^{−a}/(1 − e^{−a})²
    assert noise_variance(m("discrete_laplace", a=a)) == pytest.approx(
        2 * math.exp(-a) / (1 - math.exp(-a)) ** 2, rel=1e-12)
    gg = m("generalised_gaussian", beta=1.5, scale=2.0)   # offers std()
    assert noise_variance(gg) == pytest.approx(4 * math.gamma(2.0) / math.gamma(2 / 3),
                                               rel=1e-12)


def test_bad_input():
    with pytest.raises(TypeError, match="not additive noise"):
        noise_variance(accounting.mechanism("subsampled_gaussian", q=0.1, sigma=1.0))
    with pytest.raises(TypeError, match="must be a Mechanism"):
        noise_variance("gaussian")
    with pytest.raises(ValueError, match="family must be one of"):
        compare_variance("cauchy", 10)
    with pytest.raises(ValueError, match="d must be an integer >= 1"):
        compare_variance("laplace", 0)
    with pytest.raises(ValueError, match="s must be in"):
        paper_mixture(-1.0)
