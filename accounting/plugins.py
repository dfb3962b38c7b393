"""Plugin loading and the registry of mechanisms, converters and auditors.

``make_registry()`` builds a fresh registry: the core's own converters, then every
entry point of the group ``accounting`` (built-in plugins are registered there like
third-party ones). A plugin that fails to import, raises in a hook, or registers a
name that is already taken is recorded in ``registry.errors`` with its name (and a
warning is issued); the other plugins still load. ``default_registry()`` caches
one registry for the process; tests and notebooks build their own or call
``register_plugin`` to add one at run time.
"""

from __future__ import annotations

import functools
import importlib.metadata
import warnings
from typing import Any, Callable, Optional

import attrs
import pluggy

from . import hookspecs
from .convert import Converter
from .curve import Exactness

__all__ = ["Registry", "PluginError", "make_registry", "default_registry", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "accounting"


class PluginError(RuntimeError):
    """A plugin could not be loaded or registered something invalid."""

    def __init__(self, plugin: str, message: str):
        super().__init__(f"plugin {plugin!r}: {message}")
        self.plugin = plugin


@attrs.define
class Registry:
    """What the loaded plugins contributed. Mutable: plugins can be added at run time."""

    manager: pluggy.PluginManager
    mechanisms: dict[str, type] = attrs.Factory(dict)
    mechanism_sources: dict[str, str] = attrs.Factory(dict)
    converters: list[Converter] = attrs.Factory(list)
    auditors: dict[str, Any] = attrs.Factory(dict)
    auditor_sources: dict[str, str] = attrs.Factory(dict)
    errors: list[PluginError] = attrs.Factory(list)

    # -------------------------------------------------------------- loading
    def register_plugin(self, plugin: object, name: Optional[str] = None, *,
                        strict: bool = True) -> str:
        """Register a plugin object (module, class or instance) and collect its hooks.

        With ``strict`` (the default for run-time registration) a failure raises
        ``PluginError``; entry-point loading records it and carries on.
        """
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        before = len(self.errors)
        try:
            self.manager.register(plugin, name=name)
        except ValueError as exc:  # pluggy: already registered / name taken
            self._fail(name, f"cannot be registered: {exc}")
        else:
            self._collect(name)
        if strict and len(self.errors) > before:
            raise self.errors[-1]
        return name

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        for ep in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
            try:
                obj = ep.load()
            except Exception as exc:  # any import failure must not stop the others
                self._fail(ep.name, f"failed to load ({type(exc).__name__}: {exc})")
                continue
            self.register_plugin(obj, ep.name, strict=False)

    def _fail(self, plugin: str, message: str) -> None:
        err = PluginError(plugin, message)
        self.errors.append(err)
        warnings.warn(str(err), RuntimeWarning, stacklevel=3)

    def _collect(self, plugin: str) -> None:
        """Call this plugin's hooks only, with callbacks that know who registers."""
        hooks = {
            "accounting_register_mechanisms": self._mechanism_callback,
            "accounting_register_converters": self._converter_callback,
            "accounting_register_auditors": self._auditor_callback,
        }
        for hook_name, make_cb in hooks.items():
            caller = getattr(self.manager.hook, hook_name)
            for impl in caller.get_hookimpls():
                if impl.plugin_name != plugin:
                    continue
                try:
                    impl.function(register=make_cb(plugin))
                except PluginError as exc:
                    self.errors.append(exc)
                    warnings.warn(str(exc), RuntimeWarning, stacklevel=2)
                except Exception as exc:
                    self._fail(plugin, f"raised in {hook_name} ({type(exc).__name__}: {exc})")

    def _mechanism_callback(self, plugin: str) -> Callable[[type], None]:
        from .mechanism import Mechanism

        def register(cls: type) -> None:
            if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
                raise PluginError(plugin, f"register() needs a Mechanism subclass, got {cls!r}")
            name = getattr(cls, "name", None)
            if not isinstance(name, str) or not name:
                raise PluginError(plugin, f"mechanism class {cls.__name__} has no name")
            if name in self.mechanisms:
                raise PluginError(plugin, f"mechanism name {name!r} is already registered by "
                                          f"plugin {self.mechanism_sources[name]!r}")
            self.mechanisms[name] = cls
            self.mechanism_sources[name] = plugin
        return register

    def _converter_callback(self, plugin: str):
        def register(source: type, target: type, func: Callable, exactness: Exactness,
                     name: str) -> None:
            if not isinstance(exactness, Exactness):
                raise PluginError(plugin, f"converter {name!r}: exactness must be an Exactness")
            for c in self.converters:
                if c.name == name:
                    raise PluginError(plugin, f"converter name {name!r} is already registered "
                                              f"by plugin {c.plugin!r}")
            self.converters.append(Converter(source, target, func, exactness, name, plugin))
        return register

    def _auditor_callback(self, plugin: str):
        def register(name: str, auditor: Any) -> None:
            if name in self.auditors:
                raise PluginError(plugin, f"auditor name {name!r} is already registered by "
                                          f"plugin {self.auditor_sources[name]!r}")
            self.auditors[name] = auditor
            self.auditor_sources[name] = plugin
        return register

    # -------------------------------------------------------------- queries
    def mechanism(self, name: str) -> type:
        """The mechanism class registered under ``name``."""
        if not isinstance(name, str):
            raise TypeError(f"mechanism name must be a string, got {type(name).__name__}")
        try:
            return self.mechanisms[name]
        except KeyError:
            known = ", ".join(sorted(self.mechanisms)) or "none"
            raise ValueError(f"unknown mechanism {name!r}; registered: {known}") from None

    def listing(self) -> dict[str, list[tuple[str, str]]]:
        """What is registered, by kind: (name, plugin) pairs."""
        return {
            "mechanisms": sorted(self.mechanism_sources.items()),
            "converters": [(c.name, c.plugin) for c in self.converters],
            "auditors": sorted(self.auditor_sources.items()),
        }


def make_registry(*, entry_points: bool = True) -> Registry:
    """A fresh registry with the core converters and (by default) all entry points."""
    from . import conversions
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    reg = Registry(pm)
    reg.register_plugin(conversions, "core")
    if entry_points:
        reg.load_entry_points()
    return reg


@functools.lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The process-wide registry, built on first use."""
    return make_registry()
