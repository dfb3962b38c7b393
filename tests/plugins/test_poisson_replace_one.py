"""Poisson subsampling under replace-one (Gaussian), and truncated Poisson subsampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, PrivacyProfile
from accounting.testing import MechanismContract

from closed_forms import gaussian_delta

NAN = float("nan")


def _mech(name, **params):
    return accounting.default_registry().mechanism(name)(**params)


class TestPoissonReplaceOneContract(MechanismContract):
    mechanism = _mech("poisson_replace_one_gaussian", q=0.2, sigma=1.5)
    bad_parameters = [dict(q=-0.1), dict(q=1.5), dict(q=NAN), dict(sigma=-1.0), dict(sigma=NAN),
                      dict(sigma=1e-3), dict(neighbouring="add_remove")]


class TestTruncatedPoissonContract(MechanismContract):
    mechanism = _mech("truncated_poisson_gaussian", q=0.01, sigma=1.0, dataset_size=10000,
                      max_batch=105)
    bad_parameters = [dict(q=1.5), dict(sigma=-1.0), dict(max_batch=0), dict(dataset_size=2.5),
                      dict(neighbouring="replace_one")]


def _mp_delta(q, s, d, eps):
    """δ(ε) of ((1−q)N(0)+qN(Δ), (1−q)N(0)+qN(−Δ)) in 30 digits (mpmath root, closed form)."""
    import mpmath as mp
    mp.mp.dps = 30
    q, s, d, e = mp.mpf(q), mp.mpf(s), mp.mpf(d), mp.mpf(eps)
    g = lambda x, sg: mp.log((1 - q) + q * mp.e ** ((2 * sg * x * d - d * d) / (2 * s * s)))  # noqa: E731
    x = mp.findroot(lambda x: g(x, 1) - g(x, -1) - e, mp.mpf(1))
    up = (1 - q) * mp.ncdf(-x / s) + q * mp.ncdf((d - x) / s)
    lo = (1 - q) * mp.ncdf(-x / s) + q * mp.ncdf((-d - x) / s)
    return float(up - mp.e ** e * lo)


@pytest.mark.parametrize("q,s", [(0.1, 1.0), (0.5, 2.0), (0.01, 0.6)])
def test_profile_against_mpmath(q, s):
    pair = _mech("poisson_replace_one_gaussian", q=q, sigma=s).pair()
    for e in (0.1, 0.5, 1.0, 3.0):
        for d in ("forward", "backward"):
            assert float(pair.profile(e, d)) == pytest.approx(_mp_delta(q, s, 1.0, e), rel=1e-11)


def test_rate_one_is_the_gaussian_with_twice_the_sensitivity():
    pair = _mech("poisson_replace_one_gaussian", q=1.0, sigma=2.0).pair()
    eps = np.linspace(-1, 4, 21)
    np.testing.assert_allclose(pair.profile(eps), gaussian_delta(1.0, eps), rtol=1e-10, atol=1e-300)


def test_degenerate_rate_and_sensitivity_cost_nothing():
    from accounting_mechanisms.poisson_replace_one import ReplaceOneGaussianPair
    for m in (_mech("poisson_replace_one_gaussian", q=0.0, sigma=1.0),
              ReplaceOneGaussianPair(1.0, 0.0, 0.3)):
        assert float(m.curve(PrivacyProfile).delta(0.0)) == 0.0
        assert float(m.curve(PLD).epsilon(1e-9)) == 0.0
        assert float(m.curve(RDP).rdp(4.0)) == 0.0


def test_renyi_within_the_branch_bound():
    m = _mech("poisson_replace_one_gaussian", q=0.1, sigma=1.0)
    a = np.array([2.0, 8.0])
    d = m.curve(RDP).rdp(a)
    # joint convexity over the two branches: D_α ≤ log(1 − q + q e^{(α−1)α·2Δ²/σ²})/(α − 1)
    bound = np.log(0.9 + 0.1 * np.exp((a - 1) * a * 2.0)) / (a - 1)
    assert np.all(d <= bound) and np.all(d > 0)


def test_dp_accounting_replace_figures():
    """dp_accounting's own δ(ε) under REPLACE with sampling (GaussianPrivacyLoss)."""
    plm = pytest.importorskip("dp_accounting.pld.privacy_loss_mechanism")
    for q, s in [(0.1, 1.0), (0.5, 2.0), (1e-3, 0.5)]:
        theirs = plm.GaussianPrivacyLoss(s, sensitivity=1.0, sampling_prob=q,
                                         adjacency_type=plm.AdjacencyType.REPLACE)
        eps = [0.0, 0.5, 1.0, 2.0]
        ours = _mech("poisson_replace_one_gaussian", q=q, sigma=s).pair().profile(np.array(eps))
        np.testing.assert_allclose(ours, np.ravel(theirs.get_delta_for_epsilon(eps)), rtol=1e-10)


def test_truncation_weights_and_limits():
    from accounting_mechanisms.truncated_poisson import truncation_weights
    from scipy.stats import binom
    t, q2 = truncation_weights(1000, 0.1, 110)
    assert t == pytest.approx(binom.sf(109, 999, 0.1), rel=1e-12)
    assert q2 == pytest.approx(binom.sf(110, 1000, 0.1) * 110 / t / 1000, rel=1e-12)
    # no truncation possible: the Poisson-subsampled Gaussian itself
    m = _mech("truncated_poisson_gaussian", q=0.1, sigma=1.0, dataset_size=100, max_batch=100)
    sg = accounting.mechanism("subsampled_gaussian", q=0.1, sigma=1.0)
    eps = np.linspace(-1, 3, 9)
    np.testing.assert_allclose(m.pair().profile(eps), sg.pair().profile(eps), rtol=1e-12)


def test_truncated_poisson_is_the_weighted_mixture():
    from accounting_mechanisms.truncated_poisson import truncation_weights
    n, q, b, s = 10000, 0.01, 105, 1.0
    t, q2 = truncation_weights(n, q, b)
    m = _mech("truncated_poisson_gaussian", q=q, sigma=s, dataset_size=n, max_batch=b)
    sg = accounting.mechanism("subsampled_gaussian", q=q, sigma=s).pair()
    ro = _mech("poisson_replace_one_gaussian", q=q2, sigma=s, sensitivity=2.0).pair()
    eps = np.linspace(-1, 3, 9)
    for d in ("forward", "backward"):
        want = (1 - t) * sg.profile(eps, d) + t * ro.profile(eps, d)
        np.testing.assert_allclose(m.pair().profile(eps, d), want, rtol=1e-12)
    # truncation only adds privacy loss in this construction: never below the untruncated
    assert np.all(m.pair().profile(eps) >= sg.profile(eps) - 1e-15)


def test_dp_accounting_truncated_pld_agrees():
    """dp_accounting's PLD of the same event (pessimistic, 1e-3 grid) brackets ours."""
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    n, q, b, s = 10000, 0.01, 105, 1.0
    theirs = pld_mod.from_truncated_subsampled_gaussian_mechanism(
        n, q, b, s, value_discretization_interval=1e-3)
    ours = _mech("truncated_poisson_gaussian", q=q, sigma=s, dataset_size=n, max_batch=b).pair()
    for e in (0.0, 0.5, 1.0, 2.0):
        t, o = theirs.get_delta_for_epsilon(e), float(ours.profile(e))
        assert o <= t + 1e-12 and t - o < 2e-3 * t + 1e-9, (e, o, t)
