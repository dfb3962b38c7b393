"""dp_event trees of any depth, and event fields of the wrong type (issue 22).

The bridge walks a tree with an explicit stack, so a valid tree thousands of events
deep is answered; a chain of Poisson samplings is one sampling with the product of
the probabilities (each record is kept by every sampling independently). Fields are
checked for their type before use: dp_accounting's events are plain records, and
``float('1.0')`` or ``True == 1`` must not turn a wrong value into an answer.
References: the Gaussian mechanism's exact δ(ε) (Balle & Wang 2018, Thm 8) and the
Poisson-subsampled Gaussian's, in closed form per direction.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import norm

E = pytest.importorskip("dp_accounting.dp_event")

import accounting  # noqa: E402
from accounting import PLD  # noqa: E402
from accounting.ledger import Ledger  # noqa: E402
from accounting_bridges.dp_event import (UnsupportedEventError,  # noqa: E402
                                         dp_event_entries, from_dp_event,
                                         ledger_from_dp_event)

DEPTH = 2000


def gaussian_delta(mu: float, eps: float) -> float:
    """δ(ε) of the Gaussian mechanism of μ = Δ/σ (Balle & Wang 2018, Thm 8)."""
    return float(norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu))


def subsampled_gaussian_delta(q: float, sigma: float, eps: float) -> float:
    """δ(ε) of the Poisson-subsampled Gaussian (sensitivity 1) under add/remove, max over
    the two directions. With M = (1 − q)N(0, σ²) + qN(1, σ²) and N = N(0, σ²), the loss
    log(M/N) = log(1 − q + q e^{(2x − 1)/(2σ²)}) is increasing in x, so each hockey stick
    is a difference of normal tails at the one threshold where the ratio meets e^{±ε}."""
    s2 = sigma * sigma

    def x_at(ratio):      # the x where 1 − q + q e^{(2x − 1)/(2σ²)} = ratio
        return 0.5 + s2 * math.log((ratio - 1.0 + q) / q)
    x1 = x_at(math.exp(eps))                     # D(M‖N): M(x > x1) − e^ε N(x > x1)
    remove = ((1 - q) * norm.sf(x1 / sigma) + q * norm.sf((x1 - 1) / sigma)
              - math.exp(eps) * norm.sf(x1 / sigma))
    add = 0.0
    if math.exp(-eps) > 1 - q:                   # D(N‖M): N(x < x2) − e^ε M(x < x2)
        x2 = x_at(math.exp(-eps))
        add = norm.cdf(x2 / sigma) - math.exp(eps) * (
            (1 - q) * norm.cdf(x2 / sigma) + q * norm.cdf((x2 - 1) / sigma))
    return max(remove, add)


def test_the_closed_forms_agree_with_each_other():
    # q = 1 is the plain Gaussian: the two references must agree there
    for eps in (0.2, 1.0, 3.0):
        assert subsampled_gaussian_delta(1.0, 1.3, eps) == pytest.approx(
            gaussian_delta(1 / 1.3, eps), rel=1e-12)


def test_a_composed_tree_2000_deep_is_answered():
    # 2001 Gaussians of σ = √2001, one per level: one Gaussian of μ = 1
    sigma = math.sqrt(DEPTH + 1)
    event = E.GaussianDpEvent(sigma)
    for _ in range(DEPTH):
        event = E.ComposedDpEvent([E.GaussianDpEvent(sigma), event])
    acct = from_dp_event(event, step=1e-3)
    assert acct.count == DEPTH + 1
    lo, hi = acct.curve(PLD).delta_interval(1.0)
    exact = gaussian_delta(1.0, 1.0)
    assert lo <= exact * (1 + 1e-9) and exact <= hi * (1 + 1e-9)
    assert hi - lo < 1e-3 * exact
    # the same tree one event per level, and under SelfComposedDpEvents
    wrapped = E.GaussianDpEvent(1.0)
    for k in range(DEPTH):
        wrapped = E.ComposedDpEvent([wrapped]) if k % 2 else E.SelfComposedDpEvent(wrapped, 1)
    assert ledger_from_dp_event(wrapped) == Ledger.build("gaussian", 1, sigma=1.0)


def test_a_poisson_chain_2000_deep_is_one_sampling():
    event = E.GaussianDpEvent(1.0)
    for _ in range(DEPTH):
        event = E.PoissonSampledDpEvent(0.999, event)
    (mechanism, count), = dp_event_entries(event)
    assert mechanism.name == "subsampled_gaussian" and count == 1
    exact_q = Fraction(0.999) ** DEPTH
    # the product, rounded up (never a smaller sampling probability): within 2000 ulps
    assert Fraction(mechanism.q) >= exact_q
    assert mechanism.q == pytest.approx(float(exact_q), rel=DEPTH * 2.3e-16)
    pld = from_dp_event(event, step=1e-3).curve(PLD)
    for eps in (0.25, 0.5, 1.0):
        exact = subsampled_gaussian_delta(mechanism.q, 1.0, eps)
        lo, hi = pld.delta_interval(eps)
        assert lo <= exact * (1 + 1e-9) and exact <= hi * (1 + 1e-9), (eps, lo, exact, hi)
        assert hi - lo < 1e-2 * exact


def test_a_chain_whose_product_underflows_is_kept_positive():
    # Π q = 1e-400 is below every float: it is taken as the least q the mechanism takes
    # (1e-300 for subsampled_gaussian), larger than the true one, never as 0
    event = E.GaussianDpEvent(1.0)
    for _ in range(40):
        event = E.PoissonSampledDpEvent(1e-10, event)
    (mechanism, _), = dp_event_entries(event)
    smallest = accounting.default_registry().mechanism("subsampled_gaussian").ranges()["q"].lo
    assert mechanism.q == smallest == 1e-300
    # a single event with such a q is the user's value: refused, not raised
    with pytest.raises(UnsupportedEventError, match="q must be in"):
        dp_event_entries(E.PoissonSampledDpEvent(1e-310, E.GaussianDpEvent(1.0)))


def test_an_invalid_probability_inside_a_chain_is_named():
    event = E.PoissonSampledDpEvent(0.5, E.PoissonSampledDpEvent(1.5, E.GaussianDpEvent(1.0)))
    with pytest.raises(ValueError, match=r"^event\.event\.sampling_probability must be in "
                                         r"\[0, 1\], got 1\.5"):
        dp_event_entries(event)


G = E.GaussianDpEvent(1.0)
WRONG_TYPES = [
    (E.GaussianDpEvent("1.0"), "add_remove", r"^event\.noise_multiplier must be a real number, "
                                             r"got str \('1\.0'\)"),
    (E.GaussianDpEvent(True), "add_remove", r"^event\.noise_multiplier must be a real number, "
                                            r"got bool"),
    (E.ComposedDpEvent([G, E.LaplaceDpEvent("2")]), "add_remove",
     r"^event\.events\[1\]\.noise_multiplier must be a real number, got str"),
    (E.DiscreteLaplaceDpEvent(0.5, "1"), "add_remove", r"^event\.sensitivity must be an "
                                                       r"integer, got str"),
    (E.RandomizedResponseDpEvent(0.5, True), "add_remove", r"^event\.num_buckets must be an "
                                                           r"integer, got bool"),
    (E.RandomizedResponseDpEvent("0.5", 2), "add_remove", r"^event\.noise_parameter must be a "
                                                          r"real number"),
    (E.MixtureOfGaussiansDpEvent("1", [1.0], [1.0]), "add_remove",
     r"^event\.standard_deviation must be a real number"),
    (E.MixtureOfGaussiansDpEvent(1.0, ["1"], [1.0]), "add_remove",
     r"^event\.sensitivities must be a real number or an array"),
    (E.MixtureOfGaussiansDpEvent(1.0, [1.0], [True]), "add_remove",
     r"^event\.sampling_probs must be a real number or an array"),
    (E.SingleEpochTreeAggregationDpEvent("1", 4), "add_remove",
     r"^event\.noise_multiplier must be a real number"),
    (E.SingleEpochTreeAggregationDpEvent(1.0, [2, "3"]), "add_remove",
     r"^event\.step_counts\[1\] must be an integer, got str"),
    (E.PoissonSampledDpEvent("0.5", G), "add_remove",
     r"^event\.sampling_probability must be a real number, got str"),
    (E.SampledWithoutReplacementDpEvent(100, True, G), "replace_one",
     r"^event\.sample_size must be an integer, got bool"),
    (E.SampledWithoutReplacementDpEvent("100", 10, G), "replace_one",
     r"^event\.source_dataset_size must be an integer, got str"),
    (E.RepeatAndSelectDpEvent(G, "1", 1.0), "add_remove", r"^event\.mean must be a real number"),
    (E.SelfComposedDpEvent(G, "3"), "add_remove", r"^event\.count must be an integer, got str"),
    (E.SelfComposedDpEvent(G, True), "add_remove", r"^event\.count must be an integer, got bool"),
]


@pytest.mark.parametrize("event, relation, message", WRONG_TYPES,
                         ids=[str(i) for i in range(len(WRONG_TYPES))])
def test_event_fields_of_the_wrong_type_are_refused(event, relation, message):
    with pytest.raises(TypeError, match=message):
        dp_event_entries(event, relation)


def test_a_nan_field_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^event\.events\[0\]\.noise_multiplier must be a "
                                         r"number, got NaN"):
        dp_event_entries(E.ComposedDpEvent([E.GaussianDpEvent(float("nan"))]))


def test_wrappers_nest_as_deep_as_in_a_ledger_document():
    # four samplings without replacement around a Gaussian: a base nested 4 deep, as a
    # ledger document may hold; the bridge's ledger reads back as the same composition
    event = G
    for _ in range(4):
        event = E.SampledWithoutReplacementDpEvent(1000, 500, event)
    ledger = ledger_from_dp_event(event, "replace_one")
    assert Ledger.from_json(ledger.to_json()) == ledger
    deeper = E.SampledWithoutReplacementDpEvent(1000, 500, event)
    with pytest.raises(UnsupportedEventError, match=r"^SampledWithoutReplacementDpEvent at "
                                                    r"event: mechanisms nested more than 4 "
                                                    r"deep"):
        ledger_from_dp_event(deeper, "replace_one")
    many = G
    for _ in range(DEPTH):
        many = E.SampledWithoutReplacementDpEvent(1000, 500, many)
    with pytest.raises(UnsupportedEventError, match="nested more than 4 deep"):
        dp_event_entries(many, "replace_one")


def test_numbers_of_every_numeric_type_still_work():
    # numpy scalars and integral floats are numbers: the same entries as Python floats
    a = dp_event_entries(E.PoissonSampledDpEvent(np.float64(0.01), E.GaussianDpEvent(
        np.float32(1.5))))
    b = dp_event_entries(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.5)))
    assert a == b
    rr = dp_event_entries(E.RandomizedResponseDpEvent(0.5, np.int64(3)))
    assert rr == dp_event_entries(E.RandomizedResponseDpEvent(0.5, 3))
    assert accounting.Accountant().compose(a[0][0]).epsilon(1e-5) > 0


def test_the_folded_chain_equals_the_nested_subsampling_it_replaces():
    # Poisson sampling of a Poisson sample, accounted the long way (the library's
    # poisson_subsampled around poisson_subsampled) and folded (one q = q1·q2·q3)
    m = accounting.mechanism
    nested = m("gaussian", sigma=1.0)
    event = E.GaussianDpEvent(1.0)
    for q in (0.5, 0.3, 0.8):
        nested = m("poisson_subsampled", q=q, base=nested)
        event = E.PoissonSampledDpEvent(q, event)
    long_way = accounting.Accountant(step=1e-3).compose(nested)
    folded = from_dp_event(event, step=1e-3)
    (mechanism, _), = dp_event_entries(event)
    assert mechanism.q == pytest.approx(0.5 * 0.3 * 0.8, rel=1e-15)
    for delta in (1e-3, 1e-5):
        lo, hi = long_way.epsilon_interval(delta)
        flo, fhi = folded.epsilon_interval(delta)
        assert max(lo, flo) <= min(hi, fhi) * (1 + 1e-9)      # the brackets overlap
        assert fhi == pytest.approx(hi, rel=1e-3)
