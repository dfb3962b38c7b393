"""An (ε, δ)-DP guarantee as a mechanism: the four-point pair and exact composition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import rr_rdp
from scipy.special import comb, expit

import accounting
from accounting import PLD, RDP, PrivacyProfile, TradeOff
from accounting.testing import MechanismContract

NAN = float("nan")


def _mech(name, **params):
    return accounting.default_registry().mechanism(name)(**params)


class TestApproxDPContract(MechanismContract):
    mechanism = _mech("approx_dp", epsilon=1.0, delta=1e-3)
    bad_parameters = [dict(epsilon=-1.0), dict(epsilon=NAN), dict(delta=1.5), dict(delta=-0.1),
                      dict(delta=NAN), dict(epsilon=math.inf), dict(sensitivity=2.0)]


class TestPureDPContract(MechanismContract):
    mechanism = _mech("approx_dp", epsilon=0.7)
    bad_parameters = [dict(epsilon="1")]


class TestZCDPGuaranteeContract(MechanismContract):
    mechanism = _mech("zcdp_guarantee", rho=0.3, xi=0.05)
    bad_parameters = [dict(rho=-0.1), dict(rho=NAN), dict(rho=math.inf), dict(xi=-1.0),
                      dict(rho=6000.0), dict(sensitivity=2.0), dict(rho="0.3")]


class TestApproxDPCompositionContract(MechanismContract):
    mechanism = _mech("approx_dp_composition", epsilons=(1.0, 2.0, 0.5), deltas=(0.1, 0.2, 0.0))
    bad_parameters = [dict(deltas=(0.1,)), dict(epsilons=()), dict(deltas=(0.1, 0.2, 2.0)),
                      dict(epsilons=(1.0, NAN, 0.5)), dict(epsilons="1,2,3")]


def kov_delta(eps: float, delta: float, k: int, i: int) -> float:
    """δ of k-fold (ε, δ) composition at ε' = (k − 2i)ε: the optimal composition theorem
    of Kairouz, Oh, Viswanath (arXiv:1311.0776, Thm 3.3), evaluated as printed there:
    1 − (1 − δ)^k (1 − δ_i), δ_i = Σ_{l<i} C(k, l)(e^{(k−l)ε} − e^{(k−2i+l)ε})/(1 + e^ε)^k."""
    d_i = sum(comb(k, l, exact=True) * (math.exp((k - l) * eps) - math.exp((k - 2 * i + l) * eps))
              for l in range(i)) / (1.0 + math.exp(eps)) ** k
    return 1.0 - (1.0 - delta) ** k * (1.0 - d_i)


def test_dp_accounting_composition_figure():
    """dp_accounting's figure: (1, 0.1) composed with (2, 0.2) is (3, 0.28)-DP, exactly."""
    m = accounting.mechanism("approx_dp_composition", epsilons=(1.0, 2.0), deltas=(0.1, 0.2))
    pair = m.pair()
    assert pair.exact
    prof = m.curve(PrivacyProfile)
    assert float(prof.epsilon(0.28)) == 3.0
    assert float(prof.delta(3.0)) == pytest.approx(0.28, abs=1e-15)
    # below δ = 0.28 no finite ε works: the mass at +∞ is 1 − 0.9·0.8
    assert float(prof.epsilon(0.28 - 1e-9)) == math.inf
    # just above it the answer is the closed form inside the top segment
    assert float(prof.epsilon(0.29)) < 3.0


def test_accountant_brackets_the_exact_composition():
    """The grid accountant composes guarantees too; its certified bracket holds ε = 3."""
    acct = accounting.Accountant()
    acct.compose(accounting.mechanism("approx_dp", epsilon=1.0, delta=0.1))
    acct.compose(accounting.mechanism("approx_dp", epsilon=2.0, delta=0.2))
    lo, hi = acct.epsilon_interval(0.28)
    assert lo <= 3.0 <= hi and hi - lo < 1e-3


@pytest.mark.parametrize("eps,delta,k", [(0.5, 0.0, 7), (1.0, 1e-3, 10), (0.1, 1e-5, 40)])
def test_self_composition_is_kov_optimal_composition(eps, delta, k):
    pair = accounting.compose((accounting.mechanism("approx_dp", epsilon=eps, delta=delta).pair(), k))
    assert pair.exact
    for i in range(0, k // 2 + 1):
        e = (k - 2 * i) * eps
        got = float(pair.profile(e))
        assert got == pytest.approx(kov_delta(eps, delta, k, i), rel=1e-10, abs=1e-15), (i, e)


def test_heterogeneous_equals_homogeneous_when_equal():
    a = accounting.mechanism("approx_dp_composition", epsilons=(0.3,) * 5, deltas=(1e-4,) * 5)
    b = accounting.compose((accounting.mechanism("approx_dp", epsilon=0.3, delta=1e-4).pair(), 5))
    eps = np.linspace(-2, 2, 81)
    np.testing.assert_allclose(a.pair().profile(eps), b.profile(eps), rtol=1e-12, atol=1e-16)


def test_profile_closed_form():
    e0, d0 = 1.2, 0.05
    prof = accounting.mechanism("approx_dp", epsilon=e0, delta=d0).curve(PrivacyProfile)
    eps = np.linspace(-3, 3, 121)
    want = np.where(eps <= -e0, 1 - (1 - d0) * np.exp(eps),
                    np.where(eps <= e0, d0 + (1 - d0) * (math.exp(e0) - np.exp(eps)) / (1 + math.exp(e0)),
                             d0))
    for d in ("forward", "backward"):
        np.testing.assert_allclose(prof.delta(eps, d), want, rtol=1e-12, atol=1e-15)


def test_tradeoff_is_dong_roth_su_f_eps_delta():
    e0, d0 = 0.8, 0.02
    to = accounting.mechanism("approx_dp", epsilon=e0, delta=d0).curve(TradeOff)
    a = np.linspace(0, 1, 401)
    want = np.maximum.reduce([np.zeros_like(a), 1 - d0 - math.exp(e0) * a,
                              math.exp(-e0) * (1 - d0 - a)])
    np.testing.assert_allclose(to.beta(a), want, atol=1e-12)


def _neyman_pearson_beta(p: np.ndarray, q: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """T(P, Q)(α) of two laws on finitely many outcomes by brute force: the most powerful
    tests reject the outcomes of largest q/p first (those with p = 0 at no cost),
    randomising on the boundary one (Neyman–Pearson lemma), so β is the piecewise-linear
    curve through (cumulative p, 1 − cumulative q) in that order."""
    with np.errstate(divide="ignore"):
        ratio = np.where(p > 0, q / np.where(p > 0, p, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    cum_p = np.concatenate([[0.0], np.cumsum(p[order])])
    cum_q = np.concatenate([[0.0], np.cumsum(q[order])])
    # of the points at one α (outcomes with p = 0), the last has the smallest β
    keep = np.concatenate([cum_p[1:] > cum_p[:-1], [True]])
    return np.interp(alpha, cum_p[keep], 1.0 - cum_q[keep])


@pytest.mark.parametrize("eps,delta,k", [(0.8, 0.02, 2), (1.5, 0.0, 3), (0.3, 0.1, 2)])
def test_tradeoff_of_self_composition_is_neyman_pearson_on_the_product(eps, delta, k):
    """k uses: the trade-off comes from the exact product laws (f_{ε,δ} is one use's
    only), and equals brute-force Neyman–Pearson on the 4^k product outcomes."""
    pair = accounting.compose((accounting.mechanism("approx_dp", epsilon=eps,
                                                    delta=delta).pair(), k))
    assert not pair.provides("beta")
    s = float(expit(eps))
    p1 = np.array([delta, (1 - delta) * s, (1 - delta) * (1 - s), 0.0])
    q1 = p1[::-1].copy()
    p, q = p1, q1
    for _ in range(k - 1):
        p, q = np.outer(p, p1).ravel(), np.outer(q, q1).ravel()
    a = np.concatenate([[0.0], np.linspace(1e-4, 1.0, 300)])
    got = pair.curve(TradeOff).beta(a)
    np.testing.assert_allclose(got, _neyman_pearson_beta(p, q, a), atol=1e-12)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_pure_dp_renyi_is_randomized_response(eps):
    """δ = 0: the pair is randomized response with p = σ(ε) (Mironov 2017, Table II)."""
    rdp = accounting.mechanism("approx_dp", epsilon=eps).curve(RDP)
    alphas = [1.5, 2.0, 5.0, 30.0]
    want = [rr_rdp(a, float(expit(eps))) for a in alphas]
    np.testing.assert_allclose(rdp.rdp(np.array(alphas)), want, rtol=1e-9)


def test_positive_delta_has_infinite_renyi():
    rdp = accounting.mechanism("approx_dp", epsilon=1.0, delta=1e-6).curve(RDP)
    assert np.all(np.isinf(rdp.rdp(np.array([1.5, 2.0, 10.0]))))


def test_degenerate_guarantees():
    free = accounting.mechanism("approx_dp", epsilon=0.0, delta=0.0).curve(PrivacyProfile)
    assert float(free.delta(0.0)) == 0.0 and float(free.epsilon(1e-9)) == 0.0
    none = accounting.mechanism("approx_dp", epsilon=1.0, delta=1.0)
    prof = none.curve(PrivacyProfile)
    assert float(prof.delta(50.0)) == 1.0 and float(prof.epsilon(0.999)) == math.inf
    assert float(none.curve(PLD).epsilon(0.5)) == math.inf
    big = accounting.mechanism("approx_dp", epsilon=1e8, delta=0.0).curve(PrivacyProfile)
    assert float(big.epsilon(1e-9)) == pytest.approx(1e8)


def test_too_large_exact_product_is_refused_with_a_pointer():
    eps = tuple(math.sqrt(p) / 10 for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43,
                                           47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97))
    m = accounting.mechanism("approx_dp_composition", epsilons=eps, deltas=(0.0,) * 25)
    with pytest.raises(ValueError, match="Accountant"):
        m.pair()


def test_dp_accounting_pld_of_the_guarantee_brackets_ours():
    """dp_accounting's pessimistic PLD of the same guarantees (its supplementary §3.5
    pair, rounded up on a 1e-4 grid) dominates the exact law and stays within a grid
    step of it after composition."""
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    common = pytest.importorskip("dp_accounting.pld.common")
    theirs = pld_mod.from_privacy_parameters(common.DifferentialPrivacyParameters(1.0, 0.1)).compose(
        pld_mod.from_privacy_parameters(common.DifferentialPrivacyParameters(2.0, 0.2)))
    ours = accounting.mechanism("approx_dp_composition", epsilons=(1.0, 2.0),
                                deltas=(0.1, 0.2)).curve(PrivacyProfile)
    for e in (-1.0, 0.0, 0.5, 1.0, 2.5, 3.0):
        t = theirs.get_delta_for_epsilon(e)
        o = float(ours.delta(e))
        assert o <= t + 1e-12 and t - o < 1e-3, (e, o, t)
    assert theirs.get_epsilon_for_delta(0.28 + 1e-12) == pytest.approx(3.0, abs=2e-4)


def test_autodp_kov_accountant_is_never_below_the_exact_composition():
    """autodp's DP_acct (Kairouz–Oh–Viswanath's closed-form bounds for heterogeneous
    guarantees) upper-bounds the optimal composition, which we compute exactly."""
    dp_acct = pytest.importorskip("autodp.dp_acct")
    eps = (0.1, 0.2, 0.05, 0.1, 0.3, 0.1, 0.2, 0.15)
    deltas = (1e-6, 0.0, 1e-7, 1e-6, 0.0, 0.0, 1e-6, 0.0)
    acct = dp_acct.DP_acct()
    for e, d in zip(eps, deltas):
        acct.update_DPlosses(e, d)
    ours = accounting.mechanism("approx_dp_composition", epsilons=eps, deltas=deltas)
    prof = ours.curve(PrivacyProfile)
    for target in (1e-5, 1e-3):
        exact = float(prof.epsilon(target))
        theirs = float(acct.get_eps(target))
        assert exact <= theirs + 1e-12, (target, exact, theirs)
        assert exact < sum(eps)                       # strictly better than basic composition
