"""Issue 22: a single law the library builds with total mass above 1 is an
InvariantError (a library bug), while a user's LossPMF above 1 stays a ValueError."""

import numpy as np
import pytest

from accounting.numerics.atoms import add_on_grid, atoms_on_grid, finite_law_on_grid
from accounting.numerics.discretise import atoms_to_grid
from accounting.numerics.loss import LossPMF
from accounting.vocabulary import InvariantError


def test_broken_atoms_raise_invariant_error():
    with pytest.raises(InvariantError, match="total mass 1.4"):
        atoms_on_grid(np.array([0.0, 1.0]), np.array([0.7, 0.7]), 0.1, pessimistic=True)
    ok = LossPMF.on_grid(0.1, 0, np.array([0.7, 0.0]))
    with pytest.raises(InvariantError, match="total mass 1.4"):
        add_on_grid([ok, ok], 0.1)


def test_valid_builds_and_user_laws():
    law = LossPMF.from_atoms(np.array([-1.0, 1.0]), np.array([0.25, 0.75]))
    for out in (atoms_to_grid(law, 0.1, 1e-12, True), finite_law_on_grid(law, 0.1, 1e-12)):
        assert out.masses.sum() + out.inf_mass == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="total mass must be at most 1"):
        LossPMF.from_atoms(np.array([0.0, 1.0]), np.array([0.7, 0.7]))
