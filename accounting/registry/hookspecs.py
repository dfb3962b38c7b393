"""Hook specifications of the ``accounting`` plugin system (pluggy project "accounting").

A plugin is any module or object with functions named like these hooks, marked with
``@hookimpl``, registered through the entry-point group ``accounting`` (built-in
plugins too) or at run time with ``Registry.register_plugin``. Each hook receives a
``register`` callback; the host, not the plugin, resolves collisions and names the
offending plugin in its error.

Contract for implementations (see ``accounting.registry.registry`` for what the host does):
the hook takes the argument ``register`` (any other signature is refused), calls it
once per contribution and returns None; ``register`` records a refused
contribution as an error of the plugin and returns normally. Names are unique
across all plugins; the built-in plugins load first and keep theirs, and a name
claimed by two third-party plugins is refused for both.
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

    The class's ``name`` (a lower-case identifier: letters, digits, underscores) is how
    users and the command line refer to it; it must be unique across all plugins. The
    class must be concrete (``pair()`` implemented).
    """


@hookspec
def accounting_register_converters(register):
    """Contribute converters: ``register(source, target, func, exactness, name)``.

    ``source`` and ``target`` are curve classes; ``func(curve, **options)`` takes the
    curve as its one positional argument and returns a curve of kind ``target``;
    ``exactness`` is an ``Exactness`` saying whether the edge is exact or an upper or
    lower bound; ``name`` is unique. A plugin edge is used only where no built-in path
    exists or when named with ``curve.to(Kind, via=name)``; its output is checked
    (``accounting.conversion.graph.check_curve``) and a failing edge is recorded and skipped.
    """


@hookspec
def accounting_register_auditors(register):
    """Contribute auditors: ``register(name, auditor)``; the name (a lower-case
    identifier) must be unique.

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


@hookspec
def accounting_register_jobs(register):
    """Contribute named jobs: ``register(name, workload, description, *, default=False,
    solve=None, notes=None)``; the name (a lower-case identifier) must be unique.

    A job is a ready-made workload that ``accounting run --job NAME`` accounts for.
    The core defines none: the job marked ``default=True`` by a built-in plugin (one at
    most; a third party's mark is refused) is what ``accounting`` and ``accounting run``
    run without arguments. ``workload`` is TOML text or the equivalent dict in the
    workload-file format (``accounting.workload``); its mechanisms are checked when the
    job is used, since they may come from other plugins. ``description`` is a short
    title ("DP-SGD"). ``solve`` names the noise parameter that ``accounting calibrate``
    solves for when the job has one mechanism; ``notes`` maps an accountant name
    ("zcdp") to a note printed beside that accountant's answer.
    """
