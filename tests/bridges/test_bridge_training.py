"""The framework-free DP-SGD accountant (no torch, no Opacus needed)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

import accounting
from accounting_bridges.training import MECHANISM, TrainingAccountant, dpsgd_mechanism

DELTA = 1e-5
STEP = 1e-3


def gaussian_delta(mu: float, eps: float) -> float:
    """δ(ε) of μ-GDP (Balle and Wang 2018, arXiv:1805.06530, Thm 8), closed form."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def test_steps_merge_into_runs_and_len_counts_steps():
    acc = TrainingAccountant(grid_step=STEP)
    for _ in range(3):
        acc.step(noise_multiplier=1.0, sample_rate=0.01)
    acc.step(noise_multiplier=2.0, sample_rate=0.01)
    acc.step(noise_multiplier=1.0, sample_rate=0.01)
    assert acc.history == [(1.0, 0.01, 3), (2.0, 0.01, 1), (1.0, 0.01, 1)]
    assert len(acc) == 5
    assert acc.mechanism() == MECHANISM == "accounting_pld"


def test_epsilon_is_the_pld_upper_bound_of_the_composition():
    acc = TrainingAccountant(grid_step=STEP)
    for _ in range(200):
        acc.step(noise_multiplier=1.1, sample_rate=0.02)
    for _ in range(50):
        acc.step(noise_multiplier=0.9, sample_rate=0.05)
    core = accounting.Accountant(step=STEP)
    core.compose(accounting.mechanism("subsampled_gaussian", q=0.02, sigma=1.1), count=200)
    core.compose(accounting.mechanism("subsampled_gaussian", q=0.05, sigma=0.9), count=50)
    assert acc.get_epsilon(DELTA) == core.epsilon(DELTA)
    lo, hi = acc.get_epsilon_interval(DELTA)
    assert lo <= hi == acc.get_epsilon(DELTA)
    assert hi - lo <= 1e-3 * hi
    # the other accountants are looser, never tighter, than the PLD's certified bound
    assert acc.get_epsilon(DELTA, accountant="rdp") >= lo
    assert acc.get_epsilon(DELTA, accountant="zcdp") >= acc.get_epsilon(DELTA, accountant="rdp")


def test_full_batch_steps_are_gaussian_in_closed_form():
    acc = TrainingAccountant(grid_step=STEP)
    for _ in range(16):
        acc.step(noise_multiplier=4.0, sample_rate=1.0)
    mu = math.sqrt(16) / 4.0        # 16 Gaussians of σ = 4 are one of μ = 1
    lo, hi = acc.get_epsilon_interval(DELTA)
    from scipy.optimize import brentq
    exact = brentq(lambda e: gaussian_delta(mu, e) - DELTA, 0.0, 20.0, xtol=1e-13)
    assert lo <= exact <= hi
    assert acc.get_delta(exact) == pytest.approx(DELTA, rel=1e-3)


def test_degenerate_steps():
    acc = TrainingAccountant()
    assert len(acc) == 0 and acc.get_epsilon(DELTA) == 0.0 and acc.get_delta(1.0) == 0.0
    acc.step(noise_multiplier=1.0, sample_rate=0.0)    # nobody sampled: free
    assert acc.get_epsilon(DELTA) == 0.0 and len(acc) == 1
    acc.step(noise_multiplier=0.0, sample_rate=0.1)    # no noise: non-private
    assert acc.get_epsilon(DELTA) == math.inf
    assert acc.get_epsilon_interval(DELTA) == (math.inf, math.inf)
    assert acc.get_delta(5.0) == 1.0
    with pytest.raises(ValueError, match="non-private"):
        acc.accountant()


def test_state_dict_round_trip_is_exact_and_plain():
    acc = TrainingAccountant(grid_step=STEP)
    for z, q in [(1.0, 0.01)] * 30 + [(1.3, 0.02)] * 10:
        acc.step(noise_multiplier=z, sample_rate=q)
    state = acc.state_dict()
    text = json.dumps(state)                # plain numbers and strings only
    again = TrainingAccountant()
    again.load_state_dict(json.loads(text))
    assert again.history == acc.history and again.grid_step == STEP
    assert again.get_epsilon(DELTA) == acc.get_epsilon(DELTA)
    assert len(again) == 40


def test_history_written_directly_is_read_afresh():
    # Opacus' get_noise_multiplier assigns ``history`` and asks again
    acc = TrainingAccountant(grid_step=STEP)
    acc.history = [(2.0, 0.1, 10)]
    first = acc.get_epsilon(DELTA)
    acc.history = [(1.0, 0.1, 10)]
    assert acc.get_epsilon(DELTA) > first
    acc.history = [(1.0, 0.1, "ten")]
    with pytest.raises(TypeError, match=r"history\[0\] steps"):
        acc.get_epsilon(DELTA)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(noise_multiplier=-1.0, sample_rate=0.1), ValueError, "noise_multiplier"),
    (dict(noise_multiplier=1.0, sample_rate=1.5), ValueError, "sample_rate"),
    (dict(noise_multiplier=float("nan"), sample_rate=0.1), ValueError, "noise_multiplier"),
    (dict(noise_multiplier="1", sample_rate=0.1), TypeError, "noise_multiplier"),
])
def test_bad_steps_are_refused(kwargs, error, match):
    acc = TrainingAccountant()
    with pytest.raises(error, match=match):
        acc.step(**kwargs)
    assert acc.history == []


def test_bad_queries_and_states_are_refused():
    acc = TrainingAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(TypeError, match="alphas"):
        acc.get_epsilon(DELTA, alphas=[2, 3])
    with pytest.raises(ValueError, match="delta"):
        acc.get_epsilon(0.0)
    with pytest.raises(ValueError, match="accountant"):
        acc.get_epsilon(DELTA, accountant="gdp")
    with pytest.raises(ValueError, match="'rdp' cannot be loaded"):
        acc.load_state_dict({"history": [], "mechanism": "rdp"})
    with pytest.raises(ValueError, match="no 'history'"):
        acc.load_state_dict({"mechanism": MECHANISM})
    with pytest.raises(ValueError, match="unknown keys"):
        acc.load_state_dict({"history": [], "mechanism": MECHANISM, "alphas": [2]})
    with pytest.raises(ValueError, match=r"history\[1\] must be"):
        acc.load_state_dict({"history": [(1.0, 0.1, 2), (1.0, 0.1)], "mechanism": MECHANISM})
    with pytest.raises(ValueError, match="grid_step|step"):
        TrainingAccountant(grid_step=0.0)
    # a refused state leaves the accountant as it was
    assert acc.history == [(1.0, 0.1, 1)]


def test_dpsgd_mechanism():
    assert dpsgd_mechanism(1.0, 0.0) is None
    assert dpsgd_mechanism(2.0, 1.0) == accounting.mechanism("gaussian", sigma=2.0)
    assert dpsgd_mechanism(2.0, 0.5) == accounting.mechanism("subsampled_gaussian", q=0.5,
                                                             sigma=2.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        dpsgd_mechanism(0.0, 0.5)


def test_matches_dp_accounting_on_the_same_steps():
    E = pytest.importorskip("dp_accounting.dp_event")
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
    acc = TrainingAccountant(grid_step=STEP)
    for _ in range(100):
        acc.step(noise_multiplier=1.0, sample_rate=0.05)
    theirs = PLDAccountant(value_discretization_interval=1e-4)
    theirs.compose(E.PoissonSampledDpEvent(0.05, E.GaussianDpEvent(1.0)), 100)
    lo, hi = acc.get_epsilon_interval(DELTA)
    assert lo - 1e-5 <= theirs.get_epsilon(DELTA) <= hi + 1e-5
    assert np.isclose(hi, theirs.get_epsilon(DELTA), rtol=2e-3)


def test_unsampled_steps_are_free_whatever_the_noise():
    """q = 0 samples nobody: ε with such steps (noise multiplier 0 included) equals ε
    without them, on every accountant (before: noise_multiplier = 0, sample_rate = 0
    made get_epsilon raise "noise_multiplier must be in (0, inf)")."""
    plain, padded = TrainingAccountant(grid_step=STEP), TrainingAccountant(grid_step=STEP)
    for acc in (plain, padded):
        for _ in range(20):
            acc.step(noise_multiplier=1.0, sample_rate=0.01)
    for z in (0.0, 0.0, 3.0, 0.0):
        padded.step(noise_multiplier=z, sample_rate=0.0)
    padded.step(noise_multiplier=1.0, sample_rate=0.01)
    plain.step(noise_multiplier=1.0, sample_rate=0.01)
    assert len(padded) == len(plain) + 4 and not padded.non_private()
    for accountant in ("pld", "rdp", "zcdp"):
        assert padded.get_epsilon(DELTA, accountant=accountant) == \
            plain.get_epsilon(DELTA, accountant=accountant) > 0.0
    assert padded.get_epsilon_interval(DELTA) == plain.get_epsilon_interval(DELTA)
    assert padded.get_delta(1.0) == plain.get_delta(1.0)
    only_free = TrainingAccountant()
    only_free.step(noise_multiplier=0.0, sample_rate=0.0)
    assert only_free.get_epsilon(DELTA) == 0.0 and only_free.get_delta(0.0) == 0.0
    assert dpsgd_mechanism(0.0, 0.0) is None
    with pytest.raises(ValueError, match="noise_multiplier"):
        dpsgd_mechanism(-1.0, 0.0)
