"""One save/load pair (issue 23): ``accounting.save(obj, path)`` / ``accounting.load(path)``,
JSON or TOML from the suffix or ``format=``; the records' own document methods are
deprecated routes to the same documents, and the library itself never takes them."""
from __future__ import annotations

import json
import pickle
import struct
import tomllib
import warnings

import pytest

import accounting
from accounting import Accountant, Ledger
from accounting.curves.pld import PLD
from accounting.serialization import dumps, from_document, loads, to_document

m = accounting.mechanism


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


@pytest.fixture
def job() -> Ledger:
    return (Ledger.build("poisson_subsampled", 1000, q=0.01,
                         base={"name": "gaussian", "sigma": 1.1})
            + Ledger.build("laplace", 5, b=0.1 + 0.2))          # 0.30000000000000004


@pytest.mark.parametrize("suffix", [".json", ".toml", ".JSON"])
def test_ledger_and_accountant_round_trip_by_suffix(tmp_path, job, suffix):
    acct = Accountant.of(job, step=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)   # no deprecated route inside
        accounting.save(job, tmp_path / f"job{suffix}")
        accounting.save(acct, tmp_path / f"acct{suffix}")
        back = accounting.load(tmp_path / f"job{suffix}")
        again = accounting.load(tmp_path / f"acct{suffix}")
    assert back == job and back.entries == job.entries and back.digest() == job.digest()
    b = dict(back.entries[1][0].params)["b"]
    assert bits(b) == bits(0.1 + 0.2)
    assert isinstance(again, Accountant) and again.step == 1e-3
    assert again.ledger.entries == job.entries
    text = (tmp_path / f"job{suffix}").read_text()
    doc = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    assert doc == to_document(job)
    assert doc["kind"] == "ledger" and doc["schema"] == 1
    assert doc["entries"][1] == {"mechanism": {"name": "laplace", "b": 0.30000000000000004,
                                               "neighbouring": "add_remove",
                                               "sensitivity": 1.0}, "count": 5}


def test_accountant_answers_the_same_after_a_toml_round_trip(tmp_path):
    acct = Accountant.of(Ledger.build("gaussian", 10, sigma=2.0), step=1e-3)
    accounting.save(acct, tmp_path / "a.toml")
    again = accounting.load(tmp_path / "a.toml")
    assert again.epsilon(1e-5) == acct.epsilon(1e-5)


def test_explicit_format_overrides_the_suffix(tmp_path, job):
    path = tmp_path / "job.txt"
    accounting.save(job, path, format="toml")
    assert tomllib.loads(path.read_text()) == to_document(job)
    assert accounting.load(path, format="toml") == job
    with pytest.raises(ValueError, match="invalid JSON"):
        accounting.load(path, format="json")


def test_unknown_suffixes_and_formats_are_refused(tmp_path, job):
    with pytest.raises(ValueError, match=r"cannot tell the format from the suffix '\.txt' "
                                         r"\(known: \.json, \.toml\)"):
        accounting.save(job, tmp_path / "job.txt")
    assert not (tmp_path / "job.txt").exists()
    with pytest.raises(ValueError, match="format must be 'json' or 'toml', got 'yaml'"):
        accounting.save(job, tmp_path / "job.json", format="yaml")
    (tmp_path / "job.yaml").write_text("{}")
    with pytest.raises(ValueError, match="suffix '.yaml'"):
        accounting.load(tmp_path / "job.yaml")
    with pytest.raises(ValueError, match="format must be"):
        dumps(job, format="pickle")
    with pytest.raises(TypeError, match="takes no JSON options, got indent"):
        dumps(job, format="toml", indent=2)


def test_text_and_document_routes_agree(job):
    assert loads(dumps(job)) == job
    assert loads(dumps(job, format="toml"), format="toml") == job
    assert from_document(to_document(job)) == job
    assert json.loads(dumps(job, indent=2)) == to_document(job)


def test_deprecated_record_methods_warn_and_agree(job):
    acct = Accountant.of(job, step=1e-3)
    doc = to_document(job)
    with pytest.warns(DeprecationWarning, match=r"Ledger\.to_dict\(\) is deprecated.*"
                                                r"accounting\.save"):
        assert job.to_dict() == doc
    with pytest.warns(DeprecationWarning, match=r"Ledger\.to_json\(\).*accounting\.save"):
        assert json.loads(job.to_json()) == doc
    with pytest.warns(DeprecationWarning, match=r"Ledger\.to_toml\(\).*accounting\.save"):
        assert job.to_toml() == dumps(job, format="toml")
    with pytest.warns(DeprecationWarning, match=r"Ledger\.from_dict\(\).*accounting\.load"):
        assert Ledger.from_dict(doc) == job
    with pytest.warns(DeprecationWarning, match=r"Ledger\.from_json\(\).*accounting\.load"):
        assert Ledger.from_json(dumps(job)) == job
    with pytest.warns(DeprecationWarning, match=r"Ledger\.from_toml\(\).*accounting\.load"):
        assert Ledger.from_toml(dumps(job, format="toml")) == job
    with pytest.warns(DeprecationWarning, match=r"Accountant\.to_dict\(\).*accounting\.save"):
        assert acct.to_dict() == to_document(acct)
    with pytest.warns(DeprecationWarning, match=r"Accountant\.from_dict\(\).*accounting\.load"):
        assert Accountant.from_dict(to_document(acct)).ledger == job


def test_state_dict_is_the_saved_document_and_does_not_warn(job):
    acct = Accountant.of(job, step=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        state = acct.state_dict()
        fresh = Accountant(step=1e-2)
        fresh.load_state_dict(state)
    assert state == to_document(acct)
    assert fresh.step == 1e-3 and fresh.ledger.entries == job.entries
    with pytest.raises(ValueError, match=r"ledger\.entries\[0\]\.count: missing"):
        fresh.load_state_dict({**state, "ledger": {"entries": [
            {"mechanism": {"name": "gaussian", "sigma": 1.0}}]}})


def test_a_curve_saves_as_json_and_toml_refuses_its_nulls(tmp_path):
    pld = Accountant.of(Ledger.build("gaussian", 3, sigma=2.0), step=1e-3).curve(PLD)
    accounting.save(pld, tmp_path / "pld.json")
    assert accounting.load(tmp_path / "pld.json").epsilon(1e-6) == pld.epsilon(1e-6)
    # a curve's document holds nulls (no lower side, no certified largest loss), which
    # TOML cannot write: refused naming the path, before any file is made
    with pytest.raises(ValueError, match=r"^curve\.upper\[0\]\.sup_loss: TOML has no null"):
        accounting.save(pld, tmp_path / "pld.toml")
    assert not (tmp_path / "pld.toml").exists()


def test_pickle_is_transport_not_a_save_route(job):
    """Dask moves objects between processes by pickling them: a ledger and its specs
    survive that (built by their constructors, nothing set afterwards)."""
    back = pickle.loads(pickle.dumps(job))
    assert back == job and hash(back) == hash(job) and back.digest() == job.digest()
    (spec, _), _ = back.entries
    assert spec.key == job.entries[0][0].key
    assert spec.mechanism() == job.entries[0][0].mechanism()
