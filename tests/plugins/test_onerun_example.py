"""examples/audit_dpsgd_one_run.py: the honest DP-SGD run passes its one-run canary
audit at the accountant's ε, the run whose noise ignores the clip norm is rejected."""

from __future__ import annotations

import math

import numpy as np
import pytest
from example_scripts import load_example


@pytest.fixture(scope="module")
def example():
    return load_example("audit_dpsgd_one_run.py")


def test_canary_scores_are_the_gaussian_mechanism(example):
    """Without data noise the canary coordinate moves by ηC/B per step it is sampled:
    an included canary ends at T·ηC/B, an excluded one at 0 (up to the noise)."""
    rng = np.random.default_rng(0)
    x, y = example.synthetic_data(50, 3, rng)
    inc = np.array([1, 0, 1, 0])
    w = example.train(x, y, inc, steps=7, q=1.0, sigma=1e-12, rng=rng)
    step = example.LEARNING_RATE * example.CLIP / (50 + 2)
    assert np.allclose(w[3:], 7 * step * inc, atol=1e-9)


def test_quick_run_honest_passes_buggy_rejected(example, capsys):
    out = example.main(["--quick"])
    honest, buggy = out["honest"], out["buggy"]
    assert honest["claimed"] == pytest.approx(example.EPSILON, rel=1e-2)
    assert not honest["report"].rejected
    assert honest["report"].epsilon_lower_bound <= honest["claimed"]
    assert buggy["report"].rejected
    assert buggy["report"].epsilon_lower_bound > buggy["claimed"]
    # the bug's true μ is √T·C/σ, C times the honest one: far above the claim
    assert math.sqrt(50) * example.CLIP / buggy["sigma"] > 2.0
    assert "REJECT" in capsys.readouterr().out
