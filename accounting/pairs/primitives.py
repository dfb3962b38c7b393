"""One check on what a mechanism's primitives return, naming who is at fault.

A pair's ``_profile``, ``_profile_lower``, ``_cgf`` and ``_beta`` and an additive
noise's ``log_density`` come from plugin code. A NaN there does not raise by itself:
it turns comparisons false, so a bisection can stop at ε = 0 and a sum becomes NaN,
and the library would print an optimistic or meaningless number. Every derivation
that evaluates a primitive passes the values through ``check_primitive_output``,
which raises a ``PrimitiveError`` (a ``PluginError``) naming the mechanism and the
plugin that registered it (from ``Registry.mechanism_sources``), or at least the
module that defines it.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import numpy as np

from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import Pair
from accounting.registry.registry import PluginError, default_registry, live_registries
from accounting.vocabulary import Direction

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["PrimitiveError", "check_primitive_output", "check_renyi_output", "culprit",
           "CGF_ROUNDING"]


class PrimitiveError(PluginError):
    """A mechanism's primitive returned a value outside its range (NaN, δ > 1, …)."""

    def __init__(self, plugin: str, mechanism: str, message: str):
        super().__init__(plugin, f"mechanism {mechanism!r}: {message}")
        self.mechanism = mechanism


def culprit(owner: Any, registry: Registry | None = None) -> tuple[str, str]:
    """(mechanism name, plugin) for a mechanism (class or instance, or one of its bound
    methods such as ``log_density``), a pair, or a mechanism's name.

    The plugin comes from ``registry`` (default: the process-wide registry, then any
    other registry built in this process): the one that registered the mechanism
    class, or the mechanism named like the pair's label, or a mechanism defined in
    the module of the pair's class; failing all three, the module itself
    (``module …``).
    """
    if inspect.ismethod(owner):                      # a bound method: its object
        owner = owner.__self__
    registries = [registry] if registry is not None else \
        [default_registry(), *[r for r in live_registries() if r is not default_registry()]]
    if isinstance(owner, str):                      # a mechanism's name (a pair's label)
        for reg in registries:
            if owner in reg.mechanism_sources:
                return owner, reg.mechanism_sources[owner]
        return owner, "unknown plugin"
    cls = owner if isinstance(owner, type) else type(owner)
    name = cls.name if issubclass(cls, Mechanism) else ""
    if not isinstance(name, str) or not name:
        try:
            name = str(owner.describe()) if isinstance(owner, Pair) else cls.__name__
        except Exception:  # a broken describe() must not hide the real problem
            name = cls.__name__
    module = cls.__module__
    for match in (lambda c: c is cls,                                   # the class itself
                  lambda c: c.name == name,                             # the pair's label
                  lambda c: c.__module__ == module):                    # its module
        for reg in registries:
            for key, registered in reg.mechanisms.items():
                if match(registered):
                    return (key if registered is cls else name,
                            reg.mechanism_sources.get(key, "?"))
    return name, f"module {module}"


def check_primitive_output(values: Any, what: str, owner: Any, *,
                           at: Any = None, lo: float | None = None,
                           hi: float | None = None, registry: Registry | None = None,
                           variable: str | None = None) -> np.ndarray:
    """``values`` as a float array, or a ``PrimitiveError`` if any is NaN or outside
    [``lo``, ``hi``] (each bound optional; ±∞ are allowed unless a bound excludes them).

    ``what`` names the primitive ("profile δ(ε)", "log_density", …), ``owner`` is the
    mechanism or pair whose primitive it is, ``at`` the inputs (the first bad one is
    quoted in the message, as ``at x = …`` when ``variable`` names them).
    """
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        mech, plugin = culprit(owner, registry)
        raise PrimitiveError(plugin, mech, f"{what} returned {type(values).__name__}, not an "
                                           f"array of floats ({exc})") from None
    bad = np.isnan(arr)
    if lo is not None:
        bad |= arr < lo
    if hi is not None:
        bad |= arr > hi
    if not bad.any():
        return arr
    mech, plugin = culprit(owner, registry)
    first = int(np.flatnonzero(bad.ravel())[0])
    where = ""
    if at is not None:
        try:
            inputs = np.broadcast_to(np.asarray(at, dtype=float), arr.shape).ravel()
            where = (f" at {variable} = {float(inputs[first])!r}" if variable
                     else f" at {float(inputs[first])!r}")
        except (TypeError, ValueError):   # inputs of another shape: say nothing of them
            pass
    bounds = ""
    if lo is not None or hi is not None:
        bounds = f" (must be in [{-np.inf if lo is None else lo}, {np.inf if hi is None else hi}])"
    value = float(arr.ravel()[first])
    shown = "NaN" if np.isnan(value) else repr(value)
    raise PrimitiveError(plugin, mech, f"{what} returned {shown}{where}{bounds}, at "
                                       f"{int(bad.sum())} of {arr.size} points")


#: how far below 0 a Rényi value may round before it is a fault: K(t) down to
#: −CGF_ROUNDING·max(1, t), D_α down to −CGF_ROUNDING. Measured over the built-in pairs
#: (hypothesis draws from their declared ranges, t from 1e-9 to 1e4): the worst is
#: −3.2e-14·max(1, t), the generalised Gaussian's quadrature at t → 0.
CGF_ROUNDING = 1e-12


def check_renyi_output(values: Any, what: str, owner: Any, t: Any, direction: Any = None,
                       *, cgf: bool = True, lower: bool = False,
                       registry: Registry | None = None) -> np.ndarray:
    """A pair's Rényi primitive checked at the orders α = 1 + ``t``: its CGF K(t)
    (``cgf``), or a divergence D_α itself (``cgf=False``: the declared D_1 and D_∞).

    Every Rényi divergence is ≥ 0, and so is K(t) = (α − 1)·D_α for t ≥ 0: with
    L = log dP/dQ, K(0) = 0 and K(−1) = log Q(p > 0) ≤ 0, and K is convex, so
    K(t) ≥ (1 + t)·K(0) − t·K(−1) ≥ 0 (the backward direction swaps P and Q; the
    positivity of D_α in van Erven and Harremoës, arXiv:1206.2459). NaN is refused
    (``check_primitive_output``).
    On the sound (upper) side a value below 0 by more than the rounding bound
    ``CGF_ROUNDING`` is a ``PrimitiveError`` naming the plugin, the mechanism, the
    order, the direction and the value — a negative K would make every ε computed
    from it 0 — and a value within it is set to 0. On the ``lower`` side any negative
    value is set to 0: max(K, 0) is still below the true K, only less vacuous.
    """
    arr = check_primitive_output(values, what, owner, at=t, variable="t", registry=registry)
    if not (arr < 0).any():
        return arr
    t = np.broadcast_to(np.asarray(t, dtype=float), arr.shape)
    tolerance = CGF_ROUNDING * (np.maximum(1.0, np.where(np.isfinite(t), t, 1.0)) if cgf
                                else np.ones(arr.shape))
    bad = arr < -tolerance
    if bad.any() and not lower:
        mech, plugin = culprit(owner, registry)
        first = int(np.flatnonzero(bad.ravel())[0])
        value, at = float(arr.ravel()[first]), float(t.ravel()[first])
        way = (direction.value if isinstance(direction, Direction) else
               "" if direction is None else str(direction))
        quantity = (f"K(t) = {value!r} at t = {at!r} (order α = {1.0 + at!r}"
                    f"{', ' + way if way else ''})" if cgf else
                    f"D_α = {value!r} at order α = {1.0 + at!r}{f' ({way})' if way else ''}")
        raise PrimitiveError(plugin, mech, f"{what} returned {quantity}, below 0: a Rényi "
                                           f"divergence is ≥ 0, and so is K(t) = (α − 1)·D_α "
                                           f"for t ≥ 0 (allowed rounding "
                                           f"{float(tolerance.ravel()[first]):.3g}), at "
                                           f"{int(bad.sum())} of {arr.size} points")
    result: np.ndarray = np.maximum(arr, 0.0)
    return result
