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


def test_truncated_poisson_is_a_bracket_of_subsampled_gaussians():
    from accounting_mechanisms.truncated_poisson import truncation_weights
    n, q, b, s = 10000, 0.01, 105, 1.0
    t, q2 = truncation_weights(n, q, b)
    m = _mech("truncated_poisson_gaussian", q=q, sigma=s, dataset_size=n, max_batch=b)
    pair = m.pair()
    assert not pair.exact
    sg = accounting.mechanism("subsampled_gaussian", q=q, sigma=s).pair()
    cut = accounting.mechanism("subsampled_gaussian", q=q2, sigma=s / 2).pair()
    low = accounting.mechanism("subsampled_gaussian", q=(1 - t) * q + t * q2, sigma=s).pair()
    eps = np.linspace(-1, 3, 9)
    for d in ("forward", "backward"):
        # upper: the index-revealing mixture, the cut branch at sensitivity 2Δ, add/remove
        want = (1 - t) * sg.profile(eps, d) + t * cut.profile(eps, d)
        np.testing.assert_allclose(pair.profile(eps, d), want, rtol=1e-12)
        # lower: the Poisson-subsampled Gaussian at the rate x* is kept with
        np.testing.assert_allclose(pair.profile(eps, d, bound="lower"), low.profile(eps, d),
                                   rtol=1e-12)
        assert np.all(pair.profile(eps, d, bound="lower") <= pair.profile(eps, d) + 1e-15)


def test_dp_accounting_truncated_pld_is_looser():
    """dp_accounting's PLD of the same event (pessimistic, 1e-3 grid; the cut branch
    bounded by the replace-one pair) lies above our upper side."""
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    for n, q, b, s in [(10000, 0.01, 105, 1.0), (1000, 0.1, 105, 0.8), (500, 0.05, 20, 2.0)]:
        theirs = pld_mod.from_truncated_subsampled_gaussian_mechanism(
            n, q, b, s, value_discretization_interval=1e-3)
        ours = _mech("truncated_poisson_gaussian", q=q, sigma=s, dataset_size=n,
                     max_batch=b).pair()
        for e in (0.0, 0.5, 1.0, 2.0):
            t, o = theirs.get_delta_for_epsilon(e), float(ours.profile(e))
            assert o <= t + 1e-12 and o >= 0.5 * t, (n, e, o, t)


# --- the general additive-noise base: poisson_replace_one(base=..., q=...) ------------

def _general(base, q):
    return _mech("poisson_replace_one", base=base, q=q)


class TestPoissonReplaceOneLaplaceContract(MechanismContract):
    mechanism = _general(accounting.mechanism("laplace", b=1.0), 0.2)
    bad_parameters = [dict(q=-0.1), dict(q=1.5), dict(q=NAN), dict(neighbouring="add_remove"),
                      dict(base=accounting.mechanism("student_t", nu=3.0, scale=1.0)),
                      dict(base=accounting.mechanism("laplace", b=1.0, neighbouring="replace_one")),
                      dict(base=accounting.mechanism("randomized_response", p=0.7))]


def _mp_mixture_delta(logpdf, q, a, b, eps):  # logpdf: the Laplace(1) density
    """δ(ε) of ((1−q)μ + qμ_a, (1−q)μ + qμ_b) for μ = Laplace(1), by mpmath quadrature of
    the hockey-stick integrand split at its kinks (0, a, b) — independent of the library."""
    import mpmath as mp
    mp.mp.dps = 20
    g = mp.e ** mp.mpf(eps)

    def f(x):
        p = (1 - q) * logpdf(x) + q * logpdf(x - a)
        r = (1 - q) * logpdf(x) + q * logpdf(x - b)
        return max(p - g * r, 0)
    def h(x):
        return (1 - q) * logpdf(x) + q * logpdf(x - a) - g * ((1 - q) * logpdf(x) + q * logpdf(x - b))
    # split at the kinks of the densities and at the sign changes of p − e^ε q (located
    # on a grid, refined by bisection), so every piece is smooth
    xs = np.linspace(-40.0, 40.0, 1601)
    lap = np.exp(-np.abs(xs)) / 2   # float64 only to locate the sign changes
    hv = ((1 - q) * lap + q * np.exp(-np.abs(xs - a)) / 2
          - float(g) * ((1 - q) * lap + q * np.exp(-np.abs(xs - b)) / 2))
    roots = [mp.findroot(h, (mp.mpf(xs[i]), mp.mpf(xs[i + 1])), solver="bisect")
             for i in range(len(xs) - 1) if hv[i] * hv[i + 1] < 0]
    pts = sorted({-mp.inf, mp.mpf(0), mp.mpf(a), mp.mpf(b), mp.inf, *roots})
    return float(mp.quad(f, pts))


def _mp_laplace(x):
    import mpmath as mp
    return mp.e ** (-abs(x)) / 2


@pytest.mark.parametrize("q", [0.05, pytest.param(0.3, marks=pytest.mark.slow),
                               pytest.param(0.8, marks=pytest.mark.slow)])
def test_laplace_records_at_the_ends_are_the_worst_case(q):
    """Brute force over records a, b ∈ [−Δ, Δ] (Δ = 1): no pair beats (Δ, −Δ), and the
    library's δ equals the independent quadrature at (Δ, −Δ)."""
    pair = _general(accounting.mechanism("laplace", b=1.0), q).pair()
    grid = np.linspace(-1.0, 1.0, 5)
    for eps in (-0.3, 0.0, 0.7):
        ours = float(pair.profile(eps))
        ref = _mp_mixture_delta(_mp_laplace, q, 1.0, -1.0, eps)
        lower = float(pair.curve(PrivacyProfile).delta(eps, bound="lower"))
        assert lower - 1e-12 <= ref <= ours + 1e-12 and ours - lower < 1e-5
        worst = max(_mp_mixture_delta(_mp_laplace, q, a, b, eps) for a in grid for b in grid)
        assert worst <= ref * (1 + 1e-12) + 1e-15 and worst == pytest.approx(ref, rel=1e-12)


def test_gaussian_base_is_the_gaussian_module_bit_for_bit():
    eps = np.linspace(-2, 4, 25)
    for q, s, d in [(0.1, 1.0, 1.0), (0.5, 2.0, 3.0), (1e-3, 0.5, 1.0)]:
        old = _mech("poisson_replace_one_gaussian", q=q, sigma=s, sensitivity=d).pair()
        new = _general(accounting.mechanism("gaussian", sigma=s, sensitivity=d), q).pair()
        np.testing.assert_array_equal(new.profile(eps), old.profile(eps))
        np.testing.assert_array_equal(new.curve(RDP).rdp(np.array([2.0, 8.0])),
                                      old.curve(RDP).rdp(np.array([2.0, 8.0])))


def test_generic_gaussian_bracket_contains_the_closed_form():
    """The cell bracket of the generic route, on a Gaussian given only by its log-density
    (generalised Gaussian β = 2), contains the closed form of the Gaussian module."""
    gg = accounting.mechanism("generalised_gaussian", beta=2.0, scale=math.sqrt(2.0))
    from accounting_mechanisms.poisson_replace_one import replace_one_noise_pair
    generic = replace_one_noise_pair(gg, 0.2)
    exact = _mech("poisson_replace_one_gaussian", q=0.2, sigma=1.0).pair()
    eps = np.linspace(-1, 3, 9)
    up = generic.curve(PrivacyProfile).delta(eps)
    lo = generic.curve(PrivacyProfile).delta(eps, bound="lower")
    ex = exact.profile(eps)
    assert np.all(lo <= ex + 1e-12) and np.all(ex <= up + 1e-12)
    np.testing.assert_allclose(up, ex, rtol=1e-4, atol=1e-12)


def test_rate_identities_for_a_general_base():
    lap = accounting.mechanism("laplace", b=2.0)
    eps = np.linspace(-1, 2, 13)
    free = _general(lap, 0.0)
    assert np.all(free.pair().profile(eps) == -np.expm1(np.minimum(eps, 0.0)))
    assert float(free.curve(PLD).epsilon(1e-9)) == 0.0
    # q = 1: the base with twice the sensitivity
    full = _general(lap, 1.0).pair().curve(PrivacyProfile)
    twice = accounting.mechanism("laplace", b=2.0, sensitivity=2.0).pair().profile(eps)
    np.testing.assert_allclose(full.delta(eps), twice, rtol=2e-4, atol=1e-12)
    assert np.all(full.delta(eps, bound="lower") <= twice + 1e-12)
    assert np.all(full.delta(eps) >= twice - 1e-12)


def test_discrete_laplace_is_exact_and_the_worst_case():
    """On ℤ the pair is exact; brute force over integer records in [−Δ, Δ]."""
    from scipy.special import logsumexp
    base = accounting.mechanism("discrete_laplace", scale=1.5, sensitivity=2)
    q = 0.3
    pair = _general(base, q).pair()
    k = np.arange(-200, 201)
    lm = base.log_density(k) - logsumexp(base.log_density(k))

    def delta(a, b, eps):
        p = (1 - q) * np.exp(lm) + q * np.exp(np.interp(k - a, k, lm, left=-np.inf, right=-np.inf))
        r = (1 - q) * np.exp(lm) + q * np.exp(np.interp(k - b, k, lm, left=-np.inf, right=-np.inf))
        return float(np.maximum(p - np.exp(eps) * r, 0).sum())
    for eps in (0.0, 0.3, 1.0):
        ref = delta(2, -2, eps)
        assert float(pair.profile(eps)) == pytest.approx(ref, rel=1e-12, abs=1e-15)
        assert max(delta(a, b, eps) for a in range(-2, 3) for b in range(-2, 3)) <= ref + 1e-15


def test_wide_noise_on_the_integers_is_refused_not_truncated():
    """At q = 1 the pair is the base with sensitivity 2: for a discrete Gaussian of large
    σ, δ(0) = 2Φ(1/σ) − 1 (the continuous value; the two differ by e^{−2π²σ²}). The law
    on ℤ is built on ±1e6 integers: σ = 2e4 fits; σ = 1e6 was cut there and scaled up,
    δ(0) = 4.6e-7 for the exact 8.0e-7 (found by tests/test_fuzz_invariants.py, with
    D_1.01 = −3.5e-11); it is refused now."""
    from scipy.stats import norm
    fits = _general(accounting.mechanism("discrete_gaussian", sigma=2e4), 1.0)
    assert float(fits.curve(PrivacyProfile).delta(0.0)) == pytest.approx(
        2 * norm.cdf(1 / 2e4) - 1, rel=1e-9)
    wide = _general(accounting.mechanism("discrete_gaussian", sigma=1e6), 1.0)
    with pytest.raises(ValueError, match="too wide for its exact loss law"):
        wide.curve(PrivacyProfile)


@pytest.mark.parametrize("base, message", [
    (accounting.mechanism("student_t", nu=3.0, scale=1.0), "not log-concave"),
    (accounting.mechanism("generalised_gaussian", beta=0.5, scale=1.0), "not log-concave"),
    (accounting.mechanism("gaussian", sigma=1.0, neighbouring="replace_one"), "add_remove"),
])
def test_bases_outside_the_theorem_are_refused(base, message):
    with pytest.raises(ValueError, match=message):
        _general(base, 0.1)
    with pytest.raises(TypeError, match="additive-noise"):
        _general(accounting.mechanism("randomized_response", p=0.7), 0.1)


def test_dp_accounting_has_no_replace_one_laplace_and_agrees_on_the_gaussian():
    """dp_accounting's PLD accountant refuses a Poisson-sampled Laplace under REPLACE_ONE
    (only the Gaussian has a REPLACE privacy loss there); on the Gaussian the general
    module gives its figures."""
    dp = pytest.importorskip("dp_accounting")
    plm = pytest.importorskip("dp_accounting.pld.privacy_loss_mechanism")
    acct = dp.pld.PLDAccountant(dp.NeighboringRelation.REPLACE_ONE)
    assert not acct.supports(dp.PoissonSampledDpEvent(0.1, dp.LaplaceDpEvent(1.0)))
    theirs = plm.GaussianPrivacyLoss(1.0, sensitivity=1.0, sampling_prob=0.1,
                                     adjacency_type=plm.AdjacencyType.REPLACE)
    eps = [0.0, 0.5, 1.0]
    ours = _general(accounting.mechanism("gaussian", sigma=1.0), 0.1).pair().profile(np.array(eps))
    np.testing.assert_allclose(ours, np.ravel(theirs.get_delta_for_epsilon(eps)), rtol=1e-10)


def test_cli_reaches_the_general_wrapper(capsys):
    from accounting.cli.app import main
    code = main(["epsilon", "poisson_replace_one", "--base", "{name = 'laplace', b = 1.0}",
                 "--q", "0.2", "--delta", "1e-5"])
    out = capsys.readouterr().out
    assert code == 0 and "poisson_replace_one" in out
    want = _general(accounting.mechanism("laplace", b=1.0), 0.2).curve(PLD).epsilon(1e-5)
    assert f"{float(want):.4g}"[:4] in out
