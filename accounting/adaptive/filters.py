"""Privacy filters: stopping rules for fully adaptive composition.

In a fully adaptive composition the analyst picks each mechanism, *and its privacy
parameters*, from the outputs seen so far; the ordinary composition theorems, which fix
the parameters in advance, do not apply (Rogers, Roth, Ullman and Vadhan,
arXiv:1605.08294, §1). A *filter* admits a proposed mechanism only if a budget still
holds once it is counted, so that the whole interaction, whatever the analyst does,
meets the budget's guarantee.

Three filters, each over the library's own curves:

* ``RDPFilter`` — Rényi filter (Feldman and Zrnic, arXiv:2008.11193, §3, Thm 3.1): if
  at every step the divergences ρ_t(α) of the mechanism chosen are functions of the past
  and Σ_t ρ_t(α) ≤ B(α) holds surely, the interaction is (α, B(α))-RDP. Several orders
  are tracked at once and a step is admitted only if *every* order stays within its
  budget, so the theorem holds at each order separately (a refusal is a function of
  predictable costs only, hence itself an adaptive choice — the null mechanism). The
  (ε, δ) guarantee is the library's RDP → (ε, δ) conversion of each order's budget
  (``curves.converters.improved_epsilon``: Canonne, Kamath and Steinke,
  arXiv:2004.00010, Prop. 12), minimised over the orders.
* ``ZCDPFilter`` — Σ_t ρ_t ≤ ρ: the Rényi filter at every order at once (costs ρ_t α,
  budget ρα), so the interaction is ρ-zCDP (Bun and Steinke, arXiv:1605.02065,
  Def. 1.1) and its (ε, δ) minimises over every order.
* ``GaussianFilter`` — Gaussian DP filter (Smith and Thakurta, arXiv:2210.17520, main
  theorem, §1): adaptively chosen μ_t-GDP mechanisms with Σ_t μ_t² ≤ μ² surely form a
  μ-GDP interaction, with the same parameters as non-adaptive composition (Dong, Roth
  and Su, arXiv:1905.02383, Cor. 3.3).

No filter on the whole privacy profile or PLD is offered: the natural f-DP / PLD filter
(compose the realised curves, stop when the budget curve is crossed) is not valid under
full adaptivity in general (arXiv:2602.06756, §1; arXiv:2602.15815, §1).

A filter never continues silently past its budget: ``propose`` returns a ``Decision``
record saying whether the step was admitted and why not; ``admit`` raises
``BudgetExhausted`` instead. After the first refusal the filter is *closed* and refuses
every later proposal (``keep_open=True`` keeps it open for cheaper proposals: the
refusal depended only on the predictable costs, so a later, cheaper proposal is one more
adaptive choice and the guarantee above still holds).
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
import numpy as np

from accounting.accountant import Accountant
from accounting.analysis.clt import gdp_profile
from accounting.curves.converters import improved_epsilon
from accounting.curves.curve import Curve, Provenance, as_kind
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import CGF, RDP
from accounting.curves.zcdp import ZCDP
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import Pair, of_kind
from accounting.validation import check_array, check_real
from accounting.vocabulary import Exactness, FloatArray

#: the curve kinds a filter reads its costs from
_KindT = TypeVar("_KindT", RDP, ZCDP)

__all__ = ["Decision", "BudgetExhausted", "Filter", "RDPFilter", "GaussianFilter", "ZCDPFilter",
           "DEFAULT_ORDERS", "rdp_cost", "gdp_cost", "zcdp_cost", "rdp_budget_for",
           "rdp_guarantee", "check_orders"]

#: the Rényi orders a filter or odometer tracks unless told: dense where the (ε, δ)
#: conversion usually takes its minimum (α ≈ 2 … 64) and sparse beyond
DEFAULT_ORDERS: FloatArray = np.concatenate(
    [np.linspace(1.25, 3.0, 8), np.arange(4.0, 33.0), np.array([40.0, 48.0, 64.0, 96.0,
                                                                  128.0, 256.0])])

#: relative slack of a budget check: sums of float64 costs may exceed the budget by
#: roundoff when a proposal fills it exactly, which must not refuse that proposal
_ROUNDOFF = 1e-12


class BudgetExhausted(RuntimeError):
    """A filter refused a proposal (``Filter.admit``): its budget would be exceeded, or
    it was closed by an earlier refusal. ``decision`` is the refusal record."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


@attrs.frozen
class Decision:
    """What a filter said about one proposal.

    ``step``: the proposal's index (0-based, refused ones counted); ``admitted``;
    ``cost``: the proposal's cost in the filter's units (ρ_t(α) at the filter's orders,
    or μ_t²); ``spent``: the total after the decision (unchanged by a refusal);
    ``reason``: empty when admitted, else why not."""

    step: int
    admitted: bool
    cost: FloatArray = attrs.field(eq=False)
    spent: FloatArray = attrs.field(eq=False)
    reason: str = ""


def check_orders(orders: Any) -> FloatArray:
    """Rényi orders as a 1-d float array of finite α > 1, sorted, without repeats."""
    a = check_array("orders", orders, lo=1.0, lo_open=True)
    a = np.unique(np.ravel(a))
    if a.size == 0:
        raise ValueError("orders must hold at least one Rényi order α > 1")
    return a


def _certified_curve(proposal: Any, kind: type[_KindT], what: str, registry: Any) -> _KindT:
    """The ``kind`` curve of a proposal (a ``Mechanism``, a ``Pair``, an ``Accountant`` or
    any privacy curve, converted), refused unless its sound side is certified."""
    if isinstance(proposal, (Mechanism, Pair)):
        curve = proposal.curve(kind, registry=registry)
    elif isinstance(proposal, Accountant):
        curve = proposal.curve(kind)
    elif isinstance(proposal, Curve):
        curve = of_kind(kind, as_kind(proposal, kind, "proposal"))
    else:
        raise TypeError(f"proposal must be a Mechanism, a Pair, an Accountant or a privacy "
                        f"curve, got {type(proposal).__name__}")
    if not curve.provenance.exactness.certified:
        raise ValueError(f"proposal's {what} curve is {curve.provenance}: a filter needs a "
                         f"certified (exact or upper-bound) curve")
    return curve


def rdp_cost(proposal: Any, orders: FloatArray, *, registry: Any = None) -> FloatArray:
    """D_α at ``orders`` (the larger of both directions, the sound side) of a proposal:
    a ``Mechanism``, a ``Pair``, an ``Accountant`` (its whole composition, one step of
    the adaptive sequence) or any privacy curve (converted to ``RDP``).

    A curve whose sound side is not certified (a quadrature, ``Exactness.NUMERICAL``)
    is refused: a filter's guarantee is only as good as the costs it adds."""
    rdp = _certified_curve(proposal, RDP, "Rényi", registry)
    cost = np.asarray(rdp.renyi(orders, "max", "upper"), dtype=float)
    if np.any(np.isnan(cost)) or np.any(cost < 0):
        raise ValueError(f"proposal's Rényi curve gave {cost!r} at orders {orders!r}: "
                         f"D_α must be a number ≥ 0")
    return cost


def rdp_guarantee(orders: FloatArray, budget: FloatArray, delta: Any) -> FloatArray:
    """ε(δ) of an (α, B(α))-RDP guarantee at each order, minimised over the orders (the
    improved conversion, ``curves.converters.improved_epsilon``), never below 0."""
    dl = check_array("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    t = orders - 1.0
    eps = improved_epsilon((t * budget)[:, None], t[:, None], np.log(np.ravel(dl))[None, :])
    out: FloatArray = np.maximum(np.min(eps, axis=0), 0.0).reshape(dl.shape)
    return out


def rdp_budget_for(epsilon: float, delta: float, orders: FloatArray) -> FloatArray:
    """B(α) such that (α, B(α))-RDP converts to exactly (ε, δ)-DP by the improved
    conversion: B = ε − log(1 − 1/α) + (log δ + log α)/(α − 1), the inverse of
    ``improved_epsilon``; negative where no RDP budget at that order reaches (ε, δ)."""
    t = orders - 1.0
    out: FloatArray = epsilon - np.log1p(-1.0 / orders) + (np.log(delta) + np.log(orders)) / t
    return out


class Filter:
    """What every filter shares: a budget and the amount spent (arrays, one entry per
    tracked quantity), the ``Decision`` of each proposal, closing on the first refusal
    (unless ``keep_open``), ``propose``/``admit``. A subclass says what a proposal costs
    (``cost``), what the budget guarantees, and how to name entry i of the budget
    (``where``)."""

    def __init__(self, budget: FloatArray, *, keep_open: bool, spent: FloatArray | None
                 ) -> None:
        if not isinstance(keep_open, bool):
            raise TypeError(f"keep_open must be True or False, got {keep_open!r}")
        self.budget: FloatArray = budget
        self.keep_open = keep_open
        self.spent: FloatArray = np.zeros(budget.shape) if spent is None else spent
        over = self.spent > self.budget
        if over.any():
            i = int(np.argmax(over))
            raise ValueError(f"spent already exceeds the budget{self.where(i)}: "
                             f"{self.spent[i]:.6g} > {self.budget[i]:.6g}")
        self.decisions: list[Decision] = []
        self.closed = False

    def cost(self, proposal: Any) -> FloatArray:
        """What ``proposal`` costs, in the units of the budget."""
        raise NotImplementedError

    def where(self, i: int) -> str:
        """Names entry ``i`` of the budget in a refusal (empty for a single number)."""
        return ""

    def propose(self, proposal: Any) -> Decision:
        """Admit ``proposal`` if the budget still holds, entry by entry, once it is
        counted, and count it; else refuse (and close, unless ``keep_open``). Returns
        the ``Decision``; never raises for a refusal."""
        cost = self.cost(proposal)
        step = len(self.decisions)
        total = self.spent + cost
        if self.closed:
            first = next(d.step for d in self.decisions if not d.admitted)
            decision = Decision(step, False, cost, self.spent.copy(),
                                f"filter closed by the refusal at step {first}")
        elif np.all(total <= self.budget * (1.0 + _ROUNDOFF)):
            self.spent = total
            decision = Decision(step, True, cost, total.copy())
        else:
            i = int(np.argmax(total / self.budget))
            decision = Decision(step, False, cost, self.spent.copy(),
                                f"budget exceeded{self.where(i)}: spent "
                                f"{self.spent[i]:.6g} + cost {cost[i]:.6g} > budget "
                                f"{self.budget[i]:.6g}")
            self.closed = not self.keep_open
        self.decisions.append(decision)
        return decision

    def admit(self, proposal: Any) -> Decision:
        """``propose``, raising ``BudgetExhausted`` on a refusal."""
        decision = self.propose(proposal)
        if not decision.admitted:
            raise BudgetExhausted(decision)
        return decision

    @property
    def admitted(self) -> int:
        """How many proposals were admitted."""
        return sum(d.admitted for d in self.decisions)

    def held(self) -> FloatArray:
        """The budget the guarantee is stated for: the larger of budget and spent, so
        the roundoff slack of the admission test is counted."""
        out: FloatArray = np.maximum(self.budget, self.spent)
        return out

    def label(self) -> str:
        """The budget in a few words, for the repr."""
        return f"{self.budget.size} budget entries"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.label()}, {self.admitted} admitted, "
                f"{'closed' if self.closed else 'open'})")


class RDPFilter(Filter):
    """A Rényi filter (Feldman and Zrnic, arXiv:2008.11193, Thm 3.1) over ``orders``
    with budget ``budget`` (one B(α) > 0 per order, or one number for all).

    Guarantee: every interaction it admits is (α, B(α))-RDP at each tracked order,
    whatever the analyst's adaptive choices; ``epsilon(delta)`` is its (ε, δ) form.
    ``for_target(epsilon, delta)`` builds the budget that converts to (ε, δ).
    ``spent``: what was already spent before the filter starts (a Mechanism, Pair,
    Accountant or curve: a first step fixed in advance, which the theorem covers);
    more than the budget is a ValueError.
    """

    def __init__(self, budget: Any, orders: Any = DEFAULT_ORDERS, *, keep_open: bool = False,
                 spent: Any = None, registry: Any = None) -> None:
        self.orders = check_orders(orders)
        b = check_array("budget", budget, lo=0.0, lo_open=True, allow_inf=True)
        if b.ndim == 0:
            b = np.full(self.orders.shape, float(b))
        if b.shape != self.orders.shape:
            raise ValueError(f"budget must be one number or one per order "
                             f"({self.orders.size}), got shape {b.shape}")
        self.registry = registry
        before = None if spent is None else rdp_cost(spent, self.orders, registry=registry)
        super().__init__(b, keep_open=keep_open, spent=before)

    @classmethod
    def for_target(cls, epsilon: float, delta: float, orders: Any = DEFAULT_ORDERS, *,
                   plan: Any = None, keep_open: bool = False,
                   registry: Any = None) -> RDPFilter:
        """A filter over one order α* of ``orders`` whose budget converts to exactly
        (``epsilon``, ``delta``)-DP (``rdp_budget_for``).

        One order, because the filter admits only while *every* tracked order is within
        its budget: budgets that each convert to (ε, δ) at many orders would stop at
        the most demanding one. α* is the order admitting the most copies of ``plan``
        (a Mechanism, Pair or curve: the mechanism expected most often), max B(α)/ρ(α);
        without a plan, D_α ∝ α (a Gaussian's shape), max B(α)/α. Orders whose budget
        would be ≤ 0 are never chosen; none left is a ValueError."""
        eps = check_real("epsilon", epsilon, lo=0.0, lo_open=True)
        dl = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        a = check_orders(orders)
        b = rdp_budget_for(eps, dl, a)
        keep = b > 0
        if not keep.any():
            raise ValueError(f"no order in orders gives a positive Rényi budget for "
                             f"epsilon={eps:g}, delta={dl:g}; add larger orders")
        shape = a if plan is None else rdp_cost(plan, a, registry=registry)
        with np.errstate(divide="ignore", invalid="ignore"):
            copies = np.where(keep, b / shape, -np.inf)
        copies = np.where(np.isnan(copies), -np.inf, copies)
        best = int(np.argmax(copies))
        return cls(b[best:best + 1], a[best:best + 1], keep_open=keep_open,
                   registry=registry)

    def cost(self, proposal: Any) -> FloatArray:
        """D_α of ``proposal`` (a Mechanism, Pair, Accountant or curve) at the orders."""
        return rdp_cost(proposal, self.orders, registry=self.registry)

    def where(self, i: int) -> str:
        return f" at order α = {self.orders[i]:g}"

    def label(self) -> str:
        if self.orders.size == 1:
            return f"α = {self.orders[0]:g}, B = {self.budget[0]:.4g}"
        return f"{self.orders.size} orders"

    def remaining(self) -> FloatArray:
        """B(α) − Σ ρ(α) at each order (≥ 0)."""
        return np.maximum(self.budget - self.spent, 0.0)

    def epsilon(self, delta: Any) -> FloatArray:
        """The guarantee of every interaction this filter admits, as ε at ``delta``:
        min over the orders of the improved conversion of (α, B(α)) (not of the amount
        spent — under adaptivity only the budget is a guarantee). The roundoff slack of
        the admission test is counted: the larger of budget and spent is converted."""
        return rdp_guarantee(self.orders, self.held(), delta)

    def guarantee(self) -> RDP:
        """The budget as a Rényi curve known at the tracked orders only: between them
        D_α ≤ B at the next larger order (D_α is non-decreasing in α), +∞ beyond the
        largest. Labelled an upper bound (the filter's guarantee, not any pair's curve)."""
        orders, budget = self.orders, self.held()

        def cgf(t: FloatArray, _d: Any) -> FloatArray:
            a = 1.0 + np.asarray(t, dtype=float)
            i = np.searchsorted(orders, a, side="left")
            inside = i < orders.size
            b = np.where(inside, budget[np.minimum(i, orders.size - 1)], np.inf)
            return np.asarray((a - 1.0) * b, dtype=float)
        prov = Provenance(Exactness.UPPER, ("Rényi filter (Feldman–Zrnic Thm 3.1)",))
        return RDP(CGF.of(cgf), provenance=prov)


def gdp_cost(proposal: Any) -> float:
    """μ_t of a proposal to a Gaussian DP filter: a number μ ≥ 0, or a Mechanism or Pair
    whose pair is the μ-GDP Gaussian pair (``Pair.gdp_mu``); anything else is refused,
    as its GDP parameter is not known exactly."""
    if isinstance(proposal, Mechanism):
        proposal = proposal.pair()
    if isinstance(proposal, Pair):
        mu = proposal.gdp_mu()
        if mu is None:
            raise ValueError(f"{proposal.describe()} is not known to be μ-GDP for a μ in "
                             f"closed form; a Gaussian filter admits Gaussian mechanisms "
                             f"(or a number μ); use an RDPFilter for others")
        return float(mu)
    return check_real("mu", proposal, lo=0.0)


class GaussianFilter(Filter):
    """A Gaussian DP filter (Smith and Thakurta, arXiv:2210.17520, main theorem):
    admits adaptively chosen μ_t-GDP mechanisms while Σ μ_t² ≤ μ² (the budget and the
    costs are in units of μ²).

    Guarantee: every interaction it admits is ``mu``-GDP (``guarantee()``, the profile
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), Balle and Wang arXiv:1805.06530 Thm 8).
    Refusals as for ``RDPFilter``; ``spent`` (μ already spent, or a Gaussian mechanism)
    as there.
    """

    def __init__(self, mu: float, *, keep_open: bool = False, spent: Any = None) -> None:
        self.mu = check_real("mu", mu, lo=0.0, lo_open=True)
        before = None if spent is None else np.array([gdp_cost(spent) ** 2])
        super().__init__(np.array([self.mu ** 2]), keep_open=keep_open, spent=before)

    def cost(self, proposal: Any) -> FloatArray:
        """μ_t² of ``proposal`` (μ_t, or a Gaussian Mechanism/Pair, ``gdp_cost``)."""
        return np.array([gdp_cost(proposal) ** 2])

    def where(self, i: int) -> str:
        return " (Σ μ_t² against μ²)"

    def label(self) -> str:
        return f"μ = {self.mu:g}"

    def remaining(self) -> float:
        """√(μ² − Σ μ_t²): the largest μ a next proposal may have."""
        return float(np.sqrt(max(float(self.budget[0] - self.spent[0]), 0.0)))

    def guarantee(self) -> PrivacyProfile:
        """The μ-GDP profile of every admitted interaction, labelled an upper bound."""
        mu = float(np.sqrt(self.held()[0]))
        prov = Provenance(Exactness.UPPER,
                          (f"Gaussian DP filter μ = {mu:.6g} (Smith–Thakurta)",))
        out: PrivacyProfile = attrs.evolve(gdp_profile(mu), lower=None, provenance=prov)
        return out

    def epsilon(self, delta: Any) -> FloatArray:
        """ε at ``delta`` of the filter's μ-GDP guarantee."""
        return self.guarantee().epsilon(delta)


def zcdp_cost(proposal: Any, *, registry: Any = None) -> float:
    """ρ of a proposal (the sound side, the larger of both directions): a Mechanism,
    Pair, Accountant or curve (converted to ``ZCDP``; approximate zCDP counts as the
    plain ρ + ξ it implies). Uncertified curves are refused, as for ``rdp_cost``."""
    z = _certified_curve(proposal, ZCDP, "zCDP", registry)
    return z.rho("max", "upper")


class ZCDPFilter(Filter):
    """A zCDP filter: admits adaptively chosen ρ_t-zCDP mechanisms while Σ ρ_t ≤ ρ.

    Guarantee: every interaction it admits is ρ-zCDP. At each order α the costs are
    D_α ≤ ρ_t α with Σ ρ_t α ≤ ρα surely, so the Rényi filter theorem (Feldman and
    Zrnic, arXiv:2008.11193, Thm 3.1) makes the interaction (α, ρα)-RDP at every α at
    once, which is ρ-zCDP (Bun and Steinke, arXiv:1605.02065, Def. 1.1). Unlike an
    ``RDPFilter`` over one order, the (ε, δ) answer minimises over all orders.
    """

    def __init__(self, rho: float, *, keep_open: bool = False, spent: Any = None,
                 registry: Any = None) -> None:
        self.rho = check_real("rho", rho, lo=0.0, lo_open=True)
        self.registry = registry
        before = None if spent is None else np.array([zcdp_cost(spent, registry=registry)])
        super().__init__(np.array([self.rho]), keep_open=keep_open, spent=before)

    def cost(self, proposal: Any) -> FloatArray:
        """ρ_t of ``proposal`` (``zcdp_cost``)."""
        return np.array([zcdp_cost(proposal, registry=self.registry)])

    def where(self, i: int) -> str:
        return " (Σ ρ_t against ρ)"

    def label(self) -> str:
        return f"ρ = {self.rho:g}"

    def remaining(self) -> float:
        """ρ − Σ ρ_t: the largest ρ a next proposal may have."""
        return float(max(float(self.budget[0] - self.spent[0]), 0.0))

    def guarantee(self) -> ZCDP:
        """ρ-zCDP of every admitted interaction, labelled an upper bound."""
        rho = float(self.held()[0])
        return ZCDP((rho, rho), provenance=Provenance(
            Exactness.UPPER, (f"zCDP filter ρ = {rho:.6g} (Feldman–Zrnic at every order)",)))

    def epsilon(self, delta: Any) -> FloatArray:
        """ε at ``delta`` of the ρ-zCDP guarantee (the library's zCDP → (ε, δ))."""
        return self.guarantee().epsilon(delta)
