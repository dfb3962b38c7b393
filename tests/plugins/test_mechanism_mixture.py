"""A mixture of mechanisms: δ and the Rényi moments average over the branches."""

from __future__ import annotations

import math

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile
from accounting.vocabulary import Exactness
from accounting.testing import MechanismContract

from closed_forms import gaussian_delta

NAN = float("nan")


def _mix(mechs, probs, **kw):
    return accounting.default_registry().mechanism("mechanism_mixture")(mechs, probs, **kw)


G1 = accounting.mechanism("gaussian", sigma=1.0)
G3 = accounting.mechanism("gaussian", sigma=3.0)
LAP = accounting.mechanism("laplace", b=2.0)


class TestMechanismMixtureContract(MechanismContract):
    mechanism = _mix((G1, LAP), (0.3, 0.7))
    bad_parameters = [dict(probs=(0.5, 0.6)), dict(probs=(1.2, -0.2)), dict(probs=(NAN, 1.0)),
                      dict(probs=(1.0,)), dict(mechanisms=(G1, "laplace")),
                      dict(mechanisms=(G1, accounting.mechanism("laplace", b=2.0,
                                                                neighbouring="replace_one")))]


def test_profile_is_the_weighted_gaussian_profiles():
    m = _mix((G1, G3), (0.25, 0.75))
    eps = np.linspace(-1, 4, 26)
    want = 0.25 * gaussian_delta(1.0, eps) + 0.75 * gaussian_delta(1 / 3, eps)
    for d in ("forward", "backward"):
        np.testing.assert_allclose(m.curve(PrivacyProfile).delta(eps, d), want, rtol=1e-9,
                                   atol=1e-15)


def test_renyi_moments_average():
    m = _mix((G1, G3), (0.25, 0.75))
    rdp = m.curve(RDP)
    assert rdp.provenance.exactness is Exactness.EXACT
    for a in (1.5, 2.0, 10.0):
        want = math.log(0.25 * math.exp((a - 1) * a / 2) + 0.75 * math.exp((a - 1) * a / 18)) / (a - 1)
        assert float(rdp.rdp(a)) == pytest.approx(want, rel=1e-12)
    assert m.curve(ZCDP).rho() <= 0.5 + 1e-12


def test_one_branch_is_the_branch():
    eps = np.linspace(-1, 3, 17)
    np.testing.assert_allclose(_mix(G1, 1.0).pair().profile(eps), G1.pair().profile(eps))


def test_free_branch_costs_nothing_and_non_private_branch_floors_delta():
    free = _mix((accounting.mechanism("approx_dp", epsilon=0.0),) * 2, (0.4, 0.6))
    assert float(free.curve(PrivacyProfile).delta(0.0)) == 0.0
    with pytest.raises(ValueError, match="probs"):
        _mix((G1, G3), (0.0, 1.0))
    leak = _mix((G3, accounting.mechanism("approx_dp", epsilon=1.0, delta=1.0)), (0.9, 0.1))
    prof = leak.curve(PrivacyProfile)
    assert float(prof.delta(50.0)) == pytest.approx(0.1, rel=1e-12)
    assert float(prof.epsilon(0.05)) == math.inf
    assert float(leak.curve(PLD).epsilon(0.05)) == math.inf


def test_mixture_of_approx_dp_branches_stays_exact():
    """Finite branches: the mixture's profile is exact and equals the weighted four-point
    pairs' (a mixture of (ε, δ) guarantees, as in 'run A or B at random')."""
    a = accounting.mechanism("approx_dp", epsilon=1.0, delta=0.01)
    b = accounting.mechanism("approx_dp", epsilon=0.2)
    m = _mix((a, b), (0.5, 0.5))
    assert m.pair().exact
    eps = np.array([0.0, 0.2, 0.5, 1.0])
    want = 0.5 * a.pair().profile(eps) + 0.5 * b.pair().profile(eps)
    np.testing.assert_allclose(m.pair().profile(eps), want, rtol=1e-14)
