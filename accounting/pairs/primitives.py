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
from typing import Any, Optional

import numpy as np

from accounting.registry.registry import PluginError, default_registry, live_registries

__all__ = ["PrimitiveError", "check_primitive_output", "culprit"]


class PrimitiveError(PluginError):
    """A mechanism's primitive returned a value outside its range (NaN, δ > 1, …)."""

    def __init__(self, plugin: str, mechanism: str, message: str):
        super().__init__(plugin, f"mechanism {mechanism!r}: {message}")
        self.mechanism = mechanism


def culprit(owner: Any, registry: Any = None) -> tuple[str, str]:
    """(mechanism name, plugin) for a mechanism (class or instance, or one of its bound
    methods such as ``log_density``), a pair, or a mechanism's name.

    The plugin comes from ``registry`` (default: the process-wide registry, then any
    other registry built in this process): the one that registered the mechanism
    class, or the mechanism named like the pair's label, or a mechanism defined in
    the module of the pair's class; failing all three, the module itself
    (``module …``).
    """
    from accounting.pairs.mechanism import Mechanism
    from accounting.pairs.pair import Pair
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
                           at: Any = None, lo: Optional[float] = None,
                           hi: Optional[float] = None, registry: Any = None,
                           variable: Optional[str] = None) -> np.ndarray:
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
