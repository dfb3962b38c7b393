"""The training accountant's options: replace-one neighbouring, the grid step, and
``get_privacy_spent`` with its one-line statement of what ε assumes (no torch needed).

References: dp_accounting's PLD accountant under REPLACE_ONE on the same steps (a
pessimistic estimate at grid 1e-4), and the core accountant on the same mechanisms.
"""

from __future__ import annotations

import json

import pytest

import accounting
from accounting_bridges.training import MECHANISM, PrivacySpent, TrainingAccountant

DELTA = 1e-5


def trained(steps=20, z=1.0, q=0.1, **options) -> TrainingAccountant:
    acc = TrainingAccountant(**options)
    for _ in range(steps):
        acc.step(noise_multiplier=z, sample_rate=q)
    return acc


def test_replace_one_steps_are_the_replace_one_poisson_gaussian():
    acc = trained(neighbouring="replace_one")
    core = accounting.Accountant().compose(
        accounting.mechanism("poisson_replace_one_gaussian", q=0.1, sigma=1.0), count=20)
    assert acc.get_epsilon(DELTA) == core.epsilon(DELTA)
    # a changed record costs more than an added or removed one
    assert acc.get_epsilon(DELTA) > trained().get_epsilon(DELTA)
    # full batches under replace-one: one Gaussian of sensitivity 2 (records differ by 2C)
    full = trained(steps=4, z=3.0, q=1.0, neighbouring="replace_one")
    gauss = accounting.Accountant().compose(
        accounting.mechanism("gaussian", sigma=3.0 / 2.0 / 2.0))   # μ = 2·√4/3
    assert full.get_epsilon(DELTA) == pytest.approx(gauss.epsilon(DELTA), rel=1e-6)


def test_replace_one_against_dp_accounting_pld():
    E = pytest.importorskip("dp_accounting.dp_event")
    pld = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    from dp_accounting.privacy_accountant import NeighboringRelation as NR
    theirs = pld.PLDAccountant(NR.REPLACE_ONE, value_discretization_interval=1e-4)
    theirs.compose(E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(1.0)),
                                         20))
    lo, hi = trained(neighbouring="replace_one").get_epsilon_interval(DELTA)
    assert lo - 1e-4 <= theirs.get_epsilon(DELTA) <= hi + 1e-4
    assert theirs.get_epsilon(DELTA) == pytest.approx(4.5904, abs=1e-4)


def test_grid_step_trades_accuracy_and_stays_certified():
    fine, coarse = trained(grid_step=2e-4), trained(grid_step=1e-2)
    f_lo, f_hi = fine.get_epsilon_interval(DELTA)
    c_lo, c_hi = coarse.get_epsilon_interval(DELTA)
    # both brackets hold the true ε, so they overlap; the coarse one is wider
    assert c_lo <= f_hi and f_lo <= c_hi
    assert c_hi - c_lo > f_hi - f_lo and c_hi >= f_lo


def test_get_privacy_spent_unpacks_and_states_its_assumptions():
    acc = trained()
    spent = acc.get_privacy_spent(delta=DELTA)
    eps, delta = spent                         # unpacks like Opacus' (ε, best α) pair
    assert isinstance(spent, PrivacySpent) and isinstance(spent, tuple)
    assert eps == spent.epsilon == acc.get_epsilon(DELTA) and delta == DELTA
    assert spent.epsilon_lower == acc.get_epsilon_interval(DELTA)[0] <= eps
    assert spent.steps == 20
    line = str(spent)
    assert "\n" not in line
    for words in ("add/remove neighbouring", "Poisson sampling", "20 steps",
                  f"{eps:.6g}", "δ = 1e-05"):
        assert words in line, (words, line)
    assert "replace-one neighbouring" in str(trained(neighbouring="replace_one")
                                             .get_privacy_spent(delta=DELTA))
    assert TrainingAccountant().get_privacy_spent(delta=DELTA) == (0.0, DELTA)
    with pytest.raises(ValueError, match="delta"):
        acc.get_privacy_spent(delta=2.0)
    with pytest.raises(TypeError):
        acc.get_privacy_spent(DELTA)           # keyword only, as in Opacus


def test_options_survive_the_state_dict():
    acc = trained(grid_step=1e-3, neighbouring="replace_one")
    state = json.loads(json.dumps(acc.state_dict()))
    assert state["neighbouring"] == "replace_one" and state["mechanism"] == MECHANISM
    again = TrainingAccountant()
    again.load_state_dict(state)
    assert again.neighbouring is accounting.Neighbouring.REPLACE_ONE
    assert again.grid_step == 1e-3
    assert again.get_epsilon(DELTA) == acc.get_epsilon(DELTA)
    # a state written before the relation was saved is add/remove, as it was then
    del state["neighbouring"]
    again.load_state_dict(state)
    assert again.neighbouring is accounting.Neighbouring.ADD_REMOVE
    with pytest.raises(ValueError, match="neighbouring"):
        again.load_state_dict(dict(state, neighbouring="sideways"))
    with pytest.raises(ValueError, match="neighbouring"):
        TrainingAccountant(neighbouring="swap")
    assert "replace_one" in repr(acc)
