"""Sound grouping by dominance: a ledger of many distinct noise values, bracketed by two
ledgers with few.

A noise schedule (DP-SGD with a σ for every step) is a ledger of thousands of distinct
mechanisms, each its own discretisation. Where a parameter is declared a *garbling*
(``accounting.pairs.mechanism.parameter``: raising it post-processes the pair, as σ
does for Gaussian noise), the entries that differ only in it are sorted by its value
and cut into runs whose largest value is at most (1 + ``rtol``) times the smallest.

* ``upper``: every entry of a run at the run's smallest value. Each such pair
  dominates the entry it replaces (the entry is a post-processing of it), so by the
  data-processing inequality for compositions (the product of the kernels
  post-processes the product of the pairs; Dong, Roth, Su, arXiv:1905.02383, Lemma 2.9
  and Thm 3.2) the composed pair of ``upper`` dominates the original on every curve:
  its δ(ε), ε(δ) and Rényi divergences are upper bounds of the original's.
* ``lower``: every entry at the run's largest value: dominated, so its curves are
  lower bounds.

So the original ε(δ) lies in [lower side of ``lower``, upper side of ``upper``], each
end as certified as the accountant that computes it, and the bracket widens by the
price of the grouping — about κ·log(1 + rtol) relative, with κ = −d log ε/d log σ
(≈ 1–2 for DP-SGD) — in exchange for one discretisation per run instead of one per
entry. Entries with no garbling parameter, or alone in their run, are kept as they
are in both ledgers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from accounting.ledger.record import Ledger
from accounting.ledger.spec import MechanismSpec
from accounting.validation import check_real

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["DominanceGroups", "group_by_dominance", "garbling_parameter"]


def garbling_parameter(spec: MechanismSpec, registry: Registry | None = None) -> str | None:
    """The one parameter of ``spec``'s mechanism declared a garbling (``parameter(…,
    garbling=True)``), or None (none, or more than one: which to group by would be a
    guess)."""
    kind = type(spec.mechanism(registry))
    names = [name for name, a in kind.parameters().items() if a.metadata.get("garbling")]
    return names[0] if len(names) == 1 else None


@attrs.frozen
class DominanceGroups:
    """The two ledgers of ``group_by_dominance``: ``upper`` (each run at its smallest
    value: dominates the original), ``lower`` (at its largest: dominated), the
    ``rtol`` they were cut at, and the number of distinct entries before and after."""

    upper: Ledger
    lower: Ledger
    rtol: float
    distinct_before: int
    distinct_after: int


def group_by_dominance(ledger: Ledger, rtol: float,
                       registry: Registry | None = None) -> DominanceGroups:
    """``ledger`` cut into runs of garbling values within a relative ``rtol`` ∈ (0, 1]
    (see the module docstring); the runs are formed greedily from the smallest value
    up, so each spans at most a factor 1 + rtol."""
    if not isinstance(ledger, Ledger):
        raise TypeError(f"ledger must be a Ledger, got {type(ledger).__name__}")
    rtol = check_real("rtol", rtol, lo=0.0, hi=1.0, lo_open=True)
    families: dict[tuple[str, str, str], list[tuple[float, MechanismSpec, int]]] = {}
    kept: list[tuple[Any, int]] = []
    for item, count in ledger:
        name = garbling_parameter(item, registry) if isinstance(item, MechanismSpec) else None
        if name is None:
            kept.append((item, count))
            continue
        assert isinstance(item, MechanismSpec)
        value = float(dict(item.params)[name])
        rest = MechanismSpec(item.name, tuple((k, v) for k, v in item.params if k != name))
        families.setdefault((item.name, name, rest.key), []).append((value, item, count))
    upper, lower = list(kept), list(kept)
    for (_, name, _), members in families.items():
        members.sort(key=lambda m: m[0])
        runs: list[list[tuple[float, MechanismSpec, int]]] = []
        for m in members:
            if runs and m[0] <= runs[-1][0][0] * (1.0 + rtol):
                runs[-1].append(m)
            else:
                runs.append([m])
        for run in runs:
            total = sum(c for _, _, c in run)
            if len(run) == 1:
                upper.append((run[0][1], total))
                lower.append((run[0][1], total))
                continue
            upper.append((_with(run[0][1], name, run[0][0], registry), total))
            lower.append((_with(run[-1][1], name, run[-1][0], registry), total))
    after = Ledger(upper)
    return DominanceGroups(upper=after, lower=Ledger(lower), rtol=rtol,
                           distinct_before=len(ledger), distinct_after=len(after))


def _with(spec: MechanismSpec, name: str, value: float,
          registry: Registry | None) -> MechanismSpec:
    """``spec`` with parameter ``name`` set to ``value`` (a member's own value: every
    representative is a member, so it is as valid as the entry it came from)."""
    values = dict(spec.params)
    if float(values[name]) == value:
        return spec
    values[name] = value
    return MechanismSpec.build(spec.name, registry, **{
        k: (v.mechanism(registry) if isinstance(v, MechanismSpec) else v)
        for k, v in values.items()})
