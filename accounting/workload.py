"""Workloads: a heterogeneous composition of registered mechanisms, from TOML or code.

A workload file lists the mechanisms used, each with its parameters and how many
times it runs; optional top-level keys supply defaults for the query::

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
``Workload.accountant()`` builds the ``Accountant`` that composes every entry.
"""

from __future__ import annotations

import numbers
import os
import stat
from typing import Any, Mapping, Optional, Sequence

import attrs
import numpy as np

from accounting.accountant import ACCOUNTANTS, Accountant
from accounting.pairs.mechanism import Mechanism, Neighbouring, as_neighbouring
from accounting.curves.pld import DEFAULT_STEP
from accounting.registry.registry import Registry, default_registry
from accounting.validation import check_array, check_positive

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
#: how deep mechanisms may nest (a wrapper's ``base`` = 1 level)
MAX_MECHANISM_DEPTH = 4

#: what ``accountant =`` (and ``--accountant``) may name
ACCOUNTANT_CHOICES = (*ACCOUNTANTS, "all")

_TOP_KEYS = ("mechanism", "description", "delta", "epsilon", "accountant", "step")
_ENTRY_KEYS = ("name", "count")

class WorkloadError(ValueError):
    """A workload that cannot be used; the message names its source and the problem."""


# ------------------------------------------------------------------ parameters
def parameter_kind(attribute: attrs.Attribute) -> str:
    """How a mechanism parameter is written: ``"float"``, ``"int"``, ``"bool"``,
    ``"str"``, ``"neighbouring"``, ``"vector"`` (a sequence of numbers, annotated
    ``tuple``) or ``"mechanism"`` (another mechanism, e.g. the base of a subsampling
    wrapper: a table with its ``name`` and parameters) — from the attrs annotation,
    which may be a string under ``from __future__ import annotations``."""
    t = attribute.type
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    if attribute.name == "neighbouring" or t is Neighbouring or name == "Neighbouring":
        return "neighbouring"
    if t is Mechanism or name == "Mechanism":
        return "mechanism"
    if t is tuple or name == "tuple" or name.startswith("tuple["):
        return "vector"
    if t is bool or name == "bool":
        return "bool"
    if t is int or name == "int":
        return "int"
    if t is str or name == "str":
        return "str"
    return "float"


def _type_name(value: Any) -> str:
    return {bool: "boolean", str: "string", int: "integer", float: "number"}.get(
        type(value), type(value).__name__)


def coerce_parameter(attribute: attrs.Attribute, value: Any,
                     registry: Optional[Registry] = None, _depth: int = 0) -> Any:
    """``value`` (from TOML or already parsed from the command line) as the parameter's
    type; a ``TypeError`` naming the parameter if it has the wrong type. Range checks
    are the mechanism's own (its attrs validators). A ``"mechanism"`` parameter is a
    table ``{name = "…", <its parameters>}`` built through ``registry``."""
    kind = parameter_kind(attribute)
    name = attribute.name
    if kind == "mechanism":
        if isinstance(value, Mechanism):
            return value
        if not isinstance(value, Mapping) or "name" not in value:
            raise TypeError(f"{name} must be a table with the mechanism's name and "
                            f"parameters, e.g. {{name = \"gaussian\", sigma = 1.0}}, got "
                            f"{_type_name(value)} {value!r}")
        if _depth >= MAX_MECHANISM_DEPTH:
            raise ValueError(f"{name}: mechanisms nested more than {MAX_MECHANISM_DEPTH} deep "
                             f"are not accepted")
        inner = dict(value)
        inner_name = inner.pop("name")
        return make_use(registry or default_registry(), inner_name, inner,
                        _depth=_depth + 1).mechanism
    if kind == "vector":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) \
                or not value:
            raise TypeError(f"{name} must be a non-empty list of numbers, got "
                            f"{_type_name(value)} {value!r}")
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"{name}[{i}] must be a number, got {_type_name(v)} {v!r}")
        return tuple(float(v) for v in value)
    if kind == "neighbouring":
        if not isinstance(value, (str, Neighbouring)):
            raise TypeError(f"{name} must be 'add_remove' or 'replace_one', "
                            f"got {_type_name(value)} {value!r}")
        return as_neighbouring(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be true or false, got {_type_name(value)} {value!r}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {_type_name(value)} {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {_type_name(value)} {value!r}")
    if kind == "int":
        if not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        return int(value)
    return float(value)


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

    def as_dict(self) -> dict:
        """Name, every parameter (defaults included) and count, JSON-ready."""
        values = {a.name: _plain(getattr(self.mechanism, a.name))
                  for a in _ordered(type(self.mechanism).parameters())}
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
                                       for a in _ordered(type(value).parameters())}}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _ordered(params: Mapping[str, attrs.Attribute]) -> list[attrs.Attribute]:
    """A mechanism's own parameters first, then the shared keyword-only ones."""
    return sorted(params.values(), key=lambda a: a.kw_only)


def make_use(registry: Registry, name: Any, params: Mapping[str, Any], count: Any = 1,
             *, _depth: int = 0) -> Use:
    """Validate ``params`` against mechanism ``name`` and construct it.

    Raises ``ValueError`` (unknown mechanism or parameter, value out of range) or
    ``TypeError`` (wrong type) with a message naming the mechanism."""
    cls = registry.mechanism(name)
    known = cls.parameters()
    kwargs = {}
    for key, value in params.items():
        if key not in known:
            names = ", ".join(a.name for a in _ordered(known))
            raise ValueError(f"{name}: unknown parameter {key!r} (its parameters: {names})")
        try:
            kwargs[key] = coerce_parameter(known[key], value, registry, _depth)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name}: {exc}") from None
    missing = [a.name for a in _ordered(known)
               if a.default is attrs.NOTHING and a.name not in kwargs]
    if missing:
        raise ValueError(f"{name}: missing parameter{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}")
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        raise TypeError(f"{name}: count must be a positive integer, got {count!r}")
    if not 1 <= count <= MAX_COUNT:
        shown = f"{count}" if abs(count) < 10 ** 16 else f"{float(count):.3g}"
        raise ValueError(f"{name}: count must be a positive integer (at most {MAX_COUNT_TEXT}), "
                         f"got {shown}")
    try:
        mech = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None
    return Use(name, tuple(params.items()), int(count), mech)


# ------------------------------------------------------------------- workload
@attrs.frozen
class Workload:
    """Mechanisms to compose, and the defaults a workload file may set for a query."""

    uses: tuple[Use, ...]
    source: str = "<workload>"
    description: str = ""
    delta: Optional[tuple[float, ...]] = None
    epsilon: Optional[tuple[float, ...]] = None
    accountant_name: Optional[str] = None
    step: Optional[float] = None

    def accountant(self, step: Optional[float] = None) -> Accountant:
        """A fresh ``Accountant`` composing every use (``step``: the PLD grid step)."""
        step = step if step is not None else (self.step if self.step is not None else DEFAULT_STEP)
        acct = Accountant(step=step)
        for use in self.uses:
            acct.compose(use.mechanism, use.count)
        return acct

    def describe(self) -> str:
        return " ⊗ ".join(u.describe() for u in self.uses)

    def as_dict(self) -> dict:
        out = {"source": self.source, "mechanisms": [u.as_dict() for u in self.uses]}
        if self.description:
            out["description"] = self.description
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


def workload_from_dict(data: Mapping[str, Any], source: str = "<workload>",
                       registry: Optional[Registry] = None) -> Workload:
    """A workload from the parsed TOML table ``data`` (see the module docstring)."""
    registry = registry or default_registry()
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise WorkloadError(f"{source}: unknown top-level key {unknown[0]!r} "
                            f"(allowed: {', '.join(_TOP_KEYS)})")
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
        name = data["accountant"]
        if not isinstance(name, str) or name.lower() not in ACCOUNTANT_CHOICES:
            raise WorkloadError(f"{source}: accountant must be one of "
                                f"{', '.join(ACCOUNTANT_CHOICES)}, got {name!r}")
        name = name.lower()
    if "step" in data:
        try:
            if isinstance(data["step"], bool):
                raise TypeError(f"step must be a real number, got {data['step']!r}")
            step = check_positive("step", data["step"])
        except (TypeError, ValueError) as exc:
            raise WorkloadError(f"{source}: {exc}") from None
    return Workload(tuple(uses), source, description, delta, epsilon, name, step)


def parse_workload(text: str, source: str = "<workload>",
                   registry: Optional[Registry] = None) -> Workload:
    """A workload from TOML text."""
    import tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{source}: invalid TOML: {exc}") from None
    except RecursionError:
        raise WorkloadError(f"{source}: invalid TOML: arrays or tables nested too "
                            f"deeply") from None
    return workload_from_dict(data, source, registry)


def load_workload(path: "str | object", registry: Optional[Registry] = None) -> Workload:
    """A workload from a TOML file: a regular file of at most ``MAX_WORKLOAD_BYTES``,
    in UTF-8 (a FIFO, a device or a directory is refused before it is opened, so
    that reading cannot block or run forever)."""
    source = str(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(info.st_mode) else
                    "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "not a regular file")
            raise WorkloadError(f"{source}: cannot read workload file ({kind}; give a "
                                f"regular TOML file)")
        if info.st_size > MAX_WORKLOAD_BYTES:
            raise WorkloadError(f"{source}: workload file too large ({info.st_size} bytes; "
                                f"at most {MAX_WORKLOAD_BYTES} are read)")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_WORKLOAD_BYTES + 1)
    except OSError as exc:
        raise WorkloadError(f"{source}: cannot read workload file "
                            f"({exc.strerror or type(exc).__name__})") from None
    except ValueError as exc:  # e.g. an embedded NUL in the path
        if isinstance(exc, WorkloadError):
            raise
        raise WorkloadError(f"{source!r}: cannot read workload file ({exc})") from None
    if len(raw) > MAX_WORKLOAD_BYTES:
        raise WorkloadError(f"{source}: workload file too large (more than "
                            f"{MAX_WORKLOAD_BYTES} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"{source}: not a UTF-8 text file (invalid byte at offset "
                            f"{exc.start})") from None
    return parse_workload(text, source, registry)

