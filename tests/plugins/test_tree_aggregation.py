"""Tree aggregation for DP-FTRL (arXiv:2103.00039): single and multi-epoch.

References: the Gaussian closed forms (mpmath, ``closed_forms``), brute force over
every placement of a record's leaves in small trees, the figures published in the
tests of dp_accounting (its RDP accountant's tree tests) and TF Privacy (its
``tree_aggregation_accountant`` tests), and the installed dp_accounting on real events.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, Accountant, PrivacyProfile, TradeOff
from accounting.cli.app import main
from accounting.testing import MechanismContract
from accounting_mechanisms import tree_aggregation as ta

from closed_forms import gaussian_beta, gaussian_delta, gaussian_epsilon, improved_rdp_epsilon

NAN = float("nan")
#: dp_accounting's and TF Privacy's orders in their tree tests
ORDERS = [1 + x / 10 for x in range(1, 100)] + list(range(12, 64))


def _mech(name="tree_aggregation", **params):
    return accounting.default_registry().mechanism(name)(**params)


class TestTreeAggregationContract(MechanismContract):
    mechanism = _mech(sigma=2.0, step_counts=(100, 37))
    bad_parameters = [dict(sigma=-1.0), dict(sigma=NAN), dict(step_counts=-1),
                      dict(step_counts=2.5), dict(step_counts="100"), dict(step_counts=()),
                      dict(step_counts=(10, -3)), dict(step_counts=2 ** 41),
                      dict(completed="yes"), dict(neighbouring="sideways")]


class TestTreeAggregationMultiEpochContract(MechanismContract):
    mechanism = _mech("tree_aggregation_multi_epoch", sigma=3.0, steps=64,
                      max_participation=4, min_separation=15)
    bad_parameters = [dict(steps=-1), dict(steps=1.5), dict(max_participation=-2),
                      dict(min_separation=-1), dict(min_separation=0.5), dict(sigma=NAN),
                      dict(periodic=2), dict(periodic="no")]


# ------------------------------------------------------------------ the tree itself
def _nodes(t: int) -> list[tuple[int, int]]:
    """The complete dyadic nodes [j·2^l, (j + 1)·2^l) ⊆ [0, t)."""
    return [(j << lv, (j + 1) << lv) for lv in range(t.bit_length()) for j in range(t >> lv)]


def _squares(t: int, leaves) -> int:
    return sum(sum(a <= p < b for p in leaves) ** 2 for a, b in _nodes(t))


def _brute(t: int, k: int, s: int) -> int:
    best = 0
    for n in range(1, k + 1):
        for pos in itertools.combinations(range(t), n):
            if all(pos[i + 1] - pos[i] > s for i in range(n - 1)):
                best = max(best, _squares(t, pos))
    return best


@pytest.mark.parametrize("t", list(range(1, 40)) + [1600, 1023, 1024, 1025])
def test_depth_is_the_most_nodes_a_leaf_lies_in(t):
    """⌊log₂ T⌋ + 1 = ⌈log₂(T + 1)⌉ (dp_accounting's max_depth), not ⌈log₂ T⌉ + 1:
    T = 3 has depth 2 (the node [0, 4) is never complete); a completed tree (padded
    to 2^⌈log₂ T⌉ leaves) has ⌈log₂ T⌉ + 1."""
    nodes = _nodes(t)
    most = max(sum(a <= p < b for a, b in nodes) for p in range(min(t, 64)))
    assert ta.tree_depth(t) == most == math.ceil(math.log2(t + 1))
    padded = 1 << (t - 1).bit_length()
    assert ta.tree_depth(t, completed=True) == ta.tree_depth(padded) == \
        math.ceil(math.log2(t)) + 1
    assert ta.tree_depth(3) == 2 and ta.tree_depth(3, completed=True) == 3


# -------------------------------------------------------- single epoch = a Gaussian
@pytest.mark.parametrize("sigma,counts,depth", [(1.13, 1600, 11), (0.7, (10, 40, 30, 20), 6),
                                                (3.0, (5, 1), 3), (2.0, 1, 1)])
def test_single_epoch_is_the_gaussian_with_root_depth_sensitivity(sigma, counts, depth):
    m = _mech(sigma=sigma, step_counts=counts)
    assert m.depth == depth
    mu = math.sqrt(depth) / sigma
    eps = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 5.0])
    prof = m.curve(PrivacyProfile)
    assert prof.is_exact
    np.testing.assert_allclose(prof.delta(eps), gaussian_delta(mu, eps), rtol=1e-10, atol=1e-300)
    assert float(prof.epsilon(1e-6)) == pytest.approx(gaussian_epsilon(mu, 1e-6), rel=1e-9)
    alpha = np.array([0.01, 0.1, 0.5])
    np.testing.assert_allclose(m.curve(TradeOff).beta(alpha), gaussian_beta(mu, alpha), rtol=1e-10)
    orders = np.array([1.5, 2.0, 10.0])
    np.testing.assert_allclose(m.curve(RDP).rdp(orders), orders * depth / (2 * sigma ** 2),
                               rtol=1e-12)
    assert float(m.curve(ZCDP).rho()) == pytest.approx(depth / (2 * sigma ** 2), rel=1e-12)
    # the same as the gaussian plugin with sensitivity √depth
    g = accounting.mechanism("gaussian", sigma=sigma, sensitivity=math.sqrt(depth))
    np.testing.assert_allclose(prof.delta(eps), g.curve(PrivacyProfile).delta(eps), rtol=1e-12)


def test_one_step_is_the_plain_gaussian():
    m, g = _mech(sigma=1.7, step_counts=1), accounting.mechanism("gaussian", sigma=1.7)
    assert m.pair().mu == g.pair().mu == pytest.approx(1 / 1.7, rel=1e-15)
    one = _mech("tree_aggregation_multi_epoch", sigma=1.7, steps=1, max_participation=5)
    assert one.pair().mu == g.pair().mu


def test_sensitivity_scales_like_the_gaussians():
    """Δ and σ enter as Δ/σ; replace-one is the same pair with Δ doubled by the user."""
    a = _mech(sigma=2.0, step_counts=100, sensitivity=0.5)
    b = _mech(sigma=4.0, step_counts=100, neighbouring="replace_one")
    assert a.pair().mu == b.pair().mu == pytest.approx(math.sqrt(7) / 4.0, rel=1e-15)


# ----------------------------------------------------------- published figures
@pytest.mark.parametrize("sigma,published", [(1.13, 19.74), (8.83, 2.04)])
def test_dp_accounting_stackoverflow_figures(sigma, published):
    """dp_accounting's rdp_privacy_accountant_test (test_compute_eps_tree) and TF Privacy's
    tree_aggregation_accountant_test: one tree of 1600 steps at δ = 1e-6 is below
    ε = 19.74 (σ = 1.13) and 2.04 (σ = 8.83), the StackOverflow setting of
    arXiv:2103.00039. Our RDP route (D_α = 11α/(2σ²), the improved conversion) and the
    exact Gaussian ε (which it bounds) are both below."""
    m = _mech(sigma=sigma, step_counts=1600)
    acct = Accountant(step=1e-3).compose(m)
    rdp_eps = float(acct.under("rdp").epsilon(1e-6))
    want = improved_rdp_epsilon(lambda a: a * 11 / (2 * sigma ** 2), 1e-6)
    assert rdp_eps == pytest.approx(want, rel=1e-6)
    exact = gaussian_epsilon(math.sqrt(11) / sigma, 1e-6)
    assert exact < rdp_eps < published
    lo, up = acct.epsilon_interval(1e-6)
    assert lo <= exact * (1 + 1e-9) and exact <= up * (1 + 1e-9) and up < rdp_eps


@pytest.mark.parametrize("counts", [[400] * 4, [800] * 2, [10, 400, 400, 400, 390]])
def test_restarts_compose_by_summing(counts):
    """dp_accounting's test_compose_tree_rdp (TF Privacy's too): one event per tree
    (a record in every tree) has the sum of the trees' Rényi curves."""
    acct = Accountant()
    for t in counts:
        acct.compose(_mech(sigma=0.1, step_counts=t))
    summed = sum(ta.tree_depth(t) for t in counts) / (2 * 0.1 ** 2)
    assert float(acct.curve(RDP).rdp(1.5)) == pytest.approx(1.5 * summed, rel=1e-12)


def test_one_event_over_several_trees_is_the_largest_tree():
    """dp_accounting's test_single_epoch_multi_tree_rdp: a record at most once across
    the trees [10, 40, 30, 20] costs what the largest tree costs."""
    many = _mech(sigma=0.1, step_counts=(10, 40, 30, 20))
    assert float(many.curve(RDP).rdp(1.0 + 1e-9)) == pytest.approx(
        float(_mech(sigma=0.1, step_counts=40).curve(RDP).rdp(1.0 + 1e-9)), rel=1e-12)
    assert many.depth == 6


@pytest.mark.parametrize("k,s,t,expected", [
    # TF Privacy's test_max_tree_sensitivity_square_sum_toy; the last is the
    # example of arXiv:2103.00039 where the worst case beats the greedy placement
    (1, 7, 8, 4), (3, 3, 9, 11), (3, 2, 7, 9), (8, 2, 24, 88),
    # test_max_tree_sensitivity_square_sum_every_step_part: 8 steps, every leaf
    (11, 0, 8, 120), (19, 0, 8, 120), (200, 0, 8, 120),
])
def test_tf_privacy_single_tree_figures(k, s, t, expected):
    assert ta.tree_sensitivity_squared(t, k, s) == (expected, True)
    m = _mech("tree_aggregation_multi_epoch", sigma=2.0, steps=t, max_participation=k,
              min_separation=s)
    assert m.pair().mu == pytest.approx(math.sqrt(expected) / 2.0, rel=1e-15)
    assert float(m.curve(RDP).rdp(3.0)) == pytest.approx(3.0 * expected / 8.0, rel=1e-12)


@pytest.mark.parametrize("t", [3, 8, 11, 19])
def test_tf_privacy_every_step_and_two_occurrences(t):
    """TF Privacy's every-step figures: a record in every leaf gives Σ 2^d(2^{d+1} − 1)
    over the set bits d of T; twice (no gap) gives 2 + 4⌊log₂ T⌋."""
    bits = [d for d in range(t.bit_length()) if t >> d & 1]
    assert ta.tree_sensitivity_squared(t, t, 0)[0] == sum(2 ** d * (2 ** (d + 1) - 1) for d in bits)
    assert ta.tree_sensitivity_squared(t, 2, 0)[0] == 2 + 4 * (t.bit_length() - 1)


def test_programme_against_brute_force():
    for t in range(1, 13):
        for k in range(1, 4):
            for s in range(0, 4):
                assert ta.tree_sensitivity_squared(t, k, s) == (_brute(t, k, s), True), (t, k, s)


def test_periodic_against_brute_force_and_below_the_general_case():
    for t in range(1, 20):
        for k in range(1, 5):
            for s in range(0, 5):
                want = max(_squares(t, list(range(x, t, s + 1))[:k]) for x in range(t))
                got, exact = ta.periodic_sensitivity_squared(t, k, s)
                assert exact and got == want, (t, k, s)
                assert got <= ta.tree_sensitivity_squared(t, k, s)[0]


def test_level_bound_is_above_the_exact_worst_case():
    for t, k, s in [(24, 8, 2), (100, 5, 9), (64, 64, 0), (1000, 10, 99), (300, 7, 30)]:
        exact, ok = ta.tree_sensitivity_squared(t, k, s, budget=1e10)
        assert ok and ta.level_bound(t, k, s) >= exact
    assert ta.level_bound(8, 8, 0) == 120          # tight when every leaf is taken


def test_past_the_budget_a_labelled_bracket():
    """Beyond the work budget the worst case is bracketed, never called exact: the
    upper side is the per-level bound, the lower a placement that occurs."""
    t, k, s = 1000, 10, 99
    exact = ta.tree_sensitivity_squared(t, k, s, budget=1e10)[0]               # 143
    lo, hi = ta.sensitivity_squared_bracket(t, k, s, budget=1e6)
    assert lo <= exact <= hi and lo < hi and hi == ta.level_bound(t, k, s)
    m = _mech("tree_aggregation_multi_epoch", sigma=2.0, steps=5000, max_participation=10,
              min_separation=499)
    lo, hi = m.sensitivity_squared
    assert lo < hi
    pair = m.pair()
    assert not pair.exact and "not exact" in pair.describe()
    prof = m.curve(PrivacyProfile)
    up = float(prof.epsilon(1e-5))
    low = float(prof.epsilon(1e-5, bound="lower"))
    assert up == pytest.approx(gaussian_epsilon(math.sqrt(hi) / 2.0, 1e-5), rel=1e-9)
    assert low == pytest.approx(gaussian_epsilon(math.sqrt(lo) / 2.0, 1e-5), rel=1e-9)
    # the periodic (fixed-order) case is exact there, and is the lower end
    fixed = _mech("tree_aggregation_multi_epoch", sigma=2.0, steps=5000, max_participation=10,
                  min_separation=499, periodic=True)
    assert fixed.sensitivity_squared == (lo, lo) and fixed.pair().exact


def test_multi_epoch_with_one_occurrence_is_the_single_epoch():
    for t in (1, 5, 64, 1600):
        one = _mech("tree_aggregation_multi_epoch", sigma=1.5, steps=t)
        assert one.pair().mu == _mech(sigma=1.5, step_counts=t).pair().mu


# ------------------------------------------------------------------- monotonicity
@settings(max_examples=25, deadline=None, database=None)
@given(t=st.integers(1, 5000), dt=st.integers(0, 5000), sigma=st.floats(0.3, 30.0),
       factor=st.floats(1.0, 4.0))
def test_epsilon_monotone_in_steps_and_noise(t, dt, sigma, factor):
    def eps(steps, s):
        return float(_mech(sigma=s, step_counts=steps).curve(PrivacyProfile).epsilon(1e-6))
    base = eps(t, sigma)
    assert eps(t + dt, sigma) >= base
    assert eps(t, sigma * factor) <= base


@settings(max_examples=20, deadline=None, database=None)
@given(t=st.integers(1, 200), k=st.integers(1, 6), s=st.integers(0, 40), dk=st.integers(0, 3),
       dt=st.integers(0, 100))
def test_worst_case_monotone_in_steps_participation_and_gap(t, k, s, dk, dt):
    f = ta.tree_sensitivity_squared
    base = f(t, k, s)[0]
    assert f(t + dt, k, s)[0] >= base
    assert f(t, k + dk, s)[0] >= base
    assert f(t, k, s + dk)[0] <= base
    assert ta.tree_depth(t) <= base <= ta.level_bound(t, k, s)


# ------------------------------------------------------------------ degenerate corners
def test_no_noise_is_non_private_and_says_so():
    for m in (_mech(sigma=0.0, step_counts=100),
              _mech("tree_aggregation_multi_epoch", sigma=0.0, steps=100, max_participation=3)):
        assert "non-private" in m.pair().describe()
        assert float(m.curve(PrivacyProfile).epsilon(1e-5)) == math.inf
        assert float(m.curve(PLD).epsilon(0.5)) == math.inf
        assert float(m.curve(TradeOff).beta(0.2)) == 0.0


def test_nothing_released_about_the_record_costs_nothing():
    for m in (_mech(sigma=1.0, step_counts=0), _mech(sigma=0.0, step_counts=(0, 0)),
              _mech("tree_aggregation_multi_epoch", sigma=1.0, steps=0),
              _mech("tree_aggregation_multi_epoch", sigma=1.0, steps=50, max_participation=0),
              _mech(sigma=1.0, step_counts=100, sensitivity=0.0)):
        assert float(m.curve(PrivacyProfile).delta(0.0)) == 0.0
        assert float(m.curve(RDP).rdp(4.0)) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("params,message", [
    (dict(sigma=1.0, step_counts=-5), r"step_counts must be an integer >= 0"),
    (dict(sigma=1.0, step_counts=(3, 2.5)), r"step_counts\[1\] must be an integer"),
    (dict(sigma=1.0, step_counts=[]), r"step_counts must have at least one entry"),
    (dict(sigma=1.0, step_counts="12"), r"step_counts must be an integer or a sequence"),
    (dict(sigma=-1.0, step_counts=10), r"sigma"),
    (dict(sigma=1.0, step_counts=10, completed="yes"), r"completed must be True or False"),
    (dict(sigma=1.0, step_counts=10, completed=2), r"completed must be True or False"),
])
def test_bad_input_is_a_clear_error(params, message):
    with pytest.raises((ValueError, TypeError), match=message):
        _mech(**params)
    with pytest.raises(ValueError, match="min_separation"):
        _mech("tree_aggregation_multi_epoch", sigma=1.0, steps=10, min_separation=-1)
    with pytest.raises(TypeError, match="max_participation"):
        ta.tree_sensitivity_squared(10, 1.5, 0)


# ------------------------------------------------------------------- command line
def test_command_line_reaches_both(capsys):
    code = main(["epsilon", "tree_aggregation", "--sigma", "1.13", "--step-counts", "1600",
                 "--delta", "1e-6", "--accountant", "rdp", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["params"]["step_counts"] == [1600]
    got = data["results"]["rdp"]["epsilon"][0]
    assert got == pytest.approx(improved_rdp_epsilon(lambda a: a * 11 / (2 * 1.13 ** 2), 1e-6),
                                rel=1e-6) and got < 19.74
    code = main(["delta", "tree_aggregation_multi_epoch", "--sigma", "6", "--steps", "24",
                 "--max-participation", "8", "--min-separation", "2", "--epsilon", "1",
                 "--accountant", "pld", "--step", "1e-3", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lo, hi = json.loads(out)["results"]["pld"]["interval"][0]
    exact = float(gaussian_delta(math.sqrt(88) / 6.0, 1.0))
    assert lo <= exact * (1 + 1e-9) and exact <= hi * (1 + 1e-9)
    code = main(["epsilon", "tree_aggregation", "--sigma", "1", "--step-counts", "-3",
                 "--delta", "1e-5"])
    out, err = capsys.readouterr()
    assert code == 2 and "step_counts" in err and len(err.strip().splitlines()) == 1


# -------------------------------------------------------------- dp_accounting itself
def test_installed_dp_accounting_rdp_accountant_agrees():
    """dp_accounting's RdpAccountant on real SingleEpochTreeAggregationDpEvents: the
    same Rényi curve (its ε at its orders from our D_α through its own conversion)."""
    dpa = pytest.importorskip("dp_accounting")
    rdp_mod = pytest.importorskip("dp_accounting.rdp")
    relation = dpa.NeighboringRelation.REPLACE_SPECIAL
    cases = [(1.13, 1600), (8.83, 1600), (0.9, [10, 400, 400, 400, 390]), (2.0, 3), (1.0, 1)]
    for sigma, counts in cases:
        acc = rdp_mod.RdpAccountant(ORDERS, relation)
        acc.compose(dpa.SingleEpochTreeAggregationDpEvent(sigma, counts))
        ours = _mech(sigma=sigma, step_counts=counts).curve(RDP).rdp(np.array(ORDERS))
        theirs_eps = acc.get_epsilon(1e-6)
        ours_eps = rdp_mod.compute_epsilon(ORDERS, ours, 1e-6)[0]
        assert ours_eps == pytest.approx(theirs_eps, rel=1e-12), (sigma, counts)
    # restarts: one event per tree, composed
    acc = rdp_mod.RdpAccountant(ORDERS, relation)
    acc.compose(dpa.ComposedDpEvent([dpa.SingleEpochTreeAggregationDpEvent(0.5, t)
                                     for t in (400, 400, 200)]))
    ours = Accountant()
    for t in (400, 400, 200):
        ours.compose(_mech(sigma=0.5, step_counts=t))
    ours_eps = rdp_mod.compute_epsilon(ORDERS, ours.curve(RDP).rdp(np.array(ORDERS)), 1e-6)[0]
    assert ours_eps == pytest.approx(acc.get_epsilon(1e-6), rel=1e-12)


def test_dp_event_bridge_maps_the_tree_event():
    E = pytest.importorskip("dp_accounting.dp_event")
    from dp_accounting.privacy_accountant import NeighboringRelation as NR
    from accounting_bridges.dp_event import UnsupportedEventError, from_dp_event, to_dp_event
    event = E.SelfComposedDpEvent(E.SingleEpochTreeAggregationDpEvent(1.5, [100, 60]), 3)
    acct = from_dp_event(event, NR.REPLACE_SPECIAL)
    (mech, count), = acct.ledger.mechanisms()
    assert mech.name == "tree_aggregation" and mech.step_counts == (100, 60) and count == 3
    # three uses of depth 7 at σ = 1.5: one Gaussian of μ = √21/1.5, in closed form
    composed = accounting.compose((mech.pair(), count))
    assert composed.mu == pytest.approx(math.sqrt(3 * 7) / 1.5, rel=1e-15)
    assert float(composed.curve(PrivacyProfile).epsilon(1e-5)) == pytest.approx(
        gaussian_epsilon(math.sqrt(21) / 1.5, 1e-5), rel=1e-9)
    back = to_dp_event(_mech(sigma=1.5, step_counts=(100, 60)))
    assert back == E.SingleEpochTreeAggregationDpEvent(noise_multiplier=1.5, step_counts=[100, 60])
    assert to_dp_event(_mech(sigma=1.5, step_counts=7)).step_counts == 7
    with pytest.raises(UnsupportedEventError, match="SingleEpochTreeAggregationDpEvent"):
        from_dp_event(E.SingleEpochTreeAggregationDpEvent(1.0, 10), "replace_one")
    with pytest.raises(UnsupportedEventError, match="step_counts"):
        from_dp_event(E.SingleEpochTreeAggregationDpEvent(1.0, []))
    (leak, _), = from_dp_event(E.SingleEpochTreeAggregationDpEvent(0.0, 10)).ledger.mechanisms()
    assert float(leak.curve(PrivacyProfile).epsilon(1e-5)) == math.inf


def test_completed_trees_use_the_padded_depth():
    """The tree-completion variant: T = 1600 padded to 2048 leaves, depth 12 (not 11)."""
    m = _mech(sigma=2.0, step_counts=(1600, 3), completed=True)
    assert m.depth == 12 and m.pair().mu == pytest.approx(math.sqrt(12) / 2.0, rel=1e-15)
    assert _mech(sigma=2.0, step_counts=1024, completed=True).depth == 11
    assert _mech(sigma=2.0, step_counts=1024, completed=1) == \
        _mech(sigma=2.0, step_counts=1024, completed=True)
