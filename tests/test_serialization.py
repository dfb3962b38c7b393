"""Save and reload (``accounting.serialization``): versioned JSON, exact round trips,
no pickle, refusals naming the path inside the document."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, Accountant, PrivacyProfile, TradeOff
from accounting import serialization as S
from accounting.ledger import Ledger
from accounting.numerics.loss import LossPMF

m = accounting.mechanism
STEP = 1e-3


@pytest.fixture(scope="module")
def acct():
    a = Accountant(step=STEP).compose(m("subsampled_gaussian", q=0.02, sigma=1.0), 50)
    return a.compose(m("laplace", b=4.0), 3)


def same_law(a: LossPMF, b: LossPMF) -> bool:
    return (a.losses.tobytes() == b.losses.tobytes() and a.masses.tobytes() == b.masses.tobytes()
            and (a.inf_mass, a.slack, a.step, a.offset, a.sup_loss, a.roundoff)
            == (b.inf_mass, b.slack, b.step, b.offset, b.sup_loss, b.roundoff))


# ------------------------------------------------------------------ round trips
def test_ledger_and_accountant_files(acct, tmp_path):
    path = tmp_path / "acct.json"
    accounting.save(acct, path)
    text = path.read_text()
    assert json.loads(text)["kind"] == "accountant"
    back = accounting.load(path)
    assert back == acct
    assert back.epsilon([1e-5, 1e-9]).tobytes() == acct.epsilon([1e-5, 1e-9]).tobytes()
    assert back.under("rdp").delta(1.0) == acct.under("rdp").delta(1.0)
    accounting.save(acct.ledger, tmp_path / "ledger.json")
    assert accounting.load(tmp_path / "ledger.json") == acct.ledger
    assert S.loads(S.dumps(acct.ledger)).entries == acct.ledger.entries


def test_pld_round_trip_is_exact(acct, tmp_path):
    pld = acct.curve(PLD)
    accounting.save(pld, tmp_path / "pld.json")
    back = accounting.load(tmp_path / "pld.json")
    assert isinstance(back, PLD) and back.provenance == pld.provenance
    for d in ("forward", "backward"):
        for b in ("upper", "lower"):
            assert same_law(back.law(d, b), pld.law(d, b))
    delta = np.array([1e-3, 1e-6, 1e-10])
    assert back.epsilon(delta).tobytes() == pld.epsilon(delta).tobytes()
    lo, hi = back.epsilon_interval(delta)
    assert (lo.tobytes(), hi.tobytes()) == tuple(x.tobytes() for x in pld.epsilon_interval(delta))
    # arrays are base64 of float64: far smaller than decimal text
    size = os.path.getsize(tmp_path / "pld.json")
    points = sum(pld.law(d, b).masses.size for d in ("forward", "backward")
                 for b in ("upper", "lower"))
    assert size < 2 * 8 * 4 / 3 * points + 10_000


def test_zcdp_profile_and_tradeoff_round_trips(acct):
    z = acct.curve(ZCDP)
    z2 = S.loads(S.dumps(z))
    assert z2.upper == z.upper and z2.lower == z.lower and z2.provenance == z.provenance
    prof = acct.curve(PLD).to(PrivacyProfile)
    prof2 = S.loads(S.dumps(prof))
    eps = np.linspace(0, 4, 9)
    assert prof2.delta(eps).tobytes() == prof.delta(eps).tobytes()
    to = acct.curve(PLD).to(TradeOff)
    to2 = S.loads(S.dumps(to))
    alpha = np.linspace(0, 1, 21)
    assert to2.beta(alpha).tobytes() == to.beta(alpha).tobytes()


def test_curves_holding_functions_are_refused(acct):
    with pytest.raises(TypeError, match=r"^curve: RDP holds Python functions.*save the ledger"):
        S.dumps(acct.curve(RDP))
    with pytest.raises(TypeError, match=r"^curve\.upper: FunctionSide holds Python functions"):
        S.dumps(m("gaussian", sigma=1.0).curve(PrivacyProfile))
    with pytest.raises(TypeError, match="cannot save a str"):
        S.dumps("gaussian")
    with pytest.raises(TypeError, match=r"entries\[0\]\.mechanism: .*no written form"):
        S.dumps(Ledger.of(m("gaussian", sigma=1.0).pair()))


law_masses = st.lists(st.floats(0.0, 1.0, allow_subnormal=True), min_size=1, max_size=40)


@settings(max_examples=50, deadline=None)
@given(law_masses, law_masses, st.integers(-1000, 1000), st.floats(1e-5, 1.0),
       st.floats(0.0, 0.1))
def test_random_plds_round_trip_bit_for_bit(fwd, bwd, offset, step, inf_mass):
    def law(masses):
        # a loss law carries P-mass 1 (PLD refuses one that lacks more than roundoff)
        w = np.asarray(masses)
        w[-1] += 1.0
        w = w / w.sum() * (1 - inf_mass)
        return LossPMF.on_grid(step, offset, w, inf_mass, sup_loss=None)
    pld = PLD((law(fwd), law(bwd)), (law(bwd), law(fwd)))
    back = S.loads(S.dumps(pld))
    for d in ("forward", "backward"):
        for b in ("upper", "lower"):
            assert same_law(back.law(d, b), pld.law(d, b))


# ----------------------------------------------------------------- audit reports
@pytest.fixture(scope="module")
def report():
    auditor = accounting.default_registry().auditors.get("rkrd")
    if auditor is None:
        pytest.skip("the rkrd auditor plugin is not installed")
    rng = np.random.default_rng(3)
    x, y = rng.normal(1.0, 1.0, (200, 1)), rng.normal(0.0, 1.0, (200, 1))
    return auditor.audit_samples(x, y, epsilon=0.5, delta=1e-5, seed=1, sweep=True,
                                 reference=m("gaussian", sigma=1.0), shift=[1.0], n_boot=5)


def test_audit_report_round_trip(report, tmp_path):
    accounting.save(report, tmp_path / "report.json")
    back = accounting.load(tmp_path / "report.json")
    assert back == report and str(back) == str(report)
    assert back.to_dict() == report.to_dict() and back.verdict() == report.verdict()
    assert back.sweep.values.tobytes() == report.sweep.values.tobytes()
    assert back.bootstrap.replicates.tobytes() == report.bootstrap.replicates.tobytes()
    with pytest.raises(ValueError, match="summary form"):
        type(report).from_dict(report.to_dict())


def test_audit_report_documents_are_checked(report):
    doc = S.to_document(report)
    with pytest.raises(ValueError, match=r"^auditor: no auditor 'nope' is registered"):
        S.from_document({**doc, "auditor": "nope"})
    bad = json.loads(json.dumps(doc))
    bad["report"]["witness"]["rows"][0]["type"] = "Popen"
    with pytest.raises(ValueError, match=r"^report\.witness\.rows\[0\]\.type: unknown type 'Popen'"):
        S.from_document(bad)


# --------------------------------------------------------------- bad documents
@pytest.fixture(scope="module")
def pld_doc():
    law = LossPMF.on_grid(0.5, -2, np.array([0.1, 0.2, 0.3, 0.4]))
    return S.to_document(PLD((law, law)))


def _edit(doc, path, value):
    doc = json.loads(json.dumps(doc))
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


MASSES = ("curve", "upper", 0, "masses")
BAD = [
    (("kind",), "spreadsheet", ValueError, r"^kind: unknown document kind 'spreadsheet'"),
    (("schema",), 7, ValueError, r"^schema: version 7 is newer"),
    (("extra",), 1, ValueError, r"^extra: unknown key"),
    (("curve", "type"), "Popen", ValueError, r"^curve\.type: unknown type 'Popen' \(known: "),
    (("curve", "upper", 0, "colour"), 1, ValueError, r"^curve\.upper\[0\]\.colour: unknown key"),
    (MASSES + ("ndarray",), "object", ValueError, r"^curve\.upper\[0\]\.masses\.ndarray: dtype"),
    (MASSES + ("base64",), "!!!", ValueError, r"^curve\.upper\[0\]\.masses\.base64: not valid"),
    (MASSES + ("base64",), "AAAAAAAAAAA=", ValueError,
     r"^curve\.upper\[0\]\.masses\.base64: 8 bytes, but shape \[4\]"),
    (MASSES + ("shape",), [-4], TypeError, r"^curve\.upper\[0\]\.masses\.shape must be a list"),
    (MASSES + ("shape",), KeyError, ValueError, r"^curve\.upper\[0\]\.masses\.shape: missing"),
    (("curve", "upper", 0, "inf_mass"), {"float": "huge"}, ValueError,
     r"^curve\.upper\[0\]\.inf_mass\.float must be 'inf', '-inf' or 'nan'"),
    (("curve", "upper", 0, "inf_mass"), {"float": "inf"}, ValueError,
     r"^curve\.upper\[0\] \(LossPMF\): inf_mass must be in \[0, 1\]"),
    (("curve", "upper", 0, "inf_mass"), {"x": 1}, ValueError,
     r"^curve\.upper\[0\]\.inf_mass: a table must be tagged"),
    (("curve", "provenance", "exactness", "value"), "certain", ValueError,
     r"^curve\.provenance\.exactness\.value: 'certain' is not a Exactness"),
    (("curve", "upper"), [1.0, 2.0], TypeError, r"^curve \(PLD\): PLD\.upper forward must be a LossPMF"),
]


@pytest.mark.parametrize("path, value, exc, message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_documents_name_the_path(pld_doc, path, value, exc, message):
    with pytest.raises(exc, match=message):
        S.from_document(_edit(pld_doc, path, value))


def test_a_document_holding_a_non_curve_is_refused(pld_doc):
    law_doc = pld_doc["curve"]["upper"][0]
    with pytest.raises(TypeError, match="^curve: a LossPMF is not a curve"):
        S.from_document({**pld_doc, "curve": law_doc})


def test_files_are_read_with_care(tmp_path, pld_doc):
    with pytest.raises(ValueError, match="a directory"):
        accounting.load(tmp_path)
    with pytest.raises(ValueError, match="a device"):
        accounting.load("/dev/zero")
    with pytest.raises(ValueError, match="cannot read document"):
        accounting.load(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="not a UTF-8 text file"):
        accounting.load(tmp_path / "bin.json")
    with pytest.raises(ValueError, match="too large"):
        S.read_text_file(tmp_path / "bin.json", 1)
    (tmp_path / "nan.json").write_text('{"kind": "ledger", "schema": 1, "entries": NaN}')
    with pytest.raises(ValueError, match="NaN is not a JSON number"):
        accounting.load(tmp_path / "nan.json")
    # written documents are plain, strict JSON
    text = S.dumps(S.from_document(pld_doc))
    assert json.loads(text) == pld_doc
