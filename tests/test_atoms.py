"""Declared loss atoms (``accounting.numerics.atoms``): placed on the PLD grid exactly,
the remainder through its profile. Laplace-specific checks are in
tests/plugins/test_laplace.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from accounting import PLD, Direction
from accounting.numerics.atoms import AtomSplit, atom_profile, atoms_on_grid, on_grid
from accounting.pairs.pair import Pair

STEP = 1e-2


def _share(losses, masses, eps):
    """A(ε) = Σ m (1 − e^{ε−l})₊ term by term in math (the reference)."""
    return np.array([sum(m * max(0.0, -math.expm1(x - l)) for l, m in zip(losses, masses))
                     for x in eps])


atoms = st.lists(st.tuples(st.floats(-3.0, 3.0), st.floats(1e-6, 1.0)), min_size=1, max_size=5,
                 unique_by=lambda t: t[0])


@settings(max_examples=60, deadline=None)
@given(atoms)
def test_atoms_on_grid_bracket_their_share_of_delta(drawn):
    """Pessimistic: δ ≥ A everywhere and = A on the grid (the atom's own
    connect-the-dots), P- and Q-mass kept; optimistic: δ ≤ A (moved down)."""
    losses = np.array([l for l, _ in drawn])
    masses = np.array([m for _, m in drawn])
    masses = masses / max(1.0, masses.sum())
    eps = np.concatenate([np.linspace(-3.5, 3.5, 701) + 0.0037, np.arange(-350, 351) * STEP])
    want = _share(losses, masses, eps)
    up = atoms_on_grid(losses, masses, STEP, pessimistic=True)
    lo = atoms_on_grid(losses, masses, STEP, pessimistic=False)
    assert np.all(up.delta(eps) >= want - 1e-15)
    assert np.all(lo.delta(eps) <= want + 1e-15)
    grid = np.arange(-350, 351) * STEP
    np.testing.assert_allclose(up.delta(grid), _share(losses, masses, grid), rtol=1e-9, atol=1e-15)
    assert math.fsum(up.masses) == pytest.approx(masses.sum(), rel=1e-13)
    assert math.fsum(up.masses * np.exp(-up.losses)) == pytest.approx(
        float(np.sum(masses * np.exp(-losses))), rel=1e-12)
    assert up.sup_loss == losses.max()


def test_atoms_a_hair_below_a_grid_point_stay_on_it():
    """Δ/b = 0.3/0.1 is 2.9999999999999996: the optimistic atom stays at 3.0 (with the
    δ it may add booked as slack) instead of falling a whole cell to 2.99."""
    l = 0.3 / 0.1
    assert l < 3.0 and on_grid(np.array([l]), STEP)[1][0]
    lo = atoms_on_grid(np.array([l]), np.array([0.5]), STEP, pessimistic=False)
    assert lo.losses.tolist() == [pytest.approx(3.0, abs=1e-15)]
    assert 0 < lo.slack <= 0.5 * 4.5e-16
    eps = np.linspace(2.9, 3.1, 201)
    assert np.all(lo.delta(eps) <= _share([l], [0.5], eps) + 1e-16)   # evaluation roundoff
    assert lo.delta(2.995) == pytest.approx(0.5 * -math.expm1(2.995 - l), rel=1e-12)


def test_atom_profile_at_infinities_and_just_below_an_atom():
    losses, masses = np.array([-1.0, 2.0]), np.array([0.25, 0.5])
    assert atom_profile(losses, masses, np.array([-np.inf]))[0] == 0.75
    assert atom_profile(losses, masses, np.array([np.inf]))[0] == 0.0
    x = 2.0 - 1e-12   # full relative precision: 0.5·(1 − e^{−1e-12})
    assert atom_profile(losses, masses, np.array([x]))[0] == pytest.approx(0.5 * -math.expm1(x - 2.0), rel=1e-15)


def test_inconsistent_backward_atoms_are_refused():
    fwd = (np.array([-1.0, 1.0]), np.array([0.5 * math.exp(-1.0), 0.5]))
    good = (np.array([-1.0, 1.0]), np.array([0.5 * math.exp(-1.0), 0.5]))   # symmetric pair
    AtomSplit(fwd, good)
    with pytest.raises(ValueError, match="forward atoms reversed"):
        AtomSplit(fwd, (np.array([-1.0, 1.0]), np.array([0.5, 0.5])))
    with pytest.raises(ValueError, match="masses sum to"):
        AtomSplit((np.array([0.0, 1.0]), np.array([0.7, 0.7])), good)


class _Skewed(Pair):
    """P = (0.6, 0.4) on {a, b}, Q = (0.3, 0.7), plus an atomless Laplace-like part
    would be needed for a remainder; here the law is atoms only (remainder empty),
    with losses off the grid: the atoms-only route must match the finite pair's law."""

    exact = True

    def __init__(self):
        self.p, self.q = np.array([0.6, 0.4]), np.array([0.3, 0.7])

    def _profile(self, eps, direction):
        from closed_forms import discrete_delta
        p, q = (self.p, self.q) if direction is Direction.FORWARD else (self.q, self.p)
        return discrete_delta(p, q, eps)

    def loss_atoms(self, direction):
        p, q = (self.p, self.q) if direction is Direction.FORWARD else (self.q, self.p)
        return np.log(p / q), p


def test_a_law_of_atoms_only_needs_no_remainder():
    pair = _Skewed()
    assert pair.provides("loss_atoms")
    split = AtomSplit(pair.loss_atoms(Direction.FORWARD), pair.loss_atoms(Direction.BACKWARD))
    assert split.scale == pytest.approx(0.0, abs=1e-15)
    pld = pair.curve(PLD, step=STEP)
    from closed_forms import discrete_delta
    eps = np.linspace(-1.0, 1.0, 401) + 0.0013
    for d, (p, q) in ((Direction.FORWARD, (pair.p, pair.q)), (Direction.BACKWARD, (pair.q, pair.p))):
        exact = discrete_delta(p, q, eps)
        assert np.all(pld.delta(eps, d) >= exact - 1e-15)
        assert np.all(pld.delta(eps, d, "lower") <= exact + 1e-15)
        assert np.max(pld.delta(eps, d) - pld.delta(eps, d, "lower")) < STEP


def test_atoms_whose_mass_underflows_on_one_side_are_consistent():
    """Laplace Δ/b = 877: ½e^{−877} underflows to 0 on both sides, which is no
    disagreement; the PLD is then refused for its loss range, as documented."""
    import accounting
    pair = accounting.mechanism("laplace", b=5.28099307663388, sensitivity=4631.090213649118).pair()
    split = AtomSplit(pair.loss_atoms(Direction.FORWARD), pair.loss_atoms(Direction.BACKWARD))
    assert split.scale == pytest.approx(0.5)
    with pytest.raises(ValueError, match="cannot be discretised"):
        pair.curve(PLD, step=STEP)


@pytest.mark.parametrize("name, params", [("randomized_response", dict(p=0.3)),
                                          ("randomized_response", dict(p=0.01)),
                                          ("approx_dp", dict(epsilon=1.3))])
def test_finite_law_pessimistic_side_is_connect_the_dots_of_its_atoms(name, params):
    """A finite pair's upper PLD comes from its atoms: at the grid points its δ is the
    exact δ (connect-the-dots), above the exact δ between them, and it agrees with the
    profile route's law to roundoff."""
    from accounting.curves.converters import profile_laws
    from accounting.pairs.derive import _profile
    import accounting
    mech = accounting.mechanism(name, **params)
    step = 1e-2
    pld = mech.curve(accounting.PLD, step=step)
    via_profile = profile_laws(_profile(mech.pair()), step, 1e-20, False)[0]
    for k, d in enumerate(("forward", "backward")):
        exact = mech.pair().law(d)
        law = pld.law(d, "upper")
        grid = law.losses
        np.testing.assert_allclose(law.delta(grid), exact.delta(grid), rtol=1e-12, atol=1e-15)
        mid = np.linspace(grid[0] - 0.3, grid[-1] + 0.3, 2001)
        assert np.all(law.delta(mid) >= exact.delta(mid) - 1e-15)
        other = via_profile[k]
        np.testing.assert_allclose(law.delta(mid), other.delta(mid), rtol=1e-9, atol=1e-14)
