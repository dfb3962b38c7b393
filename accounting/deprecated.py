"""Old module paths, kept as aliases for one release (see the CHANGELOG's migration notes).

Importing ``accounting.pld`` (for example) warns with a ``DeprecationWarning`` naming
the new path, ``accounting.curves.pld``, and gives that module itself, so classes and
``isinstance`` checks are shared. ``accounting.calibrate``, ``accounting.compose`` and
``accounting.mechanism`` are functions and stay functions: their old modules are
``accounting.analysis.calibration``, ``accounting.composition`` and
``accounting.pairs.mechanism``, and are not aliased (an alias would shadow the function).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Optional

__all__ = ["MOVED", "install"]

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


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at the new path."""

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> object:
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} is deprecated and will be removed in the next release; "
                      f"import {new} instead", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: object) -> None:
        """The module was executed when imported under its new path."""


def install() -> None:
    """Register the alias finder once (called by ``accounting/__init__``)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
