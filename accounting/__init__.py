"""accounting: plugin-based privacy accounting.

Pairs of output distributions, the five privacy curves (PLD, privacy profile,
trade-off, Rényi DP, zCDP) with converters that say whether they are exact or a
bound, composition, and an accountant. Mechanisms, converters and auditors come
from plugins (pluggy, entry-point group ``accounting``).
"""

from .accountant import ACCOUNTANTS, Accountant
from .additive import AdditiveNoise
from .calibrate import Calibration, Term, calibrate, calibrate_dpsgd, calibrate_workload
from .compose import ComposedPair, compose
from .convert import Converter, convert
from .curve import Curve, Exactness, Provenance
from .direction import Bound, Direction
from .gap import (AllocationGap, CompositionGap, InformationGap, LocalExpansion, LossCumulants,
                  allocation_gap, calibrated_family, composition_gap, information_gap,
                  loss_cumulants)
from .hookspecs import hookimpl
from .loss import LossPMF
from .mechanism import Mechanism, Neighbouring
from .pair import LawPair, Pair, discrete_pair
from .plugins import PluginError, Registry, default_registry, make_registry
from .pld import PLD
from .profile import PrivacyProfile
from .rdp import RDP
from .tradeoff import TradeOff
from .zcdp import ZCDP

__version__ = "0.1.0"


def mechanism(name: str, **params):
    """An instance of the registered mechanism ``name`` with ``params``; a keyword the
    mechanism does not take is a TypeError naming it and the ones it does take."""
    from .validation import check_options
    cls = default_registry().mechanism(name)
    check_options(f"mechanism {name!r}", params, cls.parameters())
    return cls(**params)


__all__ = [
    "Accountant", "ACCOUNTANTS", "AdditiveNoise", "Calibration", "Term", "calibrate",
    "calibrate_dpsgd", "calibrate_workload", "ComposedPair", "compose", "Converter",
    "convert", "Curve", "Exactness", "Provenance", "Bound", "Direction", "hookimpl", "LossPMF",
    "Mechanism", "Neighbouring", "LawPair", "Pair", "discrete_pair", "PluginError", "Registry",
    "default_registry", "make_registry", "PLD", "PrivacyProfile", "RDP", "TradeOff", "ZCDP",
    "mechanism", "information_gap", "composition_gap", "allocation_gap", "calibrated_family",
    "loss_cumulants", "InformationGap", "CompositionGap", "AllocationGap", "LocalExpansion",
    "LossCumulants",
]
