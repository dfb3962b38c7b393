"""One run, one ε (issue 24, deliverable 3): the core ``Accountant``, the command line,
the training accountant and the Opacus bridge share ``DEFAULT_STEP``, so the same
DP-SGD run (q, σ, steps) gets the identical ε (==) from each."""

from __future__ import annotations

import importlib.util
import json

import pytest

import accounting
from accounting.cli import main
from accounting.curves.pld import DEFAULT_STEP
from accounting_bridges.training import GRID_STEP, TrainingAccountant

Q, SIGMA, STEPS, DELTA = 0.01, 1.0, 1000, 1e-5


@pytest.fixture(scope="module")
def core_epsilon() -> float:
    acct = accounting.Accountant().compose(
        accounting.mechanism("subsampled_gaussian", q=Q, sigma=SIGMA), STEPS)
    return float(acct.epsilon(DELTA))


def test_the_bridges_default_to_the_core_step():
    assert GRID_STEP == DEFAULT_STEP
    assert TrainingAccountant().grid_step == DEFAULT_STEP
    assert accounting.Accountant().step == DEFAULT_STEP


def test_core_and_command_line_agree(core_epsilon, capsys):
    assert main(["epsilon", "subsampled_gaussian", "--q", str(Q), "--sigma", str(SIGMA),
                 "--compose", str(STEPS), "--delta", str(DELTA), "--accountant", "pld",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step"] == DEFAULT_STEP
    assert out["results"]["pld"]["epsilon"] == [core_epsilon]


def test_core_and_training_accountant_agree(core_epsilon):
    acc = TrainingAccountant()
    for _ in range(STEPS):
        acc.step(noise_multiplier=SIGMA, sample_rate=Q)
    assert acc.get_epsilon(DELTA) == core_epsilon
    assert acc.get_epsilon_interval(DELTA)[1] == core_epsilon


@pytest.mark.skipif(importlib.util.find_spec("opacus") is None or
                    importlib.util.find_spec("torch") is None,
                    reason="the Opacus bridge needs torch and opacus")
def test_core_and_opacus_bridge_agree(core_epsilon):
    from accounting_bridges.opacus import OpacusAccountant
    acc = OpacusAccountant()
    acc.history = [(SIGMA, Q, STEPS)]     # Opacus' own layout, as its bisection writes it
    assert acc.get_epsilon(DELTA) == core_epsilon
