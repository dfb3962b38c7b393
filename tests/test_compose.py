"""Composition of curves (compose) and of pairs (ComposedPair, heterogeneous and n-fold)."""

from __future__ import annotations

import numpy as np
import pytest

import accounting
from accounting import (PLD, RDP, ZCDP, ComposedPair, PrivacyProfile, TradeOff, compose,
                        discrete_pair)

from closed_forms import gaussian_beta, gaussian_delta, laplace_rdp

STEP = 1e-3


@pytest.fixture(scope="module")
def hetero():
    """Gaussian σ = 1 (μ = 1) ⊗ Gaussian σ = 0.5 twice: one Gaussian with μ = √(1 + 2·4) = 3."""
    g1 = accounting.mechanism("gaussian", sigma=1.0).pair()
    g2 = accounting.mechanism("gaussian", sigma=0.5).pair()
    return ComposedPair(((g1, 1), (g2, 2)))


def test_compose_function():
    z = ZCDP.symmetric(0.1)
    assert compose(z) is z
    assert compose(z, z, z).rho() == pytest.approx(0.3)
    with pytest.raises(ValueError, match="at least one"):
        compose()
    with pytest.raises(TypeError, match="one kind"):
        compose(z, z.to(RDP))


def test_composed_pair_validates_its_components(gaussian1):
    pair = gaussian1.pair()
    with pytest.raises(TypeError, match="pairs"):
        ComposedPair(((gaussian1, 2),))             # a mechanism, not its pair
    with pytest.raises(ValueError, match="count"):
        ComposedPair(((pair, 0),))
    with pytest.raises(TypeError, match="count"):
        ComposedPair(((pair, 2.5),))
    with pytest.raises(ValueError, match="at least one"):
        ComposedPair(())
    cp = ComposedPair(((pair, 3), (pair, 1)))
    assert cp.describe() == "Gaussian(μ=1)^3 ⊗ Gaussian(μ=1)"
    assert cp.exact is False


def test_heterogeneous_gaussians_compose_like_gdp(hetero):
    """GDP composition (REFERENCE §4): G_μ1 ⊗ G_μ2 = G_√(μ1² + μ2²)."""
    mu = 3.0
    pld = hetero.curve(PLD, step=STEP)
    eps = np.linspace(-3, 12, 301) + 0.37 * STEP
    exact = gaussian_delta(mu, eps)
    up, lo = pld.delta(eps), pld.delta(eps, bound="lower")
    assert np.all(up >= exact * (1 - 1e-12) - 1e-300)
    assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)
    big = exact > 1e-8
    assert np.max((up - lo)[big] / exact[big]) < 1e-3
    a = np.linspace(0, 1, 201)
    to = hetero.curve(TradeOff, step=STEP)
    np.testing.assert_allclose(to.beta(a), gaussian_beta(mu, a), atol=2e-5)
    prof = hetero.curve(PrivacyProfile, step=STEP)
    np.testing.assert_allclose(prof.delta(eps), up, rtol=1e-12, atol=1e-300)


def test_heterogeneous_rdp_and_zcdp_add(hetero):
    alphas = np.array([1.5, 2.0, 10.0, 33.3])
    np.testing.assert_allclose(hetero.curve(RDP).rdp(alphas), alphas * 9 / 2, rtol=1e-12)
    assert hetero.curve(ZCDP).rho() == pytest.approx(4.5, rel=1e-12)


def test_mixed_families_add_their_renyi_curves(gaussian1):
    lap = accounting.mechanism("laplace", b=0.5)
    cp = ComposedPair(((gaussian1.pair(), 2), (lap.pair(), 3)))
    alphas = np.array([1.2, 2.0, 7.0, 50.0])
    want = [2 * a / 2 + 3 * laplace_rdp(a, 2.0) for a in alphas]
    np.testing.assert_allclose(cp.curve(RDP).rdp(alphas), want, rtol=1e-10)
    kl = 2.0 + np.exp(-2.0) - 1.0
    assert cp.curve(ZCDP).rho() == pytest.approx(2 * 0.5 + 3 * kl, rel=1e-12)


def test_pair_self_compose_uses_closed_forms_where_known(gaussian1):
    pair = accounting.compose((gaussian1.pair(), 16))
    assert type(pair).__name__ == "GaussianPair" and pair.mu == pytest.approx(4.0)
    lap = accounting.compose((accounting.mechanism("laplace", b=1.0).pair(), 3))
    assert isinstance(lap, ComposedPair) and lap.components[0][1] == 3
    # the old route, deprecated for one release: the same pairs
    with pytest.warns(DeprecationWarning, match=r"accounting\.compose\(\(pair, n\)\)"):
        old = gaussian1.pair().self_compose(16)
    assert type(old).__name__ == "GaussianPair" and old.mu == pair.mu


def test_composed_pair_of_finite_pairs_matches_enumeration():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    a = discrete_pair(p, q)
    b = discrete_pair(np.array([0.6, 0.4]), np.array([0.4, 0.6]))
    cp = ComposedPair(((a, 1), (b, 1)))
    pld = cp.curve(PLD, step=STEP, lower=False)
    # the product distributions, enumerated
    pp = np.outer(p, [0.6, 0.4]).ravel()
    qq = np.outer(q, [0.4, 0.6]).ravel()
    from closed_forms import discrete_delta
    eps = np.linspace(-2, 2, 81)
    exact = discrete_delta(pp, qq, eps)
    up = pld.delta(eps, "forward")
    assert np.all(up >= exact - 1e-15)
    assert np.max(up - exact) < 2e-3
