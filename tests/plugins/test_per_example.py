"""Per-example (individual) accounting of DP-SGD (``accounting_mechanisms.per_example``).

Checked against closed forms and brute force: the worst-case example is the aggregate
accountant exactly; a constant sensitivity s is the subsampled Gaussian with noise
multiplier σ/s (the core's PLD and dp_accounting's RDP and PLD accountants); the
quantisation rounds up; coarsening dominates; streaming from a .npy memmap on an
engine gives the same counts; the individual filter admits what the Rényi filter does.
"""

from __future__ import annotations

import concurrent.futures as cf
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.accountant import Accountant
from accounting.adaptive import RDPFilter, RDPOdometer, odometer_epsilon
from accounting.adaptive.filters import DEFAULT_ORDERS, rdp_cost
from accounting.parallel import Engine
from accounting_mechanisms.per_example import (
    HistoryCounter,
    IndividualFilter,
    Segment,
    SensitivityGrid,
    account_individuals,
    coarsen_counts,
    count_levels,
    counts_from_npy,
    individual_epsilons,
    level_costs,
    merge_levels,
)
from accounting_mechanisms.subsampled_gaussian import SubsampledGaussian

Q, SIGMA, DELTA = 0.02, 1.0, 1e-5


def aggregate(q: float, sigma: float, steps: int) -> tuple[float, float]:
    acct = Accountant().compose(SubsampledGaussian(q=q, sigma=sigma), steps)
    lo, hi = acct.epsilon_interval(DELTA)
    return float(lo), float(hi)


# ------------------------------------------------------------------ quantisation
def test_levels_round_up_and_ends_are_exact() -> None:
    g = SensitivityGrid.uniform(4)          # 0, .25, .5, .75, 1
    norms = np.array([0.0, 1e-300, 0.25, 0.2500001, 0.5, 0.74, 0.99999, 1.0, 7.0])
    assert g.index(norms * 2.0, clip=2.0).tolist() == [0, 1, 1, 2, 2, 3, 4, 4, 4]


def test_ties_are_settled_exactly_against_rational_arithmetic() -> None:
    g = SensitivityGrid.uniform(32)
    rng = np.random.default_rng(0)
    for clip in rng.uniform(0.1, 10.0, size=5):
        n = g.array()[rng.integers(1, 32, size=400)] * clip
        n = n * (1 + rng.integers(-3, 4, size=n.size) * 2.2e-16)   # a few ulps off a level
        k = g.index(n, float(clip))
        for ni, ki in zip(n, k):
            true = Fraction(min(float(ni), float(clip))) / Fraction(float(clip))
            assert Fraction(g.levels[ki]) >= true                   # sound
            assert ki == 0 or Fraction(g.levels[ki - 1]) < true     # and the first such


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=1, max_size=50),
       st.floats(0.1, 5.0))
def test_level_is_never_below_the_sensitivity(norms: list[float], clip: float) -> None:
    g = SensitivityGrid.uniform(32)
    k = g.index(norms, clip)
    assert np.all(g.array()[k] * clip >= np.minimum(norms, clip) * (1 - 1e-15))


@pytest.mark.parametrize("bad, err", [
    (np.array([[1.0, np.nan]]), ValueError), (np.array([[1.0, -0.1]]), ValueError),
    (np.array([[1.0, np.inf]]), ValueError), (np.array([1.0, 2.0]), ValueError),
    (np.array([["a", "b"]]), TypeError)])
def test_bad_norms_are_refused(bad: np.ndarray, err: type) -> None:
    with pytest.raises(err, match="norms"):
        count_levels(bad, 1.0)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="levels must end at 1"):
        SensitivityGrid((0.0, 0.5))
    with pytest.raises(ValueError, match="strictly increasing"):
        SensitivityGrid((0.0, 0.5, 0.5, 1.0))
    with pytest.raises(ValueError, match="clip"):
        count_levels(np.ones((2, 2)), 0.0)
    with pytest.raises(ValueError, match="q"):
        individual_epsilons(np.ones((2, 2)), clip=1.0, q=1.5, sigma=1.0, delta=DELTA)
    with pytest.raises(ValueError, match="sigma"):
        individual_epsilons(np.ones((2, 2)), clip=1.0, q=0.1, sigma=-1.0, delta=DELTA)
    with pytest.raises(ValueError, match="delta"):
        individual_epsilons(np.ones((2, 2)), clip=1.0, q=0.1, sigma=1.0, delta=0.0)
    c = HistoryCounter(3, 1.0)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        c.add(np.ones(4))
    with pytest.raises(ValueError, match="lie in"):
        c.add(np.ones(1), indices=np.array([5]))


# ------------------------------------------------------------------ against the aggregate
def test_clipped_example_is_the_aggregate_and_others_are_below() -> None:
    steps = 300
    rng = np.random.default_rng(1)
    norms = rng.uniform(0.0, 1.5, size=(steps, 40))
    norms[:, 0] = 3.0                               # always clipped: the worst case
    r = individual_epsilons(norms, clip=1.0, q=Q, sigma=SIGMA, delta=DELTA, pld=True)
    lo, hi = aggregate(Q, SIGMA, steps)
    (elo, ehi) = r.epsilon_interval()
    assert elo[0] == pytest.approx(lo, rel=1e-12) and ehi[0] == pytest.approx(hi, rel=1e-12)
    assert r.worst_pld == pytest.approx((lo, hi), rel=1e-12)
    assert r.worst_epsilon() == pytest.approx(hi, rel=1e-12)
    assert np.all(ehi[1:] < hi) and np.all(elo <= ehi)
    # the Rényi bound of the clipped example: steps × the certified D_α, converted
    assert r.rdp_epsilon()[0] == pytest.approx(r.worst_rdp, rel=1e-12)
    assert r.rdp_epsilon()[0] >= hi


def test_constant_sensitivity_is_the_subsampled_gaussian_of_multiplier_sigma_over_s() -> None:
    steps, s = 400, 0.5                             # 0.5 is a level: no rounding
    norms = np.full((steps, 3), s * 2.0)            # clip 2
    r = individual_epsilons(norms, clip=2.0, q=Q, sigma=SIGMA, delta=DELTA, pld=True)
    lo, hi = aggregate(Q, SIGMA / s, steps)
    elo, ehi = r.epsilon_interval()
    assert r.distinct == 1 and r.pld_distinct == 1
    assert elo[0] == pytest.approx(lo, rel=1e-9) and ehi[0] == pytest.approx(hi, rel=1e-9)
    acct = r.accountant(0)
    assert acct.epsilon_interval(DELTA)[1] == pytest.approx(hi, rel=1e-9)


def test_two_levels_against_dp_accounting() -> None:
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    norms = np.concatenate([np.full((150, 1), 1.0), np.full((250, 1), 0.25)])
    r = individual_epsilons(norms, clip=1.0, q=Q, sigma=SIGMA, delta=DELTA, pld=True)
    events = [dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(
        Q, dp_event.GaussianDpEvent(SIGMA / s)), n) for s, n in ((1.0, 150), (0.25, 250))]
    pld = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    rdp = rdp_privacy_accountant.RdpAccountant(orders=list(DEFAULT_ORDERS))
    for e in events:
        pld.compose(e)
        rdp.compose(e)
    ref_pld, ref_rdp = float(pld.get_epsilon(DELTA)), float(rdp.get_epsilon(DELTA))
    lo, hi = (float(v[0]) for v in r.epsilon_interval())
    assert lo <= ref_pld * (1 + 1e-3) and hi >= ref_pld * (1 - 1e-3)
    assert abs(hi / ref_pld - 1) < 2e-3
    # same orders: our certified D_α are ≥ theirs, and within 1% at the optimum
    ours_rdp = float(r.rdp_epsilon()[0])
    assert ref_rdp * (1 - 1e-9) <= ours_rdp <= ref_rdp * 1.01


def test_odometer_is_the_renyi_odometer_of_the_example_steps() -> None:
    levels = [1.0, 0.25, 0.5, 0.25, 1.0, 0.75]
    norms = np.array(levels)[:, None]
    r = individual_epsilons(norms, clip=1.0, q=0.1, sigma=SIGMA, delta=DELTA)
    odo = RDPOdometer(DELTA)
    for s in levels:
        odo.spend(SubsampledGaussian(q=0.1, sigma=SIGMA, sensitivity=s))
    assert r.odometer_epsilon()[0] == pytest.approx(odo.epsilon(), rel=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.floats(1.0, 3.0))
def test_larger_norms_never_lower_epsilon(seed: int, factor: float) -> None:
    rng = np.random.default_rng(seed)
    norms = rng.uniform(0.0, 1.2, size=(30, 6))
    grid = SensitivityGrid.uniform(8)
    a = individual_epsilons(norms, clip=1.0, q=0.05, sigma=SIGMA, delta=DELTA, grid=grid)
    b = individual_epsilons(norms * factor, clip=1.0, q=0.05, sigma=SIGMA, delta=DELTA,
                            grid=grid)
    assert np.all(b.rdp_epsilon() >= a.rdp_epsilon() - 1e-12)
    assert np.all(b.odometer_epsilon() >= a.odometer_epsilon() - 1e-12)


def test_histories_are_shared_by_digest_and_order_does_not_matter() -> None:
    rng = np.random.default_rng(2)
    base = rng.uniform(0, 1, size=(50, 1))
    norms = np.hstack([base, base[::-1], rng.permutation(base), np.full((50, 1), 0.9)])
    r = individual_epsilons(norms, clip=1.0, q=Q, sigma=SIGMA, delta=DELTA)
    assert r.distinct == 2
    assert r.index[0] == r.index[1] == r.index[2] != r.index[3]
    assert len(set(r.digests())) == 2


# ------------------------------------------------------------------ coarsening
def test_coarsened_counts_dominate() -> None:
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 20, size=(200, 9)).astype(np.uint32)
    coarse = coarsen_counts(counts, 40)
    above = np.cumsum(counts[:, :0:-1], axis=1)[:, ::-1]
    above_c = np.cumsum(coarse[:, :0:-1].astype(np.int64), axis=1)[:, ::-1]
    assert np.all(above_c >= above) and np.all(above_c % 40 == 0)
    g = SensitivityGrid.uniform(8)
    fine = account_individuals(Segment(Q, SIGMA, g, counts), delta=DELTA)
    dom = account_individuals(Segment(Q, SIGMA, g, coarse), delta=DELTA)
    assert np.all(dom.rdp_epsilon() >= fine.rdp_epsilon() - 1e-12)
    assert dom.distinct < fine.distinct


def test_merging_levels_moves_counts_up() -> None:
    fine, coarse = SensitivityGrid.uniform(8), SensitivityGrid.uniform(2)
    counts = np.array([[1, 2, 3, 4, 5, 6, 7, 8, 9]], dtype=np.uint32)
    # 0 → 0; 1/8..4/8 → 1/2; 5/8..1 → 1
    assert merge_levels(counts, fine, coarse).tolist() == [[1, 2 + 3 + 4 + 5, 6 + 7 + 8 + 9]]


# ------------------------------------------------------------------ streaming
def test_counts_from_npy_and_streaming_agree(tmp_path) -> None:
    rng = np.random.default_rng(4)
    norms = rng.gamma(2.0, 0.4, size=(37, 101)).astype(np.float32)
    path = tmp_path / "norms.npy"
    np.save(path, norms)
    direct = count_levels(norms, 1.0)
    with cf.ThreadPoolExecutor(2) as pool:
        streamed = counts_from_npy(str(path), 1.0, engine=Engine(executor=pool), block=17)
    assert np.array_equal(direct, streamed)
    assert np.all(direct.sum(axis=1) == 37)
    counter = HistoryCounter(101, 1.0)
    for t in range(37):
        counter.add(norms[t])
    assert np.array_equal(counter.counts, direct) and counter.steps == 37


def test_unknown_norms_count_at_the_worst_case() -> None:
    c = HistoryCounter(4, 1.0, SensitivityGrid.uniform(4))
    c.add(np.array([0.0, 0.5]), indices=np.array([2, 0]))
    assert c.counts.tolist() == [[0, 0, 1, 0, 0], [0, 0, 0, 0, 1], [1, 0, 0, 0, 0],
                                 [0, 0, 0, 0, 1]]


def test_check_budget_names_the_examples_over_it() -> None:
    norms = np.full((200, 3), 0.1)
    norms[:, 1] = 1.0
    r = individual_epsilons(norms, clip=1.0, q=Q, sigma=SIGMA, delta=DELTA)
    mid = float(np.mean(r.epsilon()[[0, 1]]))
    with pytest.raises(ValueError, match=r"budget exceeded: 1 of 3 examples.*example 1"):
        r.check_budget(mid)
    r.check_budget(float(r.epsilon().max()))


def test_pld_refused_beyond_max_pld() -> None:
    rng = np.random.default_rng(5)
    norms = rng.uniform(0, 1, size=(50, 30))
    with pytest.raises(ValueError, match="exceed max_pld"):
        individual_epsilons(norms, clip=1.0, q=Q, sigma=SIGMA, delta=DELTA, pld=True,
                            max_pld=2)


# ------------------------------------------------------------------ the individual filter
def test_individual_filter_admits_what_the_renyi_filter_admits() -> None:
    eps, q, sigma, steps = 1.0, 0.05, 1.0, 2000
    f = IndividualFilter(3, epsilon=eps, delta=DELTA, q=q, sigma=sigma, clip=1.0)
    ref = RDPFilter.for_target(eps, DELTA, plan=SubsampledGaussian(q=q, sigma=sigma))
    worst = SubsampledGaussian(q=q, sigma=sigma)
    n_ref = 0
    while ref.propose(worst).admitted:
        n_ref += 1
    admitted = np.zeros(3, dtype=int)
    norms = np.array([5.0, 0.5, 0.0])
    for _ in range(steps):
        admitted += f.step(norms)
    assert admitted[0] == n_ref
    half = rdp_cost(SubsampledGaussian(q=q, sigma=sigma, sensitivity=0.5),
                    np.array([f.order]))[0]
    assert admitted[1] == min(steps, int(np.floor(f.budget / half * (1 + 1e-12))))
    assert admitted[1] > 2 * admitted[0]
    assert admitted[2] == steps                      # zero sensitivity costs nothing
    assert np.all(f.spent <= f.budget * (1 + 1e-12))
    assert f.epsilon() == pytest.approx(eps, rel=1e-9)


def test_individual_filter_never_readmits() -> None:
    f = IndividualFilter(2, epsilon=0.5, delta=DELTA, q=0.1, sigma=1.0, clip=1.0)
    while f.step(np.array([1.0, 0.0]))[0]:
        pass
    assert not f.step(np.array([0.0, 0.0]))[0]       # closed, even for a free step
    with pytest.raises(ValueError, match="shape"):
        f.step(np.ones(3))


# ------------------------------------------------------------------ fully adaptive, by simulation
def test_odometer_bounds_the_realised_loss_under_adaptive_sensitivities() -> None:
    """An adversary sets each step's sensitivity from the outputs so far (1 after a
    positive output, 0.3 otherwise). The realised privacy loss of the example,
    L_t = Σ log(1 − q + q·exp((2 s x − s²)/(2σ²))) with x ~ the step's P, must stay
    below the odometer's reading at every step, except on a fraction ≤ δ of the runs
    (Monte Carlo, three standard errors). A reading that cheats (about the expected
    loss: half of Σ D_α at α = 1.25, no tail slack) is crossed on most runs: the check
    has power. Measured: 0.0008 of the runs cross the odometer (δ = 0.05), 0.85 the
    cheat."""
    q, sigma, delta, steps, runs = 0.2, 1.0, 0.05, 40, 20000
    grid = SensitivityGrid((0.0, 0.3, 1.0))
    seg = Segment(q, sigma, grid, np.zeros((1, 3), dtype=np.uint32))
    table = level_costs(seg, DEFAULT_ORDERS)
    rng = np.random.default_rng(11)
    s = np.ones(runs)
    loss = np.zeros(runs)
    spent = np.zeros((runs, DEFAULT_ORDERS.size))
    kl = np.zeros(runs)
    crossed = np.zeros(runs, dtype=bool)
    cheat = np.zeros(runs, dtype=bool)
    for _ in range(steps):
        x = s * (rng.random(runs) < q) + rng.normal(0.0, sigma, runs)
        step_loss = np.log1p(q * np.expm1((2 * s * x - s ** 2) / (2 * sigma ** 2)))
        loss += step_loss
        spent += table[np.where(s == 1.0, 2, 1)]
        kl += np.where(s == 1.0, table[2, 0], table[1, 0]) * 0.5
        crossed |= loss > odometer_epsilon(DEFAULT_ORDERS, spent, delta)
        cheat |= loss > kl
        s = np.where(x > 0, 1.0, 0.3)
    rate = crossed.mean()
    assert rate <= delta + 3 * np.sqrt(delta * (1 - delta) / runs)
    assert cheat.mean() > 0.5
