"""Checked by mypy in ``tests/test_typing.py`` (never run): ``curve(kind)`` is typed as
``kind``. Each line marked ``# expect-error`` must be an error, every other line clean."""

from __future__ import annotations

from accounting import Accountant
from accounting.curves.pld import PLD
from accounting.curves.rdp import RDP
from accounting.curves.zcdp import ZCDP
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import Pair


def kinds(acct: Accountant, mech: Mechanism, pair: Pair) -> None:
    a: PLD = acct.curve(PLD)
    b: RDP = mech.curve(RDP)
    c: ZCDP = pair.curve(ZCDP, registry=None)
    d: RDP = acct.curve(PLD)  # expect-error
    e: PLD = mech.curve(RDP)  # expect-error
    f: ZCDP = pair.curve(PLD)  # expect-error
    del a, b, c, d, e, f
