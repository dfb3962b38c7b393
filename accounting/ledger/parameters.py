"""Mechanism parameters as written in a document, a workload file or on the command line.

How each parameter of a registered mechanism is written (``parameter_kind``, from its
attrs annotation), how a written value becomes the parameter's type
(``coerce_parameter``) and how a mechanism is built by name with every parameter
checked (``build_mechanism``): one place for the ledger's documents, workload files
and the command line, so that a value reads the same everywhere. Range checks are the
mechanism's own (its ``Range`` declarations, see ``accounting.pairs.mechanism``).
"""

from __future__ import annotations

import numbers
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from accounting.pairs.mechanism import Mechanism, Neighbouring, as_neighbouring
from accounting.registry.registry import default_registry

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["MAX_MECHANISM_DEPTH", "WrittenMechanism", "parameter_kind", "type_name",
           "coerce_parameter", "ordered_parameters", "build_mechanism"]

#: how deep mechanisms may nest (a wrapper's ``base`` = 1 level)
MAX_MECHANISM_DEPTH = 4


@runtime_checkable
class WrittenMechanism(Protocol):
    """A mechanism written down (``accounting.ledger.spec.MechanismSpec``): its
    registered ``name`` and a way to build the live mechanism through a registry."""

    name: str

    def mechanism(self, registry: Registry | None = None) -> Mechanism: ...




# ------------------------------------------------------------------ parameters
def parameter_kind(attribute: attrs.Attribute[Any]) -> str:
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


def type_name(value: Any) -> str:
    """How ``value``'s type is named in a message: boolean, string, integer, number."""
    return {bool: "boolean", str: "string", int: "integer", float: "number"}.get(
        type(value), type(value).__name__)


def coerce_parameter(attribute: attrs.Attribute[Any], value: Any, registry: Registry | None = None,
                     _depth: int = 0, *, label: str | None = None,
                     path: str | None = None) -> Any:
    """``value`` (from a document, TOML or the command line) as the parameter's type; a
    ``TypeError`` naming the parameter (``label``, default its name) if the type is
    wrong. Range checks are the mechanism's own (its attrs validators). A
    ``"mechanism"`` parameter is a table ``{name = "…", <its parameters>}`` built
    through ``registry`` (``path``: its path in a document, for messages)."""
    kind = parameter_kind(attribute)
    name = label or attribute.name
    if kind == "mechanism":
        if isinstance(value, Mechanism):
            return value
        if isinstance(value, WrittenMechanism):
            return value.mechanism(registry)
        if not isinstance(value, Mapping) or "name" not in value:
            raise TypeError(f"{name} must be a table with the mechanism's name and "
                            f"parameters, e.g. {{name = \"gaussian\", sigma = 1.0}}, got "
                            f"{type_name(value)} {value!r}")
        if _depth >= MAX_MECHANISM_DEPTH:
            raise ValueError(f"{name}: mechanisms nested more than {MAX_MECHANISM_DEPTH} deep "
                             f"are not accepted")
        inner = dict(value)
        inner_name = inner.pop("name")
        if path is not None and not isinstance(inner_name, str):
            raise TypeError(f"{path}.name must be a string, got {type_name(inner_name)} "
                            f"{inner_name!r}")
        return build_mechanism(registry, inner_name, inner, path=path, _depth=_depth + 1)
    if kind == "vector":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) \
                or not value:
            raise TypeError(f"{name} must be a non-empty list of numbers, got "
                            f"{type_name(value)} {value!r}")
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"{name}[{i}] must be a number, got {type_name(v)} {v!r}")
        return tuple(float(v) for v in value)
    if kind == "neighbouring":
        if not isinstance(value, (str, Neighbouring)):
            raise TypeError(f"{name} must be 'add_remove' or 'replace_one', "
                            f"got {type_name(value)} {value!r}")
        try:
            return as_neighbouring(value)
        except ValueError:
            raise ValueError(f"{name} must be 'add_remove' or 'replace_one', "
                             f"got {value!r}") from None
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be true or false, got {type_name(value)} {value!r}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type_name(value)} {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type_name(value)} {value!r}")
    if kind == "int":
        if not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        return int(value)
    return float(value)


def ordered_parameters(params: Mapping[str, attrs.Attribute[Any]]
                       ) -> list[attrs.Attribute[Any]]:
    """A mechanism's own parameters first, then the shared keyword-only ones."""
    return sorted(params.values(), key=lambda a: a.kw_only)


def _check_ranges(cls: type[Mechanism], kwargs: Mapping[str, Any], path: str) -> None:
    """The declared ``Range`` of each given parameter, checked before the mechanism is
    built so that a refusal names the parameter's path in the document. Ranges
    relative to another field (``per``) see that field's given or default value."""
    known = cls.parameters()
    values = {n: a.default for n, a in known.items()
              if a.default is not attrs.NOTHING and not isinstance(a.default, attrs.Factory)}  # type: ignore[arg-type]
    values.update(kwargs)
    view = types.SimpleNamespace(**values)
    ranges = cls.ranges()
    # plain ranges first: a relative range needs its unit (say sensitivity) checked
    for key in sorted(kwargs, key=lambda k: getattr(ranges.get(k), "per", None) is not None):
        rng, value = ranges.get(key), kwargs[key]
        if rng is None or isinstance(value, (Mechanism, Neighbouring, str, bool)):
            continue
        if isinstance(value, tuple):
            for i, v in enumerate(value):
                rng.check(f"{path}.{key}[{i}]", v, view)
        else:
            rng.check(f"{path}.{key}", value, view)


def build_mechanism(registry: Registry | None, name: Any, params: Mapping[str, Any], *,
                    path: str | None = None, _depth: int = 0) -> Mechanism:
    """The mechanism registered as ``name`` with ``params`` (values as read from a
    document, TOML or the command line), every parameter checked.

    Messages: with ``path`` (a position in a document, e.g. ``entries[0].mechanism``)
    each names the path of the offending value; without, they begin with the
    mechanism's name (how workload files and the command line report them).
    Raises ``ValueError`` (unknown mechanism or parameter, missing parameter, value
    out of range) or ``TypeError`` (wrong type).
    """
    registry = registry or default_registry()
    try:
        cls = registry.mechanism(name)
    except (TypeError, ValueError) as exc:
        if path is None:
            raise
        raise type(exc)(f"{path}.name: {exc}") from None
    where = name if path is None else f"{path} ({name})"
    known = cls.parameters()
    kwargs = {}
    for key, value in params.items():
        if key not in known:
            names = ", ".join(a.name for a in ordered_parameters(known))
            where_key = (f"{name}: unknown parameter {key!r}" if path is None else
                         f"{path}.{key}: unknown parameter {key!r} of {name!r}")
            raise ValueError(f"{where_key} (its parameters: {names})")
        label = key if path is None else f"{path}.{key}"
        try:
            kwargs[key] = coerce_parameter(known[key], value, registry, _depth, label=label,
                                           path=None if path is None else label)
        except (TypeError, ValueError) as exc:
            if path is not None:
                raise
            raise type(exc)(f"{name}: {exc}") from None
    missing = [a.name for a in ordered_parameters(known)
               if a.default is attrs.NOTHING and a.name not in kwargs]
    if missing:
        raise ValueError(f"{where}: missing parameter{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}")
    if path is not None:
        _check_ranges(cls, kwargs, path)
    try:
        out: Mechanism = cls(**kwargs)
        return out
    except (TypeError, ValueError) as exc:
        # prefixed once: a mechanism's own message may already begin with its name
        text = str(exc)
        if text.startswith(f"{name}: "):
            text = text[len(name) + 2:]
        raise type(exc)(f"{where}: {text}") from None
