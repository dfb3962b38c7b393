"""Degenerate parameters of every built-in mechanism: answered exactly, never a crash.

* no noise (a noise scale 0): P ⊥ Q, the
  mechanism is non-private: ε(δ) = ∞ for δ < 1, δ(ε) = 1, β ≡ 0, D_α = ∞, ρ = ∞, and
  the provenance says "non-private";
* sensitivity 0, sampling rate 0, an empty batch: P = Q, no privacy cost: ε(δ) = 0,
  δ(ε) = 0 for ε ≥ 0, β(α) = 1 − α, D_α = 0, ρ = 0;
* Poisson subsampling at q of a noiseless base: P = (1 − q)Q₀ + qP₀ with P₀ ⊥ Q₀, so
  δ(ε) = q for every ε ≥ 0 (the record's presence is revealed with probability q).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, ZCDP, Accountant, PrivacyProfile, TradeOff

ALPHA = np.array([0.0, 0.25, 0.5, 1.0])


def _m(name, **params):
    return accounting.default_registry().mechanism(name)(**params)


NON_PRIVATE = {
    "gaussian": lambda: _m("gaussian", sigma=0.0),
    "laplace": lambda: _m("laplace", b=0.0),
    "discrete_gaussian": lambda: _m("discrete_gaussian", sigma=0.0),
    "discrete_laplace": lambda: _m("discrete_laplace", scale=0.0),
    "student_t": lambda: _m("student_t", nu=3.0, scale=0.0),
    "generalised_gaussian": lambda: _m("generalised_gaussian", beta=1.5, scale=0.0),
    "generalised_gaussian_2": lambda: _m("generalised_gaussian", beta=2.0, scale=0.0),
    "sampled_without_replacement": lambda: _m(
        "sampled_without_replacement", base=_m("gaussian", sigma=0.0, neighbouring="replace_one"),
        batch_size=10, dataset_size=10),
    "poisson_subsampled_q1": lambda: _m("poisson_subsampled", base=_m("laplace", b=0.0), q=1.0),
}

NO_COST = {
    "gaussian": lambda: _m("gaussian", sigma=1.0, sensitivity=0.0),
    "gaussian_no_noise": lambda: _m("gaussian", sigma=0.0, sensitivity=0.0),
    "laplace": lambda: _m("laplace", b=1.0, sensitivity=0.0),
    "discrete_gaussian": lambda: _m("discrete_gaussian", sigma=2.0, sensitivity=0),
    "discrete_laplace": lambda: _m("discrete_laplace", scale=2.0, sensitivity=0),
    "student_t": lambda: _m("student_t", nu=3.0, scale=1.0, sensitivity=0.0),
    "generalised_gaussian": lambda: _m("generalised_gaussian", beta=1.5, scale=1.0,
                                       sensitivity=0.0),
    "gaussian_mixture": lambda: _m("gaussian_mixture", weights=(0.5, 0.5), means=(-1.0, 1.0),
                                   scales=(1.0, 1.0), sensitivity=0.0),
    "randomized_response_half": lambda: _m("randomized_response", p=0.5),
    "subsampled_gaussian_q0": lambda: _m("subsampled_gaussian", q=0.0, sigma=1.0),
    "subsampled_gaussian_s0": lambda: _m("subsampled_gaussian", q=0.1, sigma=1.0,
                                         sensitivity=0.0),
    "subsampled_laplace_q0": lambda: _m("subsampled_laplace", q=0.0, b=1.0),
    "poisson_subsampled_q0": lambda: _m("poisson_subsampled", base=_m("gaussian", sigma=0.0),
                                        q=0.0),
    "sampled_without_replacement_empty": lambda: _m(
        "sampled_without_replacement", base=_m("laplace", b=1.0, neighbouring="replace_one"),
        batch_size=0, dataset_size=100),
}

NOISELESS_SUBSAMPLED = {
    "subsampled_gaussian": lambda: _m("subsampled_gaussian", q=0.1, sigma=0.0),
    "subsampled_laplace": lambda: _m("subsampled_laplace", q=0.1, b=0.0),
    "poisson_subsampled": lambda: _m("poisson_subsampled", base=_m("laplace", b=0.0), q=0.1),
}


def _curves(mech):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # envelope "sup at t → ∞" notes
        return {k: mech.curve(k) for k in (PLD, PrivacyProfile, RDP, ZCDP, TradeOff)}


@pytest.mark.parametrize("case", sorted(NON_PRIVATE))
def test_no_noise_is_non_private(case):
    mech = NON_PRIVATE[case]()
    c = _curves(mech)
    for kind in (PLD, PrivacyProfile):
        assert c[kind].epsilon(1e-5) == np.inf
        assert c[kind].epsilon(0.5) == np.inf
        np.testing.assert_array_equal(c[kind].delta(np.array([0.0, 3.0, 50.0])), 1.0)
    assert c[RDP].rdp(np.array([1.5, 2.0, 10.0])).tolist() == [np.inf] * 3
    assert c[ZCDP].rho() == np.inf
    np.testing.assert_array_equal(c[TradeOff].beta(ALPHA), 0.0)
    assert "non-private" in mech.pair().describe()
    for kind in (PLD, PrivacyProfile, RDP):
        assert "non-private" in " ".join(c[kind].provenance.path)


@pytest.mark.parametrize("case", sorted(NO_COST))
def test_no_sensitivity_or_no_sampling_costs_nothing(case):
    mech = NO_COST[case]()
    c = _curves(mech)
    for kind in (PLD, PrivacyProfile):
        assert c[kind].epsilon(1e-5) == 0.0
        np.testing.assert_array_equal(c[kind].delta(np.array([0.0, 0.5, 3.0])), 0.0)
    np.testing.assert_allclose(c[TradeOff].beta(ALPHA), 1.0 - ALPHA, atol=1e-15)
    # (randomized response at p = ½ sums two equal terms: D_α within an ulp of 0, and
    # the numerical envelope divides that roundoff by small t(t + 1))
    np.testing.assert_allclose(c[RDP].rdp(np.array([1.5, 2.0, 10.0])), 0.0, atol=1e-15)
    assert c[ZCDP].rho() == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("case", sorted(NOISELESS_SUBSAMPLED))
def test_noiseless_subsampling_reveals_presence_with_probability_q(case):
    c = _curves(NOISELESS_SUBSAMPLED[case]())
    eps = np.array([0.0, 1.0, 10.0, 100.0])
    np.testing.assert_allclose(c[PrivacyProfile].delta(eps, "forward"), 0.1, rtol=1e-12)
    np.testing.assert_allclose(c[PLD].delta(eps, "forward"), 0.1, rtol=1e-9)
    assert c[PLD].epsilon(0.05) == np.inf          # δ < q: no finite ε
    assert c[RDP].rdp(2.0, "forward") == np.inf    # mass at +∞ in the remove direction


def test_corners_compose_with_other_mechanisms():
    g = accounting.mechanism("gaussian", sigma=1.0)
    base = Accountant().compose(g, 3)
    same = Accountant().compose(g, 3).compose(NO_COST["laplace"](), 5)
    assert same.epsilon(1e-5) == pytest.approx(base.epsilon(1e-5), rel=1e-9)
    broken = Accountant().compose(g, 3).compose(NON_PRIVATE["gaussian"]())
    assert broken.epsilon(1e-5) == np.inf


@pytest.mark.parametrize("name,field", [("gaussian", "sigma"), ("laplace", "b"),
                                        ("discrete_laplace", "scale"),
                                        ("subsampled_gaussian", "sigma")])
def test_negative_scales_are_still_refused(name, field):
    params = {"q": 0.1} if name.startswith("subsampled") else {}
    with pytest.raises(ValueError, match=field):
        _m(name, **params, **{field: -1e-3})
