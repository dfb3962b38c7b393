"""examples/audit_dpsgd_step.py: the clipping bug is found, the correct step passes."""

from __future__ import annotations

import numpy as np
import pytest
from example_scripts import load_example


@pytest.fixture(scope="module")
def example():
    return load_example("audit_dpsgd_step.py")


def test_the_bug_is_a_sensitivity_of_c_sqrt_d(example):
    """The canary's gradient after clipping: norm C (correct) and C√d (coordinate clip)."""
    d0, d1 = example.datasets(0)
    g = example.per_example_gradients(example.W0, d0[0][-1:], d0[1][-1:])
    assert np.linalg.norm(g) > 10 * example.CLIP
    zero = np.random.default_rng(0)
    # with the noise removed, the two datasets' outputs differ by η/B times the clipped canary
    diff = {}
    for clip in ("l2", "coordinate"):
        a = example.dpsgd_step(d0, np.random.default_rng(1), clip=clip)
        b = example.dpsgd_step(d1, np.random.default_rng(1), clip=clip)
        diff[clip] = np.linalg.norm(a - b) * example.BATCH / example.LEARNING_RATE
    assert diff["l2"] == pytest.approx(example.CLIP, rel=1e-9)
    assert diff["coordinate"] == pytest.approx(example.CLIP * np.sqrt(example.DIMENSION),
                                               rel=1e-9)
    with pytest.raises(ValueError, match="clip must be"):
        example.dpsgd_step(d0, zero, clip="none")


def test_the_audit_rejects_the_buggy_step_and_not_the_correct_one(example):
    reports = example.audit_both(n=1500, seed=0)
    assert reports["buggy", "eps"].rejected and reports["buggy", "eps"].epsilon_lower_bound > 1.0
    assert reports["buggy", "curve"].rejected and reports["buggy", "curve"].witness.beaten_fprs
    assert not reports["correct", "eps"].rejected
    assert not reports["correct", "curve"].rejected
    assert "not a certificate" in reports["correct", "eps"].verdict()
