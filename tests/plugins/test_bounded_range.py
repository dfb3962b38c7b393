"""Bounded-range mechanisms: the ε-BR guarantee, the exponential mechanism and
permute-and-flip, with Dong–Durfee–Rogers' optimal non-adaptive composition
(arXiv:1909.13830) checked against independent high-precision sums."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, Accountant, PrivacyProfile
from accounting.cli.app import main
from accounting.testing import MechanismContract
from accounting.vocabulary import Direction
from accounting_mechanisms import bounded_range as br
from accounting_mechanisms.bounded_range import (BoundedRangeBatchPair, BoundedRangePair,
                                                 br_composed_profile, br_profile)

NAN = float("nan")
ALPHAS = np.array([1.5, 2.0, 4.0, 16.0])


def _mech(name, **params):
    return accounting.default_registry().mechanism(name)(**params)


# ----------------------------------------------------------- independent references
def _mp_rr(eps, t):
    """(p_t, q_t) of RR_t in mpmath (losses t and t − ε)."""
    eps, t = mpmath.mpf(eps), mpmath.mpf(t)
    p = (1 - mpmath.exp(t - eps)) / (1 - mpmath.exp(-eps))
    return p, p * mpmath.exp(-t)


def _mp_delta_product(eps, ts, e1):
    """δ(ε') of ⊗_i RR_{t_i} by the direct sum over all 2^k outcome patterns grouped
    by which factors took their low outcome (k ≤ 4 here), in mpmath."""
    from itertools import product
    total = mpmath.mpf(0)
    eps = mpmath.mpf(eps)
    for pattern in product((0, 1), repeat=len(ts)):
        mass, loss = mpmath.mpf(1), mpmath.mpf(0)
        for low, t in zip(pattern, ts):
            p, _ = _mp_rr(eps, t)
            mass *= (1 - p) if low else p
            loss += mpmath.mpf(t) - (eps if low else 0)
        total += mass * max(mpmath.mpf(0), 1 - mpmath.exp(mpmath.mpf(e1) - loss))
    return total


def _mp_delta_power(eps, t, k, e1):
    """δ(ε') of RR_t^{⊗k}: Σ_i C(k, i) p^{k−i}(1 − p)^i (1 − e^{ε' − (kt − iε)})₊."""
    p, _ = _mp_rr(eps, t)
    eps, t, e1 = mpmath.mpf(eps), mpmath.mpf(t), mpmath.mpf(e1)
    total = mpmath.mpf(0)
    for i in range(k + 1):
        loss = k * t - i * eps
        if loss <= e1:
            break
        total += mpmath.binomial(k, i) * p ** (k - i) * (1 - p) ** i * (1 - mpmath.exp(e1 - loss))
    return total


def _mp_sup_over_t(eps, k, e1, grid=400, peaks=3):
    """max over a fine t grid, then golden-section refinement around each of the
    ``peaks`` best local maxima of the grid (δ(RR_t^{⊗k}) has one cusped peak per
    set of positive terms), of δ(RR_t^{⊗k})(ε') at 40 digits: a lower bound of the
    sup over t, found without DDR20's t_m."""
    with mpmath.workdps(30):
        ts = [mpmath.mpf(eps) * j / grid for j in range(grid + 1)]
        vals = [_mp_delta_power(eps, t, k, e1) for t in ts]
        local = [j for j in range(grid + 1)
                 if vals[j] >= vals[max(j - 1, 0)] and vals[j] >= vals[min(j + 1, grid)]]
        best = max(vals)
        g = (mpmath.sqrt(5) - 1) / 2
        for j in sorted(local, key=lambda i: vals[i], reverse=True)[:peaks]:
            a, b = ts[max(j - 1, 0)], ts[min(j + 1, grid)]
            for _ in range(40):
                c, d = b - g * (b - a), a + g * (b - a)
                fc, fd = _mp_delta_power(eps, c, k, e1), _mp_delta_power(eps, d, k, e1)
                best = max(best, fc, fd)
                if fc >= fd:
                    b = d
                else:
                    a = c
        return float(best)


# ------------------------------------------------------------------- contracts
class _BRContract(MechanismContract):
    """The contract, with the two Rényi checks against the pair's own PLD replaced.

    The Rényi curve here is that of the *class* of ε-BR mechanisms (ε²/8 zCDP, Cesar
    and Rogers), which lies below the Rényi curve of the single pair dominating them
    all (the pair has the class's profile but not its D_α): the contract's "RDP at
    least the PLD's" does not apply, by design. Instead: the curve is at least the
    exact class value at any t (a lower bound of the class's sup), at most αε²/8 and
    at most ε-DP randomized response's D_α, and below the pair's own."""

    br_epsilon = 1.0

    def test_rdp_agrees_with_pld(self):
        rdp = self._curve(RDP)
        assert rdp.provenance.exactness.value == "upper bound"
        eps = type(self).br_epsilon
        c = -math.expm1(-eps)
        for a in ALPHAS:
            ts = np.linspace(0.0, eps, 2001)
            q = (np.exp(-ts) - math.exp(-eps)) / c
            d_t = np.log(q * np.exp(a * ts) + (1 - q) * np.exp(a * (ts - eps))) / (a - 1)
            mine = float(rdp.rdp(a, "forward"))
            assert mine >= d_t.max() * (1 - 1e-12), (a, mine, d_t.max())
            assert mine <= a * eps ** 2 / 8 * (1 + 1e-12)
            rr = float(_mech("approx_dp", epsilon=eps).curve(RDP).rdp(a))
            assert mine <= rr * (1 + 1e-12)

    def test_rdp_dominates_pld_lower(self):
        rdp = self._curve(RDP)
        from_pld = self._curve(PLD).to(RDP)
        for d in ("forward", "backward"):
            mine = rdp.rdp(ALPHAS[:3], d)
            pair = from_pld.rdp(ALPHAS[:3], d, "lower")
            assert np.all(mine <= pair), (d, mine, pair)


class TestBoundedRangeContract(_BRContract):
    mechanism = _mech("bounded_range", epsilon=1.0)
    bad_parameters = [dict(epsilon=-1.0), dict(epsilon=NAN), dict(epsilon=math.inf),
                      dict(epsilon="1"), dict(sensitivity=2.0), dict(adaptive="yes"),
                      dict(adaptive=1)]


class TestExponentialMechanismContract(_BRContract):
    mechanism = _mech("exponential_mechanism", epsilon=1.6, monotone=True)
    br_epsilon = 0.8
    bad_parameters = [dict(epsilon=-0.1), dict(epsilon=NAN), dict(monotone="no"),
                      dict(adaptive=None), dict(sensitivity=0.5)]


class TestPermuteAndFlipContract(MechanismContract):
    mechanism = _mech("permute_and_flip", epsilon=1.0)
    bad_parameters = [dict(epsilon=-1.0), dict(epsilon=NAN), dict(sensitivity=2.0)]


# -------------------------------------------------------------- one use
def test_single_use_profile_is_the_sup_over_the_two_point_pairs():
    """(1 − e^{(ε'−ε)/2})²/(1 − e^{−ε}) against the max over t at 30 digits."""
    for eps in (0.1, 1.0, 3.0):
        for e1 in (-0.9 * eps, -0.3 * eps, 0.0, 0.5 * eps, 0.95 * eps):
            want = _mp_sup_over_t(eps, 1, e1, grid=40)
            assert float(br_profile(e1, eps)) == pytest.approx(want, rel=1e-11, abs=1e-300)


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_one_use_is_strictly_tighter_than_pure_dp(eps):
    """δ(0) = tanh(ε/4) for ε-BR against tanh(ε/2) for ε-DP, and below it everywhere
    inside (−ε, ε)."""
    prof = _mech("bounded_range", epsilon=eps).curve(PrivacyProfile)
    dp = _mech("approx_dp", epsilon=eps).curve(PrivacyProfile)
    assert float(prof.delta(0.0)) == pytest.approx(math.tanh(eps / 4), rel=1e-13)
    assert float(dp.delta(0.0)) == pytest.approx(math.tanh(eps / 2), rel=1e-13)
    grid = np.linspace(-0.99 * eps, 0.99 * eps, 41)
    assert np.all(prof.delta(grid) < dp.delta(grid))


def test_profile_limits_and_symmetry():
    pair = _mech("exponential_mechanism", epsilon=2.0).pair()
    assert pair.symmetric
    e = np.array([-np.inf, -5.0, -2.0, 2.0, 3.0, np.inf])
    np.testing.assert_allclose(pair.profile(e), [1.0, -math.expm1(-5.0), -math.expm1(-2.0),
                                                 0.0, 0.0, 0.0], atol=1e-15)
    assert float(pair.profile(-3.0, "forward")) == float(pair.profile(-3.0, "backward"))


# ------------------------------------------------------------ the k-fold profile
KS = [1, 2, 3, 5, 10, 20, 50]


@pytest.mark.parametrize("k", KS)
def test_composed_profile_against_mpmath(k):
    """DDR20's max over m of G_m(t_m) against the sup over t of the exact binomial sum
    at 30 digits (a t grid plus golden refinement at its peaks): equal to 1e-9."""
    eps = 0.5
    for e1 in (0.0, 0.3 * k * eps ** 2 + 0.2, 0.5 * math.sqrt(k) * eps):
        up, lo = br_composed_profile(np.array([e1]), eps, k)
        want = _mp_sup_over_t(eps, k, e1, grid=max(40, 2 * k))
        assert lo[0] <= want * (1 + 1e-12) + 1e-300
        assert up[0] >= want * (1 - 1e-12)
        assert float(up[0]) == pytest.approx(want, rel=1e-9, abs=1e-300), (k, e1)


@pytest.mark.slow
@pytest.mark.parametrize("k", range(1, 51))
def test_composed_profile_against_mpmath_every_k(k):
    eps = 0.2
    for e1 in (0.0, 0.1 * k * eps, 0.4 * k * eps):
        up, _ = br_composed_profile(np.array([e1]), eps, k)
        assert float(up[0]) == pytest.approx(_mp_sup_over_t(eps, k, e1, grid=200),
                                              rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("k", [2, 10, 50])
def test_batch_pair_brackets_the_exact_profile(k):
    """Between grid points the batch pair's upper profile is a chord (above the truth)
    and its lower one below; both within 1e-3 of the exact value."""
    eps = 0.3
    pair = accounting.compose((_mech("bounded_range", epsilon=eps, adaptive=False).pair(), k))
    assert isinstance(pair, BoundedRangeBatchPair) and not pair.exact
    e = np.linspace(0.0, 0.8 * k * eps, 37) + 1e-3
    exact, _ = br_composed_profile(e, eps, k)
    up = pair.profile(e, "forward", "upper")
    lo = pair.profile(e, "forward", "lower")
    assert np.all(up >= exact * (1 - 1e-12)) and np.all(lo <= exact * (1 + 1e-12) + 1e-300)
    big = exact > 1e-12
    assert np.all(up[big] <= exact[big] * 1.001) and np.all(lo[big] >= exact[big] * 0.999)
    # negative ε' by the complement identity of a symmetric pair
    neg = -e[:5]
    np.testing.assert_allclose(pair.profile(neg), -np.expm1(neg) + np.exp(neg) * up[:5],
                               rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(t=st.floats(0.0, 1.0), k=st.integers(1, 30), frac=st.floats(-0.5, 1.0))
def test_batch_profile_never_below_any_two_point_product(t, k, frac):
    """Soundness: δ(RR_t^{⊗k})(ε') ≤ the batch pair's profile, for every t and ε'."""
    eps = 0.7
    e1 = frac * k * eps * 0.6
    exact = float(_mp_delta_power(eps, t * eps, k, e1))
    pair = br.batch_pair(eps, k) if k > 1 else br.BoundedRangePair(eps)
    assert float(pair.profile(e1)) >= exact * (1 - 1e-10) - 1e-300


@settings(max_examples=25, deadline=None)
@given(ts=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=3), frac=st.floats(0.0, 1.0))
def test_unequal_t_never_beat_the_equal_t_sup(ts, frac):
    """The non-adaptive worst case has all t_i equal (DDR20 §5): the product of RR_{t_i}
    with different t_i never exceeds the batch profile."""
    eps, k = 1.0, len(ts)
    e1 = frac * k * eps
    with mpmath.workdps(30):
        exact = float(_mp_delta_product(eps, [t * eps for t in ts], e1))
    up, _ = br_composed_profile(np.array([e1]), eps, k)
    assert up[0] >= exact * (1 - 1e-10) - 1e-300


# --------------------------------------------------------- composition results
def test_bounded_range_composition_is_tighter_than_pure_dp():
    """100 exponential mechanisms at ε = 0.1, δ = 1e-6: the exact ε-DP composition
    (Kairouz–Oh–Viswanath, the ``approx_dp`` law) gives ε ≈ 4.77; the adaptive BR
    composition (PLD of the dominating pair) ≈ 2.61; the zCDP bound ε²/8 (the same
    ρ = 0.125 as autodp's ExponentialMechanism) ≈ 2.42; DDR20's optimal non-adaptive
    composition ≈ 2.25 — under half of pure DP's."""
    eps, k, delta = 0.1, 100, 1e-6

    def answer(mech, accountant="pld"):
        acct = Accountant()
        acct.compose(mech, k)
        return float(acct.under(accountant).epsilon(delta))
    pure = answer(_mech("approx_dp", epsilon=eps))
    adaptive = answer(_mech("exponential_mechanism", epsilon=eps))
    batch = answer(_mech("exponential_mechanism", epsilon=eps, adaptive=False))
    zcdp = answer(_mech("exponential_mechanism", epsilon=eps), "zcdp")
    assert pure == pytest.approx(4.7747, abs=2e-3)
    assert adaptive == pytest.approx(2.6118, abs=2e-3)
    assert zcdp == pytest.approx(2.4190932, abs=1e-6)
    assert batch == pytest.approx(2.2460, abs=2e-3)
    assert batch < zcdp < adaptive < 0.55 * pure
    # the batch answer against δ_k at that ε computed directly (the profile's root)
    up, _ = br_composed_profile(np.array([batch]), eps, k)
    assert up[0] == pytest.approx(delta, rel=2e-2)


def test_autodp_exponential_mechanism_agrees():
    """autodp's ExponentialMechanism (ρ = ε²/8 zCDP and pure ε-DP's RDP, composed by
    RDP): the same ε as our RDP accountant, and our PLD is no larger."""
    zoo = pytest.importorskip("autodp.mechanism_zoo")
    transformers = pytest.importorskip("autodp.transformer_zoo")
    theirs = transformers.Composition()([zoo.ExponentialMechanism(0.1)], [100])
    acct = Accountant()
    acct.compose(_mech("exponential_mechanism", epsilon=0.1), 100)
    assert float(acct.under("rdp").epsilon(1e-6)) == pytest.approx(
        theirs.get_approxDP(1e-6), rel=1e-8)
    assert float(acct.epsilon(1e-6)) <= theirs.get_approxDP(1e-6) * 1.1


def test_zcdp_is_epsilon_squared_over_eight():
    for eps in (0.05, 0.5, 2.0):
        z = _mech("bounded_range", epsilon=eps).curve(ZCDP)
        for d in ("forward", "backward"):
            assert z.rho(d) == pytest.approx(eps ** 2 / 8, rel=1e-12)
        assert z.provenance.exactness.value == "upper bound"
    assert _mech("exponential_mechanism", epsilon=2.0, monotone=True).curve(ZCDP).rho() == \
        pytest.approx(1.0 / 8, rel=1e-12)


def test_monotone_utility_halves_the_range():
    a = _mech("exponential_mechanism", epsilon=1.4, monotone=True).pair()
    b = _mech("bounded_range", epsilon=0.7).pair()
    e = np.linspace(-1, 1, 21)
    np.testing.assert_array_equal(a.profile(e), b.profile(e))


def test_adaptive_uses_compose_as_the_dominating_pair():
    pair = _mech("bounded_range", epsilon=0.5).pair()
    assert pair._self_compose(10) is None
    assert type(accounting.compose((pair, 10))).__name__ == "ComposedPair"
    batch = _mech("bounded_range", epsilon=0.5, adaptive=False).pair()
    ten = accounting.compose((batch, 10))
    assert isinstance(ten, BoundedRangeBatchPair)
    assert isinstance(accounting.compose((ten, 3)), BoundedRangeBatchPair)
    assert accounting.compose((ten, 3)).count == 30


def test_large_batch_falls_back_to_the_adaptive_composition(monkeypatch):
    monkeypatch.setattr(br, "MAX_BATCH", 20)
    pair = BoundedRangePair(0.5, adaptive=False)
    assert pair._self_compose(21) is None and pair._self_compose(20) is not None


# ------------------------------------------------------------ pure DP, δ = 0
@pytest.mark.parametrize("name", ["bounded_range", "exponential_mechanism"])
@pytest.mark.parametrize("adaptive", [True, False])
@pytest.mark.parametrize("k, eps", [(3, 1.0), (10, 1.0), (100, 0.1), (7, 0.3)])
def test_composition_answers_delta_zero_with_k_epsilon(name, adaptive, k, eps):
    """k ε-BR uses are kε-DP, and no better at δ = 0: the largest loss of the
    dominating pair's product is kε (the sup over the class, t → ε in RR_t; adaptive or
    not). main refused δ = 0 (a 1e-32 Chernoff tail above the composed window, or a
    1e-20 profile tail cut before kε, sent to +∞): now kε, the float at or above the
    exact product of k and ε, and finite at every δ below the tail too."""
    from fractions import Fraction
    acct = Accountant().compose(_mech(name, epsilon=eps, adaptive=adaptive), k)
    got = float(acct.epsilon(0.0))
    assert Fraction(got) >= k * Fraction(eps) and got <= k * eps * (1 + 3e-16)
    tiny = acct.epsilon(np.array([1e-300, 1e-40]))
    assert np.all(tiny <= got) and np.all(tiny >= 0.99 * got)     # not +∞
    assert float(acct.delta(got)) == 0.0
    assert float(acct.delta(0.999 * got)) > 0.0


def test_genuine_mass_at_infinity_still_refuses_delta_zero():
    """An (ε, δ) guarantee with δ > 0 has its mass at +∞: δ = 0 has no finite ε."""
    acct = Accountant().compose(_mech("approx_dp", epsilon=1.0, delta=1e-12), 3)
    with pytest.raises(ValueError, match="delta = 0"):
        acct.epsilon(0.0)
    acct = Accountant().compose(_mech("gaussian", sigma=1.0), 3)
    with pytest.raises(ValueError, match="delta = 0"):
        acct.epsilon(0.0)


# ----------------------------------------------------------- degenerate, bad input
@pytest.mark.parametrize("name", ["bounded_range", "exponential_mechanism", "permute_and_flip"])
def test_epsilon_zero_costs_nothing(name):
    mech = _mech(name, epsilon=0.0)
    assert float(mech.curve(PrivacyProfile).delta(0.0)) == 0.0
    acct = Accountant()
    acct.compose(mech, 50)
    assert float(acct.epsilon(1e-6)) == 0.0
    # the Rényi routes answer what they answer for any P = Q pair (their conversion's
    # own floor), e.g. a Gaussian of sensitivity 0
    free = Accountant()
    free.compose(_mech("gaussian", sigma=1.0, sensitivity=0.0), 50)
    for accountant in ("rdp", "zcdp"):
        assert float(acct.under(accountant).epsilon(1e-6)) == \
            float(free.under(accountant).epsilon(1e-6))
    assert float(mech.curve(ZCDP).rho()) == 0.0


@pytest.mark.parametrize("params, message", [
    (dict(epsilon=-0.5), "epsilon must be in"),
    (dict(epsilon=NAN), "epsilon"),
    (dict(epsilon=1.0, adaptive="false"), "adaptive must be True or False"),
])
def test_bad_input_is_a_clear_error(params, message):
    with pytest.raises((ValueError, TypeError), match=message):
        _mech("exponential_mechanism", **params)


def test_composed_profile_refuses_bad_arguments():
    with pytest.raises(ValueError, match="eps"):
        br_composed_profile(np.array([-1.0]), 1.0, 3)
    with pytest.raises((ValueError, TypeError), match="count"):
        br_composed_profile(np.array([0.0]), 1.0, 0)


# ------------------------------------------------------------- permute-and-flip
def _pf_law(u, eps):
    """The exact output law of permute-and-flip on utilities ``u`` (Δu = 1), by
    enumerating every visiting order: in order π, candidate π_i is released with
    probability q_{π_i}·∏_{j<i}(1 − q_{π_j}), q = exp(ε(u − max u)/2)."""
    import itertools
    u = np.asarray(u, dtype=float)
    q = np.exp(eps * (u - u.max()) / 2.0)
    perms = np.array(list(itertools.permutations(range(u.size))))
    qp = q[perms]
    reach = np.cumprod(np.hstack([np.ones((len(perms), 1)), 1.0 - qp[:, :-1]]), axis=1)
    law = np.zeros(u.size)
    np.add.at(law, perms, reach * qp / len(perms))
    return law


def _hockey(p, q, e1):
    return np.maximum(p[None, :] - np.exp(e1)[:, None] * q[None, :], 0.0).sum(axis=1)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_permute_and_flip_is_not_epsilon_bounded_range(eps):
    """Two candidates, gap d = 0 under x and 2Δ under x' (each utility moved by Δ):
    the worse candidate's probability is ½ then ½e^{−ε}, so the losses are ε and
    −log(2 − e^{−ε}): range ε + log(2 − e^{−ε}) > ε, within ε-DP."""
    def probs(gap):                         # (better, worse) of permute-and-flip
        worse = 0.5 * math.exp(-eps * gap / 2.0)    # coin exp(ε(u − u*)/(2Δ)), Δ = 1
        return np.array([1.0 - worse, worse])
    loss = np.log(probs(0.0) / probs(2.0))
    assert loss.max() - loss.min() == pytest.approx(eps + math.log(2 - math.exp(-eps)), rel=1e-12)
    assert loss.max() - loss.min() > eps and np.all(np.abs(loss) <= eps + 1e-12)
    np.testing.assert_allclose(_pf_law([0.0, 0.0], eps), probs(0.0)[::-1], rtol=1e-15)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_permute_and_flip_profile_is_the_laplace_pair(eps):
    """The pair is Laplace with Δ/b = ε: δ(ε') = 1 − e^{(ε'−ε)/2} on [−ε, ε] (1 − e^{ε'}
    below, 0 above), below the ε-DP pair (randomized response) accounted before:
    δ(0) = 1 − e^{−ε/2} against tanh(ε/2)."""
    pf = _mech("permute_and_flip", epsilon=eps).pair()
    grid = np.linspace(-2 * eps, 2 * eps, 41)
    inside = np.clip(grid, -eps, eps)
    want = np.where(grid >= eps, 0.0, np.where(grid <= -eps, -np.expm1(np.minimum(grid, 0.0)),
                                               -np.expm1((inside - eps) / 2.0)))
    for d in ("forward", "backward"):
        np.testing.assert_allclose(pf.profile(grid, d), want, rtol=1e-13, atol=1e-300)
    dp = _mech("approx_dp", epsilon=eps).pair()
    assert float(pf.profile(0.0)) == pytest.approx(-math.expm1(-eps / 2), rel=1e-14)
    assert float(dp.profile(0.0)) == pytest.approx(math.tanh(eps / 2), rel=1e-14)
    assert np.all(pf.profile(grid) <= dp.profile(grid) + 1e-15)
    strict = np.abs(grid) < 0.99 * eps      # equal (1 − e^{ε'}, 0) outside [−ε, ε]
    assert np.all(pf.profile(grid[strict]) < dp.profile(grid[strict]))
    assert float(pf.curve(RDP).renyi(np.inf)) == eps      # still ε-DP, and no more


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_permute_and_flip_worst_case_by_exact_enumeration(eps):
    """Random utility vectors on 2 to 5 candidates, each utility moved by at most Δu = 1
    (mostly ±1, the extreme points), output laws by enumerating every visiting order:
    no instance's δ(ε') exceeds the pair's, in either direction (the module's proof),
    and two candidates at gap −(ε' + ε)/ε moved by (1, −1) attain it (it is tight)."""
    rng = np.random.default_rng(20100)
    pair = _mech("permute_and_flip", epsilon=eps).pair()
    e1 = np.linspace(-1.2 * eps, 1.2 * eps, 49)
    bound = pair.profile(e1)
    worst = np.zeros(e1.size)
    for _ in range(300):
        n = int(rng.integers(2, 6))
        u = rng.normal(0.0, rng.choice([0.3, 1.0, 3.0, 10.0]) / eps, n)
        s = rng.choice([-1.0, 1.0], n) if rng.random() < 0.8 else rng.uniform(-1.0, 1.0, n)
        p, q = _pf_law(u, eps), _pf_law(u + s, eps)
        assert p.sum() == pytest.approx(1.0, abs=1e-14)
        worst = np.maximum(worst, np.maximum(_hockey(p, q, e1), _hockey(q, p, e1)))
    assert np.all(worst <= bound + 1e-13), float(np.max(worst - bound))
    for x in (-0.5 * eps, 0.0, 0.3 * eps, 0.9 * eps):
        u = np.array([-(x + eps) / eps, 0.0])
        got = _hockey(_pf_law(u + np.array([1.0, -1.0]), eps), _pf_law(u, eps), np.array([x]))
        assert float(got[0]) == pytest.approx(float(pair.profile(x)), rel=1e-12)


def test_permute_and_flip_composes_as_laplace():
    """k uses compose as the Laplace pair's PLD: the same ε(δ) as Laplace(b = 1/ε)."""
    for eps, k in ((0.5, 20), (1.0, 5)):
        got = Accountant().compose(_mech("permute_and_flip", epsilon=eps), k).epsilon(1e-6)
        lap = Accountant().compose(_mech("laplace", b=1.0 / eps), k).epsilon(1e-6)
        rr = Accountant().compose(_mech("approx_dp", epsilon=eps), k).epsilon(1e-6)
        assert float(got) == pytest.approx(float(lap), rel=1e-12) and float(got) < float(rr)


# ------------------------------------------------------------------------ CLI
def test_command_line_reaches_the_batch_composition(capsys):
    code = main(["epsilon", "exponential_mechanism", "--param-epsilon", "0.1", "--adaptive",
                 "false", "--compose", "100", "--delta", "1e-6", "--accountant", "pld",
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    assert payload["params"]["adaptive"] is False
    acct = Accountant()
    acct.compose(_mech("exponential_mechanism", epsilon=0.1, adaptive=False), 100)
    want = float(acct.epsilon(1e-6))
    assert payload["results"]["pld"]["epsilon"][0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("argv, message", [
    (["permute_and_flip", "--param-epsilon", "-1"], "epsilon must be in"),
    (["bounded_range", "--param-epsilon", "1", "--adaptive", "maybe"], "boolean"),
])
def test_command_line_bad_input(capsys, argv, message):
    code = main(["epsilon", *argv, "--delta", "1e-6"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (code, out, err)
    assert message in err


def test_large_epsilon_stays_finite():
    """ε far beyond e^{ε} overflow: the masses are computed without it (no NaN)."""
    up, lo = br_composed_profile(np.array([0.0, 100.0, 699.0]), 800.0, 3)
    assert np.all(np.isfinite(up)) and np.all((0.0 <= lo) & (lo <= up) & (up <= 1.0))
    # one use: (1 − e^{(ε'−ε)/2})²/(1 − e^{−ε}) ≈ 1 − 2e^{−400} at ε' = 0
    assert float(br_profile(0.0, 800.0)) == 1.0
    pair = br.batch_pair(800.0, 2)
    assert pair is None or np.all(np.isfinite(pair.profile(np.array([0.0, 10.0]))))


# ------------------------------------------- issue 22: the Rényi curve at α = 1
def _max_kl_brute_force(eps):
    """max over t ∈ [0, ε] of KL(RR_t) = p log(p/q) + (1 − p) log((1 − p)/(1 − q)), in
    mpmath (RR_t's masses from ``_mp_rr``), by a dense grid then a bounded maximisation
    (scipy) around its best point."""
    from scipy.optimize import minimize_scalar

    def kl(t):
        with mpmath.workdps(40):
            p, q = _mp_rr(eps, t)
            return float(p * mpmath.log(p / q) + (1 - p) * mpmath.log((1 - p) / (1 - q)))
    grid = np.linspace(1e-9 * eps, eps * (1 - 1e-9), 401)
    j = int(np.argmax([kl(t) for t in grid]))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
    res = minimize_scalar(lambda t: -kl(t), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-12 * eps})
    return -res.fun


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0, 6.0])
def test_kl_is_the_largest_over_bounded_range_pairs(eps):
    # D_1 was D_{1+τ} of the ε²/8 bound, α·ε²/8 = 0.125000125 at ε = 1; the largest KL of
    # an ε-BR pair is 0.1233015615 there (a two-point pair, by convexity)
    best = _max_kl_brute_force(eps)
    assert br.br_max_kl(eps) == pytest.approx(best, rel=1e-10)
    assert br.br_max_kl(eps) >= best * (1 - 1e-13)
    orders = (1.0 + 1e-6, 1.001, 1.1, 1.5)
    # the largest D_α of the two-point pairs on a grid (40 digits: near α = 1 the float
    # form loses ~1e-16/(α − 1) to cancellation), a lower bound of the class's sup
    with mpmath.workdps(40):
        class_max = []
        for alpha in orders:
            a = mpmath.mpf(alpha)
            vals = []
            for t in np.linspace(0.0, eps, 401)[1:-1]:
                _, q = _mp_rr(eps, t)            # E_Q[(dP/dQ)^α] over the two outcomes
                t = mpmath.mpf(t)
                vals.append(mpmath.log(q * mpmath.exp(a * t) + (1 - q)
                                       * mpmath.exp(a * (t - eps))) / (a - 1))
            class_max.append(float(max(vals)))
    for mech in (_mech("bounded_range", epsilon=eps),
                 _mech("exponential_mechanism", epsilon=eps),
                 _mech("exponential_mechanism", epsilon=2 * eps, monotone=True)):
        rdp = mech.curve(RDP)
        for d in ("forward", "backward"):
            d1 = float(rdp.rdp(1.0, d))
            assert best * (1 - 1e-13) <= d1 <= best * (1 + 1e-10)
            # continuous at α = 1, and above every two-point pair's D_α just above it
            for alpha, sup in zip(orders, class_max):
                above = float(rdp.rdp(alpha, d))
                assert above >= sup * (1 - 1e-12)
                # D_α = κ + (α − 1)ε²/8 with κ rising from KL* to ε²/8 by α = 2
                assert above <= d1 + (alpha - 1) * eps ** 2 / 4 * (1 + 1e-12)
    assert float(_mech("exponential_mechanism", epsilon=1.0).curve(RDP).rdp(1.0)) == \
        pytest.approx(0.1233015615, rel=1e-9)


def test_kl_composes_and_orders_from_two_are_unchanged():
    eps, k = 0.7, 40
    acct = Accountant().compose(_mech("exponential_mechanism", epsilon=eps), k)
    rdp = accounting.compose((_mech("exponential_mechanism", epsilon=eps).curve(RDP), k))
    assert float(rdp.rdp(1.0)) == pytest.approx(k * _max_kl_brute_force(eps), rel=1e-10)
    assert float(rdp.rdp(np.inf)) == pytest.approx(k * eps, rel=1e-15)
    # Cesar–Rogers' αε²/8 (and pure DP's) from α = 2 on: the zCDP ρ stays ε²/8
    pair = BoundedRangePair(eps)
    t = np.array([1.0, 2.0, 7.5, 100.0])
    for d in (Direction.FORWARD, Direction.BACKWARD):
        rr = _mech("approx_dp", epsilon=eps).pair()._cgf(t, d)
        np.testing.assert_array_equal(pair._cgf(t, d),
                                      np.minimum(t * (t + 1) * eps ** 2 / 8, rr))
    assert _mech("exponential_mechanism", epsilon=eps).curve(ZCDP).rho() == \
        pytest.approx(eps ** 2 / 8, rel=1e-12)
    assert acct.under("rdp").epsilon(1e-6) > 0
