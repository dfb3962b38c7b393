"""Shuffled batches (``accounting_mechanisms.shuffling``): the certified bracket of one
epoch and of several, against brute-force enumeration of permutations, the paper's
"cube" bound, Monte Carlo with its standard error, Poisson, and bad input."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from accounting_bridges.training import TrainingAccountant
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import accounting
from accounting_mechanisms.shuffling import (
    PoissonForShuffledWarning,
    Shuffled,
    max_statistic_pair,
    shuffled_batches,
    shuffling_report,
)

DELTA = 1e-5


def gaussian(sigma: float, **kw):
    return accounting.mechanism("gaussian", sigma=sigma, **kw)


def bracket(pair, count: int = 1, delta: float = DELTA) -> tuple[float, float]:
    lo, hi = accounting.Accountant().compose(pair, count).epsilon_interval(delta)
    return float(lo), float(hi)


def gaussian_eps(mu: float, count: int = 1, delta: float = DELTA) -> float:
    return float(accounting.Accountant().compose(gaussian(1.0 / mu), count).epsilon(delta))


# ------------------------------------------------------------------ the bracket
@settings(max_examples=8, deadline=None)
@given(sigma=st.floats(0.6, 3.0), batches=st.sampled_from([2, 7, 50, 400]),
       epochs=st.integers(1, 3))
def test_lower_is_at_most_upper(sigma, batches, epochs):
    pair = Shuffled(gaussian(sigma), 1, batches).pair()
    lo, hi = bracket(pair, epochs)
    exact_upper = gaussian_eps(1.0 / sigma, epochs)
    assert 0.0 <= lo <= exact_upper * (1 + 1e-9) <= hi * (1 + 1e-9)


def test_one_batch_is_the_gaussian_itself():
    """T = 1 (b = n): the lower pair is N(2μ, 1) against N(μ, 1), the base itself: the
    bracket closes on the Gaussian's ε (Balle–Wang closed form)."""
    for relation in ("add_remove", "replace_one"):
        pair = Shuffled(gaussian(1.0, neighbouring=relation), 100, 100,
                        neighbouring=relation).pair()
        lo, hi = bracket(pair)
        exact = gaussian_eps(1.0)
        assert lo <= exact <= hi
        assert lo == pytest.approx(exact, rel=2e-4)


def test_lower_bound_falls_with_batches_and_rises_with_epochs():
    lows = [bracket(Shuffled(gaussian(1.0), 1, t).pair())[0] for t in (2, 10, 100, 1000)]
    assert all(a > b for a, b in zip(lows, lows[1:]))
    pair = Shuffled(gaussian(1.0), 1, 10).pair()
    by_epochs = [bracket(pair, e)[0] for e in (1, 2, 4)]
    assert by_epochs[0] < by_epochs[1] < by_epochs[2]
    assert by_epochs[2] <= gaussian_eps(1.0, 4)


def test_measured_numbers_of_the_module_docstring():
    assert bracket(Shuffled(gaussian(1.0), 100, 1000).pair())[0] == pytest.approx(4.343, abs=1e-3)
    assert bracket(Shuffled(gaussian(1.0), 100, 100000).pair())[0] == pytest.approx(2.882, abs=1e-3)
    assert gaussian_eps(1.0) == pytest.approx(4.377, abs=1e-3)


# ------------------------------------------------------------------ brute force
def _enumerated_max_cdf(c: np.ndarray, n: int, b: int, drop_last: bool, with_record: bool,
                        sigma: float = 1.0) -> np.ndarray:
    """P(max_t (batch sum_t − known offset_t) ≤ c), by enumerating every permutation of
    n records: record 0 contributes +1 (or is a ghost, 0), the others −1; batches of b
    in order, the last smaller or dropped. The offset of batch t is −(its size), what
    the adversary knows; the observed batches' noisy sums are N(sum, σ²)."""
    t_count, _ = shuffled_batches(b, n, drop_last)
    total = np.zeros_like(c)
    perms = list(itertools.permutations(range(n)))
    for perm in perms:
        prob = np.ones_like(c)
        for t in range(t_count):
            batch = perm[t * b:(t + 1) * b]
            value = sum((1.0 if with_record else 0.0) if r == 0 else -1.0 for r in batch)
            mean = value + len(batch)          # minus the known offset −|batch|
            prob = prob * norm.cdf((c - mean) / sigma)
        total += prob
    return total / len(perms)


@pytest.mark.parametrize("n,b,drop_last", [(6, 2, False), (5, 2, False), (5, 2, True),
                                           (4, 4, False), (6, 1, False)])
def test_max_statistic_law_matches_enumerated_permutations(n, b, drop_last):
    """The reduction of §4's datasets to 'one coordinate shifted by 2 (record) or 1
    (ghost), with probability γ' checked against every permutation of n ≤ 6 records:
    the CDFs of M agree, and every profile value is at most the best threshold test on
    the enumerated laws (so it is the hockey-stick of a test the adversary can run)."""
    pair = Shuffled(gaussian(1.0), b, n, drop_last).lower_pair()
    c = np.linspace(-3.0, 8.0, 2201)
    f_p = _enumerated_max_cdf(c, n, b, drop_last, True)
    f_q = _enumerated_max_cdf(c, n, b, drop_last, False)
    got_p, got_q = pair.cdf(c)
    np.testing.assert_allclose(got_p, f_p, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(got_q, f_q, rtol=1e-9, atol=1e-15)
    for eps in (0.0, 0.3, 1.0, 2.0):
        best = max(float(np.max((1 - f_p) - math.exp(eps) * (1 - f_q))),
                   float(np.max(f_p - math.exp(eps) * f_q)), 0.0)
        got = float(pair.profile(eps, "forward"))
        # the test's grid of thresholds (0.005 apart) finds the optimum to ~1e-6
        assert got <= best + 2e-6
        assert got >= best - 1e-4


def test_enumerated_pair_sits_inside_the_bracket():
    """n = 6, b = 2: the full 3-dimensional mixture of the enumerated permutations has a
    δ(ε) (Monte Carlo over its exact loss, 4 standard errors) between the lower pair's
    profile and the Gaussian's."""
    n, b, sigma, eps = 6, 2, 1.0, 1.0
    t_count = n // b
    # the record's batch is uniform over the 3 batches (by symmetry of the permutations)
    rng = np.random.default_rng(7)
    m = 400_000
    j = rng.integers(0, t_count, m)
    x = rng.standard_normal((m, t_count)) + np.eye(t_count)[j] * 1.0   # ghost: shift 1
    x[np.arange(m), j] += 1.0                                           # record: shift 2

    def log_mix(v, shift):
        return np.logaddexp.reduce(shift * v - shift ** 2 / 2, axis=1) - math.log(t_count)
    loss = log_mix(x, 2.0) - log_mix(x, 1.0)
    vals = np.maximum(1.0 - np.exp(eps - loss), 0.0)
    est, se = vals.mean(), vals.std() / math.sqrt(m)
    lower = float(Shuffled(gaussian(sigma), b, n).lower_pair().profile(eps, "forward"))
    upper = float(accounting.mechanism("gaussian", sigma=sigma).pair().profile(eps, "forward"))
    assert lower <= est + 4 * se
    assert est - 4 * se <= upper
    assert lower > 0.5 * est      # the max statistic keeps most of it


# ------------------------------------------------------------------ other anchors
def test_profile_is_the_papers_cube_bound():
    """arXiv:2403.17673 §4: δ ≥ max_C P(max > C) − e^ε Q(max > C) for the mixtures with
    means 2 and 1 (CDFs from scipy, a fine grid of C): our profile is that sup."""
    for t_count in (10, 100):
        pair = max_statistic_pair(2.0, 1.0, t_count)
        caps = np.linspace(-1.0, 12.0, 20001)
        out_p = 1 - norm.cdf(caps - 2.0) * norm.cdf(caps) ** (t_count - 1)
        out_q = 1 - norm.cdf(caps - 1.0) * norm.cdf(caps) ** (t_count - 1)
        for eps in (0.5, 1.5, 3.0):
            cube = float(np.max(out_p - np.exp(eps) * out_q))
            got = float(pair.profile(eps, "forward"))
            assert got == pytest.approx(cube, rel=1e-6)


def test_monte_carlo_of_the_lower_pair_loss():
    """δ(ε) = E_P[(1 − e^{ε − l(M)})₊] with M simulated as the max of T normals (one
    shifted by 2): within 4 standard errors of the pair's profile."""
    rng = np.random.default_rng(3)
    t_count, m = 20, 400_000
    pair = max_statistic_pair(2.0, 1.0, t_count)
    x = rng.standard_normal((m, t_count))
    x[:, 0] += 2.0
    loss = pair.loss(x.max(axis=1))
    for eps in (0.5, 2.0):
        vals = np.maximum(1.0 - np.exp(eps - loss), 0.0)
        est, se = vals.mean(), vals.std() / math.sqrt(m)
        got = float(pair.profile(eps, "forward"))
        assert abs(got - est) <= 4 * se


# ------------------------------------------------------------------ Poisson and the report
def test_report_shows_poisson_understating_shuffled_training():
    """T = 1000 batches, σ = 1, one epoch: Poisson (q = 1e-3) claims ε ≈ 0.15 while the
    shuffled job is certified above 2.88 — the gap of arXiv:2403.17673 §4."""
    with pytest.warns(PoissonForShuffledWarning, match="below the certified lower bound"):
        report = shuffling_report(1.0, 100, 100_000, 1, delta=DELTA)
    assert report.poisson < 0.2 < 2.8 < report.shuffled_lower <= report.shuffled_upper
    assert report.poisson_understates
    assert "Poisson" in str(report) and "understates" in str(report)
    assert report.shuffled_upper == pytest.approx(gaussian_eps(1.0), rel=1e-9)


def test_report_warns_even_where_poisson_is_larger():
    """σ = 0.5, T = 10: Poisson's ε exceeds the shuffled upper bound (a record can be
    sampled several times); still not the shuffled job's bound, so still a warning."""
    with pytest.warns(PoissonForShuffledWarning, match="not a bound"):
        report = shuffling_report(0.5, 100, 1000, 1, delta=DELTA)
    assert report.poisson > report.shuffled_upper
    assert not report.poisson_understates


# ------------------------------------------------------------------ bad input and policy
def test_batches_policy_when_b_does_not_divide_n():
    assert shuffled_batches(3, 10) == (4, 1.0)          # a smaller last batch
    assert shuffled_batches(3, 10, True) == (3, 0.9)    # the remainder sits out
    assert shuffled_batches(10, 10) == (1, 1.0)
    lo_keep, _ = bracket(Shuffled(gaussian(1.0), 3, 10, True).pair())
    lo_all, _ = bracket(Shuffled(gaussian(1.0), 3, 9).pair())
    assert lo_keep < lo_all       # a record left out with probability 0.1 leaks less


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(batch_size=11, dataset_size=10), ValueError, "batch_size must be at most"),
    (dict(batch_size=0, dataset_size=10), ValueError, "batch_size"),
    (dict(batch_size=2, dataset_size=2.5), (TypeError, ValueError), "dataset_size"),
    (dict(batch_size=2, dataset_size=10, drop_last="no"), TypeError, "drop_last"),
])
def test_bad_sizes_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        Shuffled(gaussian(1.0), **kwargs)


def test_bad_relation_and_report_input_are_refused():
    with pytest.raises(ValueError, match="replace_one"):
        Shuffled(gaussian(1.0, neighbouring="replace_one"), 1, 10)
    with pytest.raises(TypeError, match="base must be a Mechanism"):
        Shuffled("gaussian", 1, 10)
    for kwargs, match in ((dict(epochs=0), "epochs"), (dict(epochs=1.5), "epochs")):
        with pytest.raises((TypeError, ValueError), match=match):
            shuffling_report(1.0, 10, 100, delta=DELTA, **kwargs)
    with pytest.raises(ValueError, match="sigma"):
        shuffling_report(0.0, 10, 100, delta=DELTA)
    with pytest.raises(TypeError, match="grid"):
        shuffling_report(1.0, 10, 100, delta=DELTA, grid=1e-3)
    with pytest.raises(ValueError, match="shift_p and shift_q must differ"):
        max_statistic_pair(1.0, 1.0, 3)


# ------------------------------------------------------------------ the training accountant
def test_training_accountant_names_its_sampler_and_accounts_shuffling():
    poisson = TrainingAccountant()
    assert "Poisson" in poisson.describe() and "\n" not in poisson.describe()
    shuffled = TrainingAccountant(sampler="shuffle")
    assert "shuffled" in shuffled.describe()
    for acc in (poisson, shuffled):
        for _ in range(250):       # 2.5 epochs of 100 steps
            acc.step(noise_multiplier=1.0, sample_rate=0.01)
    lo, hi = shuffled.get_epsilon_interval(DELTA)
    # 3 epochs touched: at most 3 Gaussian uses; 2 complete epochs certified below
    assert hi >= gaussian_eps(1.0, 3) and hi == pytest.approx(gaussian_eps(1.0, 3), rel=1e-3)
    assert lo == pytest.approx(bracket(Shuffled(gaussian(1.0), 1, 100).pair(), 2)[0], rel=1e-6)
    assert poisson.get_epsilon(DELTA) < lo        # Poisson understates it
    state = shuffled.state_dict()
    assert state["sampler"] == "shuffle"
    again = TrainingAccountant()
    again.load_state_dict(dict(state))
    assert again.sampler == "shuffle" and again.get_epsilon(DELTA) == shuffled.get_epsilon(DELTA)


def test_training_accountant_refuses_bad_sampler_and_rates():
    with pytest.raises(ValueError, match="sampler must be one of poisson, shuffle"):
        TrainingAccountant(sampler="balls")
    acc = TrainingAccountant(sampler="shuffle")
    acc.step(noise_multiplier=1.0, sample_rate=0.3)
    with pytest.raises(ValueError, match="steps per epoch"):
        acc.get_epsilon(DELTA)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TrainingAccountant(sampler="shuffle").get_epsilon(DELTA) == 0.0
