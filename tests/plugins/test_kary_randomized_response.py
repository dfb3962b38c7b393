"""k-ary randomized response: exact laws, dp_accounting's published figures, composition."""

from __future__ import annotations

import math

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, PrivacyProfile, TradeOff
from accounting.testing import MechanismContract

from closed_forms import discrete_delta, rr_rdp

NAN = float("nan")


def _mech(**params):
    return accounting.default_registry().mechanism("kary_randomized_response")(**params)


class TestKaryRRContract(MechanismContract):
    mechanism = _mech(r=0.2, k=4)
    bad_parameters = [dict(r=-0.1), dict(r=1.5), dict(r=NAN), dict(k=1), dict(k=2.5),
                      dict(sensitivity=2.0), dict(neighbouring="sideways")]


class TestKaryRRAddRemoveContract(MechanismContract):
    mechanism = _mech(r=0.3, k=5, neighbouring="add_remove")
    bad_parameters = [dict(k=0)]


@pytest.mark.parametrize("r,k,rel,want,want_add", [
    # dp_accounting's published figures (its randomized-response PLD test):
    # REPLACE_ONE: P-masses 0.75 at log 3 and 0.25 at −log 3 (r = 0.5, k = 2)
    (0.5, 2, "replace_one", {math.log(3): 0.75, -math.log(3): 0.25}, None),
    # REPLACE_ONE: 0.85 at log 17, 0.05 at −log 17, 0.1 at 0 (r = 0.2, k = 4)
    (0.2, 4, "replace_one", {math.log(17): 0.85, -math.log(17): 0.05, 0.0: 0.1}, None),
    # REPLACE_SPECIAL (our add/remove): remove 0.85 at log(0.85/0.25), 0.15 at log(0.05/0.25);
    # add 0.75 at log(0.25/0.05), 0.25 at log(0.25/0.85)
    (0.2, 4, "add_remove", {math.log(0.85 / 0.25): 0.85, math.log(0.05 / 0.25): 0.15},
     {math.log(0.25 / 0.05): 0.75, math.log(0.25 / 0.85): 0.25}),
    (0.5, 2, "add_remove", {math.log(1.5): 0.75, math.log(0.5): 0.25},
     {math.log(2.0): 0.5, math.log(2 / 3): 0.5}),
])
def test_dp_accounting_figures(r, k, rel, want, want_add):
    pair = _mech(r=r, k=k, neighbouring=rel).pair()
    for law, expected in ((pair.upper[0], want), (pair.upper[1], want_add or want)):
        assert law.inf_mass == 0.0
        got = dict(zip(law.losses.tolist(), law.masses.tolist()))
        assert len(got) == len(expected)
        for loss, mass in expected.items():
            key = min(got, key=lambda x: abs(x - loss))
            assert key == pytest.approx(loss, abs=1e-12) and got[key] == pytest.approx(mass, rel=1e-12)


@pytest.mark.parametrize("p", [0.55, 0.75, 0.9])
def test_two_buckets_is_binary_randomized_response(p):
    kary = _mech(r=2 * (1 - p), k=2)
    binary = accounting.mechanism("randomized_response", p=p)
    eps = np.linspace(-3, 3, 61)
    np.testing.assert_allclose(kary.pair().profile(eps), binary.pair().profile(eps),
                               rtol=1e-12, atol=1e-15)
    alphas = np.array([1.5, 2.0, 8.0])
    np.testing.assert_allclose(kary.curve(RDP).rdp(alphas), [rr_rdp(a, p) for a in alphas],
                               rtol=1e-9)


def test_profile_against_the_distributions():
    r, k = 0.35, 6
    p, s = 1 - r + r / k, r / k
    P = np.array([p] + [s] * (k - 1))
    Q = np.array([s, p] + [s] * (k - 2))
    eps = np.linspace(-3, 3, 121)
    prof = _mech(r=r, k=k).curve(PrivacyProfile)
    np.testing.assert_allclose(prof.delta(eps, "forward"), discrete_delta(P, Q, eps), atol=1e-15)
    assert _mech(r=r, k=k).epsilon == pytest.approx(math.log(1 + k * (1 - r) / r), rel=1e-12)


def test_exact_composition_against_direct_convolution():
    """50 uses: the exact law's δ against a direct sum over the trinomial outcomes."""
    r, k, n = 0.2, 4, 50
    m = _mech(r=r, k=k)
    comp = accounting.compose((m.pair(), n))
    assert comp.exact
    p, s = 1 - r + r / k, r / k
    e0 = math.log(p / s)
    from scipy.stats import multinomial
    # counts (a, b, c) of outcomes (true, other's, rest): loss (a − b)e0
    eps_grid = [0.0, 5.0, 20.0, 40.0]
    want = np.zeros(len(eps_grid))
    for a in range(n + 1):
        for b in range(n + 1 - a):
            c = n - a - b
            w = multinomial.pmf([a, b, c], n, [p, s, (k - 2) * s])
            loss = (a - b) * e0
            want += w * np.maximum(1 - np.exp(np.array(eps_grid) - loss), 0.0)
    np.testing.assert_allclose(comp.profile(np.array(eps_grid)), want, rtol=1e-9, atol=1e-15)


def test_degenerate_noise():
    free = _mech(r=1.0, k=5)
    assert free.epsilon == 0.0
    assert float(free.curve(PrivacyProfile).delta(0.0)) == 0.0
    assert float(free.curve(RDP).rdp(3.0)) == pytest.approx(0.0, abs=1e-15)
    truth = _mech(r=0.0, k=5)
    assert truth.epsilon == math.inf
    assert float(truth.curve(PLD).epsilon(0.5)) == math.inf
    assert float(truth.curve(TradeOff).beta(0.2)) == 0.0


def test_dp_accounting_agrees():
    """dp_accounting's own PLD of the same mechanism (pessimistic, 1e-4 grid)."""
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    theirs = pld_mod.from_randomized_response(0.2, 4).self_compose(10)
    ours = accounting.compose((_mech(r=0.2, k=4).pair(), 10))
    for e in (0.0, 1.0, 5.0, 10.0):
        t, o = theirs.get_delta_for_epsilon(e), float(ours.profile(e))
        assert o <= t + 1e-12 and t - o < 1e-3 * max(t, 1e-6) + 1e-9, (e, o, t)


@pytest.mark.parametrize("p", [0.6, 0.75, 0.9])
def test_autodp_optimal_randomized_response_epsilon(p):
    """autodp's optimal ε(δ) of binary randomized response: log((p − δ)/(1 − p))."""
    dp_bank = pytest.importorskip("autodp.dp_bank")
    prof = _mech(r=2 * (1 - p), k=2).curve(PrivacyProfile)
    for delta in (1e-3, 0.05, 0.1):
        assert float(prof.epsilon(delta)) == pytest.approx(
            dp_bank.get_eps_randresp_optimal(p, delta), rel=1e-10, abs=1e-12)
