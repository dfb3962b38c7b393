"""dp_accounting's ``SampledWithoutReplacementDpEvent`` both ways, under both relations,
with real dp_accounting events (skipped without dp_accounting).

Under replace-one dp_accounting's RDP accountant answers the event (Wang, Balle,
Kasiviswanathan, arXiv:1808.00087): our PLD and RDP must not exceed it. Under
add/remove it answers nothing; the dominating pair there is the Poisson-subsampled
pair of the replace-one base (sensitivity 2Δ), which dp_accounting's PLD accounts as
``PoissonSampledDpEvent(b/n, GaussianDpEvent(z/2))``: its ε must fall in our bracket.
"""

from __future__ import annotations

import pytest

E = pytest.importorskip("dp_accounting.dp_event")
pld_acc = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
from accounting_bridges.dp_event import (  # noqa: E402
    UnsupportedEventError,
    dp_event_entries,
    from_dp_event,
    to_dp_event,
)
from dp_accounting.privacy_accountant import NeighboringRelation as NR  # noqa: E402

import accounting  # noqa: E402

DELTA = 1e-5
M = accounting.mechanism


def test_add_remove_reads_the_base_at_twice_its_sensitivity():
    event = E.SampledWithoutReplacementDpEvent(1000, 20, E.GaussianDpEvent(1.5))
    ((mech, count),) = dp_event_entries(event, "add_remove")
    assert (mech.name, mech.batch_size, mech.dataset_size, count) == \
        ("sampled_without_replacement", 20, 1000, 1)
    assert mech.neighbouring is accounting.Neighbouring.ADD_REMOVE
    assert mech.base.neighbouring is accounting.Neighbouring.REPLACE_ONE
    assert (mech.base.sigma, mech.base.sensitivity) == (1.5, 2.0)
    # under replace-one the inner event is read as it stands
    ((rep, _),) = dp_event_entries(event, NR.REPLACE_ONE)
    assert (rep.base.sigma, rep.base.sensitivity, rep.neighbouring.value) == \
        (1.5, 1.0, "replace_one")


@pytest.mark.bench
def test_add_remove_epsilon_is_dp_accountings_poisson_at_half_the_noise_multiplier():
    z, n, b, steps = 2.0, 50000, 500, 500
    event = E.SelfComposedDpEvent(E.SampledWithoutReplacementDpEvent(n, b, E.GaussianDpEvent(z)),
                                  steps)
    lo, hi = from_dp_event(event, "add_remove", step=1e-4).epsilon_interval(DELTA)
    acc = pld_acc.PLDAccountant(NR.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4)
    acc.compose(E.PoissonSampledDpEvent(b / n, E.GaussianDpEvent(z / 2)), steps)
    theirs = acc.get_epsilon(DELTA)
    assert lo - 1e-4 <= theirs <= hi + 1e-4
    # dp_accounting itself accounts the event under replace-one only
    assert not rdp_acc.RdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE).supports(event)


@pytest.mark.bench
@pytest.mark.parametrize("z, n, b", [(1.0, 2000, 40), (3.0, 10000, 1000)])
def test_replace_one_is_not_above_dp_accountings_rdp_bound(z, n, b):
    """(dp_accounting's RDP bound for this event covers Gaussian inner events only.)"""
    event = E.SelfComposedDpEvent(
        E.SampledWithoutReplacementDpEvent(n, b, E.GaussianDpEvent(z)), 200)
    acc = rdp_acc.RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    assert not acc.supports(E.SampledWithoutReplacementDpEvent(n, b, E.LaplaceDpEvent(z)))
    acc.compose(event)
    theirs = acc.get_epsilon(DELTA)
    ours = from_dp_event(event, "replace_one", step=1e-4)
    assert ours.epsilon(DELTA) <= theirs * (1 + 1e-9)
    assert ours.epsilon(DELTA) > 0.3 * theirs         # and not absurdly below it


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
@pytest.mark.parametrize("name, params", [
    ("gaussian", dict(sigma=3.0)), ("laplace", dict(b=2.0)),
    ("discrete_laplace", dict(scale=2.0)),
])
def test_round_trip_both_ways(relation, name, params):
    base = M(name, neighbouring="replace_one", sensitivity=2.0, **params)
    mech = M("sampled_without_replacement", base=base, batch_size=10, dataset_size=200,
             neighbouring=relation)
    event = to_dp_event(mech, relation)
    assert isinstance(event, E.SampledWithoutReplacementDpEvent)
    assert (event.source_dataset_size, event.sample_size) == (200, 10)
    ((back, count),) = dp_event_entries(event, relation)
    assert count == 1
    if relation == "add_remove":
        assert back == mech
    else:    # the continuous ones come back in units of their sensitivity (Δ = 1)
        assert back.base.sensitivity == (2 if name == "discrete_laplace" else 1)
    mine = accounting.Accountant(step=1e-3).compose(mech).epsilon(DELTA)
    assert accounting.Accountant(step=1e-3).compose(back).epsilon(DELTA) == \
        pytest.approx(mine, rel=1e-9)
    # and the event from dp_accounting reads to a mechanism that writes it back
    assert to_dp_event(back, relation) == event


def test_written_noise_multipliers():
    g = M("gaussian", sigma=3.0, sensitivity=2.0, neighbouring="replace_one")
    ar = M("sampled_without_replacement", base=g, batch_size=10, dataset_size=200,
           neighbouring="add_remove")
    assert to_dp_event(ar, "add_remove") == E.SampledWithoutReplacementDpEvent(
        200, 10, E.GaussianDpEvent(3.0))           # σ / (Δ_replace / 2)
    ro = M("sampled_without_replacement", base=g, batch_size=10, dataset_size=200)
    assert to_dp_event(ro, "replace_one") == E.SampledWithoutReplacementDpEvent(
        200, 10, E.GaussianDpEvent(1.5))           # σ / Δ_replace


def test_refusals_name_the_event():
    rr = E.SampledWithoutReplacementDpEvent(100, 10, E.RandomizedResponseDpEvent(0.5, 4))
    with pytest.raises(UnsupportedEventError, match=r"^RandomizedResponseDpEvent at "
                                                    r"event\.event: .*fixed-size sample"):
        dp_event_entries(rr, "add_remove")
    whole = E.SampledWithoutReplacementDpEvent(100, 100, E.GaussianDpEvent(1.0))
    with pytest.raises(UnsupportedEventError, match=r"^SampledWithoutReplacementDpEvent at "
                                                    r"event: .*dataset_size − 1"):
        dp_event_entries(whole, "add_remove")
    ((base, _),) = dp_event_entries(whole, "replace_one")     # the base on everything
    assert base.name == "gaussian"
    bigger = E.SampledWithoutReplacementDpEvent(10, 11, E.GaussianDpEvent(1.0))
    with pytest.raises(UnsupportedEventError, match="batch_size must be at most"):
        dp_event_entries(bigger, "replace_one")
    t = M("student_t", nu=3.0, scale=1.0, neighbouring="replace_one")
    wor_t = M("sampled_without_replacement", base=t, batch_size=1, dataset_size=10,
              neighbouring="add_remove")
    with pytest.raises(UnsupportedEventError, match=r"^student_t at mechanism\.base: "):
        to_dp_event(wor_t, "add_remove")
    odd = M("discrete_laplace", scale=2.0, sensitivity=3, neighbouring="replace_one")
    with pytest.raises(UnsupportedEventError, match="halves to no integer"):
        to_dp_event(M("sampled_without_replacement", base=odd, batch_size=1,
                      dataset_size=10, neighbouring="add_remove"), "add_remove")
    empty = E.SampledWithoutReplacementDpEvent(100, 0, E.RandomizedResponseDpEvent(0.5, 4))
    assert dp_event_entries(empty, "add_remove") == []
