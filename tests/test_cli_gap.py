"""``accounting gap``: the information gap from the command line."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

import accounting
from accounting.cli.app import main

FLOAT = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf)"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def table(out: str) -> dict[float, list[float]]:
    """t ↦ [α, K, ρ*t(t+1), Γ, Γ/t, Γ/(ρ*t(t+1))] from the text table."""
    rows = {}
    for line in out.splitlines():
        cells = line.split()
        if len(cells) == 7 and all(re.fullmatch(FLOAT, c) for c in cells):
            vals = [float(c) for c in cells]
            rows[vals[0]] = vals[1:]
    return rows


def test_gap_laplace_text(capsys):
    code, out, err = run(capsys, "gap", "laplace", "--b", "1", "--t", "0.5", "1", "2")
    assert code == 0 and err == ""
    rho = 1 + math.exp(-1) - 1
    m = re.search(rf"ρ\* = ({FLOAT}) \(closed form; sup at t → 0", out)
    assert m and float(m.group(1)) == pytest.approx(rho, rel=1e-9)
    rows = table(out)
    assert sorted(rows) == [0.5, 1.0, 2.0]
    # α = 2: K(1) = log(2/3·e + 1/3·e^{−2}) (Mironov 2017, Table II)
    k1 = math.log(2 / 3 * math.e + math.exp(-2) / 3)
    assert rows[1.0][1] == pytest.approx(k1, rel=1e-7)
    assert rows[1.0][3] == pytest.approx(2 * rho - k1, rel=1e-7)
    assert "local expansion" in out and "b₄ = −κ₄/24" in out


def test_gap_compose_scales_by_n_json(capsys):
    code, out, _ = run(capsys, "gap", "laplace", "--b", "2", "--t", "1", "4", "--json")
    one = json.loads(out)
    code, out, _ = run(capsys, "gap", "laplace", "--b", "2", "--t", "1", "4", "--compose", "12",
                       "--json")
    assert code == 0
    many = json.loads(out)
    assert many["count"] == 12 and many["params"]["b"] == 2.0
    assert many["rho"] == pytest.approx(12 * one["rho"], rel=1e-13)
    assert np.allclose(many["gap"], 12 * np.array(one["gap"]), rtol=1e-12)
    assert many["t_star"] == 0.0 and many["rho_method"] == "12 × closed form"


def test_gap_subsampled_gaussian_json(capsys):
    code, out, _ = run(capsys, "gap", "subsampled_gaussian", "--q", "0.01", "--sigma", "2",
                       "--t", "1", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["rho"] == 0.125 and res["t_star"] == "inf"
    # α = 2: K(1) = log(1 + q²(e^{1/σ²} − 1)) exactly
    assert res["gap"][0] == pytest.approx(0.25 - math.log1p(1e-4 * math.expm1(0.25)), rel=1e-12)
    assert "local" not in res  # no density view for the subsampled pair


def test_gap_gaussian_has_none(capsys):
    code, out, _ = run(capsys, "gap", "gaussian", "--sigma", "0.7", "--json")
    res = json.loads(out)
    assert code == 0 and len(res["t"]) == 7
    assert max(abs(g) for g in res["gap"]) <= 1e-12 * max(res["t"]) ** 2


def test_gap_help(capsys):
    code, out, _ = run(capsys, "gap", "--help")
    assert code == 0 and "--compose N" in out and "zCDP envelope" in out
    code, out, _ = run(capsys, "gap", "laplace", "--help")
    assert code == 0 and "--b FLOAT" in out


@pytest.mark.parametrize("argv,message", [
    (["gap"], "give a MECHANISM"),
    (["gap", "laplace"], "missing parameter --b"),
    (["gap", "laplace", "--b", "1e-300"], "b must be in [1e-08, 1e+08], got 1e-300"),
    # no noise is non-private: no finite Rényi curve, so no gap
    (["gap", "laplace", "--b", "0"], "laplace (no noise: non-private) is +∞"),
    (["gap", "laplace", "--b", "1", "--t", "0"], "t must be in (0, 1e+06], got 0"),
    (["gap", "laplace", "--b", "1", "--t", "1e300"], "t must be in (0, 1e+06], got 1e+300"),
    (["gap", "laplace", "--b", "1", "--t", "nan"], "argument --t: NaN is not a number here"),
    (["gap", "laplace", "--b", "1", "--t", "x"], "argument --t: invalid number 'x'"),
    (["gap", "laplace", "--b", "1", "--compose", "0"],
     "argument --compose: a count must be a positive integer (at most 1e15), got 0"),
    (["gap", "subsampled_gaussian", "--q", "0.01", "--sigma", "1", "--t", "1e8"],
     "t must be in (0, 1e+06], got 1e+08"),
    (["gap", "laplace", "--b", "1", "--bogus", "1"], "unknown parameter '--bogus'"),
    (["gap", "laplace", "--b", "1", "--direction", "up"], "argument --direction: invalid choice"),
    (["gap", "nosuch", "--b", "1"], "unknown mechanism 'nosuch'"),
])
def test_gap_bad_input_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("accounting: error: ")
    assert message in lines[0]


def test_gap_subprocess_exit_status():
    proc = subprocess.run([sys.executable, "-m", "accounting", "gap", "laplace", "--b", "-1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "accounting: error: laplace: b must be in [1e-08, 1e+08], got -1 (the range is "
        "[1e-08, 1e+08]·sensitivity with sensitivity = 1.0; 0 is also allowed (a degenerate "
        "corner))"]


# ------------------------------------------------- regressions (hostile pass)
def test_gap_huge_orders_are_refused_not_nan():
    """`gap laplace --t 1e300` printed NaN; `gap subsampled_gaussian --t 1e8` tried to
    allocate gigabytes. Orders are bounded by T_MAX = 1e6."""
    from accounting.analysis.gap import T_MAX, information_gap
    assert T_MAX == 1e6
    with pytest.raises(ValueError, match=r"t must be in \(0, 1e\+06\], got 1e\+300"):
        information_gap(accounting.mechanism("laplace", b=1.0), [1e300])


def test_gap_at_the_largest_order_is_finite_and_exact():
    """At t = 1e6 the Laplace gap is finite, with Γ(t)/t = ρ*(1 + t) − K(t)/t and the
    relative gap 1 − K/(ρ*t(t+1)), where ρ* is the KL divergence (the sup is the
    t → 0 end): Δ/b − 1 + e^{−Δ/b} = e^{−1} for b = Δ = 1."""
    from accounting.analysis.gap import information_gap
    res = information_gap(accounting.mechanism("laplace", b=1.0), [1.0, 1e6])
    assert np.all(np.isfinite(res.gap)) and np.all(np.isfinite(res.relative_gap))
    rho = np.exp(-1.0)
    assert res.rho == pytest.approx(rho, rel=1e-12)
    t = res.t
    assert np.allclose(res.gap_per_order, rho * (1 + t) - res.cgf / t, rtol=1e-12)
    assert np.allclose(res.relative_gap, 1 - res.cgf / (rho * t * (t + 1)), rtol=1e-12)
    assert np.all((res.relative_gap >= 0) & (res.relative_gap <= 1))


def test_gap_huge_orders_on_the_command_line_exit_2_fast(capsys):
    import time
    t0 = time.perf_counter()
    code, out, err = run(capsys, "gap", "subsampled_gaussian", "--q", "0.01", "--sigma", "1",
                         "--t", "1e8")
    assert code == 2 and out == "" and "t must be in (0, 1e+06]" in err
    assert time.perf_counter() - t0 < 10
    code, out, err = run(capsys, "gap", "laplace", "--b", "1", "--t", "1e6", "--json")
    assert code == 0
    payload = json.loads(out)
    assert "nan" not in json.dumps(payload)
