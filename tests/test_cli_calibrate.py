"""``accounting calibrate`` (``accounting.cli.app``): text and JSON output, the DP-SGD form,
and bad input as one line on stderr with exit status 2.

Numbers are checked against the library's calibration and against closed forms: the
CKS conversion of Laplace's ρ* = KL (REFERENCE §6), and the composed Gaussian.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from closed_forms import cks_zcdp_epsilon

import accounting
from accounting import Accountant
from accounting.analysis.calibration import calibrate
from accounting_mechanisms.dpsgd import calibrate_dpsgd
from accounting.cli.app import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0 and err == "", err
    return json.loads(out)


def test_text_output(capsys):
    code, out, err = run(capsys, "calibrate", "gaussian", "--solve", "sigma", "--epsilon", "3",
                         "--delta", "1e-5", "--compose", "330", "--accountant", "rdp")
    assert code == 0 and err == ""
    lib = calibrate("gaussian", "sigma", epsilon=3.0, delta=1e-5, count=330, accountant="rdp")
    assert f"sigma = {lib.value:.10g}" in out
    assert "gaussian(sigma=?) × 330" in out and "under rdp" in out
    assert "certified at α = " in out and "bracket (" in out


def test_json_laplace_zcdp_matches_cks(capsys):
    res = run_json(capsys, "calibrate", "laplace", "--solve", "b", "--epsilon", "1",
                   "--delta", "1e-6", "--compose", "20", "--accountant", "zcdp",
                   "--sensitivity", "2", "--rtol", "1e-9")
    assert res["command"] == "calibrate" and res["solve"] == "b" and res["count"] == 20
    assert res["params"] == {"sensitivity": 2.0} and res["accountant"] == "zcdp"
    b = res["value"]
    lo, hi = res["bracket"]
    assert hi == b and lo < b <= lo * (1 + 1.01e-9)
    assert res["epsilon_achieved"] <= 1.0 and res["order"] > 1
    e = 2.0 / b                                  # ρ* = KL of Laplace, e = Δ/b
    rho = 20 * (e + math.expm1(-e))
    assert cks_zcdp_epsilon(rho, 1e-6) == pytest.approx(1.0, abs=1e-6)
    assert "step" not in res


def test_json_pld_reports_step_and_is_sound(capsys):
    res = run_json(capsys, "calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1",
                   "--delta", "1e-6", "--compose", "10", "--step", "1e-3")
    assert res["accountant"] == "pld" and res["step"] == 1e-3 and res["order"] is None
    acct = Accountant(step=1e-3).compose(accounting.mechanism("gaussian", sigma=res["value"]),
                                         10)
    assert float(acct.epsilon(1e-6)) <= 1.0


def test_dpsgd_steps_is_the_old_spelling_of_compose(capsys):
    """One name per concept (issue 28): --compose N counts DP-SGD's steps, as it counts
    every other command's uses; --steps N answers the same, with a warning."""
    args = ["--q", "0.01", "--epsilon", "1", "--delta", "1e-5", "--accountant", "rdp"]
    new = run_json(capsys, "calibrate", "--dpsgd", "--compose", "200", *args)
    code, out, err = run(capsys, "calibrate", "--dpsgd", "--steps", "200", *args, "--json")
    assert code == 0
    assert err == ("accounting: warning: calibrate --dpsgd --steps N is deprecated and will be "
                   "removed in the next release; use --compose N\n")
    old = json.loads(out)
    assert old["value"] == new["value"] and old["steps"] == new["steps"] == 200


def test_every_json_output_names_its_command_first(capsys):
    """One envelope: the first key of every --json object is "command"."""
    for argv in (["epsilon", "gaussian", "--sigma", "2", "--delta", "1e-5"],
                 ["delta", "laplace", "--b", "1", "--epsilon", "1"],
                 ["risk", "gaussian", "--sigma", "2", "--fpr", "0.01"],
                 ["gap", "laplace", "--b", "1", "--t", "1"],
                 ["mechanisms"],
                 ["calibrate", "laplace", "--solve", "b", "--epsilon", "1", "--delta", "1e-5"]):
        res = run_json(capsys, *argv)
        assert next(iter(res)) == "command" and res["command"] == argv[0], argv
        assert "query" not in res, argv


def test_dpsgd_form(capsys):
    res = run_json(capsys, "calibrate", "--dpsgd", "--q", "0.01", "--compose", "500",
                   "--epsilon", "1", "--delta", "1e-5", "--accountant", "rdp")
    assert res["dpsgd"] is True and res["q"] == 0.01 and res["steps"] == 500
    assert res["mechanism"] == "subsampled_gaussian" and res["solve"] == "sigma"
    lib = calibrate_dpsgd(0.01, 500, epsilon=1.0, delta=1e-5, accountant="rdp")
    assert res["value"] == lib.value
    # the mechanism form says the same
    same = run_json(capsys, "calibrate", "subsampled_gaussian", "--solve", "sigma", "--q",
                    "0.01", "--compose", "500", "--epsilon", "1", "--delta", "1e-5",
                    "--accountant", "rdp")
    assert same["value"] == res["value"]


def test_help(capsys):
    code, out, _ = run(capsys, "calibrate", "--help")
    assert code == 0 and "--solve PARAM" in out and "--dpsgd" in out
    code, out, _ = run(capsys, "calibrate", "laplace", "--help")
    assert code == 0 and "--b FLOAT" in out


@pytest.mark.parametrize("argv, message", [
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "-1", "--delta", "1e-5"],
     "epsilon must be in"),
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "nan", "--delta", "1e-5"],
     "argument --epsilon: NaN is not a number here"),
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1", "--delta", "2"],
     "delta must be in"),
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1"], "needs a target"),
    (["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5"], "--solve PARAM"),
    (["calibrate", "gaussian", "--solve", "b", "--epsilon", "1", "--delta", "1e-5"],
     "solve must name a real parameter"),
    (["calibrate", "gaussian", "--solve", "sigma", "--sigma", "2", "--epsilon", "1",
      "--delta", "1e-5"], "parameter being solved"),
    (["calibrate", "gaussian", "--solve", "sigma", "--bogus", "2", "--epsilon", "1",
      "--delta", "1e-5"], "unknown parameter '--bogus'"),
    (["calibrate", "gausian", "--solve", "sigma", "--epsilon", "1", "--delta", "1e-5"],
     "unknown mechanism 'gausian'"),
    (["calibrate", "subsampled_gaussian", "--solve", "sigma", "--epsilon", "1",
      "--delta", "1e-5"], "missing parameter --q"),
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1", "--delta", "1e-5",
      "--compose", "0"], "argument --compose: a count must be a positive integer (at most 1e15), got 0"),
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1", "--delta", "1e-5",
      "--accountant", "all"], "invalid choice"),
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1", "--delta", "1e-5",
      "--rtol", "0"], "rtol must be in"),
    (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1", "--delta", "1e-5",
      "--steps", "10"], "--steps belongs to --dpsgd"),
    (["calibrate", "--dpsgd", "--q", "0", "--compose", "10", "--epsilon", "1",
      "--delta", "1e-5"], "q must be in"),
    (["calibrate", "--dpsgd", "--q", "0.1", "--epsilon", "1", "--delta", "1e-5"],
     "--dpsgd needs --q Q"),
    (["calibrate", "--dpsgd", "--q", "0.1", "--compose", "0", "--epsilon", "1",
      "--delta", "1e-5"], "argument --compose: a count must be a positive integer (at most 1e15), got 0"),
    (["calibrate", "--dpsgd", "--q", "0.1", "--steps", "0", "--epsilon", "1",
      "--delta", "1e-5"], "argument --steps: a count must be a positive integer (at most 1e15), got 0"),
    (["calibrate", "--dpsgd", "--q", "0.1", "--steps", "5", "--compose", "5", "--epsilon",
      "1", "--delta", "1e-5"], "give the number of steps once, as --compose N"),
    (["calibrate", "gaussian", "--dpsgd", "--q", "0.1", "--compose", "5", "--epsilon", "1",
      "--delta", "1e-5"], "not MECHANISM"),
    (["calibrate", "--epsilon", "1", "--delta", "1e-5"], "give a MECHANISM"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("accounting: error: ")
    assert message in err


def test_subprocess_exit_status():
    proc = subprocess.run([sys.executable, "-m", "accounting", "calibrate", "laplace",
                           "--solve", "b", "--epsilon", "0", "--delta", "1e-5"],
                          check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


# ------------------------------------------------- regressions (hostile pass)
def test_solve_parameter_outside_the_search_range_is_refused_up_front(capsys):
    """`calibrate randomized_response --solve p` reported "p must be in (0, 1), got 1"
    about a value the search generated; the parameter is now probed first."""
    code, out, err = run(capsys, "calibrate", "randomized_response", "--solve", "p",
                         "--epsilon", "1", "--delta", "1e-5")
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("accounting: error: --solve p: calibrate searches p over (0, ∞)")
    assert "refuses p = 1" in line and "such as sigma or b" in line


def test_engine_refusal_during_the_search_is_worded_as_such(capsys):
    """`calibrate --dpsgd --steps 1e9` said "total mass must be at most 1" (an engine
    bug being fixed elsewhere): an answer, or a line saying where the refusal arose."""
    code, out, err = run(capsys, "calibrate", "--dpsgd", "--q", "0.01", "--compose", "1e9",
                         "--epsilon", "1", "--delta", "1e-5")
    if code == 0:
        assert "DP-SGD noise multiplier" in out
    else:
        assert code == 2 and out == "" and len(err.splitlines()) == 1
        assert not err.startswith("accounting: error: total mass")
        assert "could not evaluate a candidate sigma during the search" in err
