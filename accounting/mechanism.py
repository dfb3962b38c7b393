"""Mechanisms: parameterised families that yield their dominating pair.

A mechanism is a frozen attrs class whose fields are its parameters (validated at
construction) and whose ``pair()`` returns the ordered pair (P, Q) that dominates it
under its neighbouring relation. For add/remove neighbouring one pair serves both
relations: its forward direction P‖Q is *remove* (P the output on the larger
dataset) and its backward direction Q‖P is *add*. Every curve follows from the pair.
"""

from __future__ import annotations

import abc
import enum
from typing import Any, ClassVar

import attrs

from .pair import Pair
from .validation import check_positive

__all__ = ["Neighbouring", "Mechanism", "positive", "as_neighbouring"]


class Neighbouring(enum.Enum):
    """Which datasets are neighbours: one record added or removed, or one replaced."""

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"


def as_neighbouring(value: "Neighbouring | str") -> Neighbouring:
    if isinstance(value, Neighbouring):
        return value
    try:
        return Neighbouring(str(value).lower().replace("-", "_"))
    except ValueError:
        raise ValueError(f"neighbouring must be 'add_remove' or 'replace_one', got {value!r}") from None


def positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """attrs validator: a finite real number > 0, named in the error."""
    check_positive(attribute.name, value)


@attrs.frozen
class Mechanism(abc.ABC):
    """Base class of mechanism plugins.

    Subclasses set ``name`` (how the registry and the command line refer to them)
    and implement ``pair()``. ``sensitivity`` and ``neighbouring`` are keyword-only
    and shared by all mechanisms; each subclass documents their meaning for it.
    """

    name: ClassVar[str] = ""
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=positive)
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.ADD_REMOVE, kw_only=True,
                                             converter=as_neighbouring)

    @abc.abstractmethod
    def pair(self) -> Pair:
        """The dominating ordered pair (P, Q) (forward = remove, backward = add)."""

    def curve(self, kind: type, **options: Any):
        """This mechanism's curve of the given kind (``PLD``, ``RDP``, …)."""
        return self.pair().curve(kind, **options)

    @classmethod
    def parameters(cls) -> dict[str, attrs.Attribute]:
        """The parameters a user sets, by name (what the command line offers)."""
        return {a.name: a for a in attrs.fields(cls) if a.init}
