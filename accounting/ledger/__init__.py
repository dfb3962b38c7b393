"""The ledger: a composition written down as one frozen, hashable value.

A ``Ledger`` is a multiset of mechanisms with counts. Each mechanism is named by its
registered name and *every* parameter it holds (defaults included), and may nest —
a subsampling wrapper's ``base`` is itself a mechanism description. Equal
compositions are equal ledgers: entries of one mechanism merge (their counts add),
and equality and hashing ignore the order of entries, so ``a + b == b + a`` and both
hash alike — in every process (``hash`` and ``digest()`` come from the canonical
JSON, sha256, not from Python's salted string hash). A ledger also remembers the
order in which its mechanisms first came: that order fixes the floating-point order
of the computation (``pair()``, an ``Accountant``) and is kept by its document, so
a reloaded ledger gives the same ε to the last bit. ``canonical()`` is the same
ledger in canonical order (by name, then by the canonical JSON of each mechanism).

Building one (the constructor API other modules and bridges use)::

    Ledger()                                    # empty
    Ledger([(mechanism, count), ...])           # Mechanism objects (or MechanismSpecs)
    Ledger.of(mechanism, count=1)               # one entry
    Ledger.from_mechanisms([m1, (m2, 5), ...])  # mechanisms, or (mechanism, count)
    Ledger.build("gaussian", 3, sigma=1.0)      # by registered name, through the registry
    a + b, a * n, n * a                         # compose, repeat

Reading one: ``entries`` ((component, count), …), ``count`` (total uses),
``len`` (distinct entries), ``mechanisms()`` ((live Mechanism or Pair, count), …),
``pair()`` (the ``ComposedPair``), ``describe()``.

A ``Pair`` (or a mechanism whose parameters cannot be written down) may be composed
too: it is kept as an ``Unwritten`` entry, used like any other, but a ledger holding
one cannot be saved — ``accounting.save`` refuses it naming the entry.

Saving and loading: ``accounting.save(ledger, "run.json")`` (or ``.toml``) and
``accounting.load(path)``; ``accounting.serialization`` has the same with documents
and text. (``to_dict``/``to_json``/``to_toml`` and ``from_dict``/``from_json``/
``from_toml`` are deprecated routes to the same, kept for one release.)

Document (schema 1)::

    {"kind": "ledger", "schema": 1,
     "entries": [{"mechanism": {"name": "poisson_subsampled", "q": 0.01,
                                "base": {"name": "gaussian", "sigma": 1.1, ...}, ...},
                  "count": 1000}, ...]}

Reading a document never unpickles and never
executes anything: every mechanism is looked up by name in a registry and built by
its own validated constructor. Unknown keys, unknown mechanisms, wrong parameters,
missing parameters that have no default, and missing or wrong counts (every entry
needs its ``count``, which is never taken as 1) are refused with a
``ValueError``/``TypeError`` whose message begins with the path inside the document,
e.g. ``entries[2].mechanism.base.sigma`` or ``entries[0].count: missing``.
Floats are written with Python's shortest round-trip ``repr`` (JSON and TOML alike),
so every parameter reads back bit for bit.

Compatibility promise (schema 1):

* A document records every parameter of every mechanism, defaults included, so its
  meaning never depends on a default that a later release might change.
* Every later release reads a schema-1 document as the same composition: the same
  mechanisms, parameters and counts. If the layout or the meaning of a parameter
  ever changes, the schema number is raised and schema-1 documents are still read
  as they were meant (converted on reading) or refused with an error naming the
  version — never silently reinterpreted.
* A mechanism may gain a parameter only with a default that reproduces its old
  behaviour; a document written before the parameter existed reads with that default.
* A document of a newer schema than the reader knows is refused (naming both
  versions), and so is any key the reader does not know: nothing is skipped silently.
* What is promised is the composition, not a number: an ε computed from it may move
  within the stated accuracy when the numerics improve (the PLD grid step is part of
  an accountant's document, see ``accounting.serialization``).
* A mechanism from a plugin is named by its registered name; reading the document
  needs that plugin installed (else: unknown mechanism, naming the path).

The package, one concept per module: ``record`` (the ``Ledger``), ``spec``
(``MechanismSpec``, ``Unwritten``), ``parameters`` (how parameters are written and
coerced, ``build_mechanism``), ``document`` (the documents' layout and checks) and
``text`` (the strict JSON reader and the TOML writer). The names below are those
``accounting.ledger`` has always offered.
"""

from accounting.ledger.document import SCHEMA, check_keys, check_schema
from accounting.ledger.parameters import (
                                          MAX_MECHANISM_DEPTH,
                                          build_mechanism,
                                          coerce_parameter,
                                          ordered_parameters,
                                          parameter_kind,
)
from accounting.ledger.record import Ledger
from accounting.ledger.spec import MechanismSpec, Unwritten
from accounting.ledger.text import parse_json, toml_dumps

__all__ = ["Ledger", "MechanismSpec", "Unwritten", "SCHEMA", "MAX_MECHANISM_DEPTH",
           "parameter_kind", "coerce_parameter", "build_mechanism", "check_schema",
           "check_keys", "toml_dumps", "ordered_parameters", "parse_json"]
