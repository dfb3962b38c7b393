"""Bad input on the command line: each case exits 2 with exactly one stderr line
``accounting: error: …`` naming the problem, prints nothing on stdout, shows no
traceback and finishes fast (an alarm fails any case that hangs).

Also: the exit-status contract (2 for usage errors, 1 with one "internal error —
please report" line for bugs, the traceback only under ``--debug``), the JSON output
kept clean from plugin prints, and the fast paths of the hostile pass (1000-value
sweeps, ``--accountant all`` keeping the other answers).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import accounting
from accounting import Accountant
from accounting.cli import app as cli
from accounting.cli import evaluate as cli_eval

from cli_cases import CASE_SECONDS, assert_usage_error, run


EPS = ["epsilon", "gaussian", "--sigma", "1"]
RDP = ["--accountant", "rdp"]

# (category, argv, regex the one line must match)
CASES = [
    # NaN
    ("nan", ["epsilon", "gaussian", "--sigma", "nan", "--delta", "1e-5"],
     r"argument --sigma: NaN is not a number here"),
    ("nan", [*EPS, "--delta", "nan"], r"argument --delta: NaN"),
    ("nan", ["delta", "gaussian", "--sigma", "1", "--epsilon", "NaN"], r"argument --epsilon: NaN"),
    ("nan", [*EPS, "--delta", "1e-5", "--step", "nan"], r"argument --step: NaN"),
    ("nan", ["gap", "laplace", "--b", "1", "--t=-nan"], r"argument --t: NaN"),
    ("nan", ["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1", "--delta", "nan"],
     r"argument --delta: NaN"),
    # ±inf
    ("inf", ["epsilon", "gaussian", "--sigma", "inf", "--delta", "1e-5", *RDP],
     r"sigma must be finite"),
    ("inf", ["epsilon", "gaussian", "--sigma=-inf", "--delta", "1e-5", *RDP],
     r"sigma must be"),
    ("inf", [*EPS, "--delta", "inf"], r"delta must be finite"),
    ("inf", [*EPS, "--delta", "1e-5", "--step", "inf"], r"step must be finite"),
    ("inf", ["epsilon", "subsampled_gaussian", "--q", "inf", "--sigma", "1", "--delta", "1e-5"],
     r"q must be"),
    ("inf", ["calibrate", "gaussian", "--solve", "sigma", "--epsilon", "inf", "--delta", "1e-5"],
     r"epsilon must be finite"),
    # negatives
    ("negative", ["epsilon", "gaussian", "--sigma=-1", "--delta", "1e-5"],
     r"sigma must be in \[1e-08, 1e\+08\], got -1 \(the range is \[1e-08, 1e\+08\]·sensitivity"),
    ("negative", ["epsilon", "laplace", "--b=-2", "--delta", "1e-5"], r"b must be in"),
    ("negative", [*EPS, "--delta=-1e-5"], r"delta must be in \[0, 1\)"),
    ("negative", [*EPS, "--delta", "1e-5", "--step=-1e-3"], r"step must be in \(0, inf\)"),
    ("negative", [*EPS, "--compose=-3", "--delta", "1e-5"],
     r"argument --compose: a count must be a positive integer"),
    ("negative", ["audit", "--x", "{x}", "--y", "{x}", "--epsilon=-1", "--delta", "1e-5"],
     r"epsilon must be in \[0, inf\)"),
    # zero
    ("zero", ["epsilon", "gaussian", "--sigma", "1e-300", "--delta", "1e-5"], r"sigma must be in"),
    # δ = 0 is pure DP: a query, refused only where the loss is unbounded
    ("zero", [*EPS, "--delta", "0"], r"delta = 0 \(pure DP\) has no finite ε here.*unbounded"),
    ("zero", [*EPS, "--delta", "1e-5", "--step", "0"], r"step must be in \(0, inf\), got 0"),
    ("zero", [*EPS, "--compose", "0", "--delta", "1e-5"], r"count must be a positive integer"),
    ("zero", ["epsilon", "subsampled_gaussian", "--q", "1e-320", "--sigma", "1", "--delta", "1e-5"],
     r"q must be in"),
    ("zero", ["gap", "laplace", "--b", "1", "--t", "0"], r"t must be in \(0, 1e\+06\]"),
    # huge values
    ("huge", [*EPS, "--delta", "1"], r"delta must be in \[0, 1\), got 1"),
    ("huge", ["epsilon", "randomized_response", "--p", "1.5", "--delta", "1e-5"], r"p must be in"),
    ("huge", ["gap", "laplace", "--b", "1", "--t", "1e300"], r"t must be in \(0, 1e\+06\]"),
    ("huge", ["gap", "subsampled_gaussian", "--q", "0.01", "--sigma", "1", "--t", "1e8"],
     r"t must be in \(0, 1e\+06\]"),
    ("huge", ["audit", "--x", "{x}", "--y", "{x}", "--epsilon", "800", "--delta", "1e-5"],
     r"epsilon must be at most 696.9 at delta = 1e-05"),
    ("huge", ["epsilon", "gaussian", "--sigma", "1e400", "--delta", "1e-5", *RDP],
     r"sigma must be finite"),
    # huge counts
    ("count", [*EPS, "--compose", "1e30", "--delta", "1e-5"],
     r"a count must be a positive integer \(at most 1e15\), got 1e30"),
    ("count", [*EPS, "--compose", "1e23", "--delta", "1e-5"], r"at most 1e15\), got 1e23"),
    ("count", [*EPS, "--compose", "100000000000000000000000", "--delta", "1e-5"],
     r"at most 1e15"),
    ("count", ["calibrate", "--dpsgd", "--q", "0.01", "--compose", "1e30", "--epsilon", "1",
               "--delta", "1e-5"], r"argument --compose: .*at most 1e15"),
    ("count", ["gap", "laplace", "--b", "1", "--compose", "1e16"], r"at most 1e15"),
    # wrong types and strict number syntax
    ("type", ["epsilon", "gaussian", "--sigma", "1_0", "--delta", "1e-5"],
     r"invalid number '1_0'.*no underscores"),
    ("type", ["epsilon", "gaussian", "--sigma", " 1", "--delta", "1e-5"],
     r"invalid number ' 1'.*no spaces"),
    ("type", ["epsilon", "gaussian", "--sigma", "abc", "--delta", "1e-5"], r"invalid number 'abc'"),
    ("type", ["epsilon", "gaussian", "--sigma", "0x10", "--delta", "1e-5"], r"invalid number '0x10'"),
    ("type", ["epsilon", "gaussian", "--sigma", "١", "--delta", "1e-5"], r"invalid number"),
    ("type", [*EPS, "--compose", "2.5", "--delta", "1e-5"], r"a count must be a whole number"),
    ("type", [*EPS, "--compose", "ten", "--delta", "1e-5"], r"invalid count 'ten'"),
    ("type", ["epsilon", "sampled_without_replacement", "--base", '{name = "gaussian", sigma = 1}',
              "--batch_size", "1.5", "--dataset_size", "100", "--delta", "1e-5"],
     r"argument --batch_size/--batch-size: invalid int value: '1.5'"),
    ("type", [*EPS, "--neighbouring", "sideways", "--delta", "1e-5"], r"neighbouring"),
    ("type", ["epsilon", "poisson_subsampled", "--base", "{name = ", "--q", "0.1", "--delta",
              "1e-5"], r"argument --base: not a TOML inline table: '\{name = '"),
    ("type", ["epsilon", "poisson_subsampled", "--base", "[" * 3000 + "]" * 3000, "--q", "0.1",
              "--delta", "1e-5"], r"argument --base: the inline table: nested too deeply"),
    # booleans
    ("bool", ["epsilon", "gaussian", "--sigma", "True", "--delta", "1e-5"], r"invalid number 'True'"),
    ("bool", [*EPS, "--delta", "false"], r"invalid number 'false'"),
    # empty strings
    ("empty", ["epsilon", "gaussian", "--sigma", "", "--delta", "1e-5"], r"invalid number ''"),
    ("empty", [*EPS, "--delta", ""], r"invalid number ''"),
    ("empty", ["epsilon", "", "--delta", "1e-5"], r"unknown mechanism ''"),
    ("empty", ["epsilon", "--workload", "", "--delta", "1e-5"], r"cannot read workload file"),
    ("empty", [*EPS, "--delta", "1e-5", "--accountant", ""], r"argument --accountant: invalid choice"),
    ("empty", ["audit", "--mechanism", "", "--d0", "a:b", "--d1", "a:b", "--n", "10",
               "--epsilon", "1", "--delta", "0.01"], r"--mechanism: expected MODULE:NAME, got ''"),
    # unknown names and options
    ("unknown", ["epsilon", "nosuch", "--delta", "1e-5"], r"unknown mechanism 'nosuch'"),
    ("unknown", [*EPS, "--sigmaa", "2", "--delta", "1e-5"], r"unknown parameter '--sigmaa'"),
    ("unknown", [*EPS, "--delta", "1e-5", "--accountant", "moments"], r"invalid choice: 'moments'"),
    ("unknown", ["frobnicate"], r"invalid choice: 'frobnicate'"),
    ("unknown", ["audit", "--auditor", "nope", "--x", "{x}", "--y", "{x}", "--epsilon", "1",
                 "--delta", "0.01"], r"unknown auditor 'nope'"),
    ("unknown", ["calibrate", "randomized_response", "--solve", "p", "--epsilon", "1", "--delta",
                 "1e-5"], r"--solve p: calibrate searches p over \(0, ∞\).*refuses p = 1"),
    # tiny steps that would exhaust memory
    ("step", [*EPS, "--delta", "1e-5", "--step", "1e-12", "--accountant", "pld"],
     r"grid points.*max [0-9,]+"),
    ("step", ["delta", "laplace", "--b", "1", "--epsilon", "1", "--step", "1e-9",
              "--accountant", "pld"], r"grid points.*max [0-9,]+"),
]


@pytest.fixture
def x_npy(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(1).normal(size=(40, 2)))
    return str(path)


@pytest.mark.parametrize("category,argv,message", CASES,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_bad_command_line(capsys, alarm, x_npy, category, argv, message):
    argv = [a.replace("{x}", x_npy) for a in argv]
    t0 = time.perf_counter()
    code, out, err = run(capsys, *argv)
    assert_usage_error(code, out, err, message)
    assert time.perf_counter() - t0 < CASE_SECONDS


def test_case_counts_by_category():
    """The suite's coverage, by category (reported in the closing note)."""
    counts: dict[str, int] = {}
    for category, _, _ in CASES:
        counts[category] = counts.get(category, 0) + 1
    assert len({tuple(a) for _, a, _ in CASES}) == len(CASES)  # all distinct
    assert len(CASES) >= 40
    for needed in ("nan", "inf", "negative", "zero", "huge", "count", "type", "bool", "empty",
                   "unknown", "step"):
        assert counts.get(needed, 0) >= 2, needed


# ----------------------------------------------------------- audit inputs
def _npy_cases(tmp_path):
    rng = np.random.default_rng(0)
    good = tmp_path / "good.npy"
    np.save(good, rng.normal(size=(40, 1)))
    files = {
        "empty": np.zeros((0, 1)),
        "complex": np.ones((40, 1), dtype=complex),
        "nan": np.vstack([rng.normal(size=(39, 1)), [[np.nan]]]),
        "inf": np.vstack([[[np.inf]], rng.normal(size=(39, 1))]),
        "one": np.ones((1, 1)),
        "wide": rng.normal(size=(40, 3)),
        "bool": np.ones((40, 1), dtype=bool),
        "strings": np.array(["a", "b", "c"]),
        "cube": np.zeros((4, 4, 4)),
    }
    paths = {"good": str(good)}
    for key, arr in files.items():
        paths[key] = str(tmp_path / f"{key}.npy")
        np.save(paths[key], arr)
    paths["object"] = str(tmp_path / "object.npy")
    np.save(paths["object"], np.array([1, "a", None], dtype=object), allow_pickle=True)
    paths["huge"] = str(tmp_path / "huge.npy")
    with open(paths["huge"], "wb") as fh:  # a header claiming 1e12 elements
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 6, 10 ** 6)})
        fh.write(b"\0" * 64)
    paths["truncated"] = str(tmp_path / "truncated.npy")
    with open(paths["truncated"], "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (1000, 1)})
        fh.write(b"\0" * 80)
    paths["garbage"] = str(tmp_path / "garbage.npy")
    with open(paths["garbage"], "wb") as fh:
        fh.write(os.urandom(256))
    paths["n40k"] = str(tmp_path / "n40k.npy")
    np.save(paths["n40k"], np.zeros((40_000, 1)))
    return paths


NPY_CASES = [
    ("empty", r"is empty \(shape \(0, 1\)\)"),
    ("complex", r"holds complex values \(complex128\); samples must be real numbers"),
    ("nan", r"holds a non-finite value \(nan at index \(39, 0\)\)"),
    ("inf", r"holds a non-finite value \(inf at index \(0, 0\)\)"),
    ("one", r"holds n = 1 sample; at least 2 are needed"),
    ("wide", r"--x and --y must have the same dimension d, got shapes \(40, 1\) and \(40, 3\)"),
    ("bool", r"holds boolean values"),
    ("strings", r"holds string values"),
    ("cube", r"has shape \(4, 4, 4\); samples must have shape \(n, d\)"),
    ("object", r"holds Python objects; only numeric arrays are read \(nothing is unpickled\)"),
    ("huge", r"claims 1e\+12 elements \(shape \(1000000, 1000000\)\)"),
    ("truncated", r"is truncated: its header claims shape \(1000, 1\)"),
    ("garbage", r"cannot read .* as a \.npy array"),
]


@pytest.mark.parametrize("key,message", NPY_CASES, ids=[k for k, _ in NPY_CASES])
def test_bad_audit_samples(capsys, alarm, tmp_path, key, message):
    paths = _npy_cases(tmp_path)
    code, out, err = run(capsys, "audit", "--x", paths["good"], "--y", paths[key],
                         "--epsilon", "1", "--delta", "0.01")
    assert_usage_error(code, out, err, message)


def test_audit_memory_is_estimated_before_starting(capsys, alarm, tmp_path):
    """n = 40 000 with the n × n sweep would need 8·(4+2+3)·40000² bytes ≈ 115 GB: the
    auditor refuses at once with the number and the option that would fix it."""
    paths = _npy_cases(tmp_path)
    t0 = time.perf_counter()
    code, out, err = run(capsys, "audit", "--x", paths["n40k"], "--y", paths["n40k"],
                         "--epsilon", "1", "--delta", "0.01", "--sweep", "--max-memory", "8")
    assert_usage_error(code, out, err, r"needs about .* above memory_budget = .*raise "
                                       r"memory_budget")
    assert time.perf_counter() - t0 < 5


# ----------------------------------------------------- the user's own code
USER_MODULE = '''
import sys
import numpy as np

def exits(d, rng):
    raise SystemExit(0)

def keyerror(d, rng):
    raise KeyError("no such column")

def interrupts_politely(d, rng):
    raise GeneratorExit("stop")

def noisy(d, rng):
    print("hello from the mechanism")
    return rng.normal(size=1) + d

D0 = 0.0
D1 = 1.0
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    name = f"user_mech_{os.getpid()}_{abs(hash(str(tmp_path))) % 10 ** 8}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    (tmp_path / f"{name}_exit_at_import.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / f"{name}_broken_import.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.chdir(tmp_path)
    yield name
    for mod in (name, f"{name}_exit_at_import", f"{name}_broken_import"):
        sys.modules.pop(mod, None)


@pytest.mark.parametrize("fn,message", [
    ("exits", r"your mechanism {m}:exits raised SystemExit: 0"),
    ("keyerror", r"your mechanism {m}:keyerror raised KeyError: no such column"),
    ("interrupts_politely", r"your mechanism {m}:interrupts_politely raised GeneratorExit: stop"),
])
def test_user_mechanism_exceptions_are_the_users(capsys, alarm, user_module, fn, message):
    """A callable raising SystemExit(0) ended the process with exit 0 and no report;
    now any exception from the user's code is one line naming it as theirs, exit 2."""
    path_before = list(sys.path)
    code, out, err = run(capsys, "audit", "--mechanism", f"{user_module}:{fn}", "--d0",
                         f"{user_module}:D0", "--d1", f"{user_module}:D1", "--n", "10",
                         "--epsilon", "1", "--delta", "0.01", "--fail-on-reject")
    assert_usage_error(code, out, err, message.format(m=re.escape(user_module)))
    assert sys.path == path_before


@pytest.mark.parametrize("suffix,message", [
    ("_exit_at_import", r"importing '{m}_exit_at_import' raised SystemExit: 0"),
    ("_broken_import", r"importing '{m}_broken_import' raised ModuleNotFoundError"),
])
def test_user_module_failing_at_import(capsys, alarm, user_module, suffix, message):
    code, out, err = run(capsys, "audit", "--mechanism", f"{user_module}{suffix}:f", "--d0",
                         "a:b", "--d1", "a:b", "--n", "10", "--epsilon", "1", "--delta", "0.01")
    assert_usage_error(code, out, err, message.format(m=re.escape(user_module)))


def test_import_restores_sys_path(capsys, user_module):
    """`audit --mechanism MODULE:NAME` put the cwd at the front of sys.path for the rest
    of the process; it is there only during the import."""
    before = list(sys.path)
    code, out, err = run(capsys, "audit", "--mechanism", f"{user_module}:noisy", "--d0",
                         f"{user_module}:D0", "--d1", f"{user_module}:D1", "--n", "12",
                         "--epsilon", "1", "--delta", "0.01", "--seed", "3", "--json")
    assert code == 0, err
    assert sys.path == before
    report = json.loads(out)  # the mechanism's prints went to stderr, not into the JSON
    assert report["claim"] == {"kind": "epsilon_delta", "epsilon": 1.0, "delta": 0.01}
    assert "hello from the mechanism" in err


# ------------------------------------------------------- exit-status contract
def test_internal_error_is_exit_1_one_line(capsys, monkeypatch):
    """A bug (here a KeyError planted in the library) is not a usage error."""
    def broken(*args, **kwargs):
        raise KeyError("planted")
    monkeypatch.setattr(cli_eval, "evaluate_workload", broken)
    code, out, err = run(capsys, *EPS, "--delta", "1e-5")
    assert code == 1 and out == ""
    assert err.splitlines() == ["accounting: internal error — please report: KeyError: planted"]
    code, out, err = run(capsys, "--debug", *EPS, "--delta", "1e-5")
    assert code == 1 and "Traceback" in err and "KeyError: 'planted'" in err
    assert err.splitlines()[-1] == "accounting: internal error — please report: KeyError: planted"
    code, _, err = run(capsys, *EPS, "--delta", "1e-5", "--debug")  # anywhere on the line
    assert code == 1 and "Traceback" in err


@pytest.mark.parametrize("exc", [ZeroDivisionError("float division by zero"),
                                 OverflowError("math range error"), AttributeError("x"),
                                 IndexError("list index out of range"), RecursionError("deep")])
def test_arithmetic_and_attribute_errors_are_internal(capsys, monkeypatch, exc):
    def broken(*args, **kwargs):
        raise exc
    monkeypatch.setattr(cli_eval, "evaluate_workload", broken)
    code, _, err = run(capsys, *EPS, "--delta", "1e-5")
    assert code == 1
    assert err.startswith(f"accounting: internal error — please report: {type(exc).__name__}: ")


def test_value_error_inside_numpy_is_internal(capsys, monkeypatch):
    """A ValueError raised inside numpy is a value the library should not have passed
    on (a bug), unlike one raised by a check of ours."""
    def broken(*args, **kwargs):
        np.reshape(np.arange(3), (2, 2))
    monkeypatch.setattr(cli_eval, "evaluate_workload", broken)
    code, _, err = run(capsys, *EPS, "--delta", "1e-5")
    assert code == 1 and "internal error — please report: ValueError: cannot reshape" in err

    def refusal(*args, **kwargs):
        from accounting.validation import check_positive
        check_positive("sigma", -1.0)
    monkeypatch.setattr(cli_eval, "evaluate_workload", refusal)
    code, _, err = run(capsys, *EPS, "--delta", "1e-5")
    assert code == 2 and err.startswith("accounting: error: sigma must be in (0, inf)")


def test_plugin_prints_at_import_do_not_corrupt_json(capsys, monkeypatch):
    """The registry is built with stdout sent to stderr: JSON stays parseable."""
    real = cli.default_registry

    def noisy_registry():
        print("a plugin says hello at import")
        return real()
    monkeypatch.setattr(cli, "default_registry", noisy_registry)
    code, out, err = run(capsys, *EPS, "--delta", "1e-5", *RDP, "--json")
    assert code == 0
    assert json.loads(out)["command"] == "epsilon"
    assert "a plugin says hello at import" in err
    code, out, _ = run(capsys, "mechanisms", "--json")
    assert code == 0 and "gaussian" in {m["name"] for m in json.loads(out)["mechanisms"]}


# ---------------------------------------------------------- the fast paths
def test_accountant_all_keeps_the_other_answers(capsys, alarm):
    """At 1e12 Laplace uses the PLD refuses; RDP and zCDP still answer, and the refusal
    is shown (text and JSON). A Gaussian job of that size has a closed form (issue 24):
    the PLD row answers it exactly, μ = 10⁶."""
    laplace = ["epsilon", "laplace", "--b", "1", "--compose", "1e12", "--delta", "1e-5"]
    code, out, err = run(capsys, *laplace, "--json")
    assert code == 0, err
    res = json.loads(out)["results"]
    assert "does not decay" in res["pld"]["error"] or "grid points" in res["pld"]["error"]
    acct = Accountant().compose(accounting.mechanism("laplace", b=1.0), 10 ** 12)
    assert res["rdp"]["epsilon"][0] == pytest.approx(float(acct.under("rdp").epsilon(1e-5)),
                                                     rel=1e-12)
    assert res["zcdp"]["epsilon"][0] > 0
    code, out, err = run(capsys, *laplace)
    assert code == 0 and re.search(r"^  pld\s+refused \(below\)", out, re.M)
    assert re.search(r"^  pld refused: ", out, re.M) and re.search(r"^  rdp\s+1e-05\s+", out, re.M)
    code, out, err = run(capsys, *EPS, "--compose", "1e12", "--delta", "1e-5", "--json")
    pld = json.loads(out)["results"]["pld"]
    gauss = Accountant().compose(accounting.mechanism("gaussian", sigma=1.0), 10 ** 12)
    assert pld["exactness"] == "exact"
    assert pld["epsilon"][0] == pytest.approx(float(gauss.epsilon(1e-5)), rel=1e-15)
    assert float(gauss.epsilon(1e-5)) >= float(gauss.closed_profile().epsilon(1e-5))
    # one accountant that refuses: a usage error, as before
    code, out, err = run(capsys, *laplace, "--accountant", "pld")
    assert_usage_error(code, out, err, r"does not decay|grid points")


def test_looser_pld_is_noted(capsys, alarm):
    """A grid far too coarse for the composition: the PLD bound is valid but looser
    than RDP's, with lower end 0; the output says so and which bound to use."""
    code, out, err = run(capsys, "epsilon", "laplace", "--b", "1", "--compose", "1000",
                         "--step", "5", "--delta", "1e-5", "--json")
    assert code == 0, err
    payload = json.loads(out)
    pld, rdp = payload["results"]["pld"], payload["results"]["rdp"]
    assert pld["interval"][0][0] == 0.0 and pld["epsilon"][0] > rdp["epsilon"][0]
    (note,) = payload["notes"]
    assert "looser than rdp's" in note and "lower end is 0" in note and "--step" in note


def test_rdp_sweep_of_1000_values_is_fast_and_sound(capsys):
    """1000 ε values under RDP for a curve computed by quadrature took over 120 s (the
    order was refined per value); one shared grid of orders answers in seconds, never
    below the per-value optimum and within 1e-3 of it."""
    eps = np.linspace(0.05, 8.0, 1000)
    t0 = time.perf_counter()
    code, out, err = run(capsys, "delta", "subsampled_gaussian", "--q", "0.01", "--sigma", "1",
                         "--compose", "10", "--accountant", "rdp", "--json", "--epsilon",
                         *[repr(float(e)) for e in eps])
    elapsed = time.perf_counter() - t0
    assert code == 0, err
    assert elapsed < CASE_SECONDS
    got = np.array(json.loads(out)["results"]["rdp"]["delta"], dtype=float)
    acct = Accountant().compose(accounting.mechanism("subsampled_gaussian", q=0.01, sigma=1.0), 10)
    idx = np.array([0, 400, 999])
    ref = np.asarray(acct.under("rdp").delta(eps[idx]))
    assert np.all(got[idx] >= ref * (1 - 1e-12))
    assert np.all(got[idx] <= ref * (1 + 1e-3))
    assert np.all(np.diff(got) <= 1e-300)  # δ(ε) non-increasing


# -------------------------------------------------------------- subprocess
def _python_m(*argv, timeout=120):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "accounting", *argv], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("argv,status,message", [
    ([*EPS, "--delta", "1e-5", *RDP], 0, None),
    (["epsilon", "gaussian", "--sigma", "1_0", "--delta", "1e-5"], 2, "invalid number '1_0'"),
    ([*EPS, "--compose", "1e30", "--delta", "1e-5"], 2, "at most 1e15"),
    (["gap", "laplace", "--b", "1", "--t", "1e300"], 2, "t must be in (0, 1e+06]"),
    (["epsilon", "--workload", "/dev/zero", "--delta", "1e-5"], 2, "a device"),
])
def test_python_m_accounting_exit_status(argv, status, message):
    if "/dev/zero" in argv and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    proc = _python_m(*argv)
    assert proc.returncode == status, proc.stderr
    if message is None:
        assert proc.stdout and proc.stderr == ""
    else:
        assert proc.stdout == "" and "Traceback" not in proc.stderr
        assert proc.stderr.splitlines() == [proc.stderr.strip()]
        assert proc.stderr.startswith("accounting: error: ") and message in proc.stderr


def test_tiny_step_with_composition_is_refused_before_allocating():
    """`--step 2.4e-6 --compose 100` took 86 s and 3.5 GB before the refusal: the
    composed grid must be sized before it is allocated (the engine's estimate)."""
    t0 = time.perf_counter()
    proc = _python_m("epsilon", "gaussian", "--sigma", "1", "--compose", "100", "--step",
                     "2.4e-6", "--delta", "1e-5", "--accountant", "pld", timeout=60)
    assert proc.returncode == 2 and "grid points" in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert time.perf_counter() - t0 < 30


def test_sys_exit_while_plugins_load_is_a_plugin_error(capsys, monkeypatch):
    """`sys.exit()` at plugin import ended the command line with exit 3 and no output."""
    def exiting_registry():
        raise SystemExit(3)
    monkeypatch.setattr(cli, "default_registry", exiting_registry)
    code, out, err = run(capsys, *EPS, "--delta", "1e-5")
    assert_usage_error(code, out, err, r"a plugin called sys.exit\(3\) while the plugins were "
                                       r"loading")


def test_sys_exit_from_library_code_is_internal(capsys, monkeypatch):
    def exits(*args, **kwargs):
        raise SystemExit(0)
    monkeypatch.setattr(cli_eval, "evaluate_workload", exits)
    code, out, err = run(capsys, *EPS, "--delta", "1e-5")
    assert code == 1 and out == ""
    assert err.splitlines() == ["accounting: internal error — please report: SystemExit: 0 "
                                "raised by library code"]


def test_nan_produced_by_the_library_is_internal(capsys, monkeypatch):
    """Inputs are checked free of NaN before evaluation, so a refusal that mentions NaN
    during evaluation (e.g. "inf_mass must be in [0, 1], got nan") is the library's."""
    def nan_refusal(*args, **kwargs):
        from accounting.validation import check_real
        check_real("inf_mass", float("nan"))
    monkeypatch.setattr(cli_eval, "_evaluate_one", nan_refusal)
    code, out, err = run(capsys, *EPS, "--delta", "1e-5", *RDP)
    assert code == 1 and out == ""
    assert err.splitlines() == ["accounting: internal error — please report: ValueError: "
                                "inf_mass must be a number, got NaN"]
