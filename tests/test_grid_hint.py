"""The hint of a grid refused for its size names a step that fits and is larger than
the one in use, or says that none fits (``loss.check_grid_points``, ``fitting_step``).

It was step·n/MAX printed to two digits: rounded to nearest, a grid 0.5% over the
limit at step 2e-4 read "use a larger step (step ≥ 0.0002 fits)" — the step in use;
and for a sum of many uses it ignored the ~one point a use that a window takes at any
step (10⁷ Gaussians at step 1e-3: "step ≥ 2.5 fits", where the grid at 2.5 has 7.9e6
points, and no step fits)."""

from __future__ import annotations

import re

import pytest

import accounting as ac
from accounting.numerics.fourier import composed_grid_points
from accounting.numerics.loss import MAX_GRID_POINTS, GridSizeError, check_grid_points

M = MAX_GRID_POINTS


def _named(message: str) -> float:
    found = re.search(r"step ≥ ([0-9.e+-]+) fits", message)
    assert found, message
    return float(found.group(1))


@pytest.mark.parametrize("n, step", [(M + 1, 2e-4), (M + 20_000, 2e-4), (2 * M, 1e-3),
                                     (26_502_495, 2e-4), (M + 1, 1.2345e-5)])
def test_named_step_is_larger_and_fits(n, step):
    with pytest.raises(GridSizeError, match="use a larger step") as info:
        check_grid_points(n, step)
    named = _named(str(info.value))
    assert named > step
    # the same width W = n·step at the named step, with its spare ends, fits
    assert n * step / named + 3 <= M
    # and it is not needlessly coarse: within the 1% margin and the rounding up
    assert named <= 1.01 * n * step / (M - 3) * 1.1


def test_a_grid_just_over_the_limit_does_not_name_the_step_in_use():
    with pytest.raises(ValueError) as info:
        check_grid_points(M + 20_000, 2e-4)
    assert "step ≥ 0.00021 fits" in str(info.value)


def test_named_step_fits_a_real_composition():
    """200 000 Gaussians (σ = 0.5) at step 2e-4 need 4.1e9 points; at the named step
    the composed window, from the pair discretised there, fits."""
    mech = ac.mechanism("gaussian", sigma=0.5)
    with pytest.raises(GridSizeError) as info:
        mech.curve(ac.PLD, step=2e-4).self_compose(200_000)
    named = _named(str(info.value))
    coarse = mech.curve(ac.PLD, step=named)
    points = max(composed_grid_points([(coarse.law(d), 200_000)])
                 for d in ("forward", "backward"))
    assert named > 2e-4 and points <= M


def test_no_step_fits_a_sum_of_more_uses_than_grid_points():
    """10⁷ Gaussians: the window takes ~0.8 points a use whatever the step."""
    mech = ac.mechanism("gaussian", sigma=1.0)
    with pytest.raises(GridSizeError, match="no step fits") as info:
        mech.curve(ac.PLD, step=1e-3).self_compose(10 ** 7)
    assert "step ≥" not in str(info.value) and "larger step" not in str(info.value)
    # indeed: at a step 2500 times coarser the window is still over the limit
    coarse = mech.curve(ac.PLD, step=2.5)
    assert composed_grid_points([(coarse.law("forward"), 10 ** 7)]) > M
