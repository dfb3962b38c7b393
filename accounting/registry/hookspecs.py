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

from collections.abc import Callable
from typing import Any, Protocol

import pluggy

__all__ = ["hookspec", "hookimpl", "PROJECT", "RegisterMechanism", "RegisterConverter",
           "RegisterAuditor", "RegisterSpecialisation", "RegisterCurveKind"]

PROJECT = "accounting"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ------------------------------------------------------------ the register callbacks
class RegisterMechanism(Protocol):
    """``register(cls)``: one ``Mechanism`` subclass."""

    def __call__(self, cls: type, /) -> None: ...


class RegisterConverter(Protocol):
    """``register(source, target, func, exactness, name)``: one converter edge."""

    def __call__(self, source: type, target: type, func: Callable[..., Any],
                 exactness: Any, name: str, /) -> None: ...


class RegisterAuditor(Protocol):
    """``register(name, auditor)``: one auditor (``accounting.registry.auditor.Auditor``)."""

    def __call__(self, name: str, auditor: Any, /) -> None: ...


class RegisterSpecialisation(Protocol):
    """``register(wrapper, base, specialised)``: for pairs of class ``wrapper`` built on a
    base pair of class ``base``, use the ``wrapper`` subclass ``specialised``."""

    def __call__(self, wrapper: type, base: type, specialised: type, /) -> None: ...


class RegisterCurveKind(Protocol):
    """``register(kind, builder)``: a curve class and how a pair yields it."""

    def __call__(self, kind: type, builder: Callable[..., Any], /) -> None: ...


# ------------------------------------------------------------------------ the hooks
@hookspec
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    """Contribute mechanisms: ``register(cls)`` for each ``Mechanism`` subclass.

    The class's ``name`` (a lower-case identifier: letters, digits, underscores) is how
    users and the command line refer to it; it must be unique across all plugins. The
    class must be concrete (``pair()`` implemented).
    """


@hookspec
def accounting_register_converters(register: RegisterConverter) -> None:
    """Contribute converters: ``register(source, target, func, exactness, name)``.

    ``source`` and ``target`` are curve classes; ``func(curve, **options)`` takes the
    curve as its one positional argument and returns a curve of kind ``target``;
    ``exactness`` is an ``Exactness`` saying whether the edge is exact or an upper or
    lower bound; ``name`` is unique (the core's own edges, ``accounting.curves.converters.
    CONVERTERS``, keep theirs). A plugin edge is used only where no built-in path
    exists or when named with ``curve.to(Kind, via=name)``; its output is checked
    (``accounting.curves.graph.check_curve``) and a failing edge is recorded and skipped.
    """


@hookspec
def accounting_register_auditors(register: RegisterAuditor) -> None:
    """Contribute auditors: ``register(name, auditor)``; the name (a lower-case
    identifier) must be unique.

    An auditor tests an (ε, δ)-DP claim about a black-box mechanism from its outputs on
    two neighbouring datasets D, D′. It satisfies the ``Auditor`` Protocol of
    ``accounting.registry.auditor`` (checked at registration; the contract suite
    ``accounting.testing.AuditorContract`` checks its behaviour):

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
def accounting_register_specialisations(register: RegisterSpecialisation) -> None:
    """Contribute specialisations: ``register(wrapper, base, specialised)``.

    A wrapper pair (say ``PoissonSubsampledPair``) built on a base pair of class
    ``base`` (exactly that class, not a subclass: a subclass may change the law) is
    built as ``specialised`` instead, a subclass of ``wrapper`` with the same
    constructor that adds closed forms (say the subsampled Gaussian's Rényi curve).
    Plugins that build wrappers resolve them with
    ``Registry.specialisation(wrapper, base_pair)``, never with a table of their own,
    so the result does not depend on which modules happen to be imported. One
    specialisation per (wrapper, base): the built-in one wins, and two third-party
    claims on one key are both refused.
    """


@hookspec
def accounting_register_curve_kinds(register: RegisterCurveKind) -> None:
    """Contribute curve representations: ``register(kind, builder)``.

    ``kind`` is a ``Curve`` subclass; ``builder(pair, **options)`` returns the curve
    of that kind of a pair (``Pair.curve(kind)`` calls it; ``options`` are the PLD grid
    options, checked before the call). The core has the five kinds (privacy profile,
    PLD, trade-off, Rényi, zCDP) and their routes in a table of its own
    (``accounting.pairs.derive.CURVE_KINDS``); a plugin adds a kind of its own. One
    builder per kind: the core's keeps it, two third-party claims on one kind are both
    refused.
    """


@hookspec
def accounting_register_jobs(register: Callable[..., None]) -> None:
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
