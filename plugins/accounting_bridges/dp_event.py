"""Bridge to dp_accounting's ``DpEvent`` trees (TF Privacy, JAX Privacy).

``dp_event_entries(event)`` walks an event tree and returns the (mechanism, count)
pairs it stands for; ``from_dp_event(event)`` composes them in an ``Accountant``
(``ledger_from_dp_event`` in a ``Ledger``), so a tree written for dp_accounting is
accounted by our PLD with its certified bracket. ``to_dp_event`` goes the other way
for the mechanisms that have an equivalent event.

Neighbouring relation. A ``DpEvent`` does not carry one: dp_accounting's accountants
take it as an argument, and so do these functions (``neighbouring="add_remove"``, the
default of both tools, or ``"replace_one"``; dp_accounting's ``NeighboringRelation``
values are accepted, ``REPLACE_SPECIAL`` read as add/remove, where an absent record
is answered like the special element). A noise multiplier is the ratio of the noise
scale to the query's sensitivity *under the relation in use* (dp_accounting's RDP
accountant and Wang, Balle, Kasiviswanathan, arXiv:1808.00087, Thm 27, for sampling
without replacement). dp_accounting's PLD accountant reads a Gaussian under
``REPLACE_ONE`` differently (sensitivity doubled: a replaced record is one removed
and one added), so a replace-one Gaussian there is not the same question.

Events and what they become (mechanisms are looked up by name in the registry when
the event is read, so a mechanism plugin that is not installed is an error naming it):

======================================  ==============================================
``GaussianDpEvent(z)``                  ``gaussian(sigma=z)``
``LaplaceDpEvent(z)``                   ``laplace(b=z)``
``DiscreteLaplaceDpEvent(a, Δ)``        ``discrete_laplace(a, sensitivity=Δ)``
``RandomizedResponseDpEvent(r, k)``     ``kary_randomized_response(r, k)``; binary
                                        ``randomized_response(p=1 − r/2)`` under
                                        replace-one if that plugin is absent
``MixtureOfGaussiansDpEvent(σ, c, p)``  ``mixture_of_gaussians``
``SingleEpochTreeAggregationDpEvent``   ``tree_aggregation(sigma=z, step_counts)``
                                        (add/remove only, as dp_accounting)
``PoissonSampledDpEvent(q, e)``         ``subsampled_gaussian`` / ``subsampled_laplace``
                                        / ``poisson_subsampled(base=e, q)``
``SampledWithoutReplacementDpEvent``    ``sampled_without_replacement`` (either relation,
                                        see below)
``RepeatAndSelectDpEvent(e, m, η)``     ``repeat_and_select(base=e, mean=m, shape=η)``
``ZCDpEvent(ρ, ξ)``                     ``zcdp_guarantee(rho=ρ, xi=ξ)``: the Rényi bound
                                        ξ + ρα, labelled an upper bound (RDP and zCDP
                                        accountants; the PLD refuses it)
``TruncatedSubsampledGaussianDpEvent``  ``truncated_poisson_gaussian(q, sigma=z,
                                        dataset_size=n, max_batch=B)``: a certified
                                        bracket (add/remove; the upper side's proof in
                                        ``accounting_mechanisms.truncated_poisson``)
``SelfComposedDpEvent(e, n)``           e's entries, counts × n
``ComposedDpEvent([…])``                the entries of each
``NoOpDpEvent``                         nothing
``NonPrivateDpEvent``                   ``approx_dp(epsilon=0, delta=1)`` (ε = ∞)
======================================  ==============================================

Sampling without replacement (a batch of fixed size ``sample_size`` from
``source_dataset_size`` records) is read under either relation. Under replace-one the
inner event is read as it stands (dp_accounting's RDP accountant reads it so). Under
add/remove, which dp_accounting does not account for this event, the inner noise
multiplier is relative to the add/remove sensitivity Δ as everywhere else, while a
batch of fixed size sees one record *replaced* by another: the base becomes the same
mechanism under replace-one with sensitivity 2Δ (the triangle inequality for a norm of
the difference of two records' contributions, tight for a clipped sum). That reading
is made for ``gaussian``, ``laplace`` and ``discrete_laplace`` only; any other inner
event is refused under add/remove. ``to_dp_event`` inverts it (a replace-one base of
sensitivity Δ_r is written with noise multiplier σ/(Δ_r/2)), so both directions round
trip. The batch must leave room for the neighbour with one record removed:
``sample_size`` ≤ ``source_dataset_size`` − 1 under add/remove.

A sampled event's inner tree must be one mechanism, or Gaussians only (several
Gaussians on one batch are one Gaussian with σ = (Σ count_i/σ_i²)^(−1/2): their
losses add and stay Gaussian, as in dp_accounting's own reduction). Degenerate
parameters follow dp_accounting: zero noise is non-private, q = 0, one bucket or a
zero-size sample cost nothing. A repeated event's inner tree must be one mechanism
too (or Gaussians only), and not a zCDP guarantee. Anything else (with-replacement
sampling, ``UnsupportedDpEvent``, a sampled ``ZCDpEvent``) is an
``UnsupportedEventError`` naming the event and its place in the tree, such as
``event.events[1].event``.

Trees of any depth are read: the walk keeps its own stack, so a valid composition
thousands of events deep is answered. A chain of ``PoissonSampledDpEvent``s is one
Poisson sampling of probability Π q_i, rounded up (each record survives every
sampling independently: the same mechanism, not a bound); a product too small for
the mechanism is raised to the least q it takes (only adds privacy loss). Other
wrappers nest at most ``ledger.MAX_MECHANISM_DEPTH`` deep, as in a ledger document.
The events' fields are checked before use (dp_accounting's events check nothing): a
string or a boolean where a number belongs is a ``TypeError`` naming the field by
its path (``event.events[0].noise_multiplier``), a NaN a ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from accounting.accountant import Accountant
from accounting.ledger import MAX_MECHANISM_DEPTH, Ledger
from accounting.pairs.mechanism import Mechanism, Neighbouring, as_neighbouring
from accounting.registry.registry import Registry, default_registry
from accounting.validation import check_array, check_count, check_real

__all__ = ["UnsupportedEventError", "dp_event_entries", "from_dp_event", "ledger_from_dp_event",
           "to_dp_event", "as_relation", "entries_of"]

Entry = tuple[Mechanism, int]

#: mechanisms whose sensitivity is a norm of the difference of one record's
#: contributions, with their noise parameters: a replace-one change is at most twice
#: an add/remove one (triangle inequality), so a fixed-size batch under add/remove
#: neighbouring reads their add/remove Δ as a replace-one 2Δ
_NORM_SENSITIVITY = {"gaussian": "sigma", "laplace": "b", "discrete_laplace": "scale"}

_T = TypeVar("_T")


class UnsupportedEventError(ValueError):
    """A ``DpEvent`` (or a mechanism) with no counterpart on the other side; the message
    names it and where it sits in the tree."""


def _dp_event_module() -> ModuleType:
    try:
        from dp_accounting import dp_event
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("the dp_accounting bridge needs dp-accounting: "
                          "pip install 'accounting-dp[bench]'") from exc
    module: ModuleType = dp_event   # Any to mypy: dp_accounting ships no stubs
    return module


def as_relation(neighbouring: Any) -> Neighbouring:
    """Our ``Neighbouring`` from ours, a string, or dp_accounting's
    ``NeighboringRelation`` (``REPLACE_SPECIAL`` is add/remove: an absent record
    answers like the special element)."""
    name = getattr(neighbouring, "name", None)
    if name in ("ADD_OR_REMOVE_ONE", "REPLACE_SPECIAL"):
        return Neighbouring.ADD_REMOVE
    if name == "REPLACE_ONE":
        return Neighbouring.REPLACE_ONE
    return as_neighbouring(neighbouring)


# ---------------------------------------------------------------- event → mechanisms
class _Path:
    """Where an event sits in its tree (``event.events[1].event``): a parent and one
    step, joined into text only when a message needs it, so that walking a tree
    thousands of events deep does not build a path string at every level."""

    __slots__ = ("parent", "step")

    def __init__(self, parent: _Path | None, step: str) -> None:
        self.parent, self.step = parent, step

    def child(self, step: str) -> _Path:
        return _Path(self, step)

    def __str__(self) -> str:
        steps: list[str] = []
        node: _Path | None = self
        while node is not None:
            steps.append(node.step)
            node = node.parent
        return "".join(reversed(steps))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


#: a child of an event in the walk: the child event (a dp_accounting DpEvent, which has
#: no stubs) and its path
Child = tuple[Any, _Path]


def _by_name(mechanism: Mechanism) -> Any:
    """``mechanism``, to read its parameters by name: the bridge matches mechanisms by
    their registered names and imports none of their plugins, so to it their
    parameters (``sigma``, ``b``, ``q``, ``base``, …) are dynamic attributes."""
    return mechanism


def _times_up(a: float, b: float) -> float:
    """The least float ≥ a·b (a, b ≥ 0): a product rounded to nearest may fall below
    the exact one, and a sampling probability must never be taken smaller."""
    p = a * b
    if Fraction(p) < Fraction(a) * Fraction(b):
        p = math.nextafter(p, math.inf)
    return p


def _nesting(mechanism: Mechanism) -> int:
    """How many mechanisms are nested inside ``mechanism`` (a wrapper's ``base`` is
    one), counted without recursion."""
    depth = 0
    while isinstance(inner := getattr(mechanism, "base", None), Mechanism):
        mechanism, depth = inner, depth + 1
    return depth


class _Reader:
    """One walk of an event tree under one relation and registry.

    The walk is iterative (an explicit stack, children before their parent), so a
    valid tree of any depth is answered: a ``ComposedDpEvent`` or
    ``SelfComposedDpEvent`` nested thousands deep is a flat composition, and a chain
    of ``PoissonSampledDpEvent``s is one Poisson sample with the product of their
    probabilities (each record is kept by every sampling independently, so with
    probability Π q_i: the same mechanism, not a bound). Other wrappers become
    mechanisms with a ``base``, nested at most ``ledger.MAX_MECHANISM_DEPTH`` deep
    as in a ledger document, so that the composition can be saved and read back.
    """

    def __init__(self, relation: Neighbouring, registry: Registry):
        self.relation = relation
        self.registry = registry
        self.ev = _dp_event_module()

    # -- helpers
    def fail(self, event: Any, path: Any, why: str) -> UnsupportedEventError:
        return UnsupportedEventError(f"{type(event).__name__} at {path}: {why}")

    def build(self, event: Any, path: Any, name: str, **params: Any) -> Mechanism:
        """The registered mechanism ``name`` with ``params``; a missing plugin or a value
        the mechanism refuses becomes an error naming the event and its path."""
        cls = self.registry.mechanisms.get(name)
        if cls is None:
            raise self.fail(event, path, f"needs the mechanism {name!r}, which no installed "
                                         f"plugin registers")
        base = params.get("base")
        if isinstance(base, Mechanism) and _nesting(base) >= MAX_MECHANISM_DEPTH:
            raise self.fail(event, path, f"mechanisms nested more than {MAX_MECHANISM_DEPTH} "
                                         f"deep are not accepted (as in a ledger document)")
        try:
            built: Mechanism = cls(**params)
        except (ValueError, TypeError) as exc:
            raise self.fail(event, path, f"{name}: {exc}") from None
        return built

    # dp_accounting's events are plain records that check nothing: a string or a
    # boolean where a number belongs is refused here, naming the field, before it
    # could be converted (float('1.0')) or compared (True == 1). The checks' messages
    # begin with the field's name; its path is put before it only on a refusal
    # (written out at every level, paths would cost the square of the depth)
    @staticmethod
    def checked(path: Any, check: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        try:
            return check(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{path}.{exc}") from None

    def real(self, event: Any, path: Any, field: str, **limits: Any) -> float:
        limits.setdefault("allow_inf", True)
        return self.checked(path, check_real, field, getattr(event, field), **limits)

    def integer(self, event: Any, path: Any, field: str) -> int:
        return self.checked(path, check_count, field, getattr(event, field), minimum=0)

    def reals(self, event: Any, path: Any, field: str) -> tuple[float, ...]:
        value = getattr(event, field)
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise TypeError(f"{path}.{field} must be a sequence of numbers, got "
                            f"{type(value).__name__} ({value!r:.40})")
        values = self.checked(path, check_array, field, list(value))
        return tuple(float(x) for x in np.ravel(values))

    def non_private(self, event: Any, path: Any) -> list[Entry]:
        # the (0, 1)-DP guarantee: all mass at loss +inf, ε = ∞ for every δ < 1
        return [(self.build(event, path, "approx_dp", epsilon=0.0, delta=1.0), 1)]

    def check_relation(self, event: Any, path: Any, *allowed: Neighbouring) -> None:
        if self.relation not in allowed:
            names = " or ".join(a.value for a in allowed)
            raise self.fail(event, path, f"is accounted under {names} neighbouring only, "
                                         f"not {self.relation.value} (pass neighbouring=…)")

    # -- the walk
    def entries(self, event: Any, path: Any) -> list[Entry]:
        """The entries of the tree at ``event``: children first, on an explicit stack
        of frames [event, path, children, their entries, what the event needs]."""
        if isinstance(path, str):
            path = _Path(None, path)
        # frames are mutable lists of mixed kinds (a DpEvent has no stubs)
        stack: list[list[Any]] = [[event, path, None, [], None]]
        while True:
            frame = stack[-1]
            node, where, children, done, _ = frame
            if children is None:
                if not isinstance(node, self.ev.DpEvent):
                    raise TypeError(f"{where} must be a dp_accounting DpEvent, got "
                                    f"{type(node).__name__}")
                expand = getattr(self, "_children_" + type(node).__name__, None)
                children, frame[4] = expand(node, where) if expand else ([], None)
                frame[2] = children
            if len(done) < len(children):
                child, child_path = children[len(done)]
                stack.append([child, child_path, None, [], None])
                continue
            stack.pop()
            out = self.combine(node, where, children, done, frame[4])
            if not stack:
                return out
            stack[-1][3].append(out)

    def combine(self, event: Any, path: _Path, children: list[Child],
                done: list[list[Entry]], info: Any) -> list[Entry]:
        """The entries of ``event`` from those of its children (``done``)."""
        handler: Callable[..., list[Entry]] | None = getattr(
            self, "_" + type(event).__name__, None)
        if handler is None:
            raise self.fail(event, path, "no mechanism here expresses this event")
        if getattr(self, "_children_" + type(event).__name__, None) is None:
            return handler(event, path)
        return handler(event, path, children, done, info)

    def _NoOpDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        return []

    def _NonPrivateDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        return self.non_private(event, path)

    def _children_ComposedDpEvent(self, event: Any, path: _Path) -> tuple[list[Child], Any]:
        events = event.events
        if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
            raise TypeError(f"{path}.events must be a list of DpEvents, got "
                            f"{type(events).__name__}")
        return [(sub, path.child(f".events[{i}]")) for i, sub in enumerate(events)], None

    def _ComposedDpEvent(self, event: Any, path: _Path, children: list[Child],
                         done: list[list[Entry]], info: None) -> list[Entry]:
        if not done:
            return []
        # each child's list is this event's alone now: extend the first in place, so
        # that a chain Composed([Composed([…]), e]) costs no copy per level
        out = done[0]
        for entries in done[1:]:
            out.extend(entries)
        return out

    def _children_SelfComposedDpEvent(self, event: Any, path: _Path) -> tuple[list[Child], Any]:
        count = event.count
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"{path}.count must be an integer, got {type(count).__name__} "
                            f"({count!r:.40})")
        if count < 0:
            raise self.fail(event, path, f"count must be an integer >= 0, got {count!r}")
        return [(event.event, path.child(".event"))], count

    def _SelfComposedDpEvent(self, event: Any, path: _Path, children: list[Child],
                             done: list[list[Entry]], count: int) -> list[Entry]:
        if count == 1:
            return done[0]
        return [(m, c * count) for m, c in done[0] if count > 0]

    def _GaussianDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        z = self.real(event, path, "noise_multiplier")
        if z == 0:
            return self.non_private(event, path)
        return [(self.build(event, path, "gaussian", sigma=z, neighbouring=self.relation), 1)]

    def _LaplaceDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        z = self.real(event, path, "noise_multiplier")
        if z == 0:
            return self.non_private(event, path)
        return [(self.build(event, path, "laplace", b=z, neighbouring=self.relation), 1)]

    def _DiscreteLaplaceDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        a = self.real(event, path, "noise_parameter")
        sensitivity = self.integer(event, path, "sensitivity")
        if a == 0:
            return self.non_private(event, path)
        return [(self.build(event, path, "discrete_laplace", a=a, sensitivity=sensitivity,
                            neighbouring=self.relation), 1)]

    def _RandomizedResponseDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        r = self.real(event, path, "noise_parameter")
        k = self.integer(event, path, "num_buckets")
        if k == 1:
            return []
        if r == 0:
            return self.non_private(event, path)
        if "kary_randomized_response" in self.registry.mechanisms:
            return [(self.build(event, path, "kary_randomized_response", r=r, k=k,
                                neighbouring=self.relation), 1)]
        if k == 2 and self.relation is Neighbouring.REPLACE_ONE:
            # binary: truthful with probability 1 − r + r/2
            return [(self.build(event, path, "randomized_response", p=1.0 - r / 2.0), 1)]
        raise self.fail(event, path, "needs the mechanism 'kary_randomized_response' (the "
                                     "binary 'randomized_response' covers k = 2 under "
                                     "replace_one only)")

    def _MixtureOfGaussiansDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        sigma = self.real(event, path, "standard_deviation")
        sens = self.reals(event, path, "sensitivities")
        probs = self.reals(event, path, "sampling_probs")
        if all(c == 0 for c in sens):
            return []
        if sigma == 0:
            return self.non_private(event, path)
        # dp_accounting defines this event under add/remove (its REPLACE_SPECIAL) only
        self.check_relation(event, path, Neighbouring.ADD_REMOVE)
        return [(self.build(event, path, "mixture_of_gaussians", sigma=sigma,
                            sensitivities=sens, sampling_probs=probs), 1)]

    def _SingleEpochTreeAggregationDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        z = self.real(event, path, "noise_multiplier")
        counts = event.step_counts
        if isinstance(counts, (list, tuple)):
            counts = [self.checked(path, check_count, f"step_counts[{i}]", c, minimum=0)
                      for i, c in enumerate(counts)]
        else:
            counts = self.integer(event, path, "step_counts")
        if z == 0:
            return self.non_private(event, path)
        # dp_accounting's RDP accountant takes this event under REPLACE_SPECIAL only
        self.check_relation(event, path, Neighbouring.ADD_REMOVE)
        return [(self.build(event, path, "tree_aggregation", sigma=z, step_counts=counts), 1)]

    def _ZCDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        # (ξ, ρ)-zCDP: D_α ≤ ξ + ρα for every α > 1, a guarantee under the relation in use
        rho = self.real(event, path, "rho", lo=0.0, allow_inf=False)
        xi = self.real(event, path, "xi", lo=0.0, allow_inf=False)
        if rho == 0 and xi == 0:
            return []
        return [(self.build(event, path, "zcdp_guarantee", rho=rho, xi=xi,
                            neighbouring=self.relation), 1)]

    def _TruncatedSubsampledGaussianDpEvent(self, event: Any, path: _Path) -> list[Entry]:
        n = self.integer(event, path, "dataset_size")
        q = self.real(event, path, "sampling_probability", lo=0.0, hi=1.0, allow_inf=False)
        b = self.integer(event, path, "truncated_batch_size")
        z = self.real(event, path, "noise_multiplier", lo=0.0)
        if q == 0 or b == 0 or n == 0:
            return []            # nobody is sampled (dp_accounting: no privacy loss)
        if z == 0:
            return self.non_private(event, path)
        # dp_accounting's analysis conditions on Binomial(n − 1, q) other records:
        # add/remove, n the larger neighbour's size
        self.check_relation(event, path, Neighbouring.ADD_REMOVE)
        if q == 1 and b >= n:
            return [(self.build(event, path, "gaussian", sigma=z), 1)]
        return [(self.build(event, path, "truncated_poisson_gaussian", q=q, sigma=z,
                            dataset_size=n, max_batch=b), 1)]

    def single(self, inner: list[Entry], event: Any, path: Any,
               role: str = "a sampled event") -> Mechanism | None:
        """The one mechanism the entries ``inner`` of an inner (sampled or repeated)
        tree ``event`` stand for: Gaussians merged into one, else a single mechanism
        used once; None when the tree costs nothing."""
        if not inner:
            return None
        if any(m.name == "zcdp_guarantee" for m, _ in inner):
            raise self.fail(event, path, f"{role} holds a zCDP guarantee, which has no "
                                         "sampling or repetition analysis here (neither "
                                         "in dp_accounting)")
        if len(inner) == 1 and inner[0][1] == 1:
            return inner[0][0]
        if all(m.name == "gaussian" for m, _ in inner):
            # Σ count_i·(Δ_i/σ_i)² is the squared μ of the one Gaussian they make
            mu2 = math.fsum(c * (m.sensitivity / _by_name(m).sigma) ** 2 for m, c in inner)
            return self.build(event, path, "gaussian", sigma=1.0 / math.sqrt(mu2),
                              neighbouring=self.relation)
        raise self.fail(event, path, f"{role} must contain one mechanism (or "
                                     "Gaussians only); this composition of different "
                                     "mechanisms has no pair here")

    def _children_PoissonSampledDpEvent(self, event: Any, path: _Path) -> tuple[list[Child], Any]:
        # a chain of Poisson samplings is one, with the product of the probabilities
        q, node, where, chained = 1.0, event, path, -1
        while isinstance(node, self.ev.PoissonSampledDpEvent):
            qi = self.real(node, where, "sampling_probability", lo=0.0, hi=1.0,
                           allow_inf=False)
            q = _times_up(q, qi) if qi > 0 else 0.0
            if q == 0:
                return [], (0.0, False)     # q = 0 costs nothing, whatever the inner tree
            node, where, chained = node.event, where.child(".event"), chained + 1
        return [(node, where)], (q, chained > 0)

    def smallest(self, name: str, field: str, value: float) -> float:
        """``value`` raised to the least ``field`` the mechanism ``name`` takes, if it is
        below it: for a product of probabilities too small for it (a larger sampling
        probability only adds privacy loss, so this is on the safe side)."""
        cls = self.registry.mechanisms.get(name)
        rng = cls.ranges().get(field) if cls is not None else None
        if rng is None or rng.per is not None or value >= rng.lo:
            return value
        return math.nextafter(rng.lo, math.inf) if rng.lo_open else rng.lo

    def _PoissonSampledDpEvent(self, event: Any, path: _Path, children: list[Child],
                               done: list[list[Entry]], info: tuple[float, bool]) -> list[Entry]:
        q, chained = info
        if q == 0:
            return []
        (inner_event, inner_path), = children
        base = self.single(done[0], inner_event, inner_path)
        if base is None:
            return []
        if self.is_non_private(base):
            return [(base, 1)]
        if q == 1:
            return [(base, 1)]
        name = "poisson_subsampled"
        params: dict[str, Any] = {"base": base, "neighbouring": self.relation}
        if self.relation is Neighbouring.ADD_REMOVE and base.sensitivity == 1:
            if base.name == "gaussian":
                name, params = "subsampled_gaussian", {"sigma": float(_by_name(base).sigma)}
            elif base.name == "laplace":
                name, params = "subsampled_laplace", {"b": float(_by_name(base).b)}
        if chained:
            q = self.smallest(name, "q", q)
        return [(self.build(event, path, name, q=q, **params), 1)]

    def _children_SampledWithoutReplacementDpEvent(self, event: Any, path: _Path) -> tuple[list[Child], Any]:
        n = self.integer(event, path, "source_dataset_size")
        m = self.integer(event, path, "sample_size")
        if m == 0:
            return [], (n, m)
        return [(event.event, path.child(".event"))], (n, m)

    def _SampledWithoutReplacementDpEvent(self, event: Any, path: _Path, children: list[Child],
                                          done: list[list[Entry]], sizes: tuple[int, int]) -> list[Entry]:
        n, m = sizes
        if m == 0:
            return []
        (inner_event, inner_path), = children
        base = self.single(done[0], inner_event, inner_path)
        if base is None:
            return []
        if self.is_non_private(base):
            return [(base, 1)]
        if self.relation is Neighbouring.ADD_REMOVE:
            base = self.replace_one_base(base, inner_event, inner_path)
        elif m == n:
            return [(base, 1)]
        return [(self.build(event, path, "sampled_without_replacement", base=base,
                            batch_size=m, dataset_size=n, neighbouring=self.relation), 1)]

    def replace_one_base(self, base: Mechanism, event: Any, path: Any) -> Mechanism:
        """``base``, read under add/remove with sensitivity Δ, as the same mechanism under
        replace-one with sensitivity 2Δ (``_NORM_SENSITIVITY``): what the fixed-size batch
        of a sampled event sees under add/remove neighbouring."""
        noise = _NORM_SENSITIVITY.get(base.name)
        if noise is None:
            raise self.fail(event, path, f"{base.name} inside a fixed-size sample under "
                                         f"add_remove: a batch of fixed size sees a record "
                                         f"replaced, and only {', '.join(_NORM_SENSITIVITY)} "
                                         f"have a replace-one sensitivity read from the "
                                         f"add/remove one (read the event under replace_one)")
        return self.build(event, path, base.name, sensitivity=2 * base.sensitivity,
                          neighbouring=Neighbouring.REPLACE_ONE,
                          **{noise: getattr(_by_name(base), noise)})

    def _children_RepeatAndSelectDpEvent(self, event: Any, path: _Path) -> tuple[list[Child], Any]:
        mean = self.real(event, path, "mean")
        shape = self.real(event, path, "shape")
        return [(event.event, path.child(".event"))], (mean, shape)

    def _RepeatAndSelectDpEvent(self, event: Any, path: _Path, children: list[Child],
                                done: list[list[Entry]], params: tuple[float, float]) -> list[Entry]:
        mean, shape = params
        (inner_event, inner_path), = children
        base = self.single(done[0], inner_event, inner_path, "a repeated event")
        if base is None:
            return []
        if self.is_non_private(base):
            return [(base, 1)]
        return [(self.build(event, path, "repeat_and_select", base=base, mean=mean,
                            shape=shape, neighbouring=self.relation), 1)]

    @staticmethod
    def is_non_private(mechanism: Mechanism) -> bool:
        return mechanism.name == "approx_dp" and getattr(mechanism, "delta", 0) == 1


def dp_event_entries(event: Any, neighbouring: Any = "add_remove",
                     registry: Registry | None = None) -> list[Entry]:
    """The (mechanism, count) pairs that ``event`` stands for, in the order they come
    in the tree (the same mechanism may appear more than once; an Accountant or a
    Ledger merges them). See the module docstring for each event kind."""
    reader = _Reader(as_relation(neighbouring), registry or default_registry())
    return reader.entries(event, "event")


def from_dp_event(event: Any, neighbouring: Any = "add_remove",
                  registry: Registry | None = None, **accountant_options: Any) -> Accountant:
    """An ``Accountant`` holding the composition ``event`` stands for.

    ``accountant_options`` (``step``) go to ``Accountant``; its ``epsilon(delta)`` is
    the certified upper bound from the PLD, ``epsilon_interval`` the bracket."""
    accountant = Accountant(**accountant_options)
    for mechanism, count in dp_event_entries(event, neighbouring, registry):
        accountant.compose(mechanism, count=count)
    return accountant


def ledger_from_dp_event(event: Any, neighbouring: Any = "add_remove",
                         registry: Registry | None = None) -> Ledger:
    """A ``Ledger`` (``accounting.ledger``) of the composition ``event`` stands for."""
    return Ledger.from_mechanisms(dp_event_entries(event, neighbouring, registry))


# ---------------------------------------------------------------- mechanisms → event
def entries_of(obj: Any) -> list[Entry]:
    """The (mechanism, count) entries of a Mechanism, an Accountant or a Ledger."""
    if isinstance(obj, Mechanism):
        return [(obj, 1)]
    if isinstance(obj, Accountant):
        return list(obj.ledger.mechanisms())   # its composition is one Ledger
    mechanisms = getattr(obj, "mechanisms", None)
    if callable(mechanisms):  # a Ledger
        return list(mechanisms())
    raise TypeError(f"to_dp_event needs a Mechanism, an Accountant or a Ledger, got "
                    f"{type(obj).__name__}")


def _unsupported(mechanism: Any, path: str, why: str) -> UnsupportedEventError:
    label = getattr(mechanism, "name", "") or type(mechanism).__name__
    return UnsupportedEventError(f"{label} at {path}: {why}")


def _event_of(m: Any, relation: Neighbouring, path: str, ev: Any) -> Any:
    """The DpEvent equivalent to mechanism ``m`` under ``relation``."""
    if not isinstance(m, Mechanism):
        raise _unsupported(m, path, "a bare Pair has no DpEvent equivalent")
    if m.neighbouring is not relation:
        raise _unsupported(m, path, f"declares {m.neighbouring.value} neighbouring, but the "
                                    f"events are asked for under {relation.value}")
    name = m.name
    params = _by_name(m)
    if name == "gaussian":
        return ev.GaussianDpEvent(noise_multiplier=float(params.sigma) / params.sensitivity)
    if name == "laplace":
        return ev.LaplaceDpEvent(noise_multiplier=float(params.b) / params.sensitivity)
    if name == "discrete_laplace":
        return ev.DiscreteLaplaceDpEvent(noise_parameter=float(params.a), sensitivity=int(params.sensitivity))
    if name == "randomized_response":
        # truthful with probability p: the same pair as 1 − p (outputs relabelled),
        # which is dp_accounting's k = 2 with noise r = 2(1 − max(p, 1 − p))
        return ev.RandomizedResponseDpEvent(noise_parameter=2.0 * (1.0 - max(params.p, 1.0 - params.p)),
                                            num_buckets=2)
    if name == "kary_randomized_response":
        return ev.RandomizedResponseDpEvent(noise_parameter=float(params.r), num_buckets=int(params.k))
    if name == "subsampled_gaussian":
        return ev.PoissonSampledDpEvent(
            sampling_probability=float(params.q),
            event=ev.GaussianDpEvent(noise_multiplier=float(params.sigma) / params.sensitivity))
    if name == "subsampled_laplace":
        return ev.PoissonSampledDpEvent(
            sampling_probability=float(params.q),
            event=ev.LaplaceDpEvent(noise_multiplier=float(params.b) / params.sensitivity))
    if name == "poisson_subsampled":
        return ev.PoissonSampledDpEvent(sampling_probability=float(params.q),
                                        event=_event_of(params.base, relation, f"{path}.base", ev))
    if name == "sampled_without_replacement" and relation is Neighbouring.ADD_REMOVE:
        return ev.SampledWithoutReplacementDpEvent(
            source_dataset_size=int(params.dataset_size), sample_size=int(params.batch_size),
            event=_event_of(_add_remove_base(params.base, f"{path}.base"), relation,
                            f"{path}.base", ev))
    if name == "sampled_without_replacement":
        return ev.SampledWithoutReplacementDpEvent(
            source_dataset_size=int(params.dataset_size), sample_size=int(params.batch_size),
            event=_event_of(params.base, relation, f"{path}.base", ev))
    if name == "mixture_of_gaussians":
        return ev.MixtureOfGaussiansDpEvent(standard_deviation=float(params.sigma),
                                            sensitivities=list(params.sensitivities),
                                            sampling_probs=list(params.sampling_probs))
    if name == "tree_aggregation" and not params.completed:
        counts = [int(t) for t in params.step_counts]
        return ev.SingleEpochTreeAggregationDpEvent(
            noise_multiplier=float(params.sigma) / params.sensitivity,
            step_counts=counts[0] if len(counts) == 1 else counts)
    if name == "repeat_and_select":
        return ev.RepeatAndSelectDpEvent(event=_event_of(params.base, relation, f"{path}.base", ev),
                                         mean=float(params.mean), shape=float(params.shape))
    if name == "zcdp_guarantee":
        return ev.ZCDpEvent(rho=float(params.rho), xi=float(params.xi))
    if name == "truncated_poisson_gaussian":
        return ev.TruncatedSubsampledGaussianDpEvent(
            dataset_size=int(params.dataset_size), sampling_probability=float(params.q),
            truncated_batch_size=int(params.max_batch),
            noise_multiplier=float(params.sigma) / params.sensitivity)
    if name == "approx_dp" and params.delta == 1:
        return ev.NonPrivateDpEvent()
    if name == "approx_dp" and params.delta == 0 and params.epsilon == 0:
        return ev.NoOpDpEvent()
    raise _unsupported(m, path, "has no dp_accounting DpEvent equivalent")


def _add_remove_base(base: Any, path: str) -> Mechanism:
    """The add/remove reading of the replace-one base of a fixed-size sample: the same
    mechanism with half its sensitivity (the inverse of ``_Reader.replace_one_base``)."""
    noise = _NORM_SENSITIVITY.get(getattr(base, "name", ""))
    if noise is None or not isinstance(base, Mechanism):
        raise _unsupported(base, path, "inside a fixed-size sample under add_remove, only "
                                       f"{', '.join(_NORM_SENSITIVITY)} have an event (their "
                                       "add/remove sensitivity is half the replace-one one)")
    half = base.sensitivity / 2
    if base.name == "discrete_laplace" and not float(half).is_integer():
        raise _unsupported(base, path, f"a replace-one sensitivity of {base.sensitivity:g} "
                                       "halves to no integer DiscreteLaplaceDpEvent sensitivity")
    out: Mechanism = type(base)(sensitivity=half, neighbouring=Neighbouring.ADD_REMOVE,
                                **{noise: getattr(_by_name(base), noise)})
    return out


def to_dp_event(obj: Any, neighbouring: Any = "add_remove") -> Any:
    """The ``DpEvent`` equivalent to a Mechanism, an Accountant or a Ledger, to be
    accounted by dp_accounting under ``neighbouring`` (every mechanism must declare
    that relation). A composition becomes a ``ComposedDpEvent`` of
    ``SelfComposedDpEvent``s (count 1: the event itself); a single mechanism its event.
    A mechanism without an equivalent is an ``UnsupportedEventError`` naming it."""
    ev = _dp_event_module()
    relation = as_relation(neighbouring)
    entries = entries_of(obj)
    if isinstance(obj, Mechanism):
        return _event_of(obj, relation, "mechanism", ev)
    events = []
    for i, (m, count) in enumerate(entries):
        event = _event_of(m, relation, f"entries[{i}]", ev)
        events.append(event if count == 1 else ev.SelfComposedDpEvent(event=event, count=count))
    return ev.ComposedDpEvent(events=events)
