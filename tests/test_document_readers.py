"""Readers of user documents take bad data as fresh input (issue 22): resumed sweep
rows, ``--output`` and ``--plot`` paths, documents nested too deeply, ledger entries
without a count and saved curves whose laws carry no mass. Each refusal is one clear
error naming the file, the line or the path in the document; the command line prints
it as one line with exit status 2."""

from __future__ import annotations

import base64
import csv
import json
import math
import os
import stat

import numpy as np
import pytest
from scipy.stats import norm

import accounting
from accounting import PLD, Accountant
from accounting import serialization as S
from accounting.ledger import Ledger
from accounting.numerics.loss import MAX_LOST_MASS
from accounting.parallel import account_ledgers, load_sweep, plan_sweep, run_sweep
from accounting.parallel import sweep as sweep_module
from accounting.parallel.sweep import SweepError
from accounting.validation import MAX_DEPTH, check_depth
from accounting.workload import WorkloadError, parse_workload, workload_from_dict

import tomllib

from cli_cases import assert_usage_error, run

TOML = """query = "epsilon"
accountant = "rdp"
delta = 1e-5
[[mechanism]]
name = "gaussian"
sigma = 1.0
count = 10
[grid]
sigma = [1.0, 2.0, 3.0]
"""


@pytest.fixture
def sweep_file(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(TOML)
    return str(path)


def _rdp_epsilon(sigma: float) -> float:
    """ε(1e-5) of 10 Gaussians of σ under RDP, computed without the sweep."""
    acct = workload_from_dict({"mechanism": [{"name": "gaussian", "sigma": sigma,
                                               "count": 10}]}).accountant()
    return float(acct.under("rdp").epsilon(1e-5))


# ------------------------------------------------------------ resumed sweep rows
def _written(capsys, sweep_file, tmp_path, suffix):
    out = str(tmp_path / f"rows{suffix}")
    code, stdout, err = run(capsys, "sweep", sweep_file, "--output", out)
    assert code == 0, err
    return out


def _tamper_csv(path, column, value, row=0):
    lines = open(path).read().splitlines()
    header = lines[0].split(",")
    fields = next(csv.reader([lines[1 + row]]))
    fields[header.index(column)] = value
    lines[1 + row] = ",".join(fields)
    open(path, "w").write("\n".join(lines) + "\n")


def _tamper_jsonl(path, column, value, row=0, raw=None):
    lines = open(path).read().splitlines()
    if raw is not None:
        lines[row] = raw
    else:
        obj = json.loads(lines[row])
        obj[column] = value
        lines[row] = json.dumps(obj)
    open(path, "w").write("\n".join(lines) + "\n")


CSV_TAMPERING = [
    ("epsilon", "nan", r"line 2: epsilon is nan, not a number in \[0, inf\]"),
    ("epsilon", "-5.0", r"line 2: epsilon is -5.0, not a number in \[0, inf\]"),
    ("epsilon", "-inf", r"line 2: epsilon is -inf"),
    ("epsilon", "abc", r"line 2: epsilon: 'abc' is not a number"),
    ("epsilon", " 1", r"line 2: epsilon: ' 1' is not a number"),
    ("epsilon", "1_0", r"line 2: epsilon: '1_0' is not a number"),
    ("epsilon", "", r"line 2: epsilon is missing"),
    ("seconds", "nan", r"line 2: seconds is nan"),
    ("label", "certified", r"line 2: label is 'certified', not 'upper bound'"),
    ("index", "7", r"line 2: index is '7', but key \w+ is point 0"),
    ("sigma", "5.0", r"line 2: sigma is '5.0', but point 0 has sigma = 1.0"),
    ("key", "0123456789abcdef", r"line 2 holds a row \(key '0123456789abcdef'\) that is no "
                                r"point of this sweep"),
]


@pytest.mark.parametrize("column, value, message", CSV_TAMPERING,
                         ids=[f"{c}={v}" for c, v, _ in CSV_TAMPERING])
def test_resumed_csv_rows_are_checked_like_fresh_input(capsys, alarm, tmp_path, sweep_file,
                                                       column, value, message):
    out = _written(capsys, sweep_file, tmp_path, ".csv")
    _tamper_csv(out, column, value)
    before = open(out).read()
    code, stdout, err = run(capsys, "sweep", sweep_file, "--output", out, "--resume")
    assert_usage_error(code, stdout, err, f"output: {out} " + message)
    assert open(out).read() == before                      # the file is left as it was


JSONL_TAMPERING = [
    ("epsilon", "nan", None, r"line 1: epsilon is nan"),
    ("epsilon", -5.0, None, r"line 1: epsilon is -5.0"),
    ("epsilon", True, None, r"line 1: epsilon: True is not a number"),
    ("epsilon", [1.0], None, r"line 1: epsilon: \[1.0\] is not a number"),
    ("error", 3, None, r"line 1: error: 3 is not a string"),
    ("key", ["x"], None, r"line 1 holds a row \(key \['x'\]\) that is no point"),
    (None, None, '{"index": 0, "epsilon": NaN}', r"line 1 is not JSON \(invalid JSON: NaN"),
    (None, None, "[" * 8000 + "]" * 8000, r"line 1: nested too deeply \(lists and tables "
                                          rf"more than {MAX_DEPTH} levels"),
]


@pytest.mark.parametrize("column, value, raw, message", JSONL_TAMPERING,
                         ids=[str(i) for i in range(len(JSONL_TAMPERING))])
def test_resumed_jsonl_rows_are_checked_like_fresh_input(capsys, alarm, tmp_path, sweep_file,
                                                         column, value, raw, message):
    out = _written(capsys, sweep_file, tmp_path, ".jsonl")
    _tamper_jsonl(out, column, value, raw=raw)
    code, stdout, err = run(capsys, "sweep", sweep_file, "--output", out, "--resume")
    assert_usage_error(code, stdout, err, f"output: {out} " + message)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_an_infinite_resumed_answer_is_computed_again(capsys, tmp_path, sweep_file, suffix):
    # +∞ is a true ε for a non-private point, so it is not refused; but a file may hold
    # it by damage, so the point is run again rather than trusted
    out = _written(capsys, sweep_file, tmp_path, suffix)
    if suffix == ".csv":
        _tamper_csv(out, "epsilon", "inf", row=1)
    else:
        _tamper_jsonl(out, "epsilon", "inf", row=1)
    result = run_sweep(load_sweep(sweep_file), output=out, resume=True)
    assert (result.computed, result.resumed) == (1, 2)
    assert [r["epsilon"] for r in result.rows] == [_rdp_epsilon(s) for s in (1.0, 2.0, 3.0)]


def test_a_row_of_another_sweep_is_refused_by_its_digest(capsys, tmp_path, sweep_file):
    # the same σ, another δ: the key (the digest of the whole task) differs
    out = _written(capsys, sweep_file, tmp_path, ".csv")
    other = tmp_path / "other.toml"
    other.write_text(TOML.replace("delta = 1e-5", "delta = 1e-6"))
    code, stdout, err = run(capsys, "sweep", str(other), "--output", out, "--resume")
    assert_usage_error(code, stdout, err, rf"output: {out} line 2 holds a row \(key "
                                          r"'\w{16}'\) that is no point of this sweep")


# ----------------------------------------------------------------- --output
def _unwritable(tmp_path):
    folder = tmp_path / "rows.csv"
    folder.mkdir()
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    return [(str(tmp_path / "missing" / "rows.csv"), r"cannot write .*: no such directory"),
            ("/proc/rows.csv", r"cannot write /proc/rows.csv: cannot create a file in /proc"),
            (str(folder), r".*/rows.csv is a directory; give a .csv or .jsonl file"),
            (str(fifo), r".*/fifo.csv is not a regular file")]


def test_output_that_cannot_be_written_is_a_usage_error_before_any_work(
        capsys, alarm, tmp_path, sweep_file, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the sweep was planned before its output was checked")
    monkeypatch.setattr(sweep_module, "plan_sweep", no_work)
    for path, message in _unwritable(tmp_path):
        code, stdout, err = run(capsys, "sweep", sweep_file, "--output", path)
        assert_usage_error(code, stdout, err, "output: " + message)
        with pytest.raises(ValueError, match="output: " + message):
            run_sweep(load_sweep(sweep_file), output=path)
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo.csv").st_mode)     # left alone


def test_the_rewritten_output_keeps_its_mode(capsys, tmp_path, sweep_file):
    out = tmp_path / "rows.csv"
    out.write_text("")
    os.chmod(out, 0o644)
    code, _, err = run(capsys, "sweep", sweep_file, "--output", str(out), "--overwrite")
    assert code == 0, err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644


# --------------------------------------------------------------------- --plot
@pytest.mark.parametrize("command", [
    ["epsilon", "gaussian", "--sigma", "1", "--delta", "1e-5", "--accountant", "rdp"],
    ["delta", "gaussian", "--sigma", "1", "--epsilon", "1", "--accountant", "rdp"],
    ["risk", "gaussian", "--sigma", "1", "--step", "0.01"],
], ids=["epsilon", "delta", "risk"])
def test_plot_paths_are_refused_unless_they_name_a_file_with_a_format(
        capsys, alarm, tmp_path, monkeypatch, command):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "figs"
    folder.mkdir()
    bad = [("", r"--plot: give a file name"),
           (str(folder), r"--plot: .*figs is a directory"),
           (str(folder) + os.sep, r"--plot: .*figs/ is a directory"),
           ("plot", r"--plot: 'plot' has no suffix, which gives the format: .*\.png, \.pdf, "
                    r"\.svg"),
           (".png", r"--plot: '.png' has no suffix"),
           ("plot.xyz", r"--plot: 'plot.xyz': unknown suffix '.xyz'"),
           (str(tmp_path / "missing" / "p.png"), r"--plot: cannot write .*no such directory")]
    for path, message in bad:
        code, stdout, err = run(capsys, *command, "--plot", path)
        assert_usage_error(code, stdout, err, message)
    assert sorted(os.listdir(tmp_path)) == ["figs"] and os.listdir(folder) == []
    code, _, err = run(capsys, *command, "--plot", "fig.svg")
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == ["fig.svg", "figs"]
    assert open(tmp_path / "fig.svg").read(200).lstrip().startswith("<?xml")


def test_plot_save_writes_exactly_the_named_file(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    from accounting.plot import save
    ax = plt.figure().gca()
    with pytest.raises(ValueError, match="has no suffix"):
        save(ax, str(tmp_path / "plot"))
    save(ax, str(tmp_path / "plot.pdf"))
    assert os.listdir(tmp_path) == ["plot.pdf"]
    assert open(tmp_path / "plot.pdf", "rb").read(5) == b"%PDF-"


# ------------------------------------------------------------------ nesting
def _nested_list(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def _readers(depth: int, tmp_path):
    """(label, a call reading a document nested ``depth`` deep) for every reader."""
    arr = _nested_list(depth)
    pairs = (depth + 1) // 2            # each tag is two levels
    tagged = '{"dict": {"a": ' * pairs + "1" + "}}" * pairs
    curve_file = tmp_path / f"curve{depth}.json"
    curve_file.write_text('{"kind": "curve", "schema": 1, "curve": ' + arr + "}")
    dotted = ".".join(["a"] * depth)
    data = 1.0
    for _ in range(depth):
        data = [data]
    return [
        ("curve list, loads", lambda: S.loads('{"kind": "curve", "schema": 1, "curve": '
                                              + arr + "}")),
        ("curve tags, loads", lambda: S.loads('{"kind": "curve", "schema": 1, "curve": '
                                              + tagged + "}")),
        ("curve file, load", lambda: accounting.load(curve_file)),
        ("curve dict, from_document", lambda: S.from_document(
            {"kind": "curve", "schema": 1, "curve": data})),
        ("decode", lambda: S.decode(data, S.curve_types())),
        ("ledger JSON", lambda: Ledger.from_json(
            '{"schema": 1, "entries": [{"mechanism": {"name": "gaussian", "sigma": '
            + arr + '}, "count": 1}]}')),
        ("ledger TOML", lambda: Ledger.from_toml(
            f'schema = 1\n[[entries]]\ncount = 1\nmechanism = {{name = "gaussian", '
            f'sigma = {arr}}}\n')),
        ("ledger TOML dotted keys", lambda: Ledger.from_toml(
            f"schema = 1\n[[entries]]\ncount = 1\nmechanism.{dotted} = 1\n")),
        ("accountant dict", lambda: Accountant.from_dict(
            {"kind": "accountant", "schema": 1, "step": data, "ledger": {"entries": []}})),
        ("workload TOML", lambda: parse_workload(
            f'delta = {arr}\n[[mechanism]]\nname = "gaussian"\nsigma = 1.0\n')),
        ("workload dict", lambda: workload_from_dict(
            {"delta": data, "mechanism": [{"name": "gaussian", "sigma": 1.0}]})),
        ("sweep TOML dotted table", lambda: plan_sweep(tomllib.loads(
            TOML + f"[grid.{dotted}]\nx = 1\n"))),
        ("sweep dict", lambda: plan_sweep({**tomllib.loads(TOML), "grid": {"sigma": data}})),
        ("ledger rows", lambda: account_ledgers(
            [{"mechanism": [{"name": "gaussian", "sigma": data}]}], delta=1e-5)),
    ]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 600, 3000])
def test_every_reader_refuses_deep_nesting_with_one_message(tmp_path, depth):
    for label, read in _readers(depth, tmp_path):
        with pytest.raises(ValueError, match=rf"nested too deeply \(lists and tables more "
                                             rf"than {MAX_DEPTH} levels"):
            read()


def test_nesting_up_to_the_limit_reaches_the_usual_checks(tmp_path):
    # a little below MAX_DEPTH (the documents wrap the nested value in a few levels) the
    # document is read: a refusal is then its other fault, the value not being a number
    for label, read in _readers(MAX_DEPTH - 8, tmp_path):
        try:
            read()
        except (TypeError, ValueError) as exc:
            assert "nested too deeply" not in str(exc), label
        else:
            assert label == "decode", label      # nested tuples are a value to decode


def test_deep_inline_table_on_the_command_line(capsys, alarm):
    base = "{name = \"gaussian\", sigma = 1.0, x = " + _nested_list(5000) + "}"
    code, stdout, err = run(capsys, "epsilon", "poisson_subsampled", "--q", "0.1",
                            "--base", base, "--delta", "1e-5")
    assert_usage_error(code, stdout, err, rf"the inline table: nested too deeply \(lists and "
                                          rf"tables more than {MAX_DEPTH} levels")


def test_deep_sweep_file_on_the_command_line(capsys, alarm, tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(TOML + "[grid." + ".".join(["a"] * 3000) + "]\nx = 1\n")
    code, stdout, err = run(capsys, "sweep", str(path))
    assert_usage_error(code, stdout, err, rf"{path}: nested too deeply")


def test_depth_is_measured_outside_strings_and_comments():
    # brackets inside JSON/TOML strings and comments do not nest; dotted keys do
    deep = "[" * (2 * MAX_DEPTH)
    check_depth('{"a": "' + deep + '", "b": [1]}', "x")
    check_depth('a = """' + deep + '"""\nb = \'' + deep + "'  # " + deep + "\n", "x")
    check_depth('{"a": "\\"' + deep + '"}', "x")
    with pytest.raises(ValueError, match="^x: nested too deeply"):
        check_depth(".".join(["k"] * (MAX_DEPTH + 2)) + " = 1\n", "x")
    with pytest.raises(ValueError, match="^x: nested too deeply"):
        check_depth(b"[" * (MAX_DEPTH + 1), "x")


# ------------------------------------------------------------ ledger counts
def test_a_ledger_entry_without_count_is_refused(tmp_path):
    entry = {"mechanism": {"name": "gaussian", "sigma": 2.0}}
    doc = {"kind": "ledger", "schema": 1, "entries": [{**entry, "count": 3}, entry]}
    for read in (lambda: Ledger.from_dict(doc), lambda: Ledger.from_json(json.dumps(doc)),
                 lambda: S.from_document(doc)):
        with pytest.raises(ValueError, match=r"^entries\[1\]\.count: missing"):
            read()
    path = tmp_path / "acct.json"
    path.write_text(json.dumps({"kind": "accountant", "schema": 1, "step": 1e-3,
                                "ledger": {"entries": [entry]}}))
    with pytest.raises(ValueError, match=r"^ledger\.entries\[0\]\.count: missing"):
        accounting.load(path)
    # with its count the same document reads as 3 + 1 uses of the one Gaussian
    doc["entries"][1] = {**entry, "count": 1}
    assert Ledger.from_dict(doc) == Ledger.build("gaussian", 4, sigma=2.0)


# --------------------------------------------------------- saved curve laws
@pytest.fixture(scope="module")
def pld_doc():
    acct = Accountant(step=1e-2).compose(accounting.mechanism("gaussian", sigma=2.0), 3)
    return S.to_document(acct.curve(PLD))


def _masses(doc, side, k):
    law = doc["curve"][side][k]["masses"]
    return np.frombuffer(base64.b64decode(law["base64"]), "<f8").copy()


def _with(doc, side, field, value, directions=(0, 1)):
    out = json.loads(json.dumps(doc))
    for k in directions:
        if field == "masses":
            m = value(_masses(doc, side, k))
            out["curve"][side][k]["masses"]["base64"] = base64.b64encode(
                m.astype("<f8").tobytes()).decode()
        else:
            out["curve"][side][k][field] = value
    return out


def test_a_saved_pld_is_validated_like_a_fresh_one(pld_doc):
    good = S.from_document(pld_doc)
    # 3 Gaussians of σ = 2 are one of μ = √3/2 (Balle & Wang 2018, Thm 8): the bracket holds
    mu, eps = math.sqrt(3) / 2, 1.0
    exact = norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
    lo, hi = good.delta_interval(eps)
    assert lo <= exact <= hi * (1 + 1e-12)     # the upper side is exact at grid points
    total = float(_masses(pld_doc, "upper", 0).sum())
    assert abs(total - 1.0) < 1e-12
    inf_mass = pld_doc["curve"]["upper"][0]["inf_mass"]         # left when the atoms go
    no_mass = _with(_with(pld_doc, "upper", "masses", np.zeros_like), "upper", "inf_mass", 0.0)
    cases = [
        (no_mass, r"PLD\.upper forward: the law carries no mass \(its masses and the mass at "
                  r"\+∞ sum to 0\)"),
        (_with(pld_doc, "upper", "masses", np.zeros_like), rf"PLD\.upper forward: the "
                                                           rf"pessimistic law carries P-mass "
                                                           rf"{inf_mass:.6g}, not 1"),
        (_with(pld_doc, "lower", "masses", np.zeros_like), r"PLD\.lower forward: the law "
                                                           r"carries no mass"),
        (_with(pld_doc, "upper", "masses", lambda m: m / 2), rf"PLD\.upper forward: the "
                                                             rf"pessimistic law carries P-mass "
                                                             rf"{total / 2:.6g}, not 1"),
        (_with(pld_doc, "upper", "slack", 0.5), r"a pessimistic law has no slack, got 0.5"),
        (_with(pld_doc, "upper", "slack", {"float": "nan"}), r"slack must be finite and >= 0"),
        (_with(pld_doc, "lower", "slack", -1.0), r"slack must be finite and >= 0"),
        (_with(pld_doc, "upper", "roundoff", {"float": "inf"}), r"roundoff must be finite"),
        (_with(pld_doc, "upper", "sup_loss", {"float": "nan"}), r"sup_loss must be a finite"),
        (_with(pld_doc, "upper", "sup_loss", -1.0), r"PLD\.upper forward: sup_loss -1 is "
                                                    r"below the largest loss"),
        (_with(pld_doc, "upper", "step", 0.02), r"losses must be the grid points"),
        (_with(pld_doc, "upper", "offset", 3), r"losses must be the grid points"),
        (_with(pld_doc, "upper", "step", None), r"step and offset go together"),
        (_with(pld_doc, "upper", "step", -0.01), r"step must be a finite number > 0"),
    ]
    for doc, message in cases:
        with pytest.raises(ValueError, match=message):
            S.from_document(doc)
    # an optimistic law may lose mass (its δ only falls): half the lower masses still load
    halved = S.from_document(_with(pld_doc, "lower", "masses", lambda m: m / 2))
    assert halved.delta_interval(eps)[0] <= lo
    assert 0 < MAX_LOST_MASS <= 1e-3


def test_a_saved_tradeoff_is_validated_like_a_fresh_one():
    from accounting import TradeOff
    acct = Accountant(step=1e-2).compose(accounting.mechanism("gaussian", sigma=2.0), 3)
    doc = S.to_document(acct.curve(PLD).to(TradeOff))
    back = S.from_document(doc)
    alpha = np.linspace(0, 1, 11)
    assert back.beta(alpha).tobytes() == acct.curve(PLD).to(TradeOff).beta(alpha).tobytes()

    def edited(path, value):
        out = json.loads(json.dumps(doc))
        target = out["curve"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value(target[path[-1]]) if callable(value) else value
        return out

    def array(change):
        def edit(field):
            x = np.frombuffer(base64.b64decode(field["base64"]), "<f8").copy()
            x = change(x)
            return {**field, "base64": base64.b64encode(x.astype("<f8").tobytes()).decode()}
        return edit
    cases = [
        (("upper", "pessimistic"), False, r"TradeOff\.upper must be a pessimistic side"),
        (("lower", "pessimistic"), True, r"TradeOff\.lower must be an optimistic side"),
        (("upper", "own", 1, "beta"), array(lambda x: np.where(np.arange(x.size) == 3, np.nan,
                                                               x)),
         r"OwnLaw\.beta must not contain NaN"),
        (("upper", "own", 1, "alpha_c"), array(lambda x: x[::-1]),
         r"OwnLaw\.alpha_c must be non-increasing"),
        (("upper", "reverse", 0, "power"), array(lambda x: x * 2),
         r"ReverseLaw\.power must be in \[0, 1\]"),
        (("upper", "own", 0, "ratio"), array(lambda x: -x), r"OwnLaw\.ratio must be in"),
        (("upper", "own", 0, "start"), 10 ** 6, r"OwnLaw\.start must be an integer <="),
        (("upper", "reverse", 1, "rest"), {"float": "nan"}, r"ReverseLaw\.rest must not "
                                                            r"contain NaN"),
    ]
    for path, value, message in cases:
        with pytest.raises((TypeError, ValueError), match=message):
            S.from_document(edited(path, value))
