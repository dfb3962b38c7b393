"""dp_accounting's ZCDpEvent and TruncatedSubsampledGaussianDpEvent through the bridge.

References: dp_accounting's RDP accountant (the only one that takes a ZCDpEvent) and
its PLD accountant (the only one that takes the truncated event); the closed-form
Rényi conversion of a ρ-zCDP guarantee; and, for truncated Poisson sampling, the
exact output laws of small one-dimensional data sets (finite Gaussian mixtures,
integrated on a fine grid), which the certified bracket must contain.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import binom, norm

E = pytest.importorskip("dp_accounting.dp_event")
pld_acc = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
from dp_accounting.privacy_accountant import NeighboringRelation as NR  # noqa: E402

import accounting  # noqa: E402
from accounting import RDP, ZCDP  # noqa: E402
from accounting_bridges.dp_event import (UnsupportedEventError, dp_event_entries,  # noqa: E402
                                         from_dp_event, to_dp_event)

DELTA = 1e-5


def their_rdp(event) -> float:
    acc = rdp_acc.RdpAccountant()
    acc.compose(event)
    return acc.get_epsilon(DELTA)


def their_pld(event, step=1e-3) -> float:
    acc = pld_acc.PLDAccountant(NR.ADD_OR_REMOVE_ONE, value_discretization_interval=step)
    acc.compose(event)
    return acc.get_epsilon(DELTA)


def cks_epsilon(rdp, delta):
    """min over α > 1 of CKS 2020 (arXiv:2004.00010) Prop. 12 solved for ε:
    ε = D_α + [log(1/δ) + (α − 1) log(1 − 1/α) − log α] / (α − 1)."""
    def f(log_am1):
        a = 1.0 + math.exp(log_am1)
        return rdp(a) + (math.log(1 / delta) + (a - 1) * math.log1p(-1 / a)
                         - math.log(a)) / (a - 1)
    return minimize_scalar(f, bounds=(-12, 12), method="bounded",
                           options={"xatol": 1e-12}).fun


# ------------------------------------------------------------------ ZCDpEvent
def test_zcdp_event_is_its_renyi_bound_and_labelled_so():
    (m, count), = dp_event_entries(E.ZCDpEvent(0.5))
    assert m.name == "zcdp_guarantee" and count == 1 and m.rho == 0.5 and m.xi == 0.0
    acc = from_dp_event(E.SelfComposedDpEvent(E.ZCDpEvent(0.5), 4))
    rdp = acc.curve(RDP)
    assert rdp.provenance.exactness is accounting.Exactness.UPPER
    # 4 × 0.5-zCDP is 2-zCDP: D_α = 2α, ε by the closed-form conversion
    assert rdp.epsilon(DELTA) == pytest.approx(cks_epsilon(lambda a: 2.0 * a, DELTA), rel=1e-7)
    assert acc.curve(ZCDP).epsilon(DELTA) == pytest.approx(rdp.epsilon(DELTA), rel=1e-7)
    # the Rényi curve itself: D_α = ρα at every order
    alphas = np.array([1.5, 2.0, 8.0, 64.0])
    np.testing.assert_allclose(rdp.renyi(alphas), 2.0 * alphas, rtol=1e-12)
    # its lower side: a mechanism that meets it, the Gaussian of μ = √(2ρ) (4 uses: μ = 2)
    np.testing.assert_allclose(rdp.renyi(alphas, bound="lower"), 2.0 * alphas, rtol=1e-9)


def test_zcdp_event_with_others_against_dp_accounting_rdp():
    event = E.ComposedDpEvent([
        E.SelfComposedDpEvent(E.ZCDpEvent(0.05, 0.01), 10),
        E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0)), 500),
        E.GaussianDpEvent(4.0),
    ])
    ours = from_dp_event(event).curve(RDP).epsilon(DELTA)
    theirs = their_rdp(event)
    # continuous orders (ours) can only do better than their grid of orders, and not by much
    assert ours <= theirs * (1 + 1e-9)
    assert ours == pytest.approx(theirs, rel=0.02)


def test_zcdp_event_in_the_pld_is_a_certified_bracket():
    event = E.ZCDpEvent(0.5)
    acc = from_dp_event(event)
    lo, hi = acc.epsilon_interval(DELTA)
    rdp = acc.curve(RDP).epsilon(DELTA)
    # dp_accounting's RDP accountant on the same event: 4.7285 (orders on a grid)
    assert their_rdp(event) == pytest.approx(4.7285, abs=1e-4)
    # the PLD's upper side is the conversion's hull, up to its grid (a step per use)
    assert rdp <= hi <= rdp + 2e-4
    # its lower side: the Gaussian of μ = √(2ρ) = 1, which is 0.5-zCDP
    gauss = accounting.Accountant().compose(accounting.mechanism("gaussian", sigma=1.0))
    assert lo == pytest.approx(gauss.epsilon(DELTA), abs=2e-4)


@pytest.mark.parametrize("rho", [0.02, 0.5, 3.0])
def test_zcdp_profile_dominates_mechanisms_that_meet_the_guarantee(rho):
    pair = accounting.mechanism("zcdp_guarantee", rho=rho).pair()
    eps = np.sort(np.concatenate([-np.logspace(-3, 1, 20), [0.0], np.logspace(-3, 1.5, 40)]))
    upper = pair.profile(eps)
    # the Gaussian of μ = √(2ρ) (D_α = ρα) and randomized response at ε₀ = √(2ρ)
    # (pure ε₀-DP is ε₀²/2-zCDP, Bun, Steinke 2016, Prop. 1.4) both meet it
    members = [accounting.mechanism("gaussian", sigma=1 / math.sqrt(2 * rho)).pair(),
               accounting.mechanism("approx_dp", epsilon=math.sqrt(2 * rho)).pair()]
    for member in members:
        assert np.all(member.profile(eps) <= upper + 1e-12), member.describe()
    # convex and non-increasing in γ = e^ε, 1 at ε = −∞: a privacy profile
    gamma = np.exp(eps)
    slopes = np.diff(upper) / np.diff(gamma)
    assert np.all(np.diff(upper) <= 1e-15) and np.all(np.diff(slopes) >= -1e-9)
    assert float(pair.profile(-np.inf)) == 1.0


def test_zcdp_guarantee_round_trips_and_checks():
    back = to_dp_event(accounting.mechanism("zcdp_guarantee", rho=0.3, xi=0.1))
    assert back == E.ZCDpEvent(rho=0.3, xi=0.1)
    assert from_dp_event(back).count == 1
    assert dp_event_entries(E.ZCDpEvent(0.0, 0.0)) == []
    with pytest.raises(ValueError, match="event.rho"):
        from_dp_event(E.ZCDpEvent(-1.0))
    # ρ = 0 with ξ > 0: pure ξ-DP meets it, and the PLD answers about ξ
    pure = from_dp_event(E.ZCDpEvent(0.0, 0.5))
    lo, hi = pure.epsilon_interval(DELTA)
    assert lo <= 0.5 <= hi <= 0.5 + 1e-3


# ------------------------------------------- TruncatedSubsampledGaussianDpEvent
def truncated(n, q, b, z):
    return E.TruncatedSubsampledGaussianDpEvent(dataset_size=n, sampling_probability=q,
                                                truncated_batch_size=b, noise_multiplier=z)


@pytest.mark.parametrize("n, q, b, z, count", [(10_000, 0.01, 105, 1.0, 100),
                                               (1000, 0.05, 55, 1.2, 30),
                                               (500, 0.05, 20, 2.0, 50)])
def test_truncated_event_against_dp_accounting_pld(n, q, b, z, count):
    event = E.SelfComposedDpEvent(truncated(n, q, b, z), count)
    (m, c), = dp_event_entries(event)
    assert m.name == "truncated_poisson_gaussian" and c == count
    acc = from_dp_event(event)
    lo, hi = acc.epsilon_interval(DELTA)
    theirs = their_pld(event)
    assert acc.epsilon(DELTA) == hi
    # dp_accounting's replace-one bound of the truncated branch (pessimistic at its
    # grid 1e-3) is looser than ours
    assert lo <= hi <= theirs
    assert hi == pytest.approx(theirs, rel=0.25)
    assert not acc.pair().exact


def test_truncated_event_degenerate_cases():
    plain = from_dp_event(E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)))
    uncut = from_dp_event(truncated(50, 0.1, 50, 1.0))     # B ≥ n: never cut
    assert uncut.epsilon(DELTA) == plain.epsilon(DELTA)
    assert dp_event_entries(truncated(50, 0.0, 5, 1.0)) == []
    assert dp_event_entries(truncated(50, 0.1, 0, 1.0)) == []
    assert from_dp_event(truncated(50, 0.1, 5, 0.0)).epsilon(DELTA) == math.inf
    with pytest.raises(UnsupportedEventError, match="add_remove neighbouring only"):
        from_dp_event(truncated(50, 0.1, 5, 1.0), "replace_one")
    m = accounting.mechanism("truncated_poisson_gaussian", q=0.1, sigma=1.0,
                             dataset_size=50, max_batch=5)
    assert to_dp_event(m) == truncated(50, 0.1, 5, 1.0)


def exact_profile(n, q, b, sigma, a, c, eps):
    """δ(ε) of D′ (x* = c and n − 1 others = a) against D (the others), both orders,
    from their exact output laws: Σ_k w_k N(mean_k, σ²), integrated on a fine grid."""
    k = np.arange(n)                           # K other records sampled, 0 … n − 1
    pk = binom.pmf(k, n - 1, q)
    means_d = np.minimum(k, b) * a             # without x*
    # with x*: absent (1 − q); present and kept; present and cut away
    kept = np.where(k + 1 <= b, 1.0, b / (k + 1))
    sums_in = np.where(k + 1 <= b, k * a + c, (b - 1) * a + c)
    comps_dp = [(pk * (1 - q), means_d), (pk * q * kept, sums_in),
                (pk * q * (1 - kept), np.minimum(k, b) * a)]
    x = np.linspace(-abs(a) * b - abs(c) - 12 * sigma, abs(a) * b + abs(c) + 12 * sigma, 200_001)
    dens_d = np.sum(pk[:, None] * norm.pdf(x, means_d[:, None], sigma), axis=0)
    dens_dp = sum(np.sum(w[:, None] * norm.pdf(x, mu[:, None], sigma), axis=0)
                  for w, mu in comps_dp)
    out = []
    for e in eps:
        fwd = np.trapezoid(np.maximum(dens_dp - math.exp(e) * dens_d, 0.0), x)
        bwd = np.trapezoid(np.maximum(dens_d - math.exp(e) * dens_dp, 0.0), x)
        out.append(max(fwd, bwd))
    return np.array(out)


def test_truncated_bracket_contains_exact_small_cases():
    n, q, b, sigma = 8, 0.35, 2, 0.8
    m = accounting.mechanism("truncated_poisson_gaussian", q=q, sigma=sigma, dataset_size=n,
                             max_batch=b)
    pair = m.pair()
    eps = np.array([0.0, 0.25, 0.5, 1.0, 2.0])
    upper, lower = pair.profile(eps), pair.profile(eps, bound="lower")
    worst = np.zeros_like(eps)
    for a, c in [(-1.0, 1.0), (0.0, 1.0), (1.0, 1.0), (-0.5, 1.0), (-1.0, 0.5)]:
        exact = exact_profile(n, q, b, sigma, a, c, eps)
        assert np.all(exact <= upper + 1e-9), (a, c, exact, upper)
        worst = np.maximum(worst, exact)
        if (a, c) == (0.0, 1.0):
            # the lower side is this data set's pair exactly
            np.testing.assert_allclose(exact, lower, rtol=1e-6, atol=1e-10)
    assert np.all(lower <= worst + 1e-9)
    # truncation acts here (t is large), so the bracket is a real bracket
    assert np.all(upper[:3] > lower[:3])


# ---------------------------------------------------------- RepeatAndSelectDpEvent
@pytest.mark.parametrize("mean, shape", [(10.0, 1.0), (5.0, 0.0)])
def test_repeat_and_select_against_dp_accounting_rdp(mean, shape):
    """Geometric (η = 1) and Poisson (η = 0) repetitions: dp_accounting's RDP accountant
    (Papernot, Steinke 2022, arXiv:2110.03620, on its grid of orders) against ours."""
    event = E.RepeatAndSelectDpEvent(E.GaussianDpEvent(3.0 if shape else 2.0), mean, shape)
    (m, _), = dp_event_entries(event)
    assert m.name == "repeat_and_select"
    acc = from_dp_event(event)
    theirs = their_rdp(event)
    ours = acc.curve(RDP).epsilon(DELTA)
    assert ours <= theirs * (1 + 1e-9) and ours == pytest.approx(theirs, rel=1e-4)
    lo, hi = acc.epsilon_interval(DELTA)
    assert lo <= hi <= ours * (1 + 1e-6)
