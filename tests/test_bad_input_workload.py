"""Bad TOML workload files through ``accounting.cli.app``: each exits 2 with exactly
one stderr line ``accounting: error: …`` naming the file and the problem, nothing on
stdout, no traceback, and fast (an alarm fails a case that hangs: /dev/zero, a FIFO).
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

import accounting
from accounting import Accountant
from accounting.workload import (MAX_MECHANISM_DEPTH, MAX_WORKLOAD_BYTES, WorkloadError,
                                 load_workload)

from cli_cases import CASE_SECONDS, assert_usage_error, run


G = '[[mechanism]]\nname = "gaussian"\n'


def entry(**kv) -> str:
    body = "".join(f"{k} = {v}\n" for k, v in kv.items())
    return G + body


def nested_mechanism(depth: int) -> str:
    inner = '{name = "gaussian", sigma = 1.0}'
    for _ in range(depth):
        inner = '{name = "poisson_subsampled", q = 0.5, base = ' + inner + '}'
    return f'[[mechanism]]\nname = "poisson_subsampled"\nq = 0.5\nbase = {inner}\n'


# (category, file contents (str or bytes), regex of the one line)
TOML_CASES = [
    # encodings and garbage
    ("file", b"\xff\xfe\x00d\x00e\x00l\x00t\x00a", r"not a UTF-8 text file \(invalid byte at offset 0\)"),
    ("file", bytes(range(256)) * 16, r"not a UTF-8 text file"),
    ("file", "\x00\x01\x02 binary-looking but valid UTF-8", r"invalid TOML"),
    ("file", "", r"no \[\[mechanism\]\] entries"),
    ("file", "delta = 1e-5\n", r"no \[\[mechanism\]\] entries"),
    ("file", "[[mechanism]\nname = 'gaussian'", r"invalid TOML"),
    ("file", "x = " + "[" * 5000 + "]" * 5000 + "\n", r"nested too deeply"),
    ("file", "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n", r"nested too deeply"),
    ("file", nested_mechanism(MAX_MECHANISM_DEPTH + 1), r"nested more than 4 deep"),
    ("file", "mechanism = 3\n", r"'mechanism' must be an array of tables"),
    # unknown keys and names
    ("unknown", "colour = 'red'\n" + entry(sigma=1.0), r"unknown top-level key 'colour'"),
    ("unknown", entry(sigma=1.0, sigmaa=2.0), r"unknown parameter 'sigmaa'"),
    ("unknown", '[[mechanism]]\nname = "nosuch"\n', r"unknown mechanism 'nosuch'"),
    ("unknown", "[[mechanism]]\nsigma = 1.0\n", r"mechanism #1: missing 'name'"),
    ("unknown", entry(sigma=1.0) + "accountant = 'moments'\n" if False else
     "accountant = 'moments'\n" + entry(sigma=1.0), r"accountant must be one of"),
    # NaN, ±inf, negatives, zero in values
    ("nan", entry(sigma="nan"), r"sigma must be a number, got NaN"),
    ("nan", "delta = nan\n" + entry(sigma=1.0), r"delta must not contain NaN"),
    ("nan", "step = nan\n" + entry(sigma=1.0), r"step must be a number, got NaN"),
    ("inf", entry(sigma="inf"), r"sigma must be finite"),
    ("inf", entry(sigma="-inf"), r"sigma must be"),
    ("inf", "delta = inf\n" + entry(sigma=1.0), r"delta must be finite"),
    ("negative", entry(sigma=-1.0), r"sigma must be in \[1e-08, 1e\+08\], got -1"),
    ("negative", entry(sigma=1.0, count=-1), r"count must be a positive integer"),
    ("negative", "step = -1e-3\n" + entry(sigma=1.0), r"step must be in \(0, inf\)"),
    ("zero", entry(sigma=1e-300), r"sigma must be in \[1e-08, 1e\+08\], got 1e-300 .*0 is also allowed"),
    ("zero", entry(sigma=1.0, count=0), r"count must be a positive integer \(at most 1e15\), got 0"),
    ("zero", "delta = 0\n" + entry(sigma=1.0), r"delta must be in \(0, 1\), got 0"),
    ("huge", "delta = 1\n" + entry(sigma=1.0), r"delta must be in \(0, 1\), got 1"),
    ("huge", entry(sigma=1.0, count=10 ** 30), r"count must be a positive integer \(at most 1e15\), got 1e\+30"),
    ("huge", entry(sigma=1.0, count="1e30"), r"count must be a positive integer, got 1e\+30"),
    ("huge", entry(sigma=1.0, count=10 ** 16), r"at most 1e15\), got 1e\+16"),
    ("huge", '[[mechanism]]\nname = "randomized_response"\np = 1.5\n', r"p must be in"),
    # wrong types, booleans, empty strings
    ("type", entry(sigma='"1.0"'), r"sigma must be a number, got string '1.0'"),
    ("type", entry(sigma=1.0, count=1.5), r"count must be a positive integer, got 1.5"),
    ("type", entry(sigma=1.0, count='"3"'), r"count must be a positive integer, got '3'"),
    ("type", "[[mechanism]]\nname = 3\n", r"name must be a string, got 3"),
    ("type", "epsilon = 'x'\n" + entry(sigma=1.0), r"epsilon must be a number or a list of numbers"),
    ("type", "accountant = 3\n" + entry(sigma=1.0), r"accountant must be one of"),
    ("type", "description = 3\n" + entry(sigma=1.0), r"description must be a string"),
    ("type", entry(sigma=1.0, neighbouring='"sideways"'), r"neighbouring"),
    ("type", '[[mechanism]]\nname = "gaussian_mixture"\nweights = []\nmeans = [0.0]\nscales = [1.0]\n',
     r"weights must be a non-empty list of numbers"),
    ("type", '[[mechanism]]\nname = "poisson_subsampled"\nq = 0.5\nbase = 3\n',
     r"base must be a table with the mechanism's name"),
    ("bool", entry(sigma="true"), r"sigma must be a number, got boolean True"),
    ("bool", entry(sigma=1.0, count="true"), r"count must be a positive integer, got True"),
    ("bool", "delta = false\n" + entry(sigma=1.0), r"delta must be a number or a list of numbers"),
    ("bool", "step = true\n" + entry(sigma=1.0), r"step must be a real number, got True"),
    ("bool", '[[mechanism]]\nname = "gaussian_mixture"\nweights = [true, 1.0]\nmeans = [0.0, 0.0]\n'
             'scales = [1.0, 1.0]\n', r"weights\[0\] must be a number, got boolean True"),
    ("empty", '[[mechanism]]\nname = ""\n', r"unknown mechanism ''"),
    ("empty", "delta = []\n" + entry(sigma=1.0), r"delta must be a number or a list of numbers"),
    ("empty", entry(sigma='""'), r"sigma must be a number, got string ''"),
    # a step that would exhaust memory
    ("step", "step = 1e-12\naccountant = 'pld'\n" + entry(sigma=1.0), r"grid points.*max [0-9,]+"),
]


@pytest.mark.parametrize("category,text,message", TOML_CASES,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(TOML_CASES)])
def test_bad_workload(capsys, alarm, tmp_path, category, text, message):
    path = tmp_path / "bad.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    t0 = time.perf_counter()
    code, out, err = run(capsys, "epsilon", "--workload", str(path), "--delta", "1e-5")
    assert_usage_error(code, out, err, message)
    if category != "step":  # refused while reading: the file is named
        assert str(path) in err
    assert time.perf_counter() - t0 < CASE_SECONDS


def test_toml_case_counts():
    counts: dict[str, int] = {}
    for category, _, _ in TOML_CASES:
        counts[category] = counts.get(category, 0) + 1
    assert len({t for _, t, _ in TOML_CASES}) == len(TOML_CASES)
    assert len(TOML_CASES) >= 40


# ------------------------------------------------------- files that are not files
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_without_reading(capsys, alarm, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    code, out, err = run(capsys, "epsilon", "--workload", device, "--delta", "1e-5")
    assert_usage_error(code, out, err, rf"{device}: cannot read workload file \(a device; give "
                                       rf"a regular TOML file\)")


def test_fifo_is_refused_without_blocking(capsys, alarm, tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "job.toml"
    os.mkfifo(fifo)
    code, out, err = run(capsys, "epsilon", "--workload", str(fifo), "--delta", "1e-5")
    assert_usage_error(code, out, err, r"cannot read workload file \(a FIFO")


def test_directory_missing_and_oversized_files(capsys, alarm, tmp_path):
    code, out, err = run(capsys, "epsilon", "--workload", str(tmp_path), "--delta", "1e-5")
    assert_usage_error(code, out, err, r"cannot read workload file \(a directory")
    code, out, err = run(capsys, "epsilon", "--workload", str(tmp_path / "nope.toml"),
                         "--delta", "1e-5")
    assert_usage_error(code, out, err, r"cannot read workload file \(No such file or directory\)")
    big = tmp_path / "big.toml"
    big.write_text(entry(sigma=1.0) + "#" * MAX_WORKLOAD_BYTES + "\n")
    code, out, err = run(capsys, "epsilon", "--workload", str(big), "--delta", "1e-5")
    size = big.stat().st_size
    assert_usage_error(code, out, err, rf"workload file too large \({size} bytes; "
                                       rf"at most {MAX_WORKLOAD_BYTES} are read\)")
    assert MAX_WORKLOAD_BYTES == 1 << 20


def test_nesting_at_the_limit_is_accepted(tmp_path):
    """MAX_MECHANISM_DEPTH wrappers are fine; one more is refused (above)."""
    path = tmp_path / "deep.toml"
    path.write_text(nested_mechanism(MAX_MECHANISM_DEPTH - 1))
    wl = load_workload(path)
    depth, mech = 0, wl.uses[0].mechanism
    while hasattr(mech, "base"):
        depth, mech = depth + 1, mech.base
    assert depth == MAX_MECHANISM_DEPTH and mech.name == "gaussian"
    path.write_text(nested_mechanism(MAX_MECHANISM_DEPTH))
    with pytest.raises(WorkloadError, match="nested more than 4 deep"):
        load_workload(path)


# ---------------------------------------------------------- many entries
def test_2000_distinct_entries_under_rdp_are_fast_and_exact(capsys, alarm, tmp_path):
    """A workload of 2000 distinct Gaussians: read, composed and answered under RDP in
    seconds. Their RDP curves add: D_α = α Σ 1/(2σ_i²), the curve of one Gaussian with
    1/σ² = Σ 1/σ_i², so the answer equals that Gaussian's to roundoff. (Under PLD each
    entry is discretised separately: engine cost, about 0.15 s per entry.)"""
    sigmas = 10.0 + 0.01 * np.arange(2000)
    path = tmp_path / "many.toml"
    path.write_text("".join(f'[[mechanism]]\nname = "gaussian"\nsigma = {float(s)!r}\n\n'
                            for s in sigmas))
    t0 = time.perf_counter()
    code, out, err = run(capsys, "epsilon", "--workload", str(path), "--delta", "1e-5",
                         "--accountant", "rdp", "--json")
    assert code == 0, err
    assert time.perf_counter() - t0 < CASE_SECONDS
    got = json.loads(out)["results"]["rdp"]["epsilon"][0]
    sigma = float(np.sum(sigmas ** -2.0) ** -0.5)
    ref = Accountant().compose(accounting.mechanism("gaussian", sigma=sigma)).under(
        "rdp").epsilon(1e-5)
    assert got == pytest.approx(float(ref), rel=1e-9)
    code, out, err = run(capsys, "epsilon", "--workload", str(path), "--delta", "1e-5",
                         "--accountant", "zcdp")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) < 700  # provenance shortened
    assert "characters omitted; --json has all" in out


# ------------------------------------------------- the ledger and as_dict form
from accounting.ledger import Ledger  # noqa: E402
from accounting.workload import parse_workload, workload_from_dict  # noqa: E402

MIXED = """\
description = "two mechanisms"
delta = [1e-5, 1e-6]
epsilon = 1.0
accountant = "rdp"
step = 1e-3

[[mechanism]]
name = "poisson_subsampled"
q = 0.01
base = {name = "gaussian", sigma = 1.1}
count = 100

[[mechanism]]
name = "laplace"
b = 0.30000000000000004
count = 3

[[mechanism]]
name = "poisson_subsampled"
q = 0.01
base = {name = "gaussian", sigma = 1.1, sensitivity = 1.0}
"""


def test_workload_reads_into_a_ledger_and_as_dict_round_trips():
    wl = parse_workload(MIXED, "mixed.toml")
    # entries of one mechanism merge in the ledger (defaults written or not)
    assert wl.ledger == (Ledger.build("poisson_subsampled", 101, q=0.01,
                                      base={"name": "gaussian", "sigma": 1.1})
                         + Ledger.build("laplace", 3, b=0.1 + 0.2))
    assert [n for _, n in wl.ledger.entries] == [101, 3]
    acct = wl.accountant()
    assert acct.ledger == wl.ledger and acct.step == 1e-3
    doc = wl.as_dict()
    assert doc["source"] == "mixed.toml" and doc["delta"] == [1e-5, 1e-6]
    back = workload_from_dict(json.loads(json.dumps(doc)))
    assert back.as_dict() == doc and back.ledger == wl.ledger
    assert (back.source, back.description, back.delta, back.epsilon, back.accountant_name,
            back.step) == (wl.source, wl.description, wl.delta, wl.epsilon,
                           wl.accountant_name, wl.step)
    assert back.accountant().under("rdp").epsilon(1e-5) == \
        acct.under("rdp").epsilon(1e-5)
    # a source given by the caller wins over the recorded one
    assert workload_from_dict(doc, source="again.json").source == "again.json"


@pytest.mark.parametrize("doc, message", [
    ({"mechanisms": 3}, r"'mechanisms' must be a list"),
    ({"mechanisms": [3]}, r"mechanisms #1: must be a table"),
    ({"mechanisms": [{"name": "gaussian", "params": {"sigma": 1.0}, "weight": 1}]},
     r"mechanisms #1: unknown key 'weight'"),
    ({"mechanisms": [{"name": "gaussian", "params": 3}]}, r"params must be a table"),
    ({"mechanisms": [{"name": "gaussian", "params": {"sigma": 1.0, "count": 2}}]},
     r"params cannot hold 'count'"),
    ({"mechanisms": [{"name": "gaussian", "params": {"sigma": "x"}}]},
     r"mechanism #1: gaussian: sigma must be a number"),
    ({"mechanisms": [], "mechanism": []}, r"not both"),
    ({"source": 3, "mechanism": [{"name": "gaussian", "sigma": 1.0}]}, r"source must be a string"),
    ([], r"a workload must be a table"),
])
def test_bad_as_dict_forms(doc, message):
    with pytest.raises(WorkloadError, match=message):
        workload_from_dict(doc)
