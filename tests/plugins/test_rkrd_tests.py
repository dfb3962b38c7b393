"""The RKRD tests and bounds: the finite-sample RKRDP threshold, the certified ε lower
bound (the paper's reference experiment), the parametric bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import binom, binomtest

import accounting
from accounting_rkrd import (bootstrap_test, clopper_pearson_upper, dp_lambda,
                             epsilon_lower_bound, gaussian_outputs, gaussian_sigma, noise_sampler,
                             rkrdp_test, rkrdp_threshold)
from accounting_rkrd.experiments import PAPER_CLAIMS, PAPER_SENSITIVITY


def _binomial_tolerance(reps: int, level: float, miss: float = 1e-3) -> int:
    """Largest count of false rejections consistent with a rate <= level (P < miss)."""
    return int(binom.isf(miss, reps, level))


# ----------------------------------------------------------------- threshold
def test_threshold_transcribes_the_formula():
    # REFERENCE §7, computed here independently with every term spelled out
    eps0, alpha, lam, n_p, n_q, x0 = 0.7, 3.0, 0.2, 20000, 15000, 0.05
    g = (alpha - 1) / alpha
    r = (1 + math.sqrt(math.log(2 / x0))) / math.sqrt(n_p)
    b = math.log(8 * (1 + 1 / lam) / x0)
    eta = b / (3 * n_q) + math.sqrt(b * b / (9 * n_q * n_q) + 2 * b / (n_q * lam))
    want = (eps0 + math.log(1 / (1 - eta))
            + math.log(1 + (1 - eta) ** g * lam ** -g * r * math.exp(-g * eps0)) / g)
    got = rkrdp_threshold(eps0, alpha, lam, n_p, n_q, x0)
    assert got.value == pytest.approx(want, rel=1e-13)
    assert got.eta == pytest.approx(eta, rel=1e-14) and got.r == pytest.approx(r, rel=1e-14)


def test_threshold_vacuous_in_the_paper_setting_and_tight_for_large_n():
    lam0 = dp_lambda(1.0, 0.005)
    assert lam0 == pytest.approx(1.8394e-3, rel=1e-4)
    for n in (200, 600, 10_000):
        assert rkrdp_threshold(1.0, 12.0, lam0, n, n, 0.05).vacuous
    ns = [10 ** k for k in range(5, 11)]
    values = [rkrdp_threshold(1.0, 12.0, lam0, n, n, 0.05).value for n in ns]
    assert values[0] < math.inf and np.all(np.diff(values) < 0)
    assert values[-1] - 1.0 < 0.05      # → ε₀ as n → ∞ (the excess is O(n^{-1/2}))
    with pytest.raises(ValueError, match=r"alpha must be in \[2"):
        rkrdp_threshold(1.0, 1.5, 0.1, 100, 100, 0.05)
    with pytest.raises(ValueError, match=r"level must be in \(0"):
        rkrdp_threshold(1.0, 2.0, 0.1, 100, 100, 1.5)


def _plug_in(counts_p, counts_q, alpha, lam):
    """D̂ with one-hot features: 1/(α−1)·log Σ p̂^α (q̂ + λ)^{1−α} (the estimator's exact
    value there, checked in test_rkrd_estimator)."""
    p, q = counts_p / counts_p.sum(), counts_q / counts_q.sum()
    m = p > 0
    return logsumexp(alpha * np.log(p[m]) + (1 - alpha) * np.log(q[m] + lam)) / (alpha - 1)


def test_threshold_test_is_valid_and_has_power_where_not_vacuous():
    """Discrete p, q with one-hot features (the true D_{α,λ} is the closed form): at the
    boundary of the null, ε₀ = D_{α,λ}, the test rejects no more often than the level;
    0.5 below it, it rejects every time."""
    p, q = np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    alpha, lam, n, level, reps = 2.0, 0.5, 5000, 0.05, 400
    truth = _plug_in(p, q, alpha, lam)
    rng = np.random.default_rng(0)
    stats = np.array([_plug_in(rng.multinomial(n, p).astype(float),
                               rng.multinomial(n, q).astype(float), alpha, lam)
                      for _ in range(reps)])
    at_null = rkrdp_threshold(truth, alpha, lam, n, n, level)
    assert not at_null.vacuous
    assert np.count_nonzero(stats > at_null.value) <= _binomial_tolerance(reps, level)
    below = rkrdp_threshold(truth - 0.5, alpha, lam, n, n, level)
    assert np.all(stats > below.value)


def test_rkrdp_test_on_samples():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    res = rkrdp_test(x, y, alpha=2.0, lam=1e-2, epsilon0=0.5, bandwidth=2.0)
    assert res.threshold.vacuous and not res.rejected and np.isfinite(res.statistic)


# --------------------------------------------------------------- lower bound
@pytest.mark.parametrize("k,m,a", [(0, 50, 0.01), (3, 50, 0.025), (17, 300, 0.001), (50, 50, 0.05)])
def test_clopper_pearson_matches_scipy(k, m, a):
    want = binomtest(k, m).proportion_ci(confidence_level=1 - 2 * a, method="exact").high
    assert float(clopper_pearson_upper(k, m, a)) == pytest.approx(want, rel=1e-10)


@pytest.fixture(scope="module")
def sigmas():
    return {c: gaussian_sigma(*c, PAPER_SENSITIVITY) for c in PAPER_CLAIMS}


def test_calibrated_sigmas(sigmas):
    """The analytic Gaussian (Balle & Wang 2018) at the boundary: δ(ε) = δ exactly."""
    for (eps, delta), s in sigmas.items():
        mu = PAPER_SENSITIVITY / s
        from scipy.stats import norm
        assert norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu) == \
            pytest.approx(delta, rel=1e-9)
    assert sigmas[(1.0, 0.005)] == pytest.approx(20.978, rel=1e-4)


def _paper_pair(sigma, seed, n=600):
    rng = np.random.default_rng(seed)
    return (gaussian_outputs(n, sigma, PAPER_SENSITIVITY, rng=rng),
            gaussian_outputs(n, sigma, 0.0, rng=rng))


@pytest.mark.parametrize("target", [(2.0, 0.2), (3.0, 0.03)])
def test_lower_bound_rejects_miscalibrated_gaussian(sigmas, target):
    """d = 30, Δ = 10, n = 600 per side: mechanisms calibrated for (2, .2) and (3, .03)
    are caught claiming (1, .005): ε_LB > 1 (certified at level 0.05) in at least 16
    of 20 independent runs (measured power: ≈ 1.0 and ≈ 0.95)."""
    hits = 0
    for seed in range(20):
        x, y = _paper_pair(sigmas[target], seed)
        lb = epsilon_lower_bound(x, y, delta=0.005, level=0.05, split_seed=seed)
        hits += lb.epsilon > 1.0
    assert hits >= 16


def _honest_rejections(sigmas, reps, seed0):
    count = 0
    for r in range(reps):
        x, y = _paper_pair(sigmas[(1.0, 0.005)], seed0 + r)
        count += epsilon_lower_bound(x, y, delta=0.005, level=0.05, split_seed=r).epsilon > 1.0
    return count


def test_lower_bound_does_not_reject_the_honest_mechanism(sigmas):
    reps = 100
    assert _honest_rejections(sigmas, reps, 10_000) <= _binomial_tolerance(reps, 0.05)


@pytest.mark.slow
def test_lower_bound_honest_mechanism_many_repetitions(sigmas):
    reps = 1000
    assert _honest_rejections(sigmas, reps, 50_000) <= _binomial_tolerance(reps, 0.05)


def test_lower_bound_valid_and_close_on_randomized_response():
    """Randomized response with ε₀ = 2 (pure DP, δ = 0) on outputs {0, 1}: ε_LB never
    exceeds 2 beyond the level, and is informative (≈ 1.7 at n = 600)."""
    eps0, n, reps = 2.0, 600, 100
    pt = math.exp(eps0) / (1 + math.exp(eps0))
    lbs = []
    for r in range(reps):
        rng = np.random.default_rng(r)
        x = (rng.random(n) < pt).astype(float)
        y = (rng.random(n) >= pt).astype(float)
        lbs.append(epsilon_lower_bound(x, y, delta=0.0, bandwidth=1.0, split_seed=r).epsilon)
    lbs = np.array(lbs)
    assert np.count_nonzero(lbs > eps0) <= _binomial_tolerance(reps, 0.05)
    assert 1.4 < lbs.mean() < eps0


def test_lower_bound_bad_input():
    x = np.zeros((10, 2))
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        epsilon_lower_bound(x, x + 1, delta=1.0, bandwidth=1.0)
    with pytest.raises(ValueError, match="n >= 4"):
        epsilon_lower_bound(x[:3], x, delta=0.1, bandwidth=1.0)
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        epsilon_lower_bound(x, x + 1, delta=0.1, level=0.0, bandwidth=1.0)


# ------------------------------------------------------------------ bootstrap
def test_noise_samplers_have_the_right_variance():
    rng = np.random.default_rng(2)
    cases = {
        "gaussian": (dict(sigma=2.0), 4.0),
        "laplace": (dict(b=1.5), 2 * 1.5 ** 2),
        "student_t": (dict(nu=5.0, scale=2.0), 4.0 * 5.0 / 3.0),
        "generalised_gaussian": (dict(beta=2.0, scale=math.sqrt(2.0)), 1.0),
        "discrete_laplace": (dict(scale=1 / 0.7), 2 * math.exp(-0.7) / (1 - math.exp(-0.7)) ** 2),
        # N_ℤ(0, σ²) at σ = 3: variance Σ x² e^{−x²/18} / Σ e^{−x²/18} (σ² up to 1e-30)
        "discrete_gaussian": (dict(sigma=3.0), 9.0),
        # weights (½, ½), means ±1, scales 1: 1 + 1
        "gaussian_mixture": (dict(weights=(0.5, 0.5), means=(-1.0, 1.0), scales=(1.0, 1.0)), 2.0),
        # N_ℤ(0, σ²) on {−T, …, T}, σ = 3, T = 4: Σ x² e^{−x²/18} / Σ e^{−x²/18} over |x| ≤ 4
        "truncated_discrete_gaussian": (dict(sigma=3.0, truncation=4), sum(
            x * x * math.exp(-x * x / 18) for x in range(-4, 5)) / sum(
            math.exp(-x * x / 18) for x in range(-4, 5))),
    }
    builtin = {n for n, cls in accounting.default_registry().mechanisms.items()
               if issubclass(cls, accounting.AdditiveNoise)}
    assert set(cases) == builtin                  # every built-in noise can be drawn
    for name, (params, var) in cases.items():
        z = noise_sampler(accounting.mechanism(name, **params))(rng, (200_000,))
        assert abs(z.mean()) < 5 * math.sqrt(var / z.size), name
        assert z.var() == pytest.approx(var, rel=0.03), name


def test_bootstrap_p_values_are_calibrated_under_the_null():
    mech = accounting.mechanism("gaussian", sigma=1.0)
    shift = np.array([1.0, 0.0, 0.0])
    draw = noise_sampler(mech)
    reps, n_boot, ps = 50, 9, []
    for r in range(reps):
        rng = np.random.default_rng(100 + r)
        x, y = shift + draw(rng, (30, 3)), draw(rng, (30, 3))
        ps.append(bootstrap_test(x, y, mechanism=mech, shift=shift, alpha=2.0, lam=0.05,
                                 n_boot=n_boot, rng=rng).p_value)
    ps = np.array(ps)
    assert np.count_nonzero(ps <= 0.1) <= _binomial_tolerance(reps, 0.1)
    assert abs(ps.mean() - 0.55) < 0.15           # uniform on {1/10, …, 1}


@pytest.mark.parametrize("name,claimed,actual", [("gaussian", dict(sigma=2.0), dict(sigma=0.7)),
                                                 ("laplace", dict(b=2.0), dict(b=0.5))])
def test_bootstrap_rejects_less_noise_than_claimed(name, claimed, actual):
    rng = np.random.default_rng(3)
    shift = np.array([2.0, 0.0])
    real = noise_sampler(accounting.mechanism(name, **actual))
    x, y = shift + real(rng, (60, 2)), real(rng, (60, 2))
    res = bootstrap_test(x, y, mechanism=accounting.mechanism(name, **claimed), shift=shift,
                         alpha=2.0, lam=0.05, n_boot=19, rng=rng)
    assert res.p_value == pytest.approx(1 / 20)
    assert res.statistic > res.replicates.max()


def test_bootstrap_bad_input():
    x = np.zeros((10, 2)) + np.arange(10)[:, None]
    with pytest.raises(ValueError, match="shift must be a vector of length d = 2"):
        bootstrap_test(x, x, mechanism=accounting.mechanism("gaussian", sigma=1.0),
                       shift=[1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="needs an additive-noise mechanism.*RandomizedResponse"):
        bootstrap_test(x, x, mechanism=accounting.mechanism("randomized_response", p=0.7),
                       shift=[1.0, 0.0])
