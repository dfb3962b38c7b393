"""``examples/samplers.py`` (issue 25's tutorial) runs and its σ are in the order the
theory gives: fixed size is Poisson at σ/2 (so twice Poisson's σ), shuffling's upper
bound (one Gaussian use per epoch) needs the most noise, and balls-and-bins needs no
more than Poisson (arXiv:2412.16802, arXiv:2602.17284)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow   # (about 20 s: four calibrations, one of them balls-and-bins)
def test_the_samplers_tutorial_runs_and_orders_its_sigmas(tmp_path):
    png = tmp_path / "samplers.png"
    args = [sys.executable, str(ROOT / "examples" / "samplers.py"), "--quick"]
    try:
        import matplotlib  # noqa: F401
        args += ["--plot", str(png)]
    except ImportError:
        png = None
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True).stdout
    sigma = {m.group(1).strip(): float(m.group(2))
             for m in re.finditer(r"^\s+(.+?)\s+σ = ([0-9.]+)", out, re.M)}
    assert len(sigma) == 4, out
    poisson, fixed = sigma["Poisson"], sigma["fixed size, without replacement"]
    shuffled, balls = sigma["shuffling (upper bound)"], sigma["balls-and-bins"]
    assert abs(fixed / poisson - 2.0) < 2e-3
    assert shuffled > fixed > poisson
    assert balls <= poisson * 1.001
    if png is not None:
        assert png.stat().st_size > 10_000
