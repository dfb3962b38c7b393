"""Workloads: a heterogeneous composition of registered mechanisms, from TOML or code.

A workload file lists the mechanisms used, each with its parameters and how many
times it runs; optional top-level keys supply defaults for the query:

    description = "DP-SGD, then a few Laplace counts"   # optional
    delta = 1e-5              # or a list; default δ for ``accounting epsilon``
    epsilon = [1.0, 2.0]      # default ε for ``accounting delta``
    accountant = "pld"        # "pld", "rdp", "zcdp" or "all"
    step = 1e-4               # PLD grid step

    [[mechanism]]
    name = "subsampled_gaussian"   # a registered mechanism (``accounting mechanisms``)
    q = 0.004266
    sigma = 1.1
    count = 14062                  # optional, default 1

    [[mechanism]]
    name = "laplace"
    b = 2.0
    count = 10

Every key is checked: an unknown key, a missing ``name``, an unknown mechanism, a
parameter of the wrong type or out of range, or a ``count`` that is not an integer
in [1, ``MAX_COUNT``] raises ``WorkloadError`` (a ``ValueError``) whose one-line
message names the file, the entry and the problem. A file is read only if it is a
regular file of at most ``MAX_WORKLOAD_BYTES`` (not a FIFO or a device such as
/dev/zero), as UTF-8; tables nested too deeply (TOML, or mechanisms inside
mechanisms beyond ``MAX_MECHANISM_DEPTH``) are refused the same way.
``Workload.ledger`` is the composition (an ``accounting.ledger.Ledger``) and
``Workload.accountant()`` the ``Accountant`` of it. ``Workload.as_dict()`` reads back
through ``workload_from_dict`` (its ``mechanisms`` list and ``source`` are accepted).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from accounting.accountant import ACCOUNTANTS, Accountant, check_accountant
from accounting.curves.pld import DEFAULT_STEP
from accounting.ledger import (
    MAX_MECHANISM_DEPTH,
    Ledger,
    build_mechanism,
    coerce_parameter,
    ordered_parameters,
    parameter_kind,
)
from accounting.pairs.mechanism import Mechanism, Neighbouring
from accounting.registry.registry import Registry, default_registry
from accounting.validation import check_array, check_depth, check_positive

__all__ = [
    "Workload", "Use", "WorkloadError", "load_workload", "parse_workload", "workload_from_dict",
    "make_use", "parameter_kind", "coerce_parameter", "ACCOUNTANT_CHOICES", "MAX_COUNT",
    "MAX_COUNT_TEXT", "MAX_WORKLOAD_BYTES", "MAX_MECHANISM_DEPTH",
]

#: the largest count (uses of one mechanism) accepted from a file or the command line:
#: beyond it counts stop being exact in float64 arithmetic (2^53 ≈ 9e15)
MAX_COUNT = 10 ** 15
MAX_COUNT_TEXT = "1e15"
#: the largest workload file read (bytes): a workload is a few lines of TOML
MAX_WORKLOAD_BYTES = 1 << 20

#: what ``accountant =`` (and ``--accountant``) may name (checked by
#: ``accountant.check_accountant(…, allow_all=True)``)
ACCOUNTANT_CHOICES = (*ACCOUNTANTS, "all")

_TOP_KEYS = ("mechanism", "mechanisms", "source", "description", "delta", "epsilon",
             "accountant", "step")
_ENTRY_KEYS = ("name", "count")
#: the keys of an entry of ``mechanisms`` (the ``Workload.as_dict`` form)
_AS_DICT_ENTRY_KEYS = ("name", "params", "count")

class WorkloadError(ValueError):
    """A workload that cannot be used; the message names its source and the problem."""


# -------------------------------------------------------------------- entries
@attrs.frozen
class Use:
    """One line of a workload: mechanism ``name`` with ``params``, run ``count`` times."""

    name: str
    params: tuple[tuple[str, Any], ...]
    count: int
    mechanism: Mechanism = attrs.field(eq=False)

    def describe(self) -> str:
        """``name(p=v, …) × count`` with the parameters as given."""
        args = ", ".join(f"{k}={_show(v)}" for k, v in self.params)
        return f"{self.name}({args})" + (f" × {self.count}" if self.count != 1 else "")

    def as_dict(self) -> dict[str, Any]:
        """Name, every parameter (defaults included) and count, JSON-ready."""
        values = {a.name: _plain(getattr(self.mechanism, a.name))
                  for a in ordered_parameters(type(self.mechanism).parameters())}
        return {"name": self.name, "params": values, "count": self.count}


def _show(value: Any) -> str:
    if isinstance(value, Neighbouring):
        return value.value
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, Mapping) and "name" in value:
        args = ", ".join(f"{k}={_show(v)}" for k, v in value.items() if k != "name")
        return f"{value['name']}({args})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Neighbouring):
        return value.value
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, Mechanism):
        return {"name": value.name, **{a.name: _plain(getattr(value, a.name))
                                       for a in ordered_parameters(type(value).parameters())}}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def make_use(registry: Registry, name: Any, params: Mapping[str, Any], count: Any = 1,
             *, _depth: int = 0) -> Use:
    """Validate ``params`` against mechanism ``name`` and construct it.

    Raises ``ValueError`` (unknown mechanism or parameter, value out of range) or
    ``TypeError`` (wrong type) with a message naming the mechanism."""
    mech = build_mechanism(registry, name, params, _depth=_depth)
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        raise TypeError(f"{name}: count must be a positive integer, got {count!r}")
    if not 1 <= int(count) <= MAX_COUNT:
        shown = f"{count}" if abs(int(count)) < 10 ** 16 else f"{float(count):.3g}"
        raise ValueError(f"{name}: count must be a positive integer (at most {MAX_COUNT_TEXT}), "
                         f"got {shown}")
    return Use(name, tuple(params.items()), int(count), mech)


# ------------------------------------------------------------------- workload
@attrs.frozen
class Workload:
    """Mechanisms to compose, and the defaults a workload file may set for a query."""

    uses: tuple[Use, ...]
    source: str = "<workload>"
    description: str = ""
    delta: tuple[float, ...] | None = None
    epsilon: tuple[float, ...] | None = None
    accountant_name: str | None = None
    step: float | None = None

    @property
    def ledger(self) -> Ledger:
        """The composition: every use, merged (a mechanism listed twice counts twice)."""
        return Ledger(tuple((u.mechanism, u.count) for u in self.uses))

    def accountant(self, step: float | None = None) -> Accountant:
        """A fresh ``Accountant`` composing every use (``step``: the PLD grid step)."""
        step = step if step is not None else (self.step if self.step is not None else DEFAULT_STEP)
        return Accountant.of(self.ledger, step=step)

    def describe(self) -> str:
        return " ⊗ ".join(u.describe() for u in self.uses)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``source``, ``mechanisms`` (name, every parameter, count), and the
        description and query defaults that are set. ``workload_from_dict`` reads it
        back to the same ledger and the same ``as_dict``."""
        out: dict[str, Any] = {"source": self.source,
                               "mechanisms": [u.as_dict() for u in self.uses]}
        if self.description:
            out["description"] = self.description
        if self.delta is not None:
            out["delta"] = list(self.delta)
        if self.epsilon is not None:
            out["epsilon"] = list(self.epsilon)
        if self.accountant_name is not None:
            out["accountant"] = self.accountant_name
        if self.step is not None:
            out["step"] = self.step
        return out


def _values(source: str, key: str, value: Any, **limits: Any) -> tuple[float, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in items):
        raise WorkloadError(f"{source}: {key} must be a number or a list of numbers, got {value!r}")
    try:
        arr = check_array(key, [float(v) for v in items], **limits)
    except (TypeError, ValueError) as exc:
        raise WorkloadError(f"{source}: {exc}") from None
    return tuple(float(v) for v in arr)


def _refuse_unknown(data: Mapping[str, Any], allowed: Sequence[str], where: str, what: str) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise WorkloadError(f"{where}: unknown {what} {unknown[0]!r} "
                            f"(allowed: {', '.join(allowed)})")


def _flatten_entries(entries: Any, source: str) -> list[Any]:
    """The ``mechanisms`` list of ``Workload.as_dict`` ({name, params, count} each) as
    ``[[mechanism]]`` tables ({name, count, **params})."""
    if not isinstance(entries, list):
        raise WorkloadError(f"{source}: 'mechanisms' must be a list of tables")
    out = []
    for i, entry in enumerate(entries, start=1):
        where = f"{source}: mechanisms #{i}"
        if not isinstance(entry, Mapping):
            raise WorkloadError(f"{where}: must be a table with name, params and count")
        _refuse_unknown(entry, _AS_DICT_ENTRY_KEYS, where, "key")
        params = entry.get("params", {})
        if not isinstance(params, Mapping):
            raise WorkloadError(f"{where}: params must be a table")
        clash = [k for k in params if k in _ENTRY_KEYS]
        if clash:
            raise WorkloadError(f"{where}: params cannot hold {clash[0]!r}")
        out.append({k: v for k, v in entry.items() if k != "params"} | dict(params))
    return out


def workload_from_dict(data: Mapping[str, Any], source: str = "<workload>",
                       registry: Registry | None = None) -> Workload:
    """A workload from the parsed TOML table ``data`` (see the module docstring), or from
    the ``Workload.as_dict`` form (``source`` and a ``mechanisms`` list)."""
    registry = registry or default_registry()
    if not isinstance(data, Mapping):
        raise WorkloadError(f"{source}: a workload must be a table, got {type(data).__name__}")
    try:
        check_depth(data, source)
    except ValueError as exc:
        raise WorkloadError(str(exc)) from None
    _refuse_unknown(data, _TOP_KEYS, source, "top-level key")
    if "source" in data:
        if not isinstance(data["source"], str):
            raise WorkloadError(f"{source}: source must be a string, got {data['source']!r}")
        source = data["source"] if source == "<workload>" else source
    if "mechanisms" in data:
        if "mechanism" in data:
            raise WorkloadError(f"{source}: give either [[mechanism]] tables or a "
                                f"'mechanisms' list (the as_dict form), not both")
        data = {**data, "mechanism": _flatten_entries(data["mechanisms"], source)}
    entries = data.get("mechanism")
    if entries is None:
        raise WorkloadError(f"{source}: no [[mechanism]] entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise WorkloadError(f"{source}: 'mechanism' must be an array of tables ([[mechanism]])")
    if not entries:
        raise WorkloadError(f"{source}: no [[mechanism]] entries")
    uses = []
    for i, entry in enumerate(entries, start=1):
        where = f"{source}: mechanism #{i}"
        if "name" not in entry:
            raise WorkloadError(f"{where}: missing 'name'")
        name = entry["name"]
        if not isinstance(name, str):
            raise WorkloadError(f"{where}: name must be a string, got {name!r}")
        params = {k: v for k, v in entry.items() if k not in _ENTRY_KEYS}
        try:
            uses.append(make_use(registry, name, params, entry.get("count", 1)))
        except (TypeError, ValueError) as exc:
            raise WorkloadError(f"{where}: {exc}") from None

    description = data.get("description", "")
    if not isinstance(description, str):
        raise WorkloadError(f"{source}: description must be a string")
    delta = epsilon = step = name = None
    if "delta" in data:
        delta = _values(source, "delta", data["delta"], lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if "epsilon" in data:
        epsilon = _values(source, "epsilon", data["epsilon"], allow_inf=True)
    if "accountant" in data:
        try:
            name = check_accountant(data["accountant"], allow_all=True)
        except ValueError as exc:
            raise WorkloadError(f"{source}: {exc}") from None
    if "step" in data:
        try:
            if isinstance(data["step"], bool):
                raise TypeError(f"step must be a real number, got {data['step']!r}")
            step = check_positive("step", data["step"])
        except (TypeError, ValueError) as exc:
            raise WorkloadError(f"{source}: {exc}") from None
    return Workload(tuple(uses), source, description, delta, epsilon, name, step)


def parse_workload(text: str, source: str = "<workload>",
                   registry: Registry | None = None) -> Workload:
    """A workload from TOML text."""
    import tomllib
    try:
        check_depth(text, source)
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{source}: invalid TOML: {exc}") from None
    except ValueError as exc:
        raise WorkloadError(str(exc)) from None
    return workload_from_dict(data, source, registry)


def load_workload(path: str | os.PathLike[str], registry: Registry | None = None) -> Workload:
    """A workload from a TOML file: a regular file of at most ``MAX_WORKLOAD_BYTES``,
    in UTF-8 (a FIFO, a device or a directory is refused before it is opened, so
    that reading cannot block or run forever)."""
    from accounting.serialization import read_text_file
    source = str(path)
    try:
        text = read_text_file(path, MAX_WORKLOAD_BYTES, "workload file", "TOML file")
    except ValueError as exc:
        raise WorkloadError(str(exc)) from None
    return parse_workload(text, source, registry)

