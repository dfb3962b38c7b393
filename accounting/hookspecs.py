"""Hook specifications of the ``accounting`` plugin system (pluggy project "accounting").

A plugin is any module or object with functions named like these hooks, marked with
``@hookimpl``, registered through the entry-point group ``accounting`` (built-in
plugins too) or at run time with ``Registry.register_plugin``. Each hook receives a
``register`` callback; the host, not the plugin, resolves collisions and names the
offending plugin in its error.
"""

from __future__ import annotations

import pluggy

__all__ = ["hookspec", "hookimpl", "PROJECT"]

PROJECT = "accounting"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def accounting_register_mechanisms(register):
    """Contribute mechanisms: ``register(cls)`` for each ``Mechanism`` subclass.

    The class's ``name`` (a lower-case identifier) is how users and the command line
    refer to it; it must be unique across all plugins.
    """


@hookspec
def accounting_register_converters(register):
    """Contribute converters: ``register(source, target, func, exactness, name)``.

    ``func(curve, **options)`` returns a curve of kind ``target``; ``exactness`` is an
    ``Exactness`` saying whether the edge is exact or an upper or lower bound.
    """


@hookspec
def accounting_register_auditors(register):
    """Contribute auditors: ``register(name, auditor)``; the name must be unique.

    An auditor tests an (ε, δ)-DP claim about a black-box mechanism from its outputs on
    two neighbouring datasets D, D′. It is an object with two methods:

    * ``audit_samples(x, y, *, epsilon, delta, seed=None, **settings)``: x ~ M(D) and
      y ~ M(D′) as arrays of shape (n, d);
    * ``audit_callable(fn, d0, d1, *, n, epsilon, delta, seed=None, **settings)``: draws
      n outputs ``fn(d0, rng)`` and n outputs ``fn(d1, rng)`` (numpy Generator ``rng``
      seeded from ``seed``) and audits them.

    Both return a report with ``rejected`` (bool), ``to_dict()`` (JSON-serialisable)
    and ``__str__`` (a table). Bad input raises ValueError/TypeError naming the
    parameter; an unsupported setting raises TypeError. ``accounting audit`` passes
    these settings only when given on its command line: ``alphas`` (tuple of floats),
    ``level``, ``bandwidth``, ``progress`` (bool, report progress on stderr),
    ``reference`` (a mechanism instance for a parametric bootstrap), ``shift``
    (f(D) − f(D′), list of floats) and ``n_boot``.
    """
