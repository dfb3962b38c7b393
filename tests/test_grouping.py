"""Grouping by dominance (``accounting.ledger.grouping``) and the memory plan of a
composition of many distinct mechanisms (``numerics.loss.check_held_points``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import accounting as ac
from accounting.ledger import Ledger
from accounting.ledger.grouping import garbling_parameter, group_by_dominance
from accounting.ledger.spec import MechanismSpec
from accounting.numerics import loss
from accounting.numerics.loss import GridSizeError


def _schedule(sigmas, q=0.05):
    acct = ac.Accountant()
    for s in sigmas:
        acct.compose(ac.mechanism("subsampled_gaussian", sigma=float(s), q=q))
    return acct


def test_the_grouped_bracket_holds_the_ungrouped_one():
    """Upper from the least noisy member of each run dominates, lower from the noisiest
    is dominated: the grouped bracket contains the exact composition's own bracket, and
    is wider by the price of grouping."""
    acct = _schedule(np.linspace(0.9, 1.3, 24))
    lo, hi = acct.epsilon_interval(1e-5)
    glo, ghi = acct.epsilon_interval(1e-5, group=0.05)
    assert glo <= lo and hi <= ghi
    assert ghi / glo - 1 > hi / lo - 1
    groups = acct.grouped(0.05)
    assert groups.distinct_before == 24 and groups.distinct_after < 24
    # δ(ε) the same way
    dlo, dhi = acct.delta_interval(1.0)
    gdlo, gdhi = acct.delta_interval(1.0, group=0.05)
    assert gdlo <= dlo and dhi <= gdhi


def test_a_gaussian_schedule_brackets_its_exact_gdp_value():
    """Gaussians of distinct σ compose to exactly μ = √Σ1/σᵢ² GDP (Dong, Roth, Su,
    arXiv:1905.02383, Cor. 3.3), whose δ(ε) is Balle–Wang's (arXiv:1805.06530, Thm 8):
    the grouped bracket must hold it."""
    sigmas = np.linspace(5.0, 9.0, 40)
    acct = ac.Accountant()
    for s in sigmas:
        acct.compose(ac.mechanism("gaussian", sigma=float(s)))
    mu = math.sqrt(float(np.sum(1.0 / sigmas ** 2)))
    eps = 0.5
    exact = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    lo, hi = acct.delta_interval(eps, group=0.1)
    assert lo <= exact <= hi
    assert acct.grouped(0.1).distinct_after <= 6


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 50.0), st.integers(1, 5)), min_size=1, max_size=30),
       st.floats(1e-3, 1.0))
def test_runs_span_at_most_the_tolerance_and_keep_every_use(members, rtol):
    ledger = Ledger([(MechanismSpec.build("gaussian", sigma=s), c) for s, c in members])
    groups = group_by_dominance(ledger, rtol)
    assert groups.upper.count == groups.lower.count == ledger.count
    ups = sorted(dict(spec.params)["sigma"] for spec, _ in groups.upper)
    lows = sorted(dict(spec.params)["sigma"] for spec, _ in groups.lower)
    assert len(ups) == len(lows) == groups.distinct_after <= groups.distinct_before
    # each run [u, l]: l ≤ u(1 + rtol), and every original value lies in a run
    for u, low in zip(ups, lows):
        assert u <= low <= u * (1 + rtol) * (1 + 1e-15)
    for s, _ in members:
        assert any(u <= s <= low for u, low in zip(ups, lows))


def test_only_declared_garbling_parameters_are_grouped():
    """Laplace declares no garbling (its b is not one in the sense proved), subsampled
    and plain Gaussians declare σ; other parameters (q) split the families."""
    assert garbling_parameter(MechanismSpec.build("gaussian", sigma=1.0)) == "sigma"
    assert garbling_parameter(MechanismSpec.build("subsampled_gaussian", sigma=1.0, q=0.1)) == "sigma"
    assert garbling_parameter(MechanismSpec.build("laplace", b=1.0)) is None
    ledger = Ledger([(MechanismSpec.build("laplace", b=1.0), 1),
                     (MechanismSpec.build("laplace", b=1.001), 1),
                     (MechanismSpec.build("subsampled_gaussian", sigma=1.0, q=0.1), 1),
                     (MechanismSpec.build("subsampled_gaussian", sigma=1.001, q=0.2), 1)])
    groups = group_by_dominance(ledger, 0.5)
    assert groups.distinct_after == 4 and groups.upper == ledger == groups.lower


@pytest.mark.parametrize("bad, error", [(0.0, ValueError), (1.5, ValueError),
                                        (float("nan"), ValueError), ("0.1", TypeError)])
def test_bad_group_is_refused_naming_it(bad, error):
    acct = _schedule([1.0, 1.1])
    with pytest.raises(error, match="group"):
        acct.epsilon_interval(1e-5, group=bad)


def test_group_and_rtol_together_are_refused():
    with pytest.raises(TypeError, match="not both"):
        _schedule([1.0, 1.1]).epsilon_interval(1e-5, rtol=1e-3, group=0.01)


def test_a_composition_too_large_to_hold_is_refused_after_its_first_part(monkeypatch):
    """The memory plan projects the first parts' sizes over the rest and refuses before
    discretising them; the message names the size and the way out."""
    made = []
    acct = _schedule(np.linspace(1.0, 2.0, 50))
    real = ac.Pair.curve

    def counting(self, kind, **options):
        made.append(kind)
        return real(self, kind, **options)

    monkeypatch.setattr(ac.Pair, "curve", counting)
    monkeypatch.setattr(loss, "MAX_HELD_BYTES", 200_000 * loss.HELD_BYTES_PER_POINT)
    with pytest.raises(GridSizeError, match=r"50 distinct mechanisms .* GiB .*group"):
        acct.epsilon(1e-5)
    assert len(made) <= 2
