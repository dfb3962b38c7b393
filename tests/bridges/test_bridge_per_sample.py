"""The training accountant (and so the Opacus bridge, its subclass) with per-sample
norms: per-example accounting alongside the aggregate."""

from __future__ import annotations

import numpy as np
import pytest
from accounting_bridges.training import TrainingAccountant

from accounting_mechanisms.per_example import individual_epsilons

DELTA = 1e-5


def test_per_sample_norms_give_the_per_example_report() -> None:
    rng = np.random.default_rng(0)
    steps, n = 120, 50
    norms = rng.gamma(2.0, 0.4, size=(steps, n))
    acc = TrainingAccountant()
    acc.track_examples(n, max_grad_norm=1.0)
    for t in range(steps):
        acc.step(noise_multiplier=1.0, sample_rate=0.02, per_sample_norms=norms[t])
    r = acc.get_individual_epsilons(DELTA)
    ref = individual_epsilons(norms, clip=1.0, q=0.02, sigma=1.0, delta=DELTA)
    assert np.array_equal(r.epsilon(), ref.epsilon())
    assert np.array_equal(r.odometer_epsilon(), ref.odometer_epsilon())


def test_hook_style_recording_and_worst_case_defaults() -> None:
    rng = np.random.default_rng(1)
    n = 6
    a, b = TrainingAccountant(), TrainingAccountant()
    for acc in (a, b):
        acc.step(noise_multiplier=1.2, sample_rate=0.05)     # before tracking: worst case
        acc.track_examples(n, max_grad_norm=2.0)
    for _ in range(40):
        g = rng.uniform(0, 3, size=3)
        idx = rng.choice(n, size=3, replace=False)
        a.step(noise_multiplier=1.2, sample_rate=0.05, per_sample_norms=g, indices=idx)
        b.step(noise_multiplier=1.2, sample_rate=0.05)        # the optimiser's hook …
        b.record_norms(g, indices=idx)                        # … then the norms
    ra, rb = a.get_individual_epsilons(DELTA, pld=True), b.get_individual_epsilons(DELTA,
                                                                                  pld=True)
    assert np.array_equal(ra.epsilon(), rb.epsilon())
    # every example's ε is at most the aggregate's, which is the worst case
    agg = a.get_epsilon(DELTA)
    assert ra.worst_epsilon() == pytest.approx(agg, rel=1e-12)
    assert np.all(ra.epsilon() <= agg * (1 + 1e-12))


def test_segments_of_different_noise() -> None:
    acc = TrainingAccountant()
    acc.track_examples(2, max_grad_norm=1.0)
    for z in (1.0, 2.0, 1.0):
        for _ in range(30):
            acc.step(noise_multiplier=z, sample_rate=0.1,
                     per_sample_norms=np.array([5.0, 0.25]))
    r = acc.get_individual_epsilons(DELTA, pld=True)
    lo, hi = acc.get_epsilon_interval(DELTA)
    elo, ehi = r.epsilon_interval()
    assert elo[0] == pytest.approx(lo, rel=1e-9) and ehi[0] == pytest.approx(hi, rel=1e-9)
    assert ehi[1] < 0.5 * ehi[0]


def test_bad_use_is_refused() -> None:
    acc = TrainingAccountant()
    with pytest.raises(ValueError, match="track_examples"):
        acc.step(noise_multiplier=1.0, sample_rate=0.1, per_sample_norms=np.ones(3))
    with pytest.raises(ValueError, match="track_examples"):
        acc.get_individual_epsilons(DELTA)
    acc.track_examples(3, max_grad_norm=1.0)
    with pytest.raises(ValueError, match="already on"):
        acc.track_examples(3, max_grad_norm=1.0)
    with pytest.raises(ValueError, match="no step"):
        acc.record_norms(np.ones(3))
    acc.step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(ValueError, match="one entry per example"):
        acc.record_norms(np.ones(4))
    with pytest.raises(ValueError, match="NaN"):
        acc.record_norms(np.array([1.0, np.nan, 1.0]))
    acc.record_norms(np.ones(3))
    with pytest.raises(ValueError, match="once per step"):
        acc.record_norms(np.ones(3))
    acc.history.append((1.0, 0.1, 5))                  # written behind its back
    with pytest.raises(ValueError, match="changed outside"):
        acc.get_individual_epsilons(DELTA)
