"""Task configurations: the one module that reads the ledger format.

A configuration sent to a worker is a plain JSON-able dict in the workload format of
``accounting.workload`` (docs/cli.md, "Workload files")::

    {"mechanism": [{"name": "subsampled_gaussian", "q": 0.004, "sigma": 1.1,
                    "count": 1000},
                   {"name": "laplace", "b": 2.0, "count": 10}],
     "step": 1e-4}

— a few hundred bytes, never a curve: the worker builds the mechanisms and their
PLD or Rényi curve itself. ``build_accountant`` (configuration → ``Accountant``) and
``calibration_terms`` (configuration → calibration ``Term``s) are the only functions
of ``accounting.parallel`` that know this format (``answer`` asks the accountant); ``config_digest`` names a
configuration by the SHA-256 of its canonical JSON (sorted keys), so that equal
configurations written in any key order have one digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from accounting.accountant import ACCOUNTANTS, Accountant
from accounting.analysis.calibration import MechanismFamily as Term  # Term: deprecated alias
from accounting.curves.pld import PLD
from accounting.pairs.mechanism import Mechanism
from accounting.registry.registry import default_registry
from accounting.workload import Workload, make_use, workload_from_dict

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["config_digest", "canonical_json", "check_config", "build_accountant", "answer",
           "calibration_terms", "mechanism_parameters", "UPPER", "NUMERICAL"]

#: how an answer is labelled: a certified upper bound, or only a numerical value
UPPER, NUMERICAL = "upper bound", "numerical (not a certified bound)"


def canonical_json(config: Any) -> str:
    """``json.dumps(config, sort_keys=True)``: one text per configuration."""
    try:
        return json.dumps(config, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a configuration must be a plain JSON-able dict (numbers, "
                        f"strings, lists, dicts), got one that is not: {exc}") from None


def config_digest(config: Any) -> str:
    """SHA-256 (hex) of ``canonical_json(config)``."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()


def check_config(config: Mapping[str, Any], source: str = "configuration") -> Workload:
    """The workload of ``config``; a ``WorkloadError`` naming ``source`` if invalid."""
    if not isinstance(config, Mapping):
        raise TypeError(f"{source} must be a dict in the workload format "
                        f"({{'mechanism': [...]}}), got {type(config).__name__}")
    return workload_from_dict(config, source)


def build_accountant(config: Mapping[str, Any]) -> Accountant:
    """An ``Accountant`` composing every mechanism of ``config`` (grid ``step`` if set)."""
    return check_config(config).accountant()


def answer(config: Mapping[str, Any], query: str, at: Any,
           accountant: str = "pld") -> tuple[np.ndarray, str]:
    """ε at δ = ``at`` (``query`` "epsilon") or δ at ε = ``at`` ("delta") of ``config``
    under ``accountant``, max over both directions, and its label: ``UPPER`` when the
    composed curve is exact or a sound bound, else ``NUMERICAL``."""
    acct = build_accountant(config)
    kind = ACCOUNTANTS[accountant]
    # the curve the answer is read from (cached: the query below reuses it)
    curve = acct.curve(PLD, lower=False) if kind is PLD else acct.curve(kind)
    ask = getattr(acct.under(accountant), "epsilon" if query == "epsilon" else "delta")
    values = np.atleast_1d(np.asarray(ask(at), dtype=float))
    return values, UPPER if curve.provenance.exactness.certified else NUMERICAL


def mechanism_parameters(name: str, registry: Registry | None = None) -> tuple[str, ...]:
    """The parameter names of mechanism ``name`` registered on ``registry`` (None: the
    process-wide one), and ``count``."""
    return (*(registry or default_registry()).mechanism(name).parameters(), "count")


class _Fixed:
    """x ↦ the same mechanism: a term of a calibration that does not depend on x."""

    def __init__(self, mechanism: Mechanism) -> None:
        self.mechanism = mechanism
        self.__name__ = mechanism.name

    def __call__(self, x: float) -> Mechanism:
        return self.mechanism


def calibration_terms(config: Mapping[str, Any], solve: str,
                      registry: Registry | None = None) -> list[Term]:
    """The calibration terms of ``config`` with the shared unknown ``solve``.

    Every mechanism with a parameter ``solve`` is one term whose ``solve`` is
    (its written value, default 1) × x — equal values share one x, a value of 2 is
    twice it; the other mechanisms are fixed terms. A ``ValueError`` if no
    mechanism has the parameter. Names are looked up in ``registry`` (None: the
    process-wide one).
    """
    registry = registry or default_registry()
    check_config({**config, "mechanism": [
        {**entry, solve: entry.get(solve, 1.0)} if solve in _params_of(entry, registry)
        else entry for entry in config.get("mechanism", [])]})
    terms = []
    for entry in config["mechanism"]:
        params = {k: v for k, v in entry.items() if k not in ("name", "count")}
        count = entry.get("count", 1)
        if solve in _params_of(entry, registry):
            multiplier = params.pop(solve, 1.0)
            terms.append(Term(entry["name"], solve, count=count, multiplier=multiplier,
                              params=params))
        else:
            use = make_use(registry, entry["name"], params, count)
            terms.append(Term(_Fixed(use.mechanism), count=use.count))
    if not any(t.solve == solve for t in terms):
        names = ", ".join(sorted({e["name"] for e in config["mechanism"]}))
        raise ValueError(f"solve: no mechanism of the workload ({names}) has a parameter "
                         f"{solve!r}")
    return terms


def _params_of(entry: Mapping[str, Any], registry: Registry) -> tuple[str, ...]:
    name = entry.get("name") if isinstance(entry, Mapping) else None
    if not isinstance(name, str):
        return ()
    try:
        return tuple(registry.mechanism(name).parameters())
    except (KeyError, ValueError):
        return ()
