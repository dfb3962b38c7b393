"""examples/per_example_epsilon.py runs, and its worst case is the aggregate accountant."""

from __future__ import annotations

import pytest
from example_scripts import load_example

from accounting.accountant import Accountant
from accounting_mechanisms.subsampled_gaussian import SubsampledGaussian


def test_per_example_script(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    module = load_example("per_example_epsilon.py")
    out = tmp_path / "fig.png"
    summary = module.main(["--steps", "60", "--out", str(out)])
    assert out.stat().st_size > 1000
    acct = Accountant().compose(SubsampledGaussian(q=0.05, sigma=1.0), 60)
    assert summary["worst_case"] == pytest.approx(float(acct.epsilon_interval(1e-5)[1]),
                                                  rel=1e-12)
    assert summary["median"] < 0.8 * summary["worst_case"]
    assert summary["max"] <= summary["worst_case"] * (1 + 1e-12)
    assert summary["accuracy"] > 0.8
