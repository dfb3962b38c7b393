"""The dp_accounting bridge against real dp_accounting on the same event trees.

Reference: dp_accounting's PLD accountant (pessimistic connect-the-dots, grid 1e-4:
an upper estimate of ε up to its grid) and its RDP accountant. Our answer is the
certified bracket ``epsilon_interval`` of the PLD; dp_accounting's ε must lie in it,
widened by dp_accounting's own discretisation (one grid cell per composed use at
most, measured far smaller: ≤ 1e-5 relative on these trees).
"""

from __future__ import annotations

import math

import pytest

E = pytest.importorskip("dp_accounting.dp_event")
pld_acc = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
from dp_accounting.privacy_accountant import NeighboringRelation as NR  # noqa: E402

import accounting  # noqa: E402
from accounting_bridges.dp_event import (UnsupportedEventError, as_relation,  # noqa: E402
                                         dp_event_entries, from_dp_event, to_dp_event)

DELTA = 1e-5
#: dp_accounting's PLD grid (its value_discretization_interval)
DP_STEP = 1e-4


def dp_pld_epsilon(event, relation=NR.ADD_OR_REMOVE_ONE) -> float:
    acc = pld_acc.PLDAccountant(relation, value_discretization_interval=DP_STEP)
    acc.compose(event)
    return acc.get_epsilon(DELTA)


def dp_rdp_epsilon(event, relation=NR.ADD_OR_REMOVE_ONE) -> float:
    acc = rdp_acc.RdpAccountant(neighboring_relation=relation)
    acc.compose(event)
    return acc.get_epsilon(DELTA)


def has(name: str) -> bool:
    return name in accounting.default_registry().mechanisms


TREES = {
    "gaussian x10": E.SelfComposedDpEvent(E.GaussianDpEvent(2.0), 10),
    "laplace x5": E.SelfComposedDpEvent(E.LaplaceDpEvent(2.0), 5),
    "discrete laplace x4": E.SelfComposedDpEvent(E.DiscreteLaplaceDpEvent(0.3, 2), 4),
    "poisson gaussian x300": E.SelfComposedDpEvent(
        E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(0.9)), 300),
    "poisson laplace x50": E.SelfComposedDpEvent(
        E.PoissonSampledDpEvent(0.05, E.LaplaceDpEvent(3.0)), 50),
    "composed tree": E.ComposedDpEvent([
        E.GaussianDpEvent(3.0),
        E.SelfComposedDpEvent(E.LaplaceDpEvent(5.0), 3),
        E.NoOpDpEvent(),
        E.SelfComposedDpEvent(E.ComposedDpEvent([
            E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(2.0)),
            E.PoissonSampledDpEvent(0.0, E.GaussianDpEvent(0.1)),   # q = 0: free
        ]), 20),
    ]),
}


@pytest.mark.bench
@pytest.mark.parametrize("name", list(TREES))
def test_epsilon_matches_dp_accounting_pld(name):
    event = TREES[name]
    theirs = dp_pld_epsilon(event)
    lo, hi = from_dp_event(event, step=1e-3).epsilon_interval(DELTA)
    tol = 1e-5 * theirs
    assert lo - tol <= theirs <= hi + tol, (lo, theirs, hi)
    # and the bracket is tight enough that the comparison means something
    assert hi - lo <= 1e-2 * hi


@pytest.mark.bench
def test_randomized_response_replace_one_matches_pld():
    # dp_accounting's PLD accountant composes a RandomizedResponseDpEvent once whatever
    # the count it is given (SelfComposed included), so the tree lists each use
    uses = [E.RandomizedResponseDpEvent(0.5, 2)] * 5
    theirs = dp_pld_epsilon(E.ComposedDpEvent(uses), NR.REPLACE_ONE)
    lo, hi = from_dp_event(E.SelfComposedDpEvent(uses[0], 5), "replace_one",
                           step=1e-3).epsilon_interval(DELTA)
    # dp_accounting rounds each use's losses up to its grid: at most one cell per use
    assert lo - 1e-6 <= theirs <= hi + 5 * DP_STEP
    # closed form: truthful w.p. 3/4, the largest loss of 5 uses is 5·log 3 with
    # masses (3/4)^5 under P and (1/4)^5 under Q; every other loss is ≤ 3·log 3, and
    # the answer lies above that, where only the top atom counts:
    # δ = (3/4)^5 − e^ε (1/4)^5, so ε(δ) = 5·log 3 + log(1 − δ/(3/4)^5)
    exact = 5 * math.log(3.0) + math.log1p(-DELTA / 0.75 ** 5)
    assert lo <= exact <= hi
    assert theirs >= exact


@pytest.mark.bench
def test_kary_randomized_response():
    if not has("kary_randomized_response"):
        event = E.RandomizedResponseDpEvent(0.4, 5)
        with pytest.raises(UnsupportedEventError, match="kary_randomized_response"):
            from_dp_event(event, "replace_one")
        pytest.skip("the kary_randomized_response mechanism plugin is not installed")
    for relation in (NR.REPLACE_ONE, NR.REPLACE_SPECIAL):
        uses = [E.RandomizedResponseDpEvent(0.4, 5)] * 3
        theirs = dp_pld_epsilon(E.ComposedDpEvent(uses), relation)
        lo, hi = from_dp_event(E.SelfComposedDpEvent(uses[0], 3), relation,
                               step=1e-3).epsilon_interval(DELTA)
        assert lo - 1e-6 <= theirs <= hi + 3 * DP_STEP, relation


@pytest.mark.bench
def test_mixture_of_gaussians():
    # a record sampled 0, 1 or 2 times (arXiv:2310.15526, §4)
    event = E.SelfComposedDpEvent(
        E.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0, 2.0], [0.81, 0.18, 0.01]), 10)
    if not has("mixture_of_gaussians"):
        with pytest.raises(UnsupportedEventError, match="'mixture_of_gaussians'"):
            from_dp_event(event)
        pytest.skip("the mixture_of_gaussians mechanism plugin is not installed")
    theirs = dp_pld_epsilon(event)
    acc = from_dp_event(event, step=1e-3)
    lo, hi = acc.epsilon_interval(DELTA)
    assert lo - 10 * DP_STEP <= theirs <= hi + 10 * DP_STEP
    assert to_dp_event(acc) == E.ComposedDpEvent([event])
    with pytest.raises(UnsupportedEventError, match="add_remove neighbouring only"):
        from_dp_event(event, "replace_one")
    # all sensitivities zero: P = Q, nothing spent
    assert dp_event_entries(E.MixtureOfGaussiansDpEvent(1.0, [0.0], [1.0])) == []


@pytest.mark.bench
def test_nested_gaussians_in_a_poisson_sample_are_one_gaussian():
    # two Gaussians on one batch: σ_eff = (1/1² + 1/2²)^(-1/2) (dp_accounting's RDP
    # accountant makes the same reduction; its PLD accountant needs it written out)
    nested = E.PoissonSampledDpEvent(0.05, E.ComposedDpEvent(
        [E.GaussianDpEvent(1.0), E.GaussianDpEvent(2.0)]))
    ((mechanism, count),) = dp_event_entries(nested)
    assert mechanism.name == "subsampled_gaussian" and count == 1
    assert mechanism.sigma == pytest.approx(1.0 / math.sqrt(1.25), rel=1e-15)
    flat = E.PoissonSampledDpEvent(0.05, E.GaussianDpEvent(1.0 / math.sqrt(1.25)))
    theirs = dp_pld_epsilon(E.SelfComposedDpEvent(flat, 100))
    lo, hi = from_dp_event(E.SelfComposedDpEvent(nested, 100), step=1e-3).epsilon_interval(DELTA)
    assert lo - 1e-5 <= theirs <= hi + 1e-5
    # our RDP accountant (continuous orders) is at most dp_accounting's (a grid of
    # orders) and close to it: the same Rényi curve, the same conversion
    ours_rdp = from_dp_event(E.SelfComposedDpEvent(nested, 100)).under("rdp").epsilon(DELTA)
    their_rdp = dp_rdp_epsilon(E.SelfComposedDpEvent(nested, 100))
    assert their_rdp * 0.97 <= ours_rdp <= their_rdp + 1e-9


@pytest.mark.bench
def test_sampling_without_replacement_replace_one():
    event = E.SelfComposedDpEvent(
        E.SampledWithoutReplacementDpEvent(1000, 20, E.GaussianDpEvent(1.0)), 100)
    ((mechanism, count),) = dp_event_entries(event, NR.REPLACE_ONE)
    assert (mechanism.name, mechanism.batch_size, mechanism.dataset_size, count) == \
        ("sampled_without_replacement", 20, 1000, 100)
    assert mechanism.base.neighbouring is accounting.Neighbouring.REPLACE_ONE
    acc = from_dp_event(event, "replace_one", step=1e-3)
    # dp_accounting has only an RDP bound here (Wang–Balle–Kasiviswanathan): our PLD
    # and our RDP must not exceed it, and the PLD is the tighter of ours
    theirs = dp_rdp_epsilon(event, NR.REPLACE_ONE)
    ours_pld = acc.epsilon(DELTA)
    ours_rdp = acc.under("rdp").epsilon(DELTA)
    assert ours_pld <= ours_rdp <= theirs
    # and the replace-one sample is at least as costly as a Poisson sample at the same
    # rate under add/remove (one replacement is a removal followed by an addition)
    poisson = from_dp_event(E.SelfComposedDpEvent(
        E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(1.0)), 100), step=1e-3)
    assert ours_pld >= poisson.epsilon(DELTA)


def test_non_private_event():
    for event in (E.NonPrivateDpEvent(), E.GaussianDpEvent(0.0),
                  E.PoissonSampledDpEvent(0.1, E.LaplaceDpEvent(0.0))):
        if not has("approx_dp"):
            with pytest.raises(UnsupportedEventError, match="approx_dp"):
                from_dp_event(event)
            continue
        acc = from_dp_event(E.ComposedDpEvent([E.GaussianDpEvent(1.0), event]))
        assert acc.epsilon(DELTA) == math.inf
        assert dp_pld_epsilon(event) == math.inf
    if not has("approx_dp"):
        pytest.skip("the approx_dp mechanism plugin is not installed")


def test_no_op_events_cost_nothing():
    free = E.ComposedDpEvent([
        E.NoOpDpEvent(), E.SelfComposedDpEvent(E.GaussianDpEvent(1.0), 0),
        E.PoissonSampledDpEvent(0.0, E.GaussianDpEvent(1.0)),
        E.RandomizedResponseDpEvent(0.5, 1)])
    assert dp_event_entries(free) == []


def test_self_composition_multiplies_counts_and_merges():
    g = E.GaussianDpEvent(1.5)
    event = E.SelfComposedDpEvent(E.ComposedDpEvent([E.SelfComposedDpEvent(g, 3), g]), 7)
    entries = dp_event_entries(event)
    assert [c for _, c in entries] == [21, 7]
    acc = from_dp_event(event)
    assert acc.count == 28
    # 28 Gaussians of σ = 1.5 are one Gaussian of μ = √28/1.5 (closed form)
    single = accounting.Accountant().compose(accounting.mechanism("gaussian",
                                                                  sigma=1.5 / math.sqrt(28)))
    assert acc.epsilon(DELTA) == pytest.approx(single.epsilon(DELTA), rel=1e-6)


@pytest.mark.parametrize("event, where, what", [
    (E.ComposedDpEvent([E.GaussianDpEvent(1.0),
                        E.PoissonSampledDpEvent(0.1, E.ZCDpEvent(0.5, 0.0))]),
     "event.events[1].event", "ZCDpEvent"),
    (E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.1, E.UnsupportedDpEvent()), 3),
     "event.event.event", "UnsupportedDpEvent"),
    (E.SampledWithReplacementDpEvent(100, 10, E.GaussianDpEvent(1.0)),
     "event", "SampledWithReplacementDpEvent"),
    (E.PoissonSampledDpEvent(0.1, E.ComposedDpEvent([E.GaussianDpEvent(1.0),
                                                      E.LaplaceDpEvent(1.0)])),
     "event.event", "ComposedDpEvent"),
])
def test_unsupported_events_are_named_with_their_place(event, where, what):
    with pytest.raises(UnsupportedEventError) as info:
        from_dp_event(event)
    message = str(info.value)
    assert message.startswith(f"{what} at {where}:"), message


def test_relation_is_checked():
    # sampling without replacement is read under either relation now
    # (test_bridge_dp_event_wor.py); a tree aggregation is add/remove only
    tree = E.SingleEpochTreeAggregationDpEvent(1.0, 4)
    with pytest.raises(UnsupportedEventError, match="add_remove neighbouring only"):
        from_dp_event(tree, "replace_one")
    if not has("kary_randomized_response"):
        with pytest.raises(UnsupportedEventError, match="kary_randomized_response"):
            from_dp_event(E.RandomizedResponseDpEvent(0.5, 2))
    with pytest.raises(ValueError, match="neighbouring"):
        from_dp_event(E.GaussianDpEvent(1.0), "sideways")
    with pytest.raises(TypeError, match="event must be a dp_accounting DpEvent"):
        from_dp_event(("gaussian", 1.0))
    assert as_relation(NR.REPLACE_SPECIAL) is accounting.Neighbouring.ADD_REMOVE
    assert as_relation(NR.REPLACE_ONE) is accounting.Neighbouring.REPLACE_ONE


def test_bad_parameters_name_the_event():
    with pytest.raises(UnsupportedEventError, match=r"^GaussianDpEvent at event.events\[0\]: "
                                                    r"gaussian: sigma"):
        from_dp_event(E.ComposedDpEvent([E.GaussianDpEvent(-1.0)]))


MECHANISMS = [
    ("gaussian", dict(sigma=2.0, sensitivity=2.0), "add_remove"),
    ("laplace", dict(b=3.0), "add_remove"),
    ("discrete_laplace", dict(a=0.4, sensitivity=2), "add_remove"),
    ("subsampled_gaussian", dict(q=0.01, sigma=1.1), "add_remove"),
    ("subsampled_laplace", dict(q=0.05, b=2.0), "add_remove"),
    ("randomized_response", dict(p=0.8), "replace_one"),
    ("randomized_response", dict(p=0.3), "replace_one"),
]


@pytest.mark.parametrize("name, params, relation", MECHANISMS)
def test_to_dp_event_round_trip(name, params, relation):
    mechanism = accounting.mechanism(name, neighbouring=relation, **params)
    event = to_dp_event(mechanism, relation)
    ((back, count),) = dp_event_entries(event, relation)
    assert count == 1
    mine = accounting.Accountant(step=1e-3).compose(mechanism)
    again = accounting.Accountant(step=1e-3).compose(back)
    assert again.epsilon(DELTA) == pytest.approx(mine.epsilon(DELTA), rel=1e-9)


def test_to_dp_event_of_wrappers_and_accountants():
    base = accounting.mechanism("laplace", b=2.0)
    poisson = accounting.mechanism("poisson_subsampled", base=base, q=0.1)
    assert to_dp_event(poisson) == E.PoissonSampledDpEvent(0.1, E.LaplaceDpEvent(2.0))
    wor = accounting.mechanism("sampled_without_replacement",
                               base=accounting.mechanism("gaussian", sigma=3.0,
                                                         neighbouring="replace_one"),
                               batch_size=10, dataset_size=200)
    assert to_dp_event(wor, "replace_one") == E.SampledWithoutReplacementDpEvent(
        200, 10, E.GaussianDpEvent(3.0))
    acc = accounting.Accountant().compose(accounting.mechanism("gaussian", sigma=2.0),
                                          count=4).compose(base)
    assert to_dp_event(acc) == E.ComposedDpEvent(
        [E.SelfComposedDpEvent(E.GaussianDpEvent(2.0), 4), E.LaplaceDpEvent(2.0)])


@pytest.mark.bench
def test_accountant_to_dp_event_gives_dp_accounting_the_same_epsilon():
    acc = accounting.Accountant(step=1e-3)
    acc.compose(accounting.mechanism("subsampled_gaussian", q=0.05, sigma=1.2), count=100)
    acc.compose(accounting.mechanism("laplace", b=4.0), count=2)
    theirs = dp_pld_epsilon(to_dp_event(acc))
    lo, hi = acc.epsilon_interval(DELTA)
    assert lo - 1e-5 <= theirs <= hi + 1e-5


def test_to_dp_event_refusals():
    with pytest.raises(UnsupportedEventError, match="^student_t at mechanism: has no"):
        to_dp_event(accounting.mechanism("student_t", nu=3.0, scale=1.0))
    with pytest.raises(UnsupportedEventError, match="declares replace_one neighbouring"):
        to_dp_event(accounting.mechanism("randomized_response", p=0.7))
    acc = accounting.Accountant().compose(accounting.mechanism("gaussian", sigma=1.0))
    acc.compose(accounting.mechanism("discrete_gaussian", sigma=2.0))
    with pytest.raises(UnsupportedEventError, match=r"^discrete_gaussian at entries\[1\]"):
        to_dp_event(acc)
    with pytest.raises(TypeError, match="to_dp_event needs"):
        to_dp_event("gaussian")


def test_ledger_from_dp_event():
    ledger_module = pytest.importorskip("accounting.ledger")
    from accounting_bridges.dp_event import ledger_from_dp_event
    event = E.ComposedDpEvent([E.SelfComposedDpEvent(E.GaussianDpEvent(2.0), 3),
                               E.GaussianDpEvent(2.0), E.LaplaceDpEvent(1.0)])
    ledger = ledger_from_dp_event(event)
    assert isinstance(ledger, ledger_module.Ledger)
    assert ledger.count == 5 and len(ledger) == 2
    assert to_dp_event(ledger) == E.ComposedDpEvent(
        [E.SelfComposedDpEvent(E.GaussianDpEvent(2.0), 4), E.LaplaceDpEvent(1.0)])


def test_poisson_sampling_under_replace_one_goes_to_the_plugin():
    """Poisson sampling of a replace-one base is built by ``poisson_subsampled``; a
    plugin that refuses the relation is reported with its reason and the event."""
    event = E.PoissonSampledDpEvent(0.1, E.LaplaceDpEvent(1.0))
    try:
        ((mechanism, count),) = dp_event_entries(event, "replace_one")
    except UnsupportedEventError as error:
        assert str(error).startswith("PoissonSampledDpEvent at event: poisson_subsampled: ")
        assert "replace_one" in str(error)
        pytest.skip("poisson_subsampled does not take a replace-one base here")
    assert (mechanism.name, mechanism.q, count) == ("poisson_subsampled", 0.1, 1)
    assert mechanism.base.neighbouring is accounting.Neighbouring.REPLACE_ONE
