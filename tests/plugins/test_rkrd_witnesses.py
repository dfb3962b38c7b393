"""Witness families, the split-sample witness test, curve claims, detectable ε, verdicts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

import accounting
from accounting import PLD, TradeOff
from accounting_rkrd import (CurveClaim, EpsDeltaClaim, as_claim, audit_samples,
                             clopper_pearson_upper, detectable_epsilon, gaussian_outputs,
                             gaussian_sigma)
from accounting_rkrd.witnesses import FAMILIES, candidates

SIGMA = gaussian_sigma(1.0, 1e-3)          # N(0, σ²) with Δ = 1 is (1, 1e-3)-DP


def _noisy_sum(n, sigma, seed):
    rng = np.random.default_rng(seed)
    return 1.0 + rng.normal(0.0, sigma, n), rng.normal(0.0, sigma, n)


def _worst_case_pair(eps, delta, n, rng):
    """Outputs of the mechanism whose trade-off curve is exactly f_{ε,δ}: four atoms."""
    e = math.exp(eps)
    p = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    q = p[::-1]
    return (rng.choice(4, size=n, p=p).astype(float), rng.choice(4, size=n, p=q).astype(float))


# ------------------------------------------------------------------ claims
def test_eps_delta_claim_is_the_dp_tradeoff_function():
    c = EpsDeltaClaim(1.0, 0.01)
    a = np.array([0.0, 0.1, 0.3, 0.99, 1.0])
    expect = np.maximum(0, np.maximum(0.99 - math.e * a, (0.99 - a) / math.e))
    np.testing.assert_allclose(c.beta(a), expect, rtol=0, atol=0)
    # symmetric: f(f(a)) = a on the part where f > 0
    a = np.linspace(0.0, 0.3, 31)
    np.testing.assert_allclose(c.beta(c.beta(a)), a, atol=1e-15)


def test_curve_claims_from_a_mechanism_a_tradeoff_and_a_pld_agree():
    g = accounting.mechanism("gaussian", sigma=2.0)
    a = np.array([1e-4, 1e-2, 0.2, 0.5])
    exact = norm.cdf(norm.ppf(1 - a) - 0.5)          # Gaussian trade-off, μ = Δ/σ = 0.5
    for form in (g, g.curve(TradeOff), g.curve(PLD)):
        c = as_claim(form)
        assert isinstance(c, CurveClaim)
        b = c.beta(a)
        assert np.all(b <= exact * (1 + 1e-9))      # the sound side never claims more
        np.testing.assert_allclose(b, exact, rtol=1e-3)
    assert "gaussian(" in as_claim(g).describe() and "sigma=2" in as_claim(g).describe()


# ------------------------------------------------------------- detectable ε
@pytest.mark.parametrize("m_p,m_q,delta,a", [(400, 400, 1e-3, 0.05 / 6),
                                             (5333, 5000, 1e-5, 0.01 / 2)])
def test_detectable_epsilon_is_the_perfect_witness_bound(m_p, m_q, delta, a):
    a0 = -math.expm1(math.log(a) / m_q)            # Clopper–Pearson bound of 0 errors
    b0 = -math.expm1(math.log(a) / m_p)
    expect = max(math.log((1 - delta - b0) / a0), math.log((1 - delta - a0) / b0))
    assert detectable_epsilon(m_p, m_q, delta, a) == pytest.approx(expect, rel=1e-12)
    assert float(clopper_pearson_upper(0, m_q, a)) == pytest.approx(a0, rel=1e-12)


def test_a_claim_beyond_the_detectable_epsilon_cannot_be_rejected_and_says_so():
    x, y = _noisy_sum(60, 0.01, seed=0)        # separated completely: ε = ∞ in truth
    rep = audit_samples(x, y, epsilon=5.0, delta=1e-3, seed=1)
    assert rep.detectable_epsilon < 5.0 and not rep.witness.detectable
    assert not rep.rejected
    assert rep.epsilon_lower_bound == pytest.approx(rep.detectable_epsilon, rel=1e-12)
    assert "not a certificate" in rep.verdict() and "use more samples" in rep.verdict()
    # the same samples refute a claim below the detectable ε
    low = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=1)
    assert low.rejected and low.epsilon_lower_bound > 1.0


# ------------------------------------------------------------- witnesses
def test_every_family_offers_candidates_with_out_of_sample_scores():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(120, 3)) + [1.0, 0, 0], rng.normal(size=(100, 3))
    cands = candidates(x, y, families=FAMILIES, bandwidth=None, kernel_points=80, rng=rng)
    fams = {c.family for c in cands}
    assert fams == set(FAMILIES)
    for c in cands:
        n_x = 80 if c.family in ("kernel", "likelihood_ratio") else 120
        n_y = 80 if c.family in ("kernel", "likelihood_ratio") else 100
        assert c.oos_x.shape == (n_x,) and c.oos_y.shape == (n_y,)
        assert np.all(np.isfinite(c.oos_x)) and np.all(np.isfinite(c.oos_y))
        s = c.final()(x[:7])
        assert s.shape == (7,) and np.all(np.isfinite(s))
    # 3 coordinates × 2 signs + the mean-difference direction; 6 bandwidths; 2 × 3 ratios
    assert sum(c.family == "threshold" for c in cands) == 7
    assert sum(c.family == "kernel" for c in cands) == 6
    assert sum(c.family == "likelihood_ratio" for c in cands) == 6
    # the signal is on coordinate 1: its threshold witness separates on average
    c1 = next(c for c in cands if c.detail == "coordinate 1, larger on D")
    assert c1.oos_x.mean() - c1.oos_y.mean() > 0.5


def test_kernel_witness_leave_one_out_scores_by_hand():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(30, 2)), rng.normal(size=(25, 2)) + 0.5
    cands = candidates(x, y, families=("kernel",), bandwidth=1.3, kernel_points=100, rng=rng)
    c = next(c for c in cands if "(1 × median)" in c.detail)
    k = lambda a, b: np.exp(-((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) / 1.3 ** 2)
    i = 4
    mask = np.arange(30) != i
    expect = k(x[i:i + 1], x[mask]).mean() - k(x[i:i + 1], y).mean()
    assert c.oos_x[i] == pytest.approx(expect, rel=1e-12)
    z = rng.normal(size=(3, 2))
    np.testing.assert_allclose(c.final()(z), k(z, x).mean(1) - k(z, y).mean(1), rtol=1e-12)


def test_density_ratio_witness_recovers_a_monotone_ratio():
    """Shifted Gaussians: dP/dQ is increasing in the coordinate, and so is the estimate."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(300, 1)) + 1.0, rng.normal(size=(300, 1))
    cands = candidates(x, y, families=("likelihood_ratio",), bandwidth=None,
                       kernel_points=300, rng=rng)
    c = next(c for c in cands if c.detail.startswith("dP/dQ estimate, λ = 0.01"))
    grid = np.linspace(-1.0, 2.0, 7)[:, None]
    assert np.all(np.diff(c.final()(grid)) > 0)


# ------------------------------------------------------------ power targets
def test_half_the_noise_is_rejected_at_n_8000_in_one_dimension():
    """Noisy sum claimed (1, 1e-3)-DP with σ halved (true ε ≈ 2.30)."""
    x, y = _noisy_sum(8000, SIGMA / 2, seed=11)
    rep = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=2)
    assert rep.rejected and 1.0 < rep.epsilon_lower_bound < 2.31
    assert rep.sweep is None and rep.rkrdp.held_out_statistics is None   # nothing n × n


def test_curve_claim_rejects_half_the_noise_and_reports_the_fprs():
    claim = accounting.mechanism("gaussian", sigma=SIGMA)
    x, y = _noisy_sum(4000, SIGMA / 2, seed=12)
    rep = audit_samples(x, y, claim=claim, seed=3)
    assert rep.rejected and rep.epsilon is None and rep.epsilon_lower_bound is None and rep.lower_bound is None
    beaten = [r for r in rep.witness.rows if r.beaten]
    assert beaten and rep.witness.beaten_fprs == [r.fpr_upper for r in beaten]
    truth = claim.curve(TradeOff)
    for r in beaten:       # each beaten row is below the claimed curve at its bounds
        assert (r.fnr_upper < truth.beta(r.fpr_upper, "max", "upper")
                or r.fpr_upper < truth.beta(r.fnr_upper, "max", "upper"))
    doc = json.loads(json.dumps(rep.to_dict()))
    assert doc["claim"]["kind"] == "tradeoff_curve" and doc["witness_test"]["beaten_fprs"]
    assert "beat the trade-off curve" in rep.verdict()


def test_curve_claim_grid_covers_every_resolvable_fpr():
    claim = accounting.mechanism("gaussian", sigma=SIGMA)
    x, y = _noisy_sum(1200, SIGMA, seed=13)
    rep = audit_samples(x, y, claim=claim, seed=4)
    m = rep.witness.m_q
    assert m == 800
    # 2^-1 … 2^-9 on each side (2^-9 >= 1/800 > 2^-10): at most 18 thresholds
    assert 10 <= len(rep.witness.rows) <= 18
    assert rep.witness.level == 0.05


def test_honest_mechanisms_are_not_rejected_on_a_few_seeds():
    for seed in range(3):
        x, y = _noisy_sum(2000, SIGMA, seed=20 + seed)
        assert not audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=seed).rejected
        rng = np.random.default_rng(30 + seed)
        x, y = _worst_case_pair(1.0, 1e-3, 2000, rng)
        rep = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=seed)
        assert not rep.rejected and rep.epsilon_lower_bound <= 1.0


def test_old_kernel_only_behaviour_is_one_choice():
    x, y = _noisy_sum(600, SIGMA / 4, seed=14)
    rep = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=5, witnesses=("kernel",))
    assert rep.witness.family == "kernel" and rep.witness.n_candidates == 6


# ---------------------------------------------------------- level (slow)
@pytest.mark.slow
def test_level_by_simulation_eps_delta_worst_case():
    """The mechanism whose trade-off is exactly f_{1, 1e-3}: rejected at most at the level
    over 300 seeds (binomial 99.9 % upper limit of 0.05 × 300 is 27)."""
    rejections = 0
    for seed in range(300):
        rng = np.random.default_rng(1000 + seed)
        x, y = _worst_case_pair(1.0, 1e-3, 600, rng)
        rejections += audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=seed).rejected
    assert rejections <= 27


@pytest.mark.slow
def test_level_by_simulation_curve_claim():
    """A Gaussian mechanism audited against its own curve, 200 seeds: at most 19
    rejections (binomial 99.9 % limit at the level 0.05)."""
    claim = accounting.mechanism("gaussian", sigma=SIGMA)
    rejections = sum(audit_samples(*_noisy_sum(1500, SIGMA, seed=2000 + s), claim=claim,
                                   seed=s).rejected for s in range(200))
    assert rejections <= 19


@pytest.mark.slow
def test_paper_setting_power_is_kept():
    """d = 30, Δ = 10, claim (1, 0.005), n = 600: the (2, 0.2) and (3, 0.03) mechanisms are
    rejected in at least 18 of 20 seeds each, the honest one in none."""
    for target, least in (((2.0, 0.2), 18), ((3.0, 0.03), 18), ((1.0, 0.005), 0)):
        s = gaussian_sigma(*target, sensitivity=10.0)
        count = 0
        for r in range(20):
            rng = np.random.default_rng(100 + r)
            x = gaussian_outputs(600, s, 10.0, rng=rng)
            y = gaussian_outputs(600, s, 0.0, rng=rng)
            count += audit_samples(x, y, epsilon=1.0, delta=0.005, seed=r).rejected
        assert count >= least if least else count == 0
