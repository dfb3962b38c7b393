"""Old module paths, kept as aliases for one release (see the CHANGELOG's migration notes).

Importing ``accounting.pld`` (for example) warns with a ``DeprecationWarning`` naming
the new path, ``accounting.curves.pld``, and gives an alias module whose attributes
are those of the module at the new path: reading one reads it there and setting one
sets it there, so classes, ``isinstance`` checks and module state are shared. The
alias is a module object of its own, so the module at the new path keeps its name
and ``__spec__``.

An alias never replaces a public name of the package: ``accounting.convert`` is the
function ``convert`` and stays it after ``import accounting.convert`` (whose alias
module ``from accounting.convert import find_path`` still reads). The old modules of
the functions ``accounting.calibrate``, ``accounting.compose`` and
``accounting.mechanism`` (now ``accounting.analysis.calibration``,
``accounting.pairs.composed`` and ``accounting.pairs.mechanism``) are not aliased.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings
from typing import Any

__all__ = ["MOVED", "AliasModule", "install"]

#: old dotted path → new dotted path
MOVED: dict[str, str] = {
    "accounting.direction": "accounting.vocabulary",
    "accounting.pair": "accounting.pairs.pair",
    "accounting.additive": "accounting.pairs.additive",
    "accounting.primitives": "accounting.pairs.primitives",
    "accounting.derive": "accounting.pairs.derive",
    "accounting.curve": "accounting.curves.curve",
    "accounting.pld": "accounting.curves.pld",
    "accounting.profile": "accounting.curves.profile",
    "accounting.tradeoff": "accounting.curves.tradeoff",
    "accounting.rdp": "accounting.curves.rdp",
    "accounting.zcdp": "accounting.curves.zcdp",
    "accounting.loss": "accounting.numerics.loss",
    "accounting.discretise": "accounting.numerics.discretise",
    "accounting.convert": "accounting.curves.graph",
    "accounting.conversions": "accounting.curves.converters",
    "accounting.hookspecs": "accounting.registry.hookspecs",
    "accounting.plugins": "accounting.registry.registry",
    "accounting.gap": "accounting.analysis.gap",
    "accounting.cli_base": "accounting.cli.base",
    "accounting.cli_audit": "accounting.cli.audit",
    "accounting.conversion.graph": "accounting.curves.graph",
    "accounting.conversion.converters": "accounting.curves.converters",
    "accounting.composition": "accounting.pairs.composed",
}


class AliasModule(types.ModuleType):
    """The module at an old path: every attribute is read from, and written to, the
    module at the new path (the import system's own ``__dunder__`` attributes stay
    the alias's)."""

    def __init__(self, name: str, target: types.ModuleType):
        super().__init__(name, f"Deprecated alias of {target.__name__}.")
        self.__dict__["_alias_of"] = target     # not through __setattr__ (forwarded)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._alias_of, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") and name.endswith("__"):
            super().__setattr__(name, value)
        else:
            setattr(self._alias_of, name, value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("__") and name.endswith("__"):
            super().__delattr__(name)
        else:
            delattr(self._alias_of, name)

    def __dir__(self) -> list[str]:
        return dir(self._alias_of)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as an alias of the module at the new path."""

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} is deprecated and will be removed in the next release; "
                      f"import {new} instead", DeprecationWarning, stacklevel=2)
        return AliasModule(spec.name, importlib.import_module(new))

    def exec_module(self, module: object) -> None:
        """The module was executed when imported under its new path."""


class _Package(types.ModuleType):
    """The package ``accounting``: the import system binds each imported submodule as
    an attribute of its parent, which for an alias spelt like a public name
    (``accounting.convert``) would replace the function; that binding is skipped."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, AliasModule) and name in getattr(self, "__all__", ()):
            return
        super().__setattr__(name, value)


def install(package: types.ModuleType | None = None) -> None:
    """Register the alias finder once, and keep the aliases off the public names of
    ``package`` (called by ``accounting/__init__`` with itself)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
    if package is not None and type(package) is types.ModuleType:
        package.__class__ = _Package
