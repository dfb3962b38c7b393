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
import math
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from accounting.pairs.pair import CurveT, Pair, not_provided, provides_by_override
from accounting.validation import MAX_COUNT, check_count, check_positive, check_real

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["Neighbouring", "Mechanism", "MECHANISM_PRIMITIVES", "positive", "as_neighbouring", "Range", "in_range",
           "parameter", "SENSITIVITY_RANGE",
           "NOISE_SCALE", "RATE"]


class Neighbouring(enum.Enum):
    """Which datasets are neighbours: one record added or removed, or one replaced."""

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"


def as_neighbouring(value: Neighbouring | str) -> Neighbouring:
    if isinstance(value, Neighbouring):
        return value
    try:
        return Neighbouring(str(value).lower().replace("-", "_"))
    except ValueError:
        raise ValueError(f"neighbouring must be 'add_remove' or 'replace_one', got {value!r}") from None


def positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: a finite real number > 0, named in the error."""
    check_positive(attribute.name, value)


@attrs.frozen
class Range:
    """The allowed values of a numeric parameter: an interval, machine-readable.

    ``lo``/``hi`` are the ends (``lo_open``/``hi_open`` make them exclusive). With
    ``per`` set to another field's name (say ``"sensitivity"``) the ends are
    multiples of that field's value raised to ``per_power``: a noise scale is
    declared as [1e-8, 1e8]·Δ because only σ/Δ enters the numerics. ``integer``
    restricts to integers; ``log`` says the natural spread is logarithmic (a scale),
    which is how the property suite draws values. A range states where the
    mechanism's closed forms or quadratures were measured finite and correct;
    outside it a value is refused when the mechanism is built.
    """

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False
    per: str | None = None
    per_power: int = 1
    integer: bool = False
    log: bool = False
    #: 0 is accepted too: a degenerate corner (no noise: non-private; no sensitivity or
    #: a sampling rate 0: no privacy cost), answered exactly rather than refused
    zero: bool = False

    def bounds(self, instance: Any = None) -> tuple[float, float]:
        """The ends for ``instance`` (the ``per`` field's value scales them; when that
        value is 0, a degenerate corner, every non-negative value is allowed)."""
        if self.per is None:
            return self.lo, self.hi
        if instance is None:
            raise ValueError(f"this range is relative to {self.per}: pass the instance")
        unit = getattr(instance, self.per)
        if unit == 0 and not isinstance(unit, bool):
            return (-math.inf if self.lo < 0 else 0.0), math.inf
        unit = check_positive(self.per, unit) ** self.per_power
        return self.lo * unit, self.hi * unit

    def check(self, name: str, value: Any, instance: Any = None) -> float | int:
        """``value`` checked against the range; a ValueError/TypeError naming ``name``."""
        if self.zero and not isinstance(value, bool) and isinstance(value, (int, float)) \
                and value == 0:
            return value
        lo, hi = self.bounds(instance)
        if self.integer:
            return check_count(name, value, minimum=math.ceil(lo),
                               maximum=math.floor(hi) if math.isfinite(hi) else MAX_COUNT)
        try:
            return check_real(name, value, lo=lo, hi=hi, lo_open=self.lo_open,
                              hi_open=self.hi_open)
        except ValueError as exc:
            if "must be in" not in str(exc) or (self.per is None and not self.zero):
                raise
            zero = "; 0 is also allowed (a degenerate corner)" if self.zero else ""
            if self.per is None:
                raise ValueError(f"{exc}{zero}") from None
            raise ValueError(f"{exc} (the range is {self.describe(zero=False)} with "
                             f"{self.per} = {getattr(instance, self.per)!r}{zero})") from None

    def describe(self, zero: bool = True) -> str:
        """The range as text, e.g. ``[1e-08, 1e+08]·sensitivity or 0`` (``zero=False``:
        without the degenerate value)."""
        left = "(" if self.lo_open else "["
        right = ")" if self.hi_open else "]"
        unit = ""
        if self.per is not None:
            unit = f"·{self.per}" if self.per_power == 1 else f"·{self.per}^{self.per_power}"
        kind = "integers in " if self.integer else ""
        extra = " or 0" if self.zero and zero else ""
        return f"{kind}{left}{self.lo:g}, {self.hi:g}{right}{unit}{extra}"


def in_range(rng: Range) -> Any:
    """attrs validator checking a value (or each element of a tuple) against ``rng``."""
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, tuple):
            for i, v in enumerate(value):
                rng.check(f"{attribute.name}[{i}]", v, instance)
        else:
            rng.check(attribute.name, value, instance)
    return check


#: how far from 1 a probability vector's sum may be (it is then normalised exactly)
PROB_TOLERANCE = 1e-9


def probabilities_for(other: str) -> Any:
    """An attrs validator: the field is a probability vector with one entry per entry of
    the field ``other``, summing to 1 within ``PROB_TOLERANCE``."""
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        n = len(getattr(instance, other))
        if len(value) != n:
            raise ValueError(f"{attribute.name} must have one entry per entry of {other} "
                             f"({n}), got {len(value)}")
        total = math.fsum(value)
        if abs(total - 1.0) > PROB_TOLERANCE:
            raise ValueError(f"{attribute.name} must sum to 1 (within {PROB_TOLERANCE:g}), "
                             f"got {total!r}")
    return check


def parameter(rng: Range, *, garbling: bool = False, **field_options: Any) -> Any:
    """An attrs field whose values must lie in ``rng``, declared in its metadata
    (``Mechanism.ranges()`` reads it back); other attrs options pass through.

    ``garbling=True`` declares that raising this parameter, all others fixed, garbles
    the mechanism: each neighbouring pair at a larger value is a post-processing (one
    Markov kernel applied to both outputs) of the pair at a smaller one. A Gaussian's σ
    is the standard case: N(m, σ₂²) is N(m, σ₁²) plus independent N(0, σ₂² − σ₁²), with
    or without subsampling before it. By the data-processing inequality (Blackwell
    1951; Dong, Roth, Su, arXiv:1905.02383, Lemma 2.9) the smaller value's pair then
    dominates on every curve, which is what sound grouping by dominance
    (``accounting.ledger.grouping``) needs. Declare it only with that proof."""
    validators = [in_range(rng)]
    extra = field_options.pop("validator", None)
    if extra is not None:
        validators.insert(0, extra)
    metadata = dict(field_options.pop("metadata", {}) or {}, range=rng)
    if garbling:
        metadata["garbling"] = True
    return attrs.field(validator=validators, metadata=metadata, **field_options)


#: Any positive sensitivity whose noise scales, declared relative to it, stay far from
#: float64 under- and overflow.
SENSITIVITY_RANGE = Range(1e-100, 1e100, log=True, zero=True)
#: A noise scale with closed-form curves (σ, b): σ/Δ in [1e-8, 1e8]. Measured: the
#: Gaussian closed forms stay finite and correct for σ/Δ in [1e-100, 1e150] and
#: Laplace's for b/Δ up to ~1e9 (beyond, D_α rounds to −1e-36); the margin keeps
#: every closed form well inside (ε up to ~1e16 at the small end).
NOISE_SCALE = Range(1e-8, 1e8, per="sensitivity", log=True, zero=True)
#: A sampling rate in [1e-300, 1]: below, q is subnormal and the subsampled Gaussian's
#: Rényi curve was measured not to finish (q = 5e-324); 1e-300 answers in 3 s.
RATE = Range(1e-300, 1.0, zero=True)


#: optional primitives of a mechanism (``Mechanism.provides``), by name → method
MECHANISM_PRIMITIVES: dict[str, str] = {"sample": "sample"}


#: the longest ``repr`` of a mechanism (characters)
REPR_CHARS = 200


def _short_value(value: Any) -> str:
    """A parameter value for a repr: an enum by its value, a vector of more than six
    numbers by its ends and length."""
    if isinstance(value, enum.Enum):
        return repr(value.value)
    if isinstance(value, tuple) and len(value) > 6:
        head = ", ".join(repr(v) for v in value[:3])
        return f"({head}, …, {value[-1]!r}; {len(value)} values)"
    return repr(value)


@attrs.frozen
class Mechanism(abc.ABC):
    """Base class of mechanism plugins.

    Subclasses set ``name`` (how the registry and the command line refer to them)
    and implement ``pair()``. ``sensitivity`` and ``neighbouring`` are keyword-only
    and shared by all mechanisms; each subclass documents their meaning for it.
    Each numeric parameter declares where the mechanism's numerics hold with
    ``parameter(Range(...))`` (or a ``"range"`` entry in its attrs metadata); values
    outside are refused when the mechanism is built, and ``ranges()`` reports them
    (the property suite draws from them).
    """

    name: ClassVar[str] = ""
    # (``parameter(SENSITIVITY_RANGE, default=1.0, kw_only=True)`` spelled out: attrs'
    # type checker plugin reads ``attrs.field`` options, not those of a wrapper)
    sensitivity: float = attrs.field(default=1.0, kw_only=True,
                                     validator=[in_range(SENSITIVITY_RANGE)],
                                     metadata={"range": SENSITIVITY_RANGE})
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.ADD_REMOVE, kw_only=True,
                                             converter=as_neighbouring)

    if TYPE_CHECKING:
        # each mechanism declares its own parameters (``sigma``, ``b``, ``base``, …), read
        # by name where code dispatches on ``name``: to the type checker they are Any
        def __getattr__(self, name: str) -> Any: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # attrs writes a long repr (every field, defaults too) into each decorated
        # subclass unless the class has its own (attrs' auto_detect, which takes an
        # inherited function for none): give the class the short one below, as a
        # function of its own, unless the subclass wrote its own
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:
            def __repr__(self: Mechanism) -> str:
                return Mechanism.__repr__(self)
            __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
            cls.__repr__ = __repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        """``Class(param=value, …)``: the parameters that differ from their defaults,
        own parameters first; long vectors abbreviated; at most ``REPR_CHARS``."""
        fields = sorted((a for a in attrs.fields(type(self)) if a.init and a.repr),
                        key=lambda a: a.kw_only)
        parts = []
        for a in fields:
            value = getattr(self, a.name)
            if a.default is not attrs.NOTHING and not isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]  # attrs.Factory is a class at run time; its stub is a function
                try:
                    if bool(value == a.default):
                        continue
                except Exception:   # a value that does not compare: show it
                    pass
            parts.append(f"{a.name}={_short_value(value)}")
        text = f"{type(self).__name__}({', '.join(parts)})"
        return text if len(text) <= REPR_CHARS else text[:REPR_CHARS - 2] + "…)"

    @abc.abstractmethod
    def pair(self) -> Pair:
        """The dominating ordered pair (P, Q) (forward = remove, backward = add)."""

    def pair_in(self, registry: Registry | None = None) -> Pair:
        """The dominating pair, with every lookup its construction makes (a plugin's
        specialisation of a subsampled base, say) made in ``registry`` (None: the
        process-wide one). A mechanism whose pair needs no registry keeps this default,
        ``pair()``; one that needs it overrides this method and makes ``pair()`` call
        ``pair_in(None)``."""
        return self.pair()

    def curve(self, kind: type[CurveT], *, registry: Registry | None = None,
              **options: Any) -> CurveT:
        """This mechanism's curve of the given kind (``PLD``, ``RDP``, …), through
        ``registry`` (``pair_in`` and ``Pair.curve``)."""
        return self.pair_in(registry).curve(kind, registry=registry, **options)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[np.ndarray, np.ndarray]:
        """i.i.d. outputs x ~ M(D) and y ~ M(D′), each an array of ``shape``, in the
        mechanism's own units, for two neighbouring datasets whose output laws are the
        dominating pair (x: the larger dataset, the forward direction). Optional
        (``provides("sample")``); auditors use it. Default: not provided."""
        raise not_provided(self, "sample")

    def provides(self, primitive: str) -> bool:
        """Whether this mechanism supplies the optional ``primitive`` (a key of
        ``MECHANISM_PRIMITIVES``): by default, whether its class overrides it."""
        return provides_by_override(self, primitive, MECHANISM_PRIMITIVES, Mechanism,
                                    "optional mechanism primitives")

    @classmethod
    def parameters(cls) -> dict[str, attrs.Attribute[Any]]:
        """The parameters a user sets, by name (what the command line offers). A field
        whose metadata has ``"deprecated"`` (the name of its replacement) is still
        accepted by the constructor but not offered."""
        return {a.alias: a for a in attrs.fields(cls)
                if a.init and "deprecated" not in a.metadata}

    @classmethod
    def deprecated(cls) -> dict[str, str]:
        """Deprecated parameter names still accepted by the constructor (with a
        ``DeprecationWarning``), each with the name of the parameter replacing it."""
        return {a.alias: a.metadata["deprecated"] for a in attrs.fields(cls)
                if a.init and "deprecated" in a.metadata}

    @classmethod
    def ranges(cls) -> dict[str, Range]:
        """The declared ``Range`` of each numeric parameter, by name (fields built with
        ``parameter``): where the mechanism's numerics are measured finite and correct."""
        return {name: a.metadata["range"] for name, a in cls.parameters().items()
                if "range" in a.metadata}
