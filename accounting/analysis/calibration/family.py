"""Calibration families: x ↦ the ledger of the composition at the shared noise value x.

``MechanismFamily`` is the common one, ``count`` uses of one mechanism whose noise
parameter is ``multiplier × x``; ``check_family`` accepts it, a sequence of them
(their ledgers add) or any callable x ↦ ``Ledger``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from accounting.ledger import Ledger, coerce_parameter, parameter_kind
from accounting.pairs.mechanism import Mechanism
from accounting.registry.registry import default_registry
from accounting.validation import check_count, check_positive

__all__ = ["MechanismFamily", "check_family", "scales_noise", "ledger_at"]


# --------------------------------------------------------------------- terms
def _count(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_count(attribute.name, value)


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_positive(attribute.name, value)


def _params(value: Any) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if isinstance(value, Mapping):
        value = value.items()
    items = tuple(value)
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise TypeError(f"params must be a mapping of parameter names to values, "
                            f"got {value!r}")
    return items


def _family_class(family: Any, solve: Any, params: tuple[tuple[str, Any], ...]
                  ) -> type[Mechanism] | None:
    """The mechanism class of ``family`` (None for a callable family), with ``solve``
    and ``params`` checked against it."""
    if isinstance(family, str):
        cls: type[Mechanism] = default_registry().mechanism(family)
    elif isinstance(family, type) and issubclass(family, Mechanism):
        cls = family
    elif callable(family) and not isinstance(family, type):
        if params:
            raise ValueError("params apply to a registered mechanism or a Mechanism "
                             "class, not to a callable family (fix them in the callable)")
        if solve is not None and not isinstance(solve, str):
            raise TypeError(f"solve must be a string label, got {type(solve).__name__}")
        return None
    else:
        raise TypeError(f"family must be a mechanism name, a Mechanism subclass or a "
                        f"callable x -> Mechanism, got {type(family).__name__} ({family!r})")
    known = cls.parameters()
    floats = sorted(n for n, a in known.items()
                    if parameter_kind(a) == "float" and n != "sensitivity")
    if not isinstance(solve, str) or solve not in floats:
        raise ValueError(f"{cls.name}: solve must name a real parameter to calibrate "
                         f"(one of {', '.join(floats) or 'none'}), got {solve!r}")
    for key, _ in params:
        if key == solve:
            raise ValueError(f"{cls.name}: {key!r} is the parameter being solved for; "
                             f"it cannot also be fixed in params")
        if key not in known:
            raise ValueError(f"{cls.name}: unknown parameter {key!r} "
                             f"(its parameters: {', '.join(sorted(known))})")
    return cls


@attrs.frozen(init=False)
class MechanismFamily:
    """x ↦ the ledger of ``count`` uses of ``family`` with its noise parameter
    ``solve`` = multiplier·x (``Term`` before 0.2, now a deprecated alias).

    ``family`` is a registered mechanism name, a ``Mechanism`` subclass (then
    ``solve`` names one of its float parameters and ``params`` fixes the others), or
    a callable x ↦ Mechanism for families that are not one parameter of a class
    (a mixture scaled as a whole); ``solve`` is then only the label of x.
    """

    family: Any
    solve: str | None = None
    count: int = attrs.field(default=1, validator=_count)
    multiplier: float = attrs.field(default=1.0, validator=_positive)
    params: tuple[tuple[str, Any], ...] = attrs.field(default=(), converter=_params)
    _cls: type[Mechanism] | None = attrs.field(default=None, eq=False, repr=False, alias="cls")

    def __init__(self, family: Any, solve: str | None = None, count: int = 1,
                 multiplier: float = 1.0, params: Any = (), cls: type[Mechanism] | None = None
                 ) -> None:
        # params are coerced by the family's class, which the family names: both are
        # worked out before the record is built (``cls``, given by ``attrs.evolve``,
        # is worked out again from ``family``, never taken as given)
        items = _params(params)
        kind = _family_class(family, solve, items)
        if kind is not None:
            known = kind.parameters()
            try:
                items = tuple((k, coerce_parameter(known[k], v)) for k, v in items)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{kind.name}: {exc}") from None
        self.__attrs_init__(family, solve, count, multiplier, items, kind)

    @property
    def mechanism_class(self) -> type[Mechanism] | None:
        """The mechanism class whose parameter ``solve`` is x (None for a callable
        family, whose x means nothing known)."""
        return self._cls

    @property
    def label(self) -> str:
        """The name of x: the solved parameter, or the callable's label."""
        if self.solve is not None:
            return self.solve
        return "x"

    def build(self, x: float) -> Mechanism:
        """The mechanism at shared value x (noise parameter multiplier·x)."""
        value = self.multiplier * x
        if self._cls is None:
            mech = self.family(value)
            if not isinstance(mech, Mechanism):
                raise TypeError(f"family({value:g}) must return a Mechanism, "
                                f"got {type(mech).__name__}")
            return mech
        try:
            # solve is never among params (refused when the family is built)
            kwargs: dict[str, Any] = {**dict(self.params), str(self.solve): value}
            return self._cls(**kwargs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{self._cls.name}: {exc}") from None

    def __call__(self, x: float) -> Ledger:
        """The ledger at shared value x: ``count`` uses of ``build(x)``."""
        return Ledger.of(self.build(x), self.count)

    def describe(self) -> str:
        name = self._cls.name if self._cls is not None else getattr(
            self.family, "__name__", type(self.family).__name__)
        fixed = ", ".join(f"{k}={v!r}" for k, v in self.params)
        x = f"{self.multiplier:g}·x" if self.multiplier != 1.0 else "x"
        inner = f"{self.solve}={x}" if self._cls is not None else x
        return f"{name}({inner}{', ' + fixed if fixed else ''}) × {self.count}"


def ledger_at(family: Callable[[float], Ledger], x: float) -> Ledger:
    ledger = family(x)
    if not isinstance(ledger, Ledger):
        raise TypeError(f"the family at x = {x:g} must return a Ledger (the composition at "
                        f"x), got {type(ledger).__name__}")
    return ledger


def check_family(family: Any) -> tuple[Callable[[float], Ledger], str]:
    """(x ↦ Ledger, the label of x) from a family: a callable x ↦ Ledger (label "x"), a
    ``MechanismFamily`` or a non-empty sequence of them (whose ledgers add; label: the
    first one's)."""
    if isinstance(family, MechanismFamily):
        return family, family.label
    if isinstance(family, Sequence) and not isinstance(family, (str, bytes)):
        terms = tuple(family)
        if not terms:
            raise ValueError("terms must not be empty")
        for i, term in enumerate(terms):
            if not isinstance(term, MechanismFamily):
                raise TypeError(f"terms[{i}] must be a MechanismFamily (a Term), got "
                                f"{type(term).__name__}")

        def summed(x: float) -> Ledger:
            return Ledger(tuple(e for term in terms for e in term(x).entries))
        return summed, terms[0].label
    if callable(family) and not isinstance(family, type):
        return family, "x"
    raise TypeError(f"family must be a callable x -> Ledger, a MechanismFamily or a "
                    f"sequence of them, got {type(family).__name__}")


def scales_noise(family: Any) -> bool:
    """Whether x is the noise parameter itself (times a multiplier) of every mechanism
    of ``family`` — a registered mechanism or a ``Mechanism`` class, alone or in a
    sequence — so that x = 0 is no noise at all. For a callable, 0 means nothing known."""
    terms = (family,) if isinstance(family, MechanismFamily) else family
    if not isinstance(terms, Sequence) or isinstance(terms, (str, bytes)) or not terms:
        return False
    return all(isinstance(t, MechanismFamily) and t.mechanism_class is not None for t in terms)
