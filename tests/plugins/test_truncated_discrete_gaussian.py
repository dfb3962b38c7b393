"""The truncated discrete Gaussian: exact finite laws and dp_accounting's figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, PrivacyProfile
from accounting.testing import MechanismContract

NAN = float("nan")


def _mech(**params):
    return accounting.default_registry().mechanism("truncated_discrete_gaussian")(**params)


class TestTruncatedDiscreteGaussianContract(MechanismContract):
    mechanism = _mech(sigma=2.0, truncation=6)
    bad_parameters = [dict(sigma=-1.0), dict(sigma=NAN), dict(sigma=0.0), dict(truncation=-1),
                      dict(truncation=1.5), dict(sensitivity=0.5), dict(sensitivity=-1)]


class TestWideTruncatedDiscreteGaussianContract(MechanismContract):
    mechanism = _mech(sigma=3.0, truncation=10 ** 6, sensitivity=2)


# dp_accounting's published pessimistic PLDs (discretisation 1e-4, so the losses
# below are the exact ones: (2xΔ − Δ²)/(2σ²)), with their mass at +∞
FIGURES = [
    (1.0, 1, 1, {0.5: 0.45186276, -0.5: 0.27406862}, 0.27406862),
    (1.0, 2, 1, {0.0: 0.27406862}, 0.72593138),
    (3.0, 1, 1, {1 / 18: 0.34579116, -1 / 18: 0.32710442}, 0.32710442),
    (1.0, 1, 2, {1.5: 0.24420134, 0.5: 0.40261995, -0.5: 0.24420134, -1.5: 0.05448868},
     0.05448868),
    (1.0, 1, 3, {2.5: 0.05400558, 1.5: 0.24203622, 0.5: 0.39905027, -0.5: 0.24203623,
                 -1.5: 0.05400558, -2.5: 0.00443305}, 0.00443305),
]


@pytest.mark.parametrize("sigma,delta,trunc,atoms,inf_mass", FIGURES)
def test_dp_accounting_figures(sigma, delta, trunc, atoms, inf_mass):
    law = _mech(sigma=sigma, truncation=trunc, sensitivity=delta).pair().upper[0]
    assert law.inf_mass == pytest.approx(inf_mass, abs=1e-8)
    got = dict(zip(law.losses.tolist(), law.masses.tolist()))
    assert len(got) == len(atoms)
    for loss, mass in atoms.items():
        key = min(got, key=lambda x: abs(x - loss))
        assert key == pytest.approx(loss, abs=1e-12) and got[key] == pytest.approx(mass, abs=1e-8)


def test_masses_are_the_truncated_pmf():
    sigma, T, d = 1.7, 4, 1
    y = np.arange(-T, T + 1)
    pmf = np.exp(-y ** 2 / (2 * sigma ** 2))
    pmf /= pmf.sum()
    law = _mech(sigma=sigma, truncation=T, sensitivity=d).pair().upper[0]
    # P-only outcome x = T + 1 has P-mass pmf(T); the finite atoms are the rest of P
    assert law.inf_mass == pytest.approx(pmf[-1], rel=1e-13)
    np.testing.assert_allclose(law.masses, pmf[:-1], rtol=1e-13)
    np.testing.assert_allclose(law.losses, (2 * (y[:-1] + d) * d - d * d) / (2 * sigma ** 2),
                               rtol=1e-14)


def test_wide_truncation_matches_the_untruncated_discrete_gaussian():
    """T far beyond the mass: the profile is the discrete Gaussian's (its own plugin)."""
    eps = np.linspace(-1, 3, 41)
    a = _mech(sigma=2.0, truncation=1000, sensitivity=1).pair().profile(eps)
    b = accounting.mechanism("discrete_gaussian", sigma=2.0).pair().profile(eps)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-15)


def test_truncation_floors_delta():
    m = _mech(sigma=1.0, truncation=2)
    prof = m.curve(PrivacyProfile)
    assert float(prof.delta(100.0)) == pytest.approx(0.05448868, abs=1e-8)
    assert math.isinf(float(m.curve(RDP).rdp(2.0)))
    # a tiny but positive +∞ mass keeps ε(δ → 0) infinite
    wide = _mech(sigma=1.0, truncation=500).pair().upper[0]
    assert wide.inf_mass > 0 and wide.max_loss == math.inf


def test_degenerate_parameters():
    none = _mech(sigma=1.0, truncation=0)           # no noise: non-private
    assert float(none.curve(PLD).epsilon(0.5)) == math.inf
    assert float(none.curve(PrivacyProfile).delta(10.0)) == 1.0
    free = _mech(sigma=1.0, truncation=3, sensitivity=0)   # zero sensitivity: free
    assert float(free.curve(PrivacyProfile).delta(0.0)) == 0.0
    assert float(free.curve(RDP).rdp(4.0)) == 0.0
    with pytest.raises(ValueError, match="sigma must be"):
        _mech(sigma=0.0, truncation=3)


def test_sample_draws_the_truncated_pmf():
    m = _mech(sigma=1.5, truncation=2)
    x = m.sample(np.random.default_rng(7), (20000,))
    assert x.shape == (20000,) and x.min() >= -2 and x.max() <= 2
    y = np.arange(-2, 3)
    pmf = np.exp(-y ** 2 / (2 * 1.5 ** 2))
    pmf /= pmf.sum()
    freq = np.bincount(x + 2, minlength=5) / x.size
    np.testing.assert_allclose(freq, pmf, atol=0.015)


def test_dp_accounting_agrees():
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    theirs = pld_mod.from_discrete_gaussian_mechanism(2.0, sensitivity=1, truncation_bound=5)
    ours = _mech(sigma=2.0, truncation=5).pair()
    for e in (0.0, 0.2, 0.5, 1.0, 3.0):
        t, o = theirs.get_delta_for_epsilon(e), float(ours.profile(e))
        assert o <= t + 1e-12 and t - o < 1e-3, (e, o, t)
