"""accounting: plugin-based privacy accounting.

Pairs of output distributions, the five privacy curves (PLD, privacy profile,
trade-off, Rényi DP, zCDP) with converters that say whether they are exact or a
bound, composition, and an accountant. Mechanisms, converters and auditors come
from plugins (pluggy, entry-point group ``accounting``).

Five verbs, one way each (``docs/five-verbs.md``): describe (``mechanism``), compose
(``compose``), query (``epsilon``/``delta`` and their ``_interval`` forms, one
signature on every curve and the ``Accountant``), convert (``curve.to``) and save
(``save``/``load``).
"""

__version__ = "0.2.0.dev0"

import importlib
import sys
from typing import TYPE_CHECKING, Any

from accounting.deprecated import install as _install_aliases

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

#: public name → the module that defines it. ``import accounting`` loads none of them:
#: each is imported on first use (PEP 562 ``__getattr__``), so the command line and a
#: script that needs one curve do not pay for numpy, attrs' generated classes and the
#: plugin registry up front (issue 11: ``import accounting`` within 0.3 s).
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("ACCOUNTANTS", "Accountant"), "accounting.accountant"),
    **dict.fromkeys(("Calibration", "MechanismFamily", "calibrate", "calibrate_workload"),
                    "accounting.analysis.calibration"),
    **dict.fromkeys(("AllocationGap", "CompositionGap", "InformationGap", "LocalExpansion",
                     "LossCumulants", "allocation_gap", "calibrated_family", "composition_gap",
                     "information_gap", "loss_cumulants"), "accounting.analysis.gap"),
    **dict.fromkeys(("ComposedPair", "compose"), "accounting.pairs.composed"),
    **dict.fromkeys(("Converter", "convert"), "accounting.curves.graph"),
    **dict.fromkeys(("Curve", "Provenance"), "accounting.curves.curve"),
    "CharacteristicFunction": "accounting.curves.characteristic",
    "PLD": "accounting.curves.pld",
    "PrivacyProfile": "accounting.curves.profile",
    "RDP": "accounting.curves.rdp",
    "TradeOff": "accounting.curves.tradeoff",
    "ZCDP": "accounting.curves.zcdp",
    **dict.fromkeys(("Ledger", "MechanismSpec"), "accounting.ledger"),
    "LossPMF": "accounting.numerics.loss",
    "AdditiveNoise": "accounting.pairs.additive",
    **dict.fromkeys(("Mechanism", "Neighbouring"), "accounting.pairs.mechanism"),
    **dict.fromkeys(("LawPair", "Pair", "discrete_pair"), "accounting.pairs.pair"),
    "hookimpl": "accounting.registry.hookspecs",
    **dict.fromkeys(("PluginError", "Registry", "default_registry", "make_registry"),
                    "accounting.registry.registry"),
    **dict.fromkeys(("Bound", "Direction", "Exactness"), "accounting.vocabulary"),
    # deprecated for one release: Term (now MechanismFamily)
    "Term": "accounting.analysis.calibration",
}

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from accounting.accountant import ACCOUNTANTS, Accountant
    from accounting.analysis.calibration import (
        Calibration,
        MechanismFamily,
        calibrate,
        calibrate_workload,
    )
    from accounting.analysis.gap import (
        AllocationGap,
        CompositionGap,
        InformationGap,
        LocalExpansion,
        LossCumulants,
        allocation_gap,
        calibrated_family,
        composition_gap,
        information_gap,
        loss_cumulants,
    )
    from accounting.curves.curve import Curve, Provenance
    from accounting.curves.graph import Converter, convert
    from accounting.curves.pld import PLD
    from accounting.curves.profile import PrivacyProfile
    from accounting.curves.rdp import RDP
    from accounting.curves.tradeoff import TradeOff
    from accounting.curves.zcdp import ZCDP
    from accounting.ledger import Ledger, MechanismSpec
    from accounting.numerics.loss import LossPMF
    from accounting.pairs.additive import AdditiveNoise
    from accounting.pairs.composed import ComposedPair, compose
    from accounting.pairs.mechanism import Mechanism, Neighbouring
    from accounting.pairs.pair import LawPair, Pair, discrete_pair
    from accounting.registry.hookspecs import hookimpl
    from accounting.registry.registry import PluginError, Registry, default_registry, make_registry
    from accounting.vocabulary import Bound, Direction, Exactness

_install_aliases(sys.modules[__name__])


def mechanism(name: str, *, registry: "Registry | None" = None, **params: Any) -> Any:
    """An instance of the mechanism ``name`` registered on ``registry`` (default: the
    process-wide one, ``default_registry()``) with ``params``; a keyword the mechanism
    does not take is a TypeError naming it and the ones it does take. Its curves use
    the registry they are given: ``mechanism(..., registry=r).curve(Kind, registry=r)``."""
    from accounting.registry.registry import default_registry
    from accounting.validation import check_options
    cls = (default_registry() if registry is None else registry).mechanism(name)
    check_options(f"mechanism {name!r}", params, [*cls.parameters(), *cls.deprecated()])
    return cls(**params)


__all__ = [
    "Accountant", "ACCOUNTANTS", "AdditiveNoise", "Calibration", "MechanismFamily", "calibrate",
    "calibrate_workload", "Ledger", "MechanismSpec", "save", "load", "ComposedPair", "compose", "Converter",
    "convert", "Curve", "Exactness", "Provenance", "Bound", "Direction", "hookimpl", "LossPMF",
    "Mechanism", "Neighbouring", "LawPair", "Pair", "discrete_pair", "PluginError", "Registry",
    "default_registry", "make_registry", "PLD", "PrivacyProfile", "RDP", "TradeOff", "ZCDP",
    "mechanism", "information_gap", "composition_gap", "allocation_gap", "calibrated_family",
    "loss_cumulants", "InformationGap", "CompositionGap", "AllocationGap", "LocalExpansion",
    "LossCumulants",
]


def save(obj: Any, path: Any, *, format: Any=None) -> None:
    """Write ``obj`` (an Accountant, Ledger, curve or audit report) to ``path`` as a
    versioned document, JSON or TOML (``format``, else from the suffix ``.json`` or
    ``.toml``); the one way to save, see ``accounting.serialization``."""
    from accounting.serialization import save as _save
    _save(obj, path, format=format)


def load(path: Any, registry: "Registry | None" = None, *, format: Any=None) -> Any:
    """Read what ``save`` wrote (JSON or TOML, never pickle, nothing executed)."""
    from accounting.serialization import load as _load
    return _load(path, registry=registry, format=format)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'accounting' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if name != "Term":  # a deprecated name keeps warning on every use
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
