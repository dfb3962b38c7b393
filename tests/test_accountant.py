"""The accountant: compose mechanisms, query ε / δ under PLD, RDP or zCDP."""

from __future__ import annotations

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, Accountant, ComposedPair, TradeOff, ZCDP

from closed_forms import (cks_zcdp_epsilon, gaussian_beta, gaussian_delta, gaussian_epsilon,
                          improved_rdp_epsilon)

STEP = 1e-3


@pytest.fixture(scope="module")
def gauss10():
    return Accountant(step=STEP).compose(accounting.mechanism("gaussian", sigma=2.0), count=10)


def test_pld_accountant_brackets_the_exact_epsilon(gauss10):
    mu = np.sqrt(10) / 2.0
    for delta in (1e-3, 1e-6, 1e-9):
        exact = gaussian_epsilon(mu, delta)
        up = float(gauss10.epsilon(delta))
        lo, up2 = gauss10.epsilon_interval(delta)
        assert up >= exact and lo <= exact <= up2
        assert up - exact < 1e-4


def test_pld_accountant_delta_is_an_upper_bound(gauss10):
    eps = np.linspace(0, 5, 51)
    exact = gaussian_delta(np.sqrt(10) / 2.0, eps)
    got = gauss10.delta(eps)
    assert np.all(got >= exact * (1 - 1e-12))
    assert np.max(got - exact) < 1e-6


def test_rdp_and_zcdp_accountants(gauss10):
    rho = 10 / (2 * 2.0 ** 2)
    for delta in (1e-5, 1e-8):
        pld = float(gauss10.epsilon(delta))
        rdp = float(gauss10.curve(RDP).epsilon(delta))
        zc = float(gauss10.curve(ZCDP).epsilon(delta))
        assert rdp >= pld and zc >= pld
        assert rdp == pytest.approx(improved_rdp_epsilon(lambda a: rho * a, delta), rel=1e-7)
        assert zc == pytest.approx(cks_zcdp_epsilon(rho, delta), rel=1e-6)


def test_identical_mechanisms_are_merged():
    acc = Accountant(step=STEP)
    acc.compose(accounting.mechanism("gaussian", sigma=1.0), 4)
    acc.compose(accounting.mechanism("gaussian", sigma=1.0), count=6)
    assert acc.count == 10
    pair = acc.pair()
    assert isinstance(pair, ComposedPair) and len(pair.components) == 1
    assert pair.components[0][1] == 10


def test_heterogeneous_workload_and_cache_invalidation():
    acc = Accountant(step=STEP).compose(accounting.mechanism("gaussian", sigma=1.0))
    first = float(acc.epsilon(1e-6))
    assert first == pytest.approx(gaussian_epsilon(1.0, 1e-6), abs=1e-4)
    acc.compose(accounting.mechanism("gaussian", sigma=0.5), count=2)       # now μ = 3
    second = float(acc.epsilon(1e-6))
    exact = gaussian_epsilon(3.0, 1e-6)
    assert second >= exact and second - exact < 1e-3
    assert acc.count == 3
    a = np.linspace(0, 1, 101)
    to = acc.tradeoff()
    assert isinstance(to, TradeOff)
    assert np.all(to.beta(a) <= gaussian_beta(3.0, a) + 1e-12)
    assert isinstance(acc.curve(RDP), RDP) and isinstance(acc.curve(ZCDP), ZCDP)
    assert acc.curve(ZCDP).rho() == pytest.approx(4.5)


def test_a_pair_can_be_composed_directly(gaussian1):
    acc = Accountant(step=STEP).compose(gaussian1.pair(), 2)
    assert float(acc.epsilon(1e-5)) == pytest.approx(gaussian_epsilon(np.sqrt(2), 1e-5), abs=1e-4)
    assert isinstance(acc.curve(PLD), PLD)


def test_subsampled_pld_beats_rdp():
    acc = Accountant(step=STEP).compose(
        accounting.mechanism("subsampled_gaussian", q=0.01, sigma=1.0), count=100)
    pld = float(acc.epsilon(1e-5))
    rdp = float(acc.curve(RDP).epsilon(1e-5))
    lo, up = acc.epsilon_interval(1e-5)
    assert lo <= pld <= up + 1e-12
    assert 0 < pld < rdp


@pytest.mark.parametrize("count,exc", [(0, ValueError), (1.5, TypeError), (-1, ValueError),
                                       (True, TypeError)])
def test_compose_rejects_bad_counts(count, exc):
    with pytest.raises(exc, match="count"):
        Accountant().compose(accounting.mechanism("gaussian", sigma=1.0), count=count)


def test_accountant_errors():
    with pytest.raises(TypeError, match="Mechanism or a Pair"):
        Accountant().compose("gaussian")
    with pytest.raises(ValueError, match="nothing composed"):
        Accountant().epsilon(1e-5)
    with pytest.raises(ValueError, match="step"):
        Accountant(step=0.0)
    acc = Accountant(step=STEP).compose(accounting.mechanism("gaussian", sigma=1.0))
    with pytest.raises(ValueError, match="accountant must be one of"):
        acc.epsilon(1e-5, accountant="moments")
    with pytest.raises(ValueError, match="delta"):
        acc.epsilon(0.0)
    with pytest.raises(ValueError, match="delta"):
        acc.curve(RDP).epsilon(1.0)


# ------------------------------------------------- strict options, guards (issue 10)
import tracemalloc  # noqa: E402

from accounting.accountant import MIN_STEP  # noqa: E402
from accounting.numerics.loss import MAX_GRID_POINTS  # noqa: E402


@pytest.mark.parametrize("call,keyword,allowed", [
    (lambda: Accountant(stpe=1e-2), "stpe", "registry, step"),
    (lambda: Accountant().compose(accounting.mechanism("gaussian", sigma=1.0), cout=2), "cout",
     "count, mechanism"),
    (lambda: Accountant().epsilon(1e-5, acountant="rdp"), "acountant",
     "accountant, bound, delta, direction"),
    (lambda: Accountant().delta(1.0, rtol=1e-3), "rtol", "accountant, bound, direction, epsilon"),
    (lambda: Accountant().epsilon_interval(1e-5, tol=1e-3), "tol", "delta, direction, group, rtol"),
    (lambda: Accountant().delta_interval(1.0, bound="upper"), "bound", "direction, epsilon, group, rtol"),
    (lambda: Accountant().tradeoff(step=1e-3), "step", "none"),
    (lambda: Accountant().pair(x=1), "x", "none"),
    (lambda: Accountant().curve(PLD, stpe=1e-3), "stpe", "step, tail, lower"),
])
def test_unknown_options_are_refused_naming_the_allowed_ones(call, keyword, allowed):
    with pytest.raises(TypeError, match=rf"got (unknown option|unexpected keyword argument) "
                                        rf"'{keyword}'; allowed: {allowed}$"):
        call()


def test_known_options_still_work():
    acc = Accountant(step=STEP).compose(mechanism=accounting.mechanism("gaussian", sigma=2.0),
                                        count=10)
    a = float(acc.epsilon(delta=1e-6, direction="max", bound="upper"))
    assert a == pytest.approx(gaussian_epsilon(np.sqrt(10) / 2, 1e-6), abs=1e-3)
    assert isinstance(acc.curve(PLD, step=2e-3, tail=1e-15, lower=False), PLD)


@pytest.mark.parametrize("step", [1e-9, 2.4e-6, 0.5 * MIN_STEP, 1e-300])
def test_steps_outside_the_grid_limits_are_refused_before_allocating(step):
    # the refusal comes before any grid is allocated: under 1 MiB traced at the peak
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"step must be at least 1e-05, got .*grid points"
                                             rf".*max {MAX_GRID_POINTS}.*use a larger step"):
            Accountant(step=step)
        acc = Accountant(step=1e-2).compose(accounting.mechanism("gaussian", sigma=1.0))
        with pytest.raises(ValueError, match=r"step must be at least 1e-05"):
            acc.curve(PLD, step=step)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 2 ** 20


def test_coarse_steps_are_accepted_and_stay_sound():
    acc = Accountant(step=2.0).compose(accounting.mechanism("gaussian", sigma=1.0), 4)
    assert float(acc.epsilon(1e-5)) >= gaussian_epsilon(2.0, 1e-5)


def test_unreachable_rtol_is_refused_after_one_coarse_grid():
    """At step 1e-2 the bracket of 3 Laplace uses is wide; a step² extrapolation to
    the smallest step allowed cannot reach 1e-15, so no finer grid is built."""
    # (Laplace: an all-Gaussian job has a closed form and builds no grid at all)
    acc = Accountant(step=1e-2).compose(accounting.mechanism("laplace", b=1.0), 3)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"rtol=1e-15 cannot be reached: at step=0.01"):
            acc.epsilon_interval(1e-5, rtol=1e-15)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 64 * 2 ** 20
    grids = [k for k in acc._cache if not (isinstance(k[0], str) and
                                           k[0].startswith(("closed", "pure")))]
    assert grids == [("refining", True)]   # the one grid built (step 0.01)


def test_reachable_rtol_refines_and_stays_certified():
    acc = Accountant(step=1e-2).compose(accounting.mechanism("gaussian", sigma=1.0), 3)
    lo, hi = acc.epsilon_interval(1e-5, rtol=1e-5)
    exact = gaussian_epsilon(np.sqrt(3), 1e-5)
    assert lo <= exact <= hi and hi - lo <= 1e-5 * hi


@pytest.mark.parametrize("count", [1e30, 10 ** 30, 2 ** 53 + 1, np.float64(1e23)])
def test_huge_counts_are_refused(count):
    with pytest.raises(ValueError, match=r"count must be an integer <= 9007199254740992"):
        Accountant().compose(accounting.mechanism("gaussian", sigma=1.0), count)


def test_largest_count_is_answered_by_rdp():
    acc = Accountant().compose(accounting.mechanism("gaussian", sigma=1e8), 2 ** 53)
    rho = 2 ** 53 / (2 * 1e16)
    assert float(acc.curve(ZCDP).epsilon(1e-5)) == pytest.approx(
        cks_zcdp_epsilon(rho, 1e-5), rel=1e-6)


# ------------------------------------------------------------ state and reload
import json
import pickle

from accounting.accountant import check_accountant
from accounting.ledger import Ledger

JOBS = {
    "gaussian+laplace": [("gaussian", {"sigma": 1.0}, 3), ("laplace", {"b": 2.0}, 10)],
    "dpsgd": [("subsampled_gaussian", {"q": 0.01, "sigma": 1.1}, 300)],
    "mixed": [("poisson_subsampled", {"q": 0.05, "base": {"name": "gaussian", "sigma": 2.0}}, 20),
              ("randomized_response", {"p": 0.8}, 2), ("gaussian", {"sigma": 3.0}, 2)],
}


def _job(name: str, step: float = STEP) -> Accountant:
    acct = Accountant(step=step)
    for mech, params, count in JOBS[name]:
        acct.compose(Ledger.build(mech, **params).mechanisms()[0][0], count)
    return acct


def _answers(acct: Accountant) -> list:
    out = []
    for name in ("pld", "rdp", "zcdp"):
        out += [acct.under(name).epsilon([1e-5, 1e-8]), acct.under(name).delta([0.5, 2.0])]
    out += list(acct.epsilon_interval(1e-6))
    return [np.asarray(a, dtype=float).tobytes() for a in out]


@pytest.mark.parametrize("job", list(JOBS))
def test_reloaded_accountant_answers_bit_for_bit(job):
    acct = _job(job)
    before = _answers(acct)
    doc = acct.to_dict()
    assert doc["kind"] == "accountant" and doc["schema"] == 1 and doc["step"] == STEP
    back = Accountant.from_dict(json.loads(json.dumps(doc)))
    assert back == acct and back.ledger.entries == acct.ledger.entries
    assert _answers(back) == before
    fresh = Accountant()
    fresh.load_state_dict(acct.state_dict())
    assert fresh.step == STEP and _answers(fresh) == before


def test_pickle_carries_the_state_not_the_cached_curves():
    acct = Accountant().compose(accounting.mechanism("subsampled_gaussian", q=0.01,
                                                     sigma=1.1), 1000)
    empty = len(pickle.dumps(acct))
    eps = acct.epsilon(1e-5)
    lo, hi = acct.epsilon_interval(1e-5)
    assert acct._cache          # the PLDs are cached (≈ 1-3 MB pickled before this change)
    assert len(pickle.dumps(acct)) == empty < 2000
    back = pickle.loads(pickle.dumps(acct))
    assert not back._cache and back == acct
    assert back.epsilon(1e-5) == eps and back.epsilon_interval(1e-5) == (lo, hi)


def test_composition_order_does_not_change_the_ledger():
    a = _job("gaussian+laplace")
    b = Accountant(step=STEP).compose(accounting.mechanism("laplace", b=2.0), 10)
    b.compose(accounting.mechanism("gaussian", sigma=1.0), 1).compose(
        accounting.mechanism("gaussian", sigma=1.0), 2)
    assert a.ledger == b.ledger and hash(a.ledger) == hash(b.ledger)
    assert Accountant.of(a.ledger, step=STEP) == a
    # a whole ledger composes, repeated
    c = Accountant(step=STEP).compose(a.ledger, 2)
    assert c.count == 2 * a.count


def test_bad_state_documents_name_their_path():
    doc = _job("gaussian+laplace").to_dict()
    bad = json.loads(json.dumps(doc))
    bad["ledger"]["entries"][1]["mechanism"]["b"] = "2"
    with pytest.raises(TypeError, match=r"^ledger\.entries\[1\]\.mechanism\.b must be a number"):
        Accountant.from_dict(bad)
    with pytest.raises(ValueError, match=r"^cache: unknown key"):
        Accountant.from_dict({**doc, "cache": {}})
    with pytest.raises(ValueError, match=r"^step: missing"):
        Accountant.from_dict({k: v for k, v in doc.items() if k != "step"})
    with pytest.raises(TypeError, match=r"^step must be a number"):
        Accountant.from_dict({**doc, "step": "1e-3"})
    with pytest.raises(ValueError, match=r"step must be at least"):
        Accountant.from_dict({**doc, "step": 1e-9})
    with pytest.raises(ValueError, match=r"^kind: this is a 'ledger' document"):
        Accountant.from_dict({**doc, "kind": "ledger"})
    with pytest.raises(ValueError, match=r"^ledger\.colour: unknown key"):
        Accountant.from_dict({**doc, "ledger": {"entries": [], "colour": 1}})
    acct = Accountant()
    with pytest.raises(TypeError, match=r"^ledger\.entries must be a list"):
        acct.load_state_dict({**doc, "ledger": {"entries": 3}})
    assert acct.ledger == Ledger() and acct.step == accounting.curves.pld.DEFAULT_STEP


def test_a_composed_pair_cannot_be_saved():
    acct = Accountant().compose(accounting.mechanism("gaussian", sigma=1.0)).compose(
        accounting.mechanism("laplace", b=1.0).pair(), 2)
    assert acct.epsilon(1e-5) > 0
    with pytest.raises(TypeError, match=r"entries\[1\]\.mechanism: .*no written form"):
        acct.to_dict()


def test_check_accountant():
    assert check_accountant("PLD") == "pld"
    assert check_accountant("all", allow_all=True) == "all"
    with pytest.raises(ValueError, match="accountant must be one of pld, rdp, zcdp, got 'all'"):
        check_accountant("all")
    with pytest.raises(ValueError, match="one of pld, rdp, zcdp, all, got 3"):
        check_accountant(3, allow_all=True)


def test_every_pld_derived_curve_uses_the_accountants_step():
    from accounting import PrivacyProfile
    acct = Accountant(step=1e-2).compose(accounting.mechanism("laplace", b=1.0), 3)
    coarse = acct.curve(PLD)
    fine = acct.pair().curve(PLD, step=1e-4)
    eps = np.array([0.3, 1.1, 2.2])
    assert np.array_equal(acct.curve(PrivacyProfile).delta(eps), coarse.delta(eps))
    alpha = np.array([1e-3, 0.1, 0.5])
    assert np.array_equal(acct.curve(TradeOff).beta(alpha), acct.tradeoff().beta(alpha))
    # the coarse grid is looser than the fine one, so the step really reached it
    assert np.all(coarse.delta(eps) >= fine.delta(eps)) and np.any(coarse.delta(eps) > fine.delta(eps))
