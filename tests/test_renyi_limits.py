"""Rényi divergence at α = 1 (KL) and α = ∞ (max divergence) against closed forms.

Gaussian N(μ,1) vs N(0,1): KL = μ²/2, D_∞ = ∞. Laplace with e = Δ/b:
KL = e^{−e} + e − 1, D_∞ = e. Binary randomized response, truthful w.p. p:
KL = (2p − 1)·log(p/(1 − p)), D_∞ = log(p/(1 − p)) (finite laws, exact).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile
from accounting.curves.rdp import CGF, KL_ORDER_OFFSET
from accounting.pairs.pair import discrete_pair

INF = math.inf


def _rr(p):
    return (2 * p - 1) * math.log(p / (1 - p)), math.log(p / (1 - p))


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_gaussian_kl_and_max_divergence(sigma):
    rdp = accounting.mechanism("gaussian", sigma=sigma).curve(RDP)
    mu = 1.0 / sigma
    lo, up = rdp.renyi_interval(np.array([1.0, INF]))
    assert up[0] == pytest.approx(mu ** 2 / 2, rel=1e-14)
    assert lo[0] == pytest.approx(mu ** 2 / 2, rel=1e-14)
    assert up[1] == INF and lo[1] == INF
    for d in ("forward", "backward"):
        assert rdp.renyi(1.0, d) == pytest.approx(mu ** 2 / 2, rel=1e-14)


@pytest.mark.parametrize("b", [0.25, 0.5, 1.0, 4.0])
def test_laplace_kl_and_max_divergence(b):
    e = 1.0 / b
    rdp = accounting.mechanism("laplace", b=b).curve(RDP)
    kl, dinf = rdp.renyi(np.array([1.0, INF]))
    assert kl == pytest.approx(math.exp(-e) + e - 1, rel=1e-13)
    assert dinf == pytest.approx(e, rel=1e-15)
    # and the Rényi curve approaches both limits monotonically
    assert rdp.renyi(1.0 + 1e-7) >= kl - 1e-12
    assert rdp.renyi(1e6) <= dinf


@pytest.mark.parametrize("p", [0.55, 0.75, 0.9])
def test_randomized_response_is_exact(p):
    kl, dinf = _rr(p)
    rdp = accounting.mechanism("randomized_response", p=p).curve(RDP)
    lo, up = rdp.renyi_interval(np.array([1.0, INF]))
    np.testing.assert_allclose(up, [kl, dinf], rtol=1e-14)
    np.testing.assert_allclose(lo, [kl, dinf], rtol=1e-14)


def test_laplace_through_its_pld_brackets_the_truth():
    """The pessimistic PLD's mean and largest loss are upper bounds, the optimistic
    PLD's lower bounds, within a grid step of the closed forms."""
    e, step = 2.0, 1e-3
    pld = accounting.mechanism("laplace", b=0.5).curve(PLD, step=step)
    lo, up = pld.renyi_interval(np.array([1.0, INF]))
    truth = np.array([math.exp(-e) + e - 1, e])
    assert np.all(up >= truth - 1e-12) and np.all(lo <= truth + 1e-12)
    np.testing.assert_allclose(up, truth, atol=step)
    np.testing.assert_allclose(lo, truth, atol=2 * step)
    # the profile and trade-off answer through the same laws
    assert accounting.mechanism("laplace", b=0.5).curve(PrivacyProfile).renyi(INF) >= e - 1e-12


def test_gaussian_pld_upper_is_infinite_and_lower_finite():
    """The pessimistic laws carry their cut tail at +∞ (a valid, trivial upper bound);
    the optimistic ones give finite lower bounds, below μ²/2 for the KL."""
    pld = accounting.mechanism("gaussian", sigma=1.0).curve(PLD, step=1e-3)
    lo, up = pld.renyi_interval(np.array([1.0, INF]))
    assert np.all(up == INF)
    assert 0.5 - 1e-3 <= lo[0] <= 0.5 + 1e-12
    assert math.isfinite(lo[1]) and lo[1] > 3.0


@pytest.mark.parametrize("p", [0.6, 0.8])
def test_discrete_pair_laws_and_composition(p):
    """KL and D_∞ add under composition: k-fold randomized response is exact."""
    kl, dinf = _rr(p)
    rdp = discrete_pair(np.array([p, 1 - p]), np.array([1 - p, p])).curve(RDP)
    k = 7
    np.testing.assert_allclose(accounting.compose((rdp, k)).renyi(np.array([1.0, INF])), [k * kl, k * dinf], rtol=1e-13)
    np.testing.assert_allclose(accounting.compose(rdp, rdp).renyi(np.array([1.0, INF]), bound="lower"),
                               [2 * kl, 2 * dinf], rtol=1e-13)


def test_zcdp_limits():
    z = ZCDP.symmetric(0.3)
    np.testing.assert_allclose(z.renyi(np.array([1.0, INF])), [0.3, INF])
    pure = ZCDP.approximate(0.7, 0.0)     # D_α ≤ 0.7: pure DP with ε = 0.7
    np.testing.assert_allclose(pure.renyi(np.array([1.0, 5.0, INF])), [0.7, 0.7, 0.7])


def test_undeclared_cgf_sound_side_and_refusal():
    """A CGF without declared limits: D_1 ≤ D_{1+τ} on the sound side; D_∞ = +∞;
    the optimistic side refuses α = 1 and gives a finite-order lower bound at ∞."""
    mu2 = 0.8
    cgf = CGF.of(lambda t, d: mu2 * t * (t + 1.0) / 2.0)
    rdp = RDP(cgf, cgf)
    assert rdp.renyi(1.0) == pytest.approx(mu2 / 2 * (1 + KL_ORDER_OFFSET), rel=1e-9)
    assert rdp.renyi(1.0) >= mu2 / 2
    assert rdp.renyi(INF) == INF
    lower = RDP(cgf, CGF.of(lambda t, d: mu2 * t * (t + 1.0) / 2.0))
    with pytest.raises(ValueError, match="alpha=1"):
        lower.renyi(1.0, bound="lower")
    assert lower.renyi(INF, bound="lower") == pytest.approx(mu2 / 2 * 1e4)


def test_below_one_is_refused():
    rdp = accounting.mechanism("gaussian", sigma=1.0).curve(RDP)
    with pytest.raises(ValueError, match="alpha"):
        rdp.renyi(0.999)
    with pytest.raises(ValueError, match="alpha"):
        rdp.renyi(np.nan)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.51, 0.99))
def test_monotone_in_order_including_limits(p):
    """D_1 ≤ D_α ≤ D_∞ for randomized response at every order."""
    rdp = accounting.mechanism("randomized_response", p=p).curve(RDP)
    vals = rdp.renyi(np.array([1.0, 1.5, 2.0, 10.0, 100.0, INF]))
    assert np.all(np.diff(vals) >= -1e-12)


# ------------------------------------------------ the conversion at α = ∞
@pytest.mark.parametrize("b, k", [(0.5, 1), (1.0, 1), (3.0, 1), (1.0, 7)])
def test_rdp_conversion_reaches_order_infinity(b, k):
    """k uses of Laplace(b) are (k/b, 0)-DP, D_∞ = k/b; the RDP → profile conversion
    takes α = ∞ too, so ε(δ) ≤ k/b at every δ and δ(ε) = 0 from ε = k/b on. Finite
    orders alone (main) gave ε(1e-10) = 1.0288·k/b for b = 1 and δ(1) = 9.2e-6."""
    pure = k / b
    rdp = accounting.compose((accounting.mechanism("laplace", b=b).curve(RDP), k))
    deltas = np.geomspace(1e-300, 0.9, 40)
    eps = rdp.epsilon(deltas)
    assert np.all(eps <= pure)
    # finite orders end at α ≈ 2e4, where ε > D_∞ for these δ: the cap is what answers
    assert eps[0] == pure
    np.testing.assert_array_equal(rdp.delta(np.array([pure, 1.01 * pure, 10 * pure])), 0.0)
    # and the δ just below D_∞ still comes from finite orders: positive, not cut to 0
    assert 0.0 < float(rdp.delta(0.99 * pure)) < 0.1
    # the Accountant's RDP accountant and the command line's sweep of many δ agree
    acct = accounting.Accountant().compose(accounting.mechanism("laplace", b=b), k)
    assert float(acct.under("rdp").epsilon(1e-10)) <= pure


def test_rdp_conversion_trusts_no_undeclared_sup():
    """A CGF that declares no D_∞ is not capped: K(t) = 0.5t (D_α = 0.5 at every
    finite order) does not certify D_∞ = 0.5, so ε(δ) stays above it: the improved
    conversion at the largest order searched, α = 1 + 2e4 (the conversion still falls
    there for δ = 1e-6), 0.5 + log(1 − 1/α) − (log δ + log α)/(α − 1) = 0.500146."""
    rdp = RDP(CGF.of(lambda t, d: 0.5 * t))
    a = 1.0 + 2e4
    top = 0.5 + math.log1p(-1.0 / a) - (math.log(1e-6) + math.log(a)) / (a - 1.0)
    assert float(rdp.epsilon(1e-6)) == pytest.approx(top, rel=1e-12)
    assert top > 0.5001
    assert float(rdp.delta(0.5)) > 0.0


def test_command_line_rdp_sweep_reaches_order_infinity(capsys):
    """The command line's shared-orders sweep (over 16 values) takes α = ∞ too."""
    from cli_cases import run
    deltas = np.geomspace(1e-200, 1e-3, 20)
    code, out, err = run(capsys, "epsilon", "laplace", "--b", "1", "--accountant", "rdp",
                         "--json", "--delta", *[repr(float(d)) for d in deltas])
    assert code == 0, err
    import json
    got = np.array(json.loads(out)["results"]["rdp"]["epsilon"], dtype=float)
    assert got.shape == deltas.shape and np.all(got <= 1.0) and got[0] == 1.0


@pytest.mark.parametrize("name, params", [
    ("generalised_gaussian", dict(beta=3.3639646949460658, scale=6.159573612383112e+87,
                                  sensitivity=2.2910141950923026e+85, neighbouring="replace_one")),
    ("generalised_gaussian", dict(beta=2.5, scale=1.0)),
    ("poisson_replace_one", dict(q=0.5038406130572491, base=accounting.mechanism(
        "discrete_gaussian", sensitivity=2, sigma=416.39686561704747))),
])
def test_noise_laws_cut_at_underflow_declare_no_finite_max_divergence(name, params):
    """The generic noise laws stop where the density underflows, but these losses grow
    without bound past it (|x|^β − |x − Δ|^β for β > 1; the Gaussian base's), so
    D_∞ = ∞. The sound side said 1.2966 for the first (below its own lower side,
    1.2973) and 0.186 for the third (found by tests/test_fuzz_invariants.py); it is +∞
    now, and the lower side stays a finite lower bound."""
    rdp = accounting.mechanism(name, **params).curve(RDP)
    orders = np.array([2.0, 32.0, 1000.0, INF])
    lo, up = rdp.renyi_interval(orders)
    assert up[-1] == INF
    assert np.isfinite(lo[-1]) and np.all(lo <= up * (1 + 1e-9))
