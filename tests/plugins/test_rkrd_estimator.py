"""The RKRD estimator: n × n form against the direct joint computation, closed forms on
finite sets (one-hot features), monotonicity, the classical Rényi bound, Prop. 9."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from accounting_rkrd import dp_lambda, rkrd, rkrd_direct, rkrd_from_grams, rkrd_sweep
from accounting_rkrd.kernel import check_samples, median_bandwidth, rbf_grams, squared_distances

ALPHAS = [1.0, 1.5, 2.0, 6.0, 12.0]
LAMBDAS = [1e-4, 1e-3, 1e-2, 0.3]


def _samples(n_p=60, n_q=50, d=4, shift=0.6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_p, d)) + shift, rng.normal(size=(n_q, d))


def _plug_in(p, q, alpha, lam):
    """D_{α,λ} of diagonal covariance operators (orthonormal features): closed form."""
    m = p > 0
    if alpha == 1.0:
        return float(np.sum(p[m] * (np.log(p[m]) - np.log(q[m] + lam))))
    terms = alpha * np.log(p[m]) + (1.0 - alpha) * np.log(q[m] + lam)
    return float(logsumexp(terms) / (alpha - 1.0))


def _renyi(p, q, alpha):
    """The classical Rényi divergence of two pmfs with q > 0 where p > 0."""
    m = p > 0
    if alpha == 1.0:
        return float(np.sum(p[m] * np.log(p[m] / q[m])))
    return float(np.log(np.sum(p[m] ** alpha * q[m] ** (1.0 - alpha))) / (alpha - 1.0))


# ------------------------------------------------------------ n × n vs 2n × 2n
@pytest.mark.parametrize("seed,n_p,n_q", [(0, 60, 50), (1, 40, 40), (2, 30, 70)])
def test_nxn_equals_direct_joint_computation(seed, n_p, n_q):
    x, y = _samples(n_p, n_q, seed=seed)
    g = rbf_grams(*check_samples(x, y))
    fast = rkrd_from_grams(g.kxx, g.kxy, g.kyy, ALPHAS, LAMBDAS)
    for i, a in enumerate(ALPHAS):
        for j, lam in enumerate(LAMBDAS):
            slow = rkrd_direct(g.kxx, g.kxy, g.kyy, a, lam)
            assert fast[i, j] == pytest.approx(slow, rel=1e-8, abs=1e-12), (a, lam)


def test_nxn_equals_direct_with_near_singular_gram():
    # a wide bandwidth makes the Gram matrix numerically rank-deficient
    x, y = _samples(50, 50, d=2, seed=3)
    g = rbf_grams(*check_samples(x, y), bandwidth=30.0)
    assert np.linalg.eigvalsh(g.kyy)[0] < 1e-12
    for a in (2.0, 12.0):
        fast = rkrd_from_grams(g.kxx, g.kxy, g.kyy, [a], [1e-3])[0, 0]
        assert np.isfinite(fast)
        assert fast == pytest.approx(rkrd_direct(g.kxx, g.kxy, g.kyy, a, 1e-3), rel=1e-8)


def test_sweep_equals_pointwise_and_alpha_one_is_the_limit():
    x, y = _samples(seed=4)
    sweep = rkrd_sweep(x, y, ALPHAS, LAMBDAS)
    for i, a in enumerate(ALPHAS):
        for j, lam in enumerate(LAMBDAS):
            assert sweep.values[i, j] == pytest.approx(rkrd(x, y, a, lam), rel=1e-12)
    near = rkrd_sweep(x, y, [1.0 + 1e-7], LAMBDAS).values[0]
    np.testing.assert_allclose(near, sweep.values[0], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------- closed forms
def test_one_hot_features_give_the_plug_in_closed_form():
    """With k(u, v) = 1[u = v] the covariance operators are diagonal: the estimator must
    equal 1/(α−1)·log Σ p̂^α (q̂ + λ)^{1−α} of the empirical frequencies."""
    rng = np.random.default_rng(5)
    xs, ys = rng.integers(0, 6, size=80), rng.integers(0, 6, size=70)
    kxx = (xs[:, None] == xs[None, :]).astype(float)
    kxy = (xs[:, None] == ys[None, :]).astype(float)
    kyy = (ys[:, None] == ys[None, :]).astype(float)
    p_hat = np.bincount(xs, minlength=6) / xs.size
    q_hat = np.bincount(ys, minlength=6) / ys.size
    values = rkrd_from_grams(kxx, kxy, kyy, ALPHAS, LAMBDAS)
    for i, a in enumerate(ALPHAS):
        for j, lam in enumerate(LAMBDAS):
            assert values[i, j] == pytest.approx(_plug_in(p_hat, q_hat, a, lam), rel=1e-10)


def _finite_set(seed=6, m=6, d=3):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(m, d))
    p, q = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
    centre = pts.mean(axis=0)
    k = np.exp(-squared_distances(pts - centre, pts - centre) / 2.0 ** 2)
    np.fill_diagonal(k, 1.0)
    return k, p, q


def test_population_on_a_finite_set_monotone_and_below_classical_renyi():
    """Exact D_{α,λ}(Σ_p‖Σ_q) of distributions on 6 points with an RBF kernel (weights
    give the exact covariance operators): increasing in α, decreasing in λ, at most
    the classical D_α(p‖q) (paper 000, Prop. 2)."""
    k, p, q = _finite_set()
    alphas = np.array([1.0, 1.2, 1.5, 2.0, 3.0, 6.0, 12.0, 30.0])
    lambdas = np.geomspace(1e-6, 1.0, 13)
    v = rkrd_from_grams(k, k, k, alphas, lambdas, wx=p, wy=q)
    assert np.all(np.diff(v, axis=0) >= -1e-12)
    assert np.all(np.diff(v, axis=1) <= 1e-12)
    classical = np.array([_renyi(p, q, a) for a in alphas])
    assert np.all(v <= classical[:, None] + 1e-10)
    # with one-hot features λ → 0 recovers D_α (the n × n form keeps ~eps·(1/λ)^γ
    # relative accuracy, so λ = 1e-10 rather than smaller)
    eye = np.eye(p.size)
    tiny = rkrd_from_grams(eye, eye, eye, alphas, [1e-10], wx=p, wy=q)[:, 0]
    np.testing.assert_allclose(tiny, classical, rtol=2e-7)


def test_samples_monotone_in_alpha_and_lambda():
    x, y = _samples(80, 80, d=5, seed=7)
    v = rkrd_sweep(x, y, [1.0, 1.5, 2.0, 4.0, 6.0, 12.0], np.geomspace(1e-4, 1.0, 9)).values
    assert np.all(np.diff(v, axis=0) >= -1e-10)
    assert np.all(np.diff(v, axis=1) <= 1e-10)


@pytest.mark.parametrize("eps,delta", [(1.0, 0.005), (2.0, 0.2), (3.0, 0.03), (0.5, 1e-5)])
def test_dp_lambda_on_the_worst_case_pair(eps, delta):
    """Prop. 9: (ε, δ)-DP gives D_{α,λ₀} <= ε at λ₀ = δe^{−ε} for all α; on the worst-case
    (ε, δ) pair the bound is approached as α → ∞ and λ₀/2 already breaks it."""
    e = np.exp(eps)
    p = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    q = p[::-1].copy()
    eye = np.eye(4)
    lam0 = dp_lambda(eps, delta)
    alphas = [1.0, 2.0, 6.0, 12.0, 100.0, 1000.0]
    v = rkrd_from_grams(eye, eye, eye, alphas, [lam0, lam0 / 2], wx=p, wy=q)
    assert np.all(v[:, 0] <= eps + 1e-12)
    assert v[-1, 0] > eps - 0.01
    assert v[-1, 1] > eps + 0.5
    for i, a in enumerate(alphas):
        assert v[i, 0] == pytest.approx(_plug_in(p, q, a, lam0), rel=1e-10)


def test_equal_distributions_have_negative_population_divergence():
    # D_{α,λ}(Σ‖Σ) < 0 for λ > 0: B = Σ + λ dominates Σ
    k, p, _ = _finite_set(seed=8)
    v = rkrd_from_grams(k, k, k, [1.0, 2.0, 12.0], [1e-3, 1e-1], wx=p, wy=p)
    assert np.all(v < 0.0)


# ----------------------------------------------------------------- kernel
def test_distances_and_median_bandwidth():
    x, y = _samples(30, 20, d=7, seed=9)
    x = x + 1e3  # far from the origin: the expansion needs centring
    y = y + 1e3
    g = rbf_grams(*check_samples(x, y))
    direct = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))
    assert g.bandwidth == pytest.approx(np.median(direct), rel=1e-10)
    np.testing.assert_allclose(g.kxy, np.exp(-direct ** 2 / g.bandwidth ** 2), rtol=1e-9)
    assert np.all(np.diag(g.kxx) == 1.0)
    assert median_bandwidth(np.array([[4.0, 9.0, 16.0]])) == 3.0


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("x,y,match", [
    (np.zeros((5, 3)), np.zeros((5, 4)), "same dimension"),
    (np.zeros((1, 3)), np.zeros((5, 3)), "n >= 2"),
    (np.full((5, 2), np.nan), np.zeros((5, 2)), "x must not contain NaN"),
    (np.zeros((5, 2)), np.full((5, 2), np.inf), "y must be finite"),
    (np.zeros((2, 2, 2)), np.zeros((5, 2)), r"shape \(n, d\)"),
])
def test_bad_samples(x, y, match):
    with pytest.raises(ValueError, match=match):
        rkrd(x, y, 2.0, 1e-2, bandwidth=1.0)


@pytest.mark.parametrize("kw,match", [
    (dict(alpha=0.5, lam=1e-2), r"alpha must be in \[1"),
    (dict(alpha=np.inf, lam=1e-2), "alpha must be finite"),
    (dict(alpha=2.0, lam=0.0), r"lam must be in \(0"),
    (dict(alpha=2.0, lam=-1.0), r"lam must be in \(0"),
    (dict(alpha=2.0, lam=1e-2, bandwidth=0.0), r"bandwidth must be in \(0"),
])
def test_bad_parameters(kw, match):
    x, y = _samples(10, 10, seed=10)
    with pytest.raises(ValueError, match=match):
        rkrd(x, y, **kw)


def test_degenerate_samples_need_a_bandwidth():
    with pytest.raises(ValueError, match="bandwidth"):
        rkrd(np.zeros((5, 2)), np.zeros((5, 2)), 2.0, 1e-2)


def test_bad_grams_and_weights():
    k, p, q = _finite_set(seed=11)
    with pytest.raises(ValueError, match="wx must sum to 1"):
        rkrd_from_grams(k, k, k, [2.0], [0.1], wx=p * 2, wy=q)
    with pytest.raises(ValueError, match="unit diagonal"):
        rkrd_from_grams(2 * k, k, k, [2.0], [0.1])
    with pytest.raises(ValueError, match="shapes"):
        rkrd_from_grams(k, k[:, :3], k, [2.0], [0.1])
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="not positive semidefinite"):
        rkrd_from_grams(bad, bad, bad, [2.0], [0.1])
