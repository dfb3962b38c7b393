"""The ledger (``accounting.ledger``): one frozen, hashable description of a composition.

Checked: merging and order-free equality, hashes stable across processes (sha256 of
the canonical JSON), exact dict/JSON/TOML round trips (hypothesis, bit for bit on the
floats), refusals that name the path inside the document, and that a document is
never executed.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import subprocess
import sys
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accounting
from accounting.ledger import SCHEMA, Ledger, MechanismSpec, Unwritten

m = accounting.mechanism

# the ledger's own document methods (to_dict/to_json/to_toml, from_*) are deprecated
# routes kept for one release: this file checks they still read and write exactly;
# tests/test_save_load.py checks that they warn and agree with accounting.save/load
pytestmark = pytest.mark.filterwarnings("ignore:Ledger\\.:DeprecationWarning")


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


# ------------------------------------------------------------------ building
def test_merge_and_order_free_equality():
    g, lap = m("gaussian", sigma=1.0), m("laplace", b=2.0)
    a = Ledger.of(g, 3) + Ledger.of(lap, 10)
    b = Ledger.of(lap, 10) + Ledger.of(g, 1) + Ledger.of(g, 2)
    assert a == b and hash(a) == hash(b) and a.digest() == b.digest()
    assert a.count == 13 and len(a) == 2
    # the order each mechanism first came is kept (it fixes the order of computation)
    assert [c.name for c, _ in a.entries] == ["gaussian", "laplace"]
    assert [c.name for c, _ in b.entries] == ["laplace", "gaussian"]
    assert a.canonical().entries == b.canonical().entries
    assert a != Ledger.of(g, 4) + Ledger.of(lap, 10)
    assert 2 * a == a * 2 == a + a and (a * 2).count == 26
    assert Ledger.from_mechanisms([g, (g, 2), (lap, 10)]) == a
    assert Ledger([(g, 3), (lap, 10)]) == a


def test_specs_hold_every_parameter_in_canonical_types():
    """sigma = 1 (an int) and 1.0, defaults given or not: one mechanism, one spec."""
    a = Ledger.build("gaussian", 2, sigma=1)
    b = Ledger.build("gaussian", 2, sigma=1.0, sensitivity=1.0, neighbouring="add_remove")
    c = Ledger.of(m("gaussian", sigma=1.0), 2)
    assert a == b == c and a.digest() == b.digest() == c.digest()
    (spec, _), = a.entries
    assert dict(spec.params) == {"neighbouring": "add_remove", "sensitivity": 1.0, "sigma": 1.0}
    assert isinstance(dict(spec.params)["sigma"], float)
    assert MechanismSpec.build("gaussian", sigma=1) == spec
    # integers stay integers, vectors are tuples of floats, bases nest
    wor = m("sampled_without_replacement", base=m("randomized_response", p=0.7),
            batch_size=10, dataset_size=1000)
    spec = MechanismSpec.of(wor)
    params = dict(spec.params)
    assert params["batch_size"] == 10 and type(params["batch_size"]) is int
    assert params["base"] == MechanismSpec.of(m("randomized_response", p=0.7))
    mix = MechanismSpec.of(m("gaussian_mixture", weights=[0.5, 0.5], means=[0, 1],
                             scales=[1, 2]))
    assert dict(mix.params)["means"] == (0.0, 1.0)


def test_live_mechanisms_and_pairs():
    g = m("gaussian", sigma=2.0)
    led = Ledger.of(g, 4)
    assert led.mechanisms() == ((g, 4),)
    assert led.pair().describe() == led.pairs()[0][0].describe() + "^4"
    # a spec read from a document builds its mechanism through the registry
    again = Ledger.from_json(led.to_json())
    (mech, n), = again.mechanisms()
    assert mech == g and n == 4
    with pytest.raises(ValueError, match="empty"):
        Ledger().pair()


def test_unwritten_pairs_compute_but_do_not_save():
    pair = m("laplace", b=1.0).pair()
    led = Ledger.of(m("gaussian", sigma=1.0)) + Ledger.of(pair, 2)
    assert isinstance(led.entries[1][0], Unwritten) and not led.writable
    assert led.pairs()[1] == (pair, 2)
    with pytest.raises(TypeError, match=r"entries\[1\]\.mechanism: .*no written form"):
        led.to_dict()
    with pytest.raises(TypeError, match=r"entries\[1\]"):
        led.digest()
    assert led == Ledger.of(pair, 2) + Ledger.of(m("gaussian", sigma=1.0))
    with pytest.raises(TypeError, match="a Mechanism, a Pair or a MechanismSpec"):
        Ledger.of("gaussian")


def test_bad_counts():
    g = m("gaussian", sigma=1.0)
    with pytest.raises(ValueError, match="count"):
        Ledger.of(g, 0)
    with pytest.raises(TypeError, match="count"):
        Ledger.of(g, 1.5)
    with pytest.raises(ValueError, match="2\\^53"):
        Ledger.of(g, 2 ** 53) + Ledger.of(g, 1)


def test_repr_is_short():
    led = Ledger.build("gaussian", 1000, sigma=1.0) * 3
    assert repr(led) == ("Ledger(gaussian(neighbouring=add_remove, sensitivity=1, sigma=1) "
                         "× 3000)")
    big = sum((Ledger.build("laplace", 1, b=float(b)) for b in range(1, 60)), Ledger())
    assert len(repr(big)) <= 210


# ----------------------------------------------------------------- documents
def test_document_layout_and_round_trips():
    led = (Ledger.build("poisson_subsampled", 1000, q=0.01, base={"name": "gaussian",
                                                                  "sigma": 1.1})
           + Ledger.build("laplace", 5, b=0.1 + 0.2)       # 0.30000000000000004
           + Ledger.build("gaussian_mixture", 2, weights=[0.3, 0.7], means=[0.0, 1.0],
                          scales=[1.0, 1.0 / 3.0]))
    doc = led.to_dict()
    assert doc["kind"] == "ledger" and doc["schema"] == SCHEMA == 1
    assert doc["entries"][0] == {"mechanism": {
        "name": "poisson_subsampled",
        "base": {"name": "gaussian", "neighbouring": "add_remove", "sensitivity": 1.0,
                 "sigma": 1.1},
        "neighbouring": "add_remove", "q": 0.01, "sensitivity": 1.0}, "count": 1000}
    for back in (Ledger.from_dict(doc), Ledger.from_json(led.to_json()),
                 Ledger.from_json(led.to_json(indent=2).encode()),
                 Ledger.from_toml(led.to_toml())):
        assert back == led and back.entries == led.entries and back.digest() == led.digest()
        assert back.to_dict() == doc
    b = dict(Ledger.from_toml(led.to_toml()).entries[1][0].params)["b"]
    assert bits(b) == bits(0.1 + 0.2)
    # the TOML is what tomllib reads as the same document
    assert tomllib.loads(led.to_toml()) == doc
    # a document may omit kind, and parameters with defaults (never an entry's count)
    short = {"schema": 1, "entries": [{"mechanism": {"name": "gaussian", "sigma": 2.0},
                                       "count": 1}]}
    assert Ledger.from_dict(short) == Ledger.build("gaussian", sigma=2.0)


def test_digest_is_sha256_of_canonical_json():
    import hashlib
    led = Ledger.build("laplace", 2, b=1.0) + Ledger.build("gaussian", 3, sigma=1.5)
    text = led.canonical_json()
    assert led.digest() == hashlib.sha256(text.encode()).hexdigest()
    assert json.loads(text)["entries"][0]["mechanism"]["name"] == "gaussian"  # sorted
    assert " " not in text


def test_hash_is_stable_across_processes():
    code = ("import warnings; warnings.simplefilter('ignore'); import accounting;"
            "from accounting.ledger import Ledger;"
            "l = Ledger.build('laplace', 2, b=1.0) + Ledger.build('gaussian', 3, sigma=1.5);"
            "print(hash(l), l.digest())")
    outs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, check=True).stdout)
    assert len(outs) == 1
    led = Ledger.build("laplace", 2, b=1.0) + Ledger.build("gaussian", 3, sigma=1.5)
    assert outs.pop().split() == [str(hash(led)), led.digest()]


def test_pickle_round_trip():
    led = Ledger.build("poisson_subsampled", 7, q=0.5, base={"name": "laplace", "b": 1.0})
    back = pickle.loads(pickle.dumps(led))
    assert back == led and hash(back) == hash(led) and back.to_dict() == led.to_dict()


# ---------------------------------------------------------------- hypothesis
finite = dict(allow_nan=False, allow_infinity=False)
scales = st.floats(1e-8, 1e8, **finite)
rates = st.floats(1e-300, 1.0, **finite)
mechanisms = st.one_of(
    st.builds(lambda s: m("gaussian", sigma=s), scales),
    st.builds(lambda b, d: m("laplace", b=b * d, sensitivity=d), st.floats(1e-6, 1e6, **finite),
              st.floats(1e-3, 1e3, **finite)),
    st.builds(lambda q, s: m("subsampled_gaussian", q=q, sigma=s), rates,
              st.floats(1e-2, 1e8, **finite)),
    st.builds(lambda q, s: m("poisson_subsampled", q=q, base=m("gaussian", sigma=s)),
              rates, scales),
    st.builds(lambda p: m("randomized_response", p=p), st.floats(0.5, 1.0, exclude_min=True,
                                                                 exclude_max=True, **finite)),
)
ledgers = st.lists(st.tuples(mechanisms, st.integers(1, 10 ** 6)), max_size=6).map(Ledger)


@settings(max_examples=60, deadline=None)
@given(ledgers)
def test_round_trips_are_exact(led):
    for back in (Ledger.from_dict(json.loads(json.dumps(led.to_dict()))),
                 Ledger.from_json(led.to_json()), Ledger.from_toml(led.to_toml())):
        assert back == led and back.entries == led.entries
        assert back.digest() == led.digest() and hash(back) == hash(led)
        for (a, _), (b, _) in zip(back.entries, led.entries):
            for (ka, va), (kb, vb) in zip(a.params, b.params):
                assert ka == kb
                if isinstance(va, float):
                    assert bits(va) == bits(vb)


@settings(max_examples=40, deadline=None)
@given(ledgers, ledgers)
def test_composition_is_commutative_and_counts_add(a, b):
    assert a + b == b + a and hash(a + b) == hash(b + a)
    assert (a + b).count == a.count + b.count
    assert (a + b).canonical().to_dict() == (b + a).canonical().to_dict()


# --------------------------------------------------------------- bad documents
def doc(*entries, **top):
    return {"schema": 1, "entries": list(entries), **top}


def gauss(**kv):
    return {"mechanism": {"name": "gaussian", **kv}, "count": 1}


BASE_OK = {"name": "gaussian", "sigma": 1.0}
BAD = [
    ([], TypeError, r"^the document must be a table"),
    ({"entries": []}, ValueError, r"^schema: missing"),
    (doc(colour=1), ValueError, r"^colour: unknown key 'colour'"),
    (doc(schema=2), ValueError, r"^schema: version 2 is newer .* \(up to 1\)"),
    (doc(schema="1"), TypeError, r"^schema must be an integer"),
    (doc(schema=True), TypeError, r"^schema must be an integer"),
    (doc(schema=0), ValueError, r"^schema must be at least 1"),
    (doc(kind="accountant"), ValueError, r"^kind: this is a 'accountant' document"),
    ({"schema": 1, "entries": {}}, TypeError, r"^entries must be a list"),
    (doc(3), TypeError, r"^entries\[0\] must be a table"),
    (doc({"count": 2}), ValueError, r"^entries\[0\]\.mechanism: missing"),
    (doc({**gauss(sigma=1.0), "weight": 2}), ValueError, r"^entries\[0\]\.weight: unknown key"),
    (doc({**gauss(sigma=1.0), "count": 1.5}), TypeError, r"^entries\[0\]\.count must be an integer"),
    (doc({**gauss(sigma=1.0), "count": True}), TypeError, r"^entries\[0\]\.count must be an integer"),
    (doc({**gauss(sigma=1.0), "count": 0}), ValueError, r"^entries\[0\]\.count must be in \[1, 2\^53\]"),
    (doc({"mechanism": "gaussian"}), TypeError, r"^entries\[0\]\.mechanism must be a table"),
    (doc({"mechanism": {"sigma": 1.0}}), ValueError, r"^entries\[0\]\.mechanism\.name: missing"),
    (doc({"mechanism": {"name": 3}}), TypeError, r"^entries\[0\]\.mechanism\.name must be a string"),
    (doc(gauss(sigma=1.0), {"mechanism": {"name": "gausian", "sigma": 1.0}}), ValueError,
     r"^entries\[1\]\.mechanism\.name: unknown mechanism 'gausian'"),
    (doc({"mechanism": {"name": "os.system"}}), ValueError, r"unknown mechanism 'os.system'"),
    (doc(gauss(sgma=1.0)), ValueError, r"^entries\[0\]\.mechanism\.sgma: unknown parameter"),
    (doc(gauss()), ValueError, r"^entries\[0\]\.mechanism \(gaussian\): missing parameter sigma"),
    (doc(gauss(sigma="1.0")), TypeError, r"^entries\[0\]\.mechanism\.sigma must be a number, got string"),
    (doc(gauss(sigma=True)), TypeError, r"^entries\[0\]\.mechanism\.sigma must be a number, got boolean"),
    (doc(gauss(sigma=-1.0)), ValueError, r"^entries\[0\]\.mechanism\.sigma must be in \[1e-08, 1e\+08\]"),
    (doc(gauss(sigma=1.0, neighbouring="sideways")), ValueError,
     r"^entries\[0\]\.mechanism\.neighbouring must be 'add_remove' or 'replace_one'"),
    (doc(gauss(sigma=1.0, sensitivity=[1.0])), TypeError, r"^entries\[0\]\.mechanism\.sensitivity must be a number"),
    (doc(gauss(sigma=1.0), gauss(sigma=1.0),
         {"mechanism": {"name": "poisson_subsampled", "q": 0.1,
                        "base": {"name": "gaussian", "sigma": "x"}}}), TypeError,
     r"^entries\[2\]\.mechanism\.base\.sigma must be a number"),
    (doc({"mechanism": {"name": "poisson_subsampled", "q": 0.1, "base": 3}}), TypeError,
     r"^entries\[0\]\.mechanism\.base must be a table"),
    (doc({"mechanism": {"name": "poisson_subsampled", "q": 0.1,
                        "base": {"name": "nope"}}}), ValueError,
     r"^entries\[0\]\.mechanism\.base\.name: unknown mechanism 'nope'"),
    (doc({"mechanism": {"name": "poisson_subsampled", "q": 1.5, "base": BASE_OK}}), ValueError,
     r"^entries\[0\]\.mechanism\.q must be in"),
    (doc({"mechanism": {"name": "gaussian_mixture", "weights": [0.5, "x"], "means": [0, 1],
                        "scales": [1, 1]}}), TypeError,
     r"^entries\[0\]\.mechanism\.weights\[1\] must be a number"),
    (doc({"mechanism": {"name": "sampled_without_replacement", "base": {
        "name": "randomized_response", "p": 0.7}, "batch_size": 2.5, "dataset_size": 10}}),
     TypeError, r"^entries\[0\]\.mechanism\.batch_size must be an integer"),
    (doc({"mechanism": {"name": "sampled_without_replacement", "base": {
        "name": "randomized_response", "p": 0.7}, "batch_size": 20, "dataset_size": 10}}),
     ValueError, r"^entries\[0\]\.mechanism \(sampled_without_replacement\): batch_size must be at most"),
]


@pytest.mark.parametrize("document, exc, message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_documents_name_the_path(document, exc, message):
    with pytest.raises(exc, match=message):
        Ledger.from_dict(document)


def test_nesting_is_limited():
    inner = BASE_OK
    for _ in range(6):
        inner = {"name": "poisson_subsampled", "q": 0.5, "base": inner}
    with pytest.raises(ValueError, match=r"^entries\[0\]\.mechanism(\.base)+: mechanisms "
                                         r"nested more than 4 deep"):
        Ledger.from_dict(doc({"mechanism": inner}))


@pytest.mark.parametrize("text, message", [
    ('{"schema": 1, "entries": [], "schema": 1}', "duplicate key 'schema'"),
    ('{"schema": 1, "entries": [{"mechanism": {"name": "gaussian", "sigma": NaN}}]}',
     "NaN is not a JSON number"),
    ('{"schema": 1, "entries": [{"mechanism": {"name": "gaussian", "sigma": Infinity}}]}',
     "Infinity is not a JSON number"),
    ('{"schema": 1, ', "invalid JSON"),
    ("[" * 100000 + "]" * 100000, "invalid JSON"),
])
def test_bad_json(text, message):
    with pytest.raises(ValueError, match=message):
        Ledger.from_json(text)


def test_bad_toml_and_types():
    with pytest.raises(ValueError, match="invalid TOML"):
        Ledger.from_toml("schema = 1\n[[entries]\n")
    with pytest.raises(TypeError, match="needs a str"):
        Ledger.from_toml(b"schema = 1")
    with pytest.raises(TypeError, match="expected JSON text"):
        Ledger.from_json({"schema": 1})
    # TOML has inf; JSON does not (a document with inf cannot even be built here, since
    # every mechanism refuses it: checked on the writer alone)
    from accounting.ledger.text import check_finite, toml_dumps
    with pytest.raises(ValueError, match=r"^entries\[0\]\.x: inf cannot be written as JSON"):
        check_finite({"entries": [{"x": float("inf")}]}, "")
    assert tomllib.loads(toml_dumps({"x": float("inf"), "s": 'a"\\\x7f\n'})) == {
        "x": float("inf"), "s": 'a"\\\x7f\n'}


def test_a_custom_registry_is_used():
    from accounting.registry.registry import make_registry
    reg = make_registry()
    led = Ledger.from_dict(doc(gauss(sigma=1.0)), registry=reg)
    assert led.mechanisms(reg)[0][0].sigma == 1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True))
def test_written_floats_read_back_bit_for_bit(x):
    """Python's float repr is the shortest string that reads back to the same float64;
    both writers use it (JSON natively, TOML by hand)."""
    from accounting.ledger import toml_dumps
    assert bits(json.loads(json.dumps({"x": x}))["x"]) == bits(x)
    assert bits(tomllib.loads(toml_dumps({"x": x, "v": [x, -x]}))["x"]) == bits(x)
    assert [bits(v) for v in tomllib.loads(toml_dumps({"v": [x, -x]}))["v"]] == \
        [bits(x), bits(-x)]
