"""Group privacy (``accounting.adaptive.group``) against closed forms and brute force.

Gaussian: exactly μ ↦ kμ. Laplace: exactly kε. Randomized response: the exact pair of
two datasets k records apart is the k-fold product of the one-record pair (each record
is answered independently), enumerated over all 2^k outputs; every rule's curve must
dominate it, and the pure rule meets it. Hypothesis: every rule is monotone in k.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr

import accounting
from accounting.adaptive import group
from accounting.pairs.pair import FinitePair, discrete_pair

EXACT, UPPER = accounting.Exactness.EXACT, accounting.Exactness.UPPER


def gdp_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """δ(ε) of μ-GDP (Balle and Wang, arXiv:1805.06530, Thm 8)."""
    return np.asarray(ndtr(-eps / mu + mu / 2) - np.exp(eps) * ndtr(-eps / mu - mu / 2))


def rr(p: float) -> accounting.Mechanism:
    return accounting.mechanism("randomized_response", p=p)


@cache
def rr_group_pair(p: float, k: int) -> FinitePair:
    """Brute force: the output laws of k independent randomized responses on k
    records that all differ (every record 1 against every record 0)."""
    P, Q = [], []
    for y in itertools.product((0, 1), repeat=k):
        ones = sum(y)
        P.append(p ** ones * (1 - p) ** (k - ones))
        Q.append((1 - p) ** ones * p ** (k - ones))
    return discrete_pair(np.array(P), np.array(Q))


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_gaussian_group_is_exactly_k_mu(k: int) -> None:
    sigma = 4.0
    curve = group(accounting.mechanism("gaussian", sigma=sigma), k)
    assert curve.provenance.exactness is EXACT
    eps = np.array([0.0, 0.5, 2.0, 5.0])
    np.testing.assert_allclose(curve.delta(eps), gdp_delta(k / sigma, eps), rtol=1e-9)
    # the same as the Gaussian at σ/k, by the library's own closed form
    other = accounting.mechanism("gaussian", sigma=sigma / k).curve(accounting.PrivacyProfile)
    np.testing.assert_allclose(curve.epsilon([1e-3, 1e-6]), other.epsilon([1e-3, 1e-6]),
                               rtol=1e-6)


def test_gaussian_group_of_a_pair_and_of_a_composition() -> None:
    pair = accounting.mechanism("gaussian", sigma=2.0).pair()
    assert pair.gdp_mu() == pytest.approx(0.5)
    curve = group(pair, 3)
    np.testing.assert_allclose(curve.delta([1.0]), gdp_delta(1.5, np.array([1.0])), rtol=1e-12)
    composed = accounting.compose((pair, 4))       # four uses: one Gaussian with μ = 1
    np.testing.assert_allclose(group(composed, 2).delta([1.0]),
                               gdp_delta(2.0, np.array([1.0])), rtol=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_laplace_group_is_exactly_k_epsilon(k: int) -> None:
    b = 2.0                                   # ε = Δ/b = 0.5
    curve = group(accounting.mechanism("laplace", b=b), k)
    assert curve.is_exact
    assert float(curve.epsilon(1e-12)) == pytest.approx(k / b, rel=1e-6)
    assert float(curve.delta(k / b + 1e-9)) == pytest.approx(0.0, abs=1e-12)
    assert float(curve.delta(k / b - 0.1)) > 0.0


@pytest.mark.parametrize("k", [2, 3, 4])
def test_randomized_response_groups_dominate_brute_force(k: int) -> None:
    p = 0.75
    eps0 = np.log(p / (1 - p))
    exact = rr_group_pair(p, k)
    eps = np.linspace(0.0, k * eps0 + 0.5, 12)
    truth = exact.profile(eps)
    mech = rr(p)
    for kind in (accounting.PrivacyProfile, accounting.RDP, accounting.ZCDP):
        curve = group(mech.curve(kind), k)
        assert curve.provenance.exactness is UPPER, kind
        assert np.all(curve.delta(eps) >= truth - 1e-12), kind
    # pure DP: D_∞ of the group is k·ε₀ exactly, and the profile and Rényi rules meet it
    assert float(exact.curve(accounting.RDP).renyi(np.inf)) == pytest.approx(k * eps0)
    for kind in (accounting.PrivacyProfile, accounting.RDP):
        curve = group(mech.curve(kind), k)
        assert float(curve.epsilon(1e-12)) == pytest.approx(k * eps0, rel=1e-6)
    # Rényi rule: above the exact group divergences at every order
    orders = np.array([1.5, 2.0, 4.0, 16.0])
    assert np.all(group(mech.curve(accounting.RDP), k).renyi(orders)
                  >= exact.curve(accounting.RDP).renyi(orders) - 1e-12)
    # zCDP rule: k²ρ ≥ the exact ρ of the group
    assert group(mech.curve(accounting.ZCDP), k).rho() >= exact.curve(accounting.ZCDP).rho()


def test_tradeoff_rule_dominates_brute_force_and_meets_pure_k_epsilon() -> None:
    p, k = 0.75, 3
    eps0 = np.log(p / (1 - p))
    exact = rr_group_pair(p, k)
    curve = group(rr(p).curve(accounting.TradeOff), k)
    assert isinstance(curve, accounting.TradeOff) and curve.provenance.exactness is UPPER
    alpha = np.linspace(0.0, 1.0, 41)
    assert np.all(curve.beta(alpha) <= exact.curve(accounting.TradeOff).beta(alpha) + 1e-12)
    eps = np.array([0.0, 1.0, 2.0, 3.0, k * eps0 + 0.01])
    assert np.all(curve.delta(eps) >= exact.profile(eps) - 1e-12)
    # for pure ε-DP, 1 − (1 − f_ε)^{∘k} = f_{kε} (Dong–Roth–Su, Thm 2.14): δ(kε) ≈ 0
    assert float(curve.delta(k * eps0 + 0.01)) < 1e-9
    # a PLD goes through its trade-off curve
    pld_curve = group(rr(p).curve(accounting.PLD), k)
    assert isinstance(pld_curve, accounting.TradeOff)
    assert np.all(pld_curve.delta(eps) >= exact.profile(eps) - 1e-12)


def test_profile_rule_is_the_chain_bound_closed_form() -> None:
    """(ε, δ) ↦ (kε, δ Σ_{i<k} e^{iε}), never above Dwork–Roth's (kε, k e^{(k−1)ε} δ)."""
    profile = accounting.mechanism("gaussian", sigma=3.0).curve(accounting.PrivacyProfile)
    for k in (2, 4):
        curve = group(profile, k)
        for e in (0.3, 1.0, 2.0):
            d = float(profile.delta(e))
            chain = d * sum(np.exp(i * e) for i in range(k))
            assert float(curve.delta(k * e)) == pytest.approx(min(chain, 1.0), rel=1e-12)
            assert float(curve.delta(k * e)) <= k * np.exp((k - 1) * e) * d * (1 + 1e-12)


def test_rdp_rule_closed_form_for_a_gaussian_curve() -> None:
    """Mironov's rule on D_α = α/(2σ²): at α ≥ 2, 3^c · 2^c α/(2σ²) with c = ⌈log₂ k⌉."""
    sigma = 2.0
    rdp = accounting.mechanism("gaussian", sigma=sigma).curve(accounting.RDP)
    for k, c in ((2, 1), (3, 2), (4, 2)):
        got = group(rdp, k).renyi([1.5, 2.0, 10.0])
        want = [3 ** c * 2 ** c * a / (2 * sigma ** 2) for a in (2.0, 2.0, 10.0)]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # the exact answer for the Gaussian, (kμ)²α/2, is below the rule's
    assert group(rdp, 4).renyi(2.0) >= 16 * 2.0 / (2 * sigma ** 2)


@settings(max_examples=15, deadline=None)
@given(p=st.floats(0.55, 0.95), k=st.integers(1, 7))
def test_every_fast_rule_is_monotone_in_k(p: float, k: int) -> None:
    mech = rr(p)
    for kind in (accounting.PrivacyProfile, accounting.RDP, accounting.ZCDP):
        curve = mech.curve(kind)
        a, b = group(curve, k), group(curve, k + 1)
        assert float(b.epsilon(1e-6)) >= float(a.epsilon(1e-6)) - 1e-9, kind
    sigma = 1.0 / (p - 0.5)
    g = accounting.mechanism("gaussian", sigma=sigma)
    assert float(group(g, k + 1).epsilon(1e-6)) >= float(group(g, k).epsilon(1e-6))


def test_group_bad_input() -> None:
    g = accounting.mechanism("gaussian", sigma=1.0)
    with pytest.raises(ValueError, match="k"):
        group(g, 0)
    with pytest.raises(TypeError, match="k"):
        group(g, 1.5)
    with pytest.raises(TypeError, match="obj"):
        group("gaussian", 2)
    with pytest.raises(ValueError, match="kind"):
        group(g.curve(accounting.RDP), 2, kind=accounting.PLD)


def test_gaussian_group_of_another_kind_goes_through_the_sensitivity() -> None:
    curve = group(accounting.mechanism("gaussian", sigma=2.0), 2, kind=accounting.PLD)
    assert isinstance(curve, accounting.PLD) and curve.is_exact
    assert float(curve.epsilon(1e-5)) == pytest.approx(
        float(group(accounting.mechanism("gaussian", sigma=2.0), 2).epsilon(1e-5)), rel=1e-4)


def test_approximate_zcdp_goes_by_the_renyi_rule() -> None:
    xi, rho = 0.1, 0.05
    curve = group(accounting.ZCDP.approximate(xi, rho), 2)      # c = 1
    assert isinstance(curve, accounting.RDP)
    alpha = np.array([2.0, 5.0])
    np.testing.assert_allclose(curve.renyi(alpha), 3 * (xi + rho * 2 * alpha), rtol=1e-12)


def test_a_composition_of_gaussians_is_gaussian_for_groups_and_gdp_filters() -> None:
    from accounting.adaptive import GaussianFilter
    both = accounting.compose(accounting.mechanism("gaussian", sigma=2.0),
                              accounting.mechanism("gaussian", sigma=2.0 / np.sqrt(3)))
    assert both.gdp_mu() == pytest.approx(1.0)             # √(1/4 + 3/4)
    curve = group(both, 2)
    assert curve.is_exact
    np.testing.assert_allclose(curve.delta([0.5, 2.0]), gdp_delta(2.0, np.array([0.5, 2.0])),
                               rtol=1e-9)
    f = GaussianFilter(1.0)
    assert f.propose(both).admitted and not f.propose(0.01).admitted
    mixed = accounting.compose(accounting.mechanism("gaussian", sigma=2.0),
                               accounting.mechanism("laplace", b=1.0))
    assert mixed.gdp_mu() is None
