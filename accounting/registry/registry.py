"""Plugin loading and the registry: a leaf store of what plugins contribute.

``make_registry()`` builds a fresh registry from the entry points of the group
``accounting``, **built-ins first**. Plugins contribute mechanisms, converters,
auditors, jobs, specialisations and curve kinds (``hookspecs``); everything a plugin
contributes lives here, as plain records in one table keyed by kind (``KINDS``),
never in a table a module fills when it is imported, so what a name or a pair
resolves to does not depend on import order.

The registry is a leaf: it imports nothing of the package but ``vocabulary``,
``validation`` and its own modules, so every floor may read it. What a plugin
registers is checked by duck typing (a mechanism is a class with the methods of
``Mechanism``, a curve kind one with those of ``Curve``, ...). The core's own
converters and curve kinds are not registered here: they are plain tables
(``accounting.curves.converters.CONVERTERS``, ``accounting.pairs.derive.CURVE_KINDS``)
that the converter graph (``curves.graph.edges``) and ``curve_of_pair``
(``pairs.derive.builders``) merge with a registry's, and a plugin claiming one of
their names is refused there (``Registry.refuse``), as an error of the plugin. Their
owners' names, ``CORE_PLUGINS``, are taken: no plugin may use them. A built-in is an entry
point of the distribution that ships this ``accounting`` package (found with
``importlib.metadata.packages_distributions()``, not by a hard-coded name); every
other entry point is a third-party plugin. The rules:

* built-ins load first, whatever the entry-point names, so a third party can never
  take a name (mechanism, converter, auditor or plugin name) from a built-in: a third
  party that registers a taken name has that registration refused, loudly, naming
  the third-party plugin and the name;
* third-party plugins are collected together and then checked against each other:
  a name claimed by two of them is refused for both (never first-come-first-served
  by name order); the same holds for two third-party entry points of one name;
* a plugin that fails to import (any exception, ``SystemExit`` and
  ``KeyboardInterrupt`` included: raised by its code, they are its fault), whose
  hooks do not match the specifications, that raises in a hook (the same), returns
  a value from a hook instead of calling ``register``, or registers something
  invalid is recorded in ``registry.errors`` as a ``PluginError`` naming it (and a
  ``RuntimeWarning`` is issued); everything else still loads. Its valid
  registrations are kept.

While a plugin is imported and its hooks run, ``sys.stdout`` is redirected to
``sys.stderr``, so a plugin that prints cannot corrupt machine-readable output.

``default_registry()`` caches one registry for the process; tests and notebooks
build their own or call ``register_plugin`` to add one at run time (a run-time
plugin is a third party: it cannot take a registered name).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import sys
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import attrs
import pluggy

from accounting.registry import hookspecs
from accounting.validation import check_depth
from accounting.vocabulary import Exactness

__all__ = ["Registry", "PluginError", "Job", "Record", "Kind", "KINDS", "CORE_PLUGINS",
           "RESERVED", "reserve", "make_registry", "default_registry", "ENTRY_POINT_GROUP",
           "builtin_distributions", "did_you_mean", "specialisation_name", "curve_kind_name"]

ENTRY_POINT_GROUP = "accounting"

#: how mechanisms and auditors are named on the command line
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

#: the names the core's own tables are listed under (its converters: "core"; its curve
#: kinds: "core.pairs"): built in, and taken, so that no plugin can pose as the core
CORE_PLUGINS = ("core", "core.pairs")

#: kind → name → owner: the names the core's own tables hold (its converter edges, its
#: curve kinds), which no plugin may register. The registry imports nothing above it,
#: so the tables declare their names here when their modules load (``reserve``); a
#: converter or curve kind is then refused when it is registered, not only when the
#: tables are merged with the registry's where they are used.
RESERVED: dict[str, dict[str, str]] = {}


def reserve(kind: str, names: Iterable[str], owner: str) -> None:
    """Declare ``names`` of the registration ``kind`` (a key of ``KINDS``) as held by the
    core table of plugin ``owner`` (one of ``CORE_PLUGINS``)."""
    if owner not in CORE_PLUGINS:
        raise ValueError(f"owner must be one of {CORE_PLUGINS}, got {owner!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    RESERVED.setdefault(kind, {}).update(dict.fromkeys(names, owner))


#: the class a specialisation stands in for (its subclass is returned)
_W = TypeVar("_W")


def did_you_mean(name: str, known: Iterable[str], *, prefix: str = "") -> str:
    """`` (did you mean 'x'?)`` naming the registered names closest to ``name``
    (difflib's ratio ≥ 0.6), or "" when none is close. ``prefix`` (such as ``--``) is
    left out of the comparison, so that a prefix every name shares makes no two
    names alike, and kept in the names shown."""
    import difflib

    def bare(text: str) -> str:
        return text[len(prefix):] if prefix and text.startswith(prefix) else text
    names = {bare(str(k)): str(k) for k in sorted(known)}
    close = difflib.get_close_matches(bare(str(name)), list(names), n=3)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(names[c]) for c in close)}?)"


@attrs.frozen
class Job:
    """A named, ready-made workload contributed by a plugin
    (``hookspecs.accounting_register_jobs``): what ``accounting run --job NAME`` runs."""

    name: str
    #: the workload as the table of a workload file (``accounting.workload``)
    table: dict[str, Any] = attrs.field(eq=False, repr=False)
    description: str
    plugin: str
    default: bool = False
    #: the noise parameter ``accounting calibrate`` solves for, if the job names one
    solve: str | None = None
    #: accountant name → a note printed under that accountant's answer
    notes: tuple[tuple[str, str], ...] = attrs.field(default=(), repr=False)


class PluginError(RuntimeError):
    """A plugin could not be loaded or registered something invalid."""

    def __init__(self, plugin: str, message: str):
        super().__init__(f"plugin {plugin!r}: {message}")
        self.plugin = plugin


def _canonical(name: str) -> str:
    """A distribution name as the packaging specifications compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


@functools.lru_cache(maxsize=1)
def builtin_distributions() -> frozenset[str]:
    """Canonical names of the distribution(s) shipping this ``accounting`` package and
    declaring entry points in its group.

    Their entry points are the built-in plugins. Empty when the package runs from a
    source tree that is not installed (then every entry point is a third party).
    """
    import importlib.metadata  # lazy: ~0.1 s that `import accounting` need not pay
    package = __name__.partition(".")[0]
    names = []
    # Only a distribution that declares entry points in our group can be the source of
    # one, so only those are asked which packages they ship: scanning every installed
    # file list (importlib.metadata.packages_distributions) took 0.4 s of the first
    # registry's 1.7 s in a venv with the optional extras.
    for dist in importlib.metadata.distributions():
        try:
            if not any(ep.group == ENTRY_POINT_GROUP for ep in dist.entry_points):
                continue
            top = (dist.read_text("top_level.txt") or "").split()
            if package in top or any(f.parts[:1] == (package,) for f in dist.files or ()):
                names.append(dist.metadata["Name"])
        except Exception:  # some distribution's metadata is unreadable: skip just that one
            continue
    return frozenset(_canonical(n) for n in names if n)


def _distribution(ep: Any, cache: dict[int, tuple[Any, str | None]] | None = None
                  ) -> str | None:
    """The canonical name of the distribution declaring ``ep`` (None if unknown).
    Reading it parses METADATA: ``cache`` keeps one answer per distribution object."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None
    if cache is not None and id(dist) in cache:
        return cache[id(dist)][1]
    try:
        name = getattr(dist, "name", None)
    except Exception:  # unreadable METADATA: a third party of unknown name
        name = None
    result = _canonical(name) if isinstance(name, str) else None
    if cache is not None:
        cache[id(dist)] = (dist, result)          # the object is kept, so its id stays its own
    return result


@contextlib.contextmanager
def plugin_code() -> Iterator[None]:
    """Around plugin code: its prints go to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@attrs.frozen
class Record:
    """One registration: its ``kind`` (a key of ``KINDS``), the ``name`` it is
    registered under, the ``value`` the kind's check made of it (a mechanism class;
    a converter's (source, target, func, exactness); an auditor; a ``Job``; a
    specialisation's (wrapper, base, specialised); a curve kind's (kind, builder)),
    the ``plugin`` that registered it and whether that plugin is built in."""

    kind: str
    name: str
    value: Any = attrs.field(eq=False)
    plugin: str
    builtin: bool = False


@attrs.define
class Registry:
    """What the loaded plugins contributed. Mutable: plugins can be added at run time.

    ``table`` holds every registration, by kind then name; the attributes
    ``mechanisms``, ``converters``, ``auditors``, ``jobs``, ``specialisations``,
    ``curve_kinds`` (and the ``*_sources``, name → plugin) are read-only views of it."""

    manager: pluggy.PluginManager
    #: kind → registered name → ``Record``
    table: dict[str, dict[str, Record]] = attrs.Factory(lambda: {kind: {} for kind in KINDS})
    errors: list[PluginError] = attrs.Factory(list)
    #: names of the plugins that are built-in (the core's tables and this distribution's)
    builtin_plugins: set[str] = attrs.Factory(lambda: set(CORE_PLUGINS))
    #: third-party plugin name → its distribution (where known), for messages
    distributions: dict[str, str] = attrs.Factory(dict)

    def __repr__(self) -> str:
        def n(count: int, word: str) -> str:
            return f"{count} {word}{'' if count == 1 else 's'}"
        return (f"Registry({n(len(self.mechanisms), 'mechanism')}, "
                f"{n(len(self.converters), 'converter')}, {n(len(self.auditors), 'auditor')}, "
                f"{n(len(self.jobs), 'job')}, {n(len(self.errors), 'plugin error')})")

    # -------------------------------------------------------------- views
    def records(self, kind: str) -> list[Record]:
        """The registrations of ``kind``, in the order they were made."""
        return list(self.table[kind].values())

    def _values(self, kind: str) -> dict[str, Any]:
        return {name: r.value for name, r in self.table[kind].items()}

    def _sources(self, kind: str) -> dict[str, str]:
        return {name: r.plugin for name, r in self.table[kind].items()}

    #: the views: name → value (a mechanism class, an auditor, a ``Job``) and name → plugin
    mechanisms = property(lambda self: self._values("mechanism"))
    mechanism_sources = property(lambda self: self._sources("mechanism"))
    auditors = property(lambda self: self._values("auditor"))
    auditor_sources = property(lambda self: self._sources("auditor"))
    jobs = property(lambda self: self._values("job"))
    #: the converter edges plugins registered: ``Record``s whose value is (source,
    #: target, func, exactness); with the core's edges: ``accounting.curves.graph.edges``
    converters = property(lambda self: self.records("converter"))
    #: (wrapper pair class, base pair class) → specialised wrapper subclass; its name
    #: (``wrapper[base]``, module-qualified) → plugin
    specialisations = property(lambda self: {(w, b): s for w, b, s
                                             in self._values("specialisation").values()})
    specialisation_sources = property(lambda self: self._sources("specialisation"))
    #: curve class → builder(pair, **options), for the kinds plugins registered; with the
    #: core's kinds: ``accounting.pairs.derive.builders``
    curve_kinds = property(lambda self: dict(self._values("curve kind").values()))
    curve_kind_sources = property(lambda self: self._sources("curve kind"))

    # -------------------------------------------------------------- loading
    def register_plugin(self, plugin: object, name: str | None = None, *,
                        strict: bool = True) -> str:
        """Register a third-party plugin object (module, class or instance) and its hooks.

        With ``strict`` (the default for run-time registration) a failure raises
        ``PluginError`` (the first one; all are in ``errors``); otherwise it is only
        recorded. Names already registered are refused either way.
        """
        name = self._plugin_name(plugin, name)
        before = len(self.errors)
        items = self._register(plugin, name, builtin=False)
        self._commit(items)
        if strict and len(self.errors) > before:
            raise self.errors[before]
        return name

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Load the entry points of ``group``: built-ins first, then the third parties
        together (see the module docstring for the collision rules)."""
        own = builtin_distributions()
        eps = self._entry_points(group)
        names: dict[int, tuple[Any, str | None]] = {}
        dist = {id(e): _distribution(e, names) for e in eps}
        builtin = sorted((e for e in eps if dist[id(e)] in own), key=lambda e: str(e.name))
        third = sorted((e for e in eps if dist[id(e)] not in own),
                       key=lambda e: (str(e.name), dist[id(e)] or ""))
        for ep in builtin:
            obj = self._load(ep)
            if obj is not None:
                self._commit(self._register(obj, str(ep.name), builtin=True))
        # two third-party entry points of one name: neither is loaded
        by_name: dict[str, list[Any]] = {}
        for ep in third:
            by_name.setdefault(str(ep.name), []).append(ep)
        staged: list[Record] = []
        for name, group_eps in by_name.items():
            if len(group_eps) > 1:
                dists = ", ".join(dist[id(e)] or "?" for e in group_eps)
                self._fail(name, f"the plugin name {name!r} is used by more than one "
                                 f"third-party entry point ({dists}); none of them is loaded")
                continue
            ep = group_eps[0]
            declared = dist[id(ep)]
            if declared:
                self.distributions[name] = declared
            if self.manager.has_plugin(name):   # refused before any of its code runs
                self._fail(name, f"cannot be registered: the plugin name {name!r} is taken "
                                 f"by a built-in plugin; it is not loaded")
                continue
            obj = self._load(ep)
            if obj is not None:
                staged.extend(self._register(obj, name, builtin=False))
        self._commit(staged)

    def _entry_points(self, group: str) -> list[Any]:
        """The entry points of ``group``; a distribution whose metadata cannot be read
        is recorded as an error (naming it) instead of hiding every plugin."""
        import importlib.metadata
        try:
            return list(importlib.metadata.entry_points(group=group))
        except Exception:  # one unreadable dist-info: go through them one by one
            pass
        eps: list[Any] = []
        seen: set[str] = set()
        for dist in importlib.metadata.distributions():
            label = str(getattr(dist, "_path", None) or dist)
            try:
                name = _canonical(dist.metadata["Name"] or "")
                if name in seen:   # shadowed by an earlier entry of sys.path, as importlib
                    continue
                seen.add(name)
                eps.extend(dist.entry_points.select(group=group))
            except Exception as exc:
                self._fail(f"distribution {label}", f"its entry points cannot be read "
                                                    f"({_describe(exc)}); none is loaded")
        return eps

    def record_error(self, plugin: str, message: str) -> PluginError:
        """Record (and warn about) a failure of ``plugin``; used by the converter graph."""
        return self._fail(plugin, message)

    # -------------------------------------------------------------- internals
    @staticmethod
    def _plugin_name(plugin: object, name: str | None) -> str:
        if name is None:
            name = getattr(plugin, "__name__", None)
            if not isinstance(name, str) or not name:
                name = type(plugin).__name__
        if not isinstance(name, str) or not name:
            raise TypeError(f"a plugin name must be a non-empty string, got {name!r}")
        return name

    def _fail(self, plugin: str, message: str) -> PluginError:
        dist = self.distributions.get(plugin)
        err = PluginError(plugin, message + (f" [distribution {dist}]" if dist else ""))
        self.errors.append(err)
        warnings.warn(str(err), RuntimeWarning, stacklevel=3)
        return err

    def _load(self, ep: Any) -> Any:
        """Import an entry point; None (and a recorded error) if that fails in any way,
        ``SystemExit`` and ``KeyboardInterrupt`` included."""
        name = str(getattr(ep, "name", "?"))
        try:
            with plugin_code():
                return ep.load()
        except BaseException as exc:
            # SystemExit and KeyboardInterrupt too: one plugin must not end the process.
            # A KeyboardInterrupt raised while the plugin's module is imported is treated
            # as that plugin's fault (a plugin raising it makes every command exit 130
            # otherwise); a genuine Ctrl-C landing in these few milliseconds cannot be
            # told apart from it, and is recorded the same way.
            self._fail(name, f"failed to load ({_describe(exc)})")
            return None

    def _register(self, plugin: object, name: str, *, builtin: bool) -> list[Record]:
        """Register with pluggy and call the plugin's hooks; the registrations it asked
        for (validated one by one), not yet committed."""
        if name in CORE_PLUGINS or self.manager.has_plugin(name):
            owner = "a built-in plugin" if name in self.builtin_plugins else "another plugin"
            self._fail(name, f"cannot be registered: the plugin name {name!r} is taken by {owner}")
            return []
        try:
            with plugin_code():
                self.manager.register(plugin, name=name)
                alone = _manager_of(plugin, name)
        except KeyboardInterrupt:
            raise
        except pluggy.PluginValidationError as exc:
            self._fail(name, f"cannot be registered: its hooks do not match the hook "
                             f"specifications ({' '.join(str(exc).split())})")
            return []
        except BaseException as exc:  # pluggy: object already registered; hostile getattr
            self._fail(name, f"cannot be registered ({_describe(exc)})")
            return []
        if builtin:
            self.builtin_plugins.add(name)
        unknown = sorted(h.name for h in self.manager.get_hookcallers(plugin) or []
                         if h.spec is None)
        if unknown:
            self._fail(name, f"implements unknown hook(s) {', '.join(unknown)}; the hooks are "
                             f"{', '.join(k.hook for k in KINDS.values())}")
        items: list[Record] = []
        for kind in KINDS.values():
            hook = getattr(alone.hook, kind.hook)
            if not hook.get_hookimpls():
                continue
            register = self._callback(kind, name, builtin, items)
            try:
                with plugin_code():
                    results = hook(register=register)
            except BaseException as exc:  # KeyboardInterrupt too: as in ``_load``
                self._fail(name, f"raised in {kind.hook} ({_describe(exc)})")
                continue
            if results:
                self._fail(name, f"{kind.hook} returned {type(results[0]).__name__} instead of "
                                 f"calling register(...); the value is ignored")
        return items

    def _callback(self, kind: Kind, plugin: str, builtin: bool,
                  items: list[Record]) -> Callable[..., None]:
        """The ``register`` a hook receives: validates each registration (the kind's
        check), records a refusal as an error of this plugin (and returns normally, so a
        plugin cannot hide it by catching an exception), stages the rest."""
        def register(*args: Any, **kwargs: Any) -> None:
            try:
                name, value = kind.check(plugin, *args, **kwargs)
            except TypeError as exc:
                self._fail(plugin, f"{kind.name} registration refused: {kind.signature} "
                                   f"expected ({_describe(exc)})")
            except _Refused as exc:
                self._fail(plugin, str(exc))
            except Exception as exc:  # e.g. a class attribute that raises when read
                self._fail(plugin, f"{kind.name} registration refused ({_describe(exc)})")
            else:
                items.append(Record(kind.name, name, value, plugin, builtin))
        return register

    def _commit(self, items: Iterable[Record]) -> None:
        """Add staged registrations: a name already registered is refused; a name
        claimed twice within the batch is refused for every claimant."""
        items = list(items)
        claims: dict[tuple[str, str], list[Record]] = {}
        for item in items:
            claims.setdefault((item.kind, item.name), []).append(item)
        for (kind, name), group in claims.items():
            taken = self.table[kind].get(name)
            core = RESERVED.get(kind, {}).get(name)
            if taken is not None or core is not None:
                owner = taken.plugin if taken is not None else core
                builtin = " (built-in)" if owner in self.builtin_plugins else ""
                for item in group:
                    self._fail(item.plugin, f"{kind} name {name!r} is already registered by "
                                            f"plugin {owner!r}{builtin}; this registration "
                                            f"is refused")
                continue
            if len(group) > 1:
                plugins = sorted({item.plugin for item in group})
                who = (f"plugins {', '.join(map(repr, plugins))}" if len(plugins) > 1
                       else "this plugin more than once")
                for plugin in plugins:
                    self._fail(plugin, f"{kind} name {name!r} is claimed by {who}; "
                                       f"every claim is refused")
                continue
            item = group[0]
            if kind == "job":
                item = self._admit_job(item)
            self.table[kind][name] = item

    def _admit_job(self, item: Record) -> Record:
        """A job as registered: only a built-in plugin marks the default job, once."""
        job = item.value
        if job.default and (item.plugin not in self.builtin_plugins
                            or self.default_job() is not None):
            self._fail(item.plugin, f"job {item.name!r} cannot be the default job: only a "
                                    f"built-in plugin sets it, once; it is registered "
                                    f"as an ordinary job")
            return attrs.evolve(item, value=attrs.evolve(job, default=False))
        return item

    def refuse(self, record: Record, message: str) -> PluginError:
        """Withdraw ``record``, a registration that the table it joins where it is used
        refuses (a converter or curve kind claiming a name of the core's own tables),
        and record ``message`` as an error of its plugin."""
        if self.table[record.kind].get(record.name) is record:
            del self.table[record.kind][record.name]
        return self._fail(record.plugin, message)

    # -------------------------------------------------------------- queries
    def mechanism(self, name: str) -> type[Any]:   # (a Mechanism class: the leaf store cannot name it)
        """The mechanism class registered under ``name``."""
        if not isinstance(name, str):
            raise TypeError(f"mechanism name must be a string, got {type(name).__name__}")
        try:
            cls: type = self.table["mechanism"][name].value
        except KeyError:
            known = ", ".join(sorted(self.table["mechanism"])) or "none"
            raise ValueError(f"unknown mechanism {name!r}"
                             f"{did_you_mean(name, self.table['mechanism'])}; "
                             f"registered: {known}") from None
        return cls

    def default_job(self) -> Job | None:
        """The job a built-in plugin marked as the default (what ``accounting`` runs)."""
        return next((j for j in self.jobs.values() if j.default), None)

    def specialisation(self, wrapper: type[_W], base: Any) -> type[_W]:
        """The class to build a ``wrapper`` pair on the pair ``base`` with: the
        specialisation registered for (wrapper, type(base)), else ``wrapper`` itself.
        Exact type match, so the answer depends only on the registry, never on which
        modules are imported or in what order."""
        record = self.table["specialisation"].get(specialisation_name(wrapper, type(base)))
        if record is not None and record.value[:2] == (wrapper, type(base)):
            special: type[_W] = record.value[2]   # a subclass of wrapper (_check_specialisation)
            return special
        return wrapper

    def curve_builder(self, kind: Any) -> Callable[..., Any]:
        """The builder of the curve class ``kind`` that a plugin registered; a
        ValueError naming the registered kinds otherwise (with the core's kinds:
        ``accounting.pairs.derive.curve_builder``)."""
        record = self.table["curve kind"].get(curve_kind_name(kind)) if isinstance(kind, type) \
            else None
        if record is None or record.value[0] is not kind:
            names = ", ".join(k.__name__ for k in self.curve_kinds) or "none"
            raise ValueError(f"unknown curve kind {kind!r}; expected one of {names}")
        builder: Callable[..., Any] = record.value[1]
        return builder

    def plugin_of(self, cls: type) -> str | None:
        """The plugin that registered the mechanism class ``cls``, if one did."""
        for record in self.table["mechanism"].values():
            if record.value is cls:
                return record.plugin
        return None

    def listing(self) -> dict[str, list[tuple[str, str]]]:
        """What plugins registered, by kind: (name, plugin) pairs (the core's own
        converters and curve kinds are listed by ``curves.graph.edges`` and
        ``pairs.derive.builders``)."""
        return {
            "mechanisms": sorted(self.mechanism_sources.items()),
            "converters": [(r.name, r.plugin) for r in self.converters],
            "auditors": sorted(self.auditor_sources.items()),
            "jobs": sorted((j.name, j.plugin) for j in self.jobs.values()),
            "specialisations": sorted(self.specialisation_sources.items()),
            "curve kinds": sorted(self.curve_kind_sources.items()),
        }


def _manager_of(plugin: object, name: str) -> pluggy.PluginManager:
    """A plugin manager holding ``plugin`` alone: pluggy calls its hooks and no other
    plugin's, so each registration is known to come from it (the registry's own
    manager holds every plugin, for their names)."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name=name)
    return pm


# ------------------------------------------------------------------ the kinds
# One check per kind: (plugin, *what register() was given) → (name, value), or
# _Refused saying what is wrong. The registry imports none of the classes a plugin
# registers: it checks them by the methods they must have (duck typing).

#: the methods by which a class is taken for a mechanism (``pairs.mechanism.Mechanism``),
#: a pair (``pairs.pair.Pair``) and a curve kind (``curves.curve.Curve``)
_MECHANISM = ("pair", "curve", "sample", "provides", "parameters", "deprecated", "ranges")
_PAIR = ("profile", "curve", "self_compose", "provides", "describe")
_CURVE = ("delta", "epsilon", "beta", "renyi", "rho", "to", "compose", "explain")


def _is_class_with(value: Any, methods: tuple[str, ...]) -> bool:
    return isinstance(value, type) and all(callable(getattr(value, m, None)) for m in methods)


def curve_kind_name(kind: type) -> str:
    """The name a curve kind is registered under: ``module.Class``."""
    return f"{kind.__module__}.{kind.__qualname__}"


def _check_mechanism(plugin: str, cls: Any) -> tuple[str, Any]:
    if not _is_class_with(cls, _MECHANISM):
        raise _Refused(f"register() needs a Mechanism subclass, got {_short(cls)}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise _Refused(f"mechanism class {cls.__name__} has no name (set the class "
                       f"attribute name = 'lower_case_identifier')")
    if not _NAME.match(name):
        raise _Refused(f"mechanism class {cls.__name__}: name {name!r} is not a lower-case "
                       f"identifier (letters, digits, underscores)")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise _Refused(f"mechanism {name!r} ({cls.__name__}) is abstract: it does not "
                       f"implement {missing}")
    try:   # what `accounting mechanisms` and the command line read
        cls.parameters()
    except Exception as exc:
        raise _Refused(f"mechanism {name!r} ({cls.__name__}): parameters() fails "
                       f"({_describe(exc)})") from None
    return name, cls


def _check_converter(plugin: str, source: Any, target: Any, func: Any, exactness: Any,
                     name: Any) -> tuple[str, Any]:
    if not isinstance(name, str) or not name.strip():
        raise _Refused(f"converter name must be a non-empty string, got {_short(name)}")
    for role, kind in (("source", source), ("target", target)):
        if not _is_class_with(kind, _CURVE):
            raise _Refused(f"converter {name!r}: {role} must be a curve class such as PLD "
                           f"or RDP, got {_short(kind)}")
    if not isinstance(exactness, Exactness):
        raise _Refused(f"converter {name!r}: exactness must be an Exactness, got "
                       f"{_short(exactness)}")
    if not callable(func):
        raise _Refused(f"converter {name!r}: func must be callable, got {_short(func)}")
    try:
        inspect.signature(func).bind(object())
    except TypeError as exc:
        raise _Refused(f"converter {name!r}: func must accept the curve as its one "
                       f"positional argument ({exc})") from None
    except ValueError:  # no signature to inspect (some builtins): checked when called
        pass
    return name, (source, target, func, exactness)


def _check_auditor(plugin: str, name: Any, auditor: Any) -> tuple[str, Any]:
    from accounting.registry.auditor import auditor_problems  # numpy: only when needed
    if not isinstance(name, str) or not _NAME.match(name):
        raise _Refused(f"auditor name must be a lower-case identifier, got {_short(name)}")
    problems = auditor_problems(auditor)
    if problems:
        raise _Refused(f"auditor {name!r} {problems} (see the Auditor Protocol in "
                       f"accounting.registry.auditor)")
    return name, auditor


def _check_job(plugin: str, name: Any, workload: Any, description: Any, *,
               default: bool = False, solve: str | None = None,
               notes: dict[str, Any] | None = None) -> tuple[str, Any]:
    import copy
    import tomllib
    if not isinstance(name, str) or not _NAME.match(name):
        raise _Refused(f"job name must be a lower-case identifier, got {_short(name)}")
    if isinstance(workload, str):
        try:
            check_depth(workload, "the workload text")
            workload = tomllib.loads(workload)
            check_depth(workload, "the workload text")
        except ValueError as exc:    # a TOMLDecodeError is one
            raise _Refused(f"job {name!r}: its workload is not valid TOML "
                           f"({_describe(exc)})") from None
    if not isinstance(workload, dict) or not isinstance(workload.get("mechanism"), list):
        raise _Refused(f"job {name!r}: workload must be TOML text or a dict with "
                       f"[[mechanism]] entries, got {_short(workload)}")
    if not isinstance(description, str) or not description.strip():
        raise _Refused(f"job {name!r}: description must be a non-empty string")
    if not isinstance(default, bool) or not (solve is None or isinstance(solve, str)):
        raise _Refused(f"job {name!r}: default must be a bool and solve a string or None")
    notes = dict(notes or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in notes.items()):
        raise _Refused(f"job {name!r}: notes must map accountant names to strings")
    return name, Job(name, copy.deepcopy(workload), description, plugin, default, solve,
                     tuple(notes.items()))


def _check_specialisation(plugin: str, wrapper: Any, base: Any,
                          specialised: Any) -> tuple[str, Any]:
    for role, cls in (("wrapper", wrapper), ("base", base), ("specialised", specialised)):
        if not _is_class_with(cls, _PAIR):
            raise _Refused(f"specialisation: {role} must be a Pair subclass, got "
                           f"{_short(cls)}")
    if specialised is wrapper or not issubclass(specialised, wrapper):
        raise _Refused(f"specialisation: {specialised.__name__} must be a proper subclass "
                       f"of the wrapper {wrapper.__name__}")
    if inspect.isabstract(specialised):
        raise _Refused(f"specialisation: {specialised.__name__} is abstract")
    return specialisation_name(wrapper, base), (wrapper, base, specialised)


def _check_curve_kind(plugin: str, kind: Any, builder: Any) -> tuple[str, Any]:
    if not _is_class_with(kind, _CURVE):
        raise _Refused(f"curve kind must be a Curve subclass, got {_short(kind)}")
    if not callable(builder):
        raise _Refused(f"curve kind {kind.__name__}: builder must be callable, got "
                       f"{_short(builder)}")
    return curve_kind_name(kind), (kind, builder)


@attrs.frozen
class Kind:
    """One kind of registration: its name (in messages and ``Registry.table``), the
    hook that contributes it, how that hook's ``register`` is called, and the check
    that makes a call into a record's (name, value) or refuses it."""

    name: str
    hook: str
    signature: str
    check: Callable[..., tuple[str, Any]] = attrs.field(repr=False)


#: the kinds, in the order a plugin's hooks are called
KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("mechanism", "accounting_register_mechanisms", "register(cls)", _check_mechanism),
    Kind("converter", "accounting_register_converters",
         "register(source, target, func, exactness, name)", _check_converter),
    Kind("auditor", "accounting_register_auditors", "register(name, auditor)", _check_auditor),
    Kind("job", "accounting_register_jobs",
         "register(name, workload, description, *, default=False, solve=None, notes=None)",
         _check_job),
    Kind("specialisation", "accounting_register_specialisations",
         "register(wrapper, base, specialised)", _check_specialisation),
    Kind("curve kind", "accounting_register_curve_kinds", "register(kind, builder)",
         _check_curve_kind),
)}


def specialisation_name(wrapper: type, base: type) -> str:
    """The name a specialisation is registered under: ``module.Wrapper[module.Base]``."""
    return (f"{wrapper.__module__}.{wrapper.__qualname__}"
            f"[{base.__module__}.{base.__qualname__}]")


class _Refused(Exception):
    """A registration that is refused (internal: becomes a PluginError)."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: every registry built in this process (to name the plugin behind a faulty mechanism)
_LIVE: list[weakref.ref[Registry]] = []


def live_registries() -> list[Registry]:
    """The registries built by ``make_registry`` that are still in use."""
    return [reg for reg in (ref() for ref in _LIVE) if reg is not None]


def make_registry(*, entry_points: bool = True) -> Registry:
    """A fresh registry with (by default) all entry points. The core's own converters
    and curve kinds are not plugins: the graph and ``curve_of_pair`` add them."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    reg = Registry(pm)
    _LIVE[:] = [ref for ref in _LIVE if ref() is not None] + [weakref.ref(reg)]
    if entry_points:
        reg.load_entry_points()
    return reg


@functools.lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The process-wide registry, built on first use."""
    return make_registry()
