"""Tree aggregation for DP-FTRL: Gaussian noise on every node of a binary tree of sums.

DP-FTRL (Kairouz, McMahan, Song, Thakkar, Thakurta, Xu, arXiv:2103.00039, App. D)
releases, for a stream of T per-step sums (each record's contribution of ℓ2
norm ≤ Δ, the ``sensitivity``), every complete dyadic node [j·2^l, (j + 1)·2^l) ⊆ [0, T)
of the binary tree over the steps, each with independent noise N(0, σ²I). A record
whose leaves are the steps in a set S changes node v by at most c_v·Δ, c_v = |S ∩ v|.
Which leaves a record touches is fixed by the data order (not by the outputs), so the
release is an adaptive composition of Gaussians with sensitivities c_v·Δ: it is
(Δ√(Σ_v c_v²)/σ)-GDP exactly, with the Gaussian pair (N(μ, 1), N(0, 1)),
μ = Δ√(Σ_v c_v²)/σ, as its tight dominating pair (Dong, Roth, Su, arXiv:1905.02383,
Cor. 3.3; attained by a record that always contributes the same unit vector).
So every curve is the Gaussian's, in closed form (PLD, profile, trade-off, RDP
D_α = αμ²/2 — the figure dp_accounting's RDP accountant and TF Privacy use).

* ``tree_aggregation`` — single epoch (dp_accounting's
  ``SingleEpochTreeAggregationDpEvent``): the tree restarts after each of the
  ``step_counts`` and a record occurs at most once across all the trees. A leaf of a
  tree of T steps lies in one complete node per level, ⌊log₂ T⌋ + 1 = ⌈log₂(T + 1)⌉
  of them (T = 3: the leaves and [0, 2); the node [0, 4) is never complete), so Σ c_v²
  = max over the trees of that depth. With ``completed`` each tree is padded to
  2^⌈log₂ T⌉ leaves (the "tree completion" of arXiv:2103.00039, whose virtual steps
  carry no data), depth ⌈log₂ T⌉ + 1. A record seen once in *each* of several trees
  (restarts every epoch) is the composition of one use per tree: compose the
  mechanism (the μ² add up, D_α too, as in dp_accounting's composed events).
* ``tree_aggregation_multi_epoch`` — one tree of T steps, no restart, a record
  occurring at most ``max_participation`` times with at least ``min_separation``
  steps strictly between two occurrences (``y − x − 1`` for occurrences at x < y;
  epochs of P steps in a fixed order: participation = epochs, separation = P − 1).
  Σ c_v² is maximised over every placement the constraint allows, by an exact dynamic
  programme over the tree (``tree_sensitivity_squared``; the worst case of App. D.2,
  TF Privacy's ``compute_rdp_single_tree``). Past ``WORK_BUDGET`` the programme is
  replaced by a bracket: above, a per-level bound (each level's Σ c_v² maximised on
  its own); below, the best placement found. The pair is then a bracket of two
  Gaussians (``TreeBracketPair``, not exact: upper sides sound, lower sides
  optimistic), and its label says so. With ``periodic`` the data order is fixed
  (epochs of ``min_separation`` + 1 steps): only the record's own leaves x, x + s + 1,
  … are placements, and Σ c_v² is maximised over the offset x (exact, cheap).

Degenerate values: σ = 0 is non-private (ε = ∞, the disjoint pair), unless no step
touches the record; no steps, no participation or Δ = 0 cost nothing (P = Q); T = 1
is the plain Gaussian mechanism.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import attrs
import numpy as np

from accounting.pairs.mechanism import NOISE_SCALE, Mechanism, Range, parameter
from accounting.pairs.pair import Pair, corner_pair, identical_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_count, check_positive
from accounting.vocabulary import Direction, FloatArray

from .approx_dp import entries_in
from .gaussian import GaussianPair, gaussian_delta

__all__ = ["TreeAggregation", "TreeAggregationMultiEpoch", "TreePair", "TreeBracketPair",
           "tree_depth", "tree_sensitivity_squared", "periodic_sensitivity_squared",
           "level_bound", "sensitivity_squared_bracket", "WORK_BUDGET"]

#: steps of one tree: up to 2^40 (a depth of 41 levels); 0 is a tree with no step
STEPS = Range(1, 2 ** 40, integer=True, log=True, zero=True)
#: occurrences of a record in the one tree (0: it never occurs)
PARTICIPATION = Range(1, 2 ** 20, integer=True, log=True, zero=True)
#: steps strictly between two occurrences of a record
SEPARATION = Range(0, 2 ** 40, integer=True)
#: elementary operations the exact programme may spend (measured ~2e8 per second of
#: numpy); beyond, the worst case is bracketed (the per-level bound above), labelled
WORK_BUDGET = 2e8


def tree_depth(steps: int, completed: bool = False) -> int:
    """Complete nodes of a tree of ``steps`` leaves that contain a given leaf, at most:
    ⌊log₂ T⌋ + 1 (0 for T = 0); ``completed`` (padded to 2^⌈log₂ T⌉ leaves):
    ⌈log₂ T⌉ + 1."""
    t = int(steps)
    if t <= 0:
        return 0
    return (t - 1).bit_length() + 1 if completed else t.bit_length()


# -------------------------------------------------------- the multi-epoch worst case
def _cap(size: int, k: int, gap: int) -> int:
    """Most occurrences with ≥ ``gap`` − 1 steps between them in ``size`` leaves."""
    return 0 if size <= 0 else min(k, (size - 1) // gap + 1)


def level_bound(steps: int, max_participation: int, min_separation: int) -> int:
    """An upper bound on the worst-case Σ_v c_v², level by level: at level l the
    ⌊T/2^l⌋ complete nodes hold at most m = min(k, ⌊(2^l − 1)/(s + 1)⌋ + 1) occurrences
    each and at most k in all, so their Σ c_v² is at most q·m² + r² with q full nodes
    and r left over. The true worst case places one pattern for all levels at once."""
    t = check_count("steps", steps, minimum=0)
    k = check_count("max_participation", max_participation, minimum=0)
    gap = check_count("min_separation", min_separation, minimum=0) + 1
    if _cap(t, k, gap) == 0:
        return 0
    total, level = 0, 0
    while (1 << level) <= t:
        nodes, m = t >> level, _cap(1 << level, k, gap)
        full = min(k // m, nodes)
        rest = min(k - full * m, m) if full < nodes else 0
        total += full * m * m + rest * rest
        level += 1
    return total


class _Block:
    """The best Σ c_v² over the nodes inside a block of leaves, per (count c ≥ 1,
    lead, trail): ``value[c − 1, a, b]`` with a the offset of the first occurrence and
    b the empty leaves after the last, both capped at s (what a neighbour needs: two
    occurrences across a boundary are far enough apart iff b_left + a_right ≥ s)."""

    __slots__ = ("size", "value")

    def __init__(self, size: int, value: FloatArray):
        self.size, self.value = size, value


def _work(a: int, b: int, k: int, gap: int, s1: int) -> float:
    """Operations of ``_concat`` on blocks of ``a`` and ``b`` leaves: one (s + 1)³
    max-plus product per pair of counts."""
    ca, cb = _cap(a, k, gap), _cap(b, k, gap)
    pairs = sum(min(cb, k - i) for i in range(1, ca + 1))
    return pairs * float(s1) ** 3


def _concat(x: _Block, y: _Block, k: int, s: int, gap: int) -> _Block:
    """The block x followed by y (no node spans both)."""
    size = x.size + y.size
    cap = _cap(size, k, gap)
    neg = -np.inf
    out = np.full((cap, s + 1, s + 1), neg)
    cx, cy = x.value.shape[0], y.value.shape[0]
    idx = np.arange(s + 1)
    # all in x: the trail grows by y's leaves; all in y: the lead grows by x's
    shift_t = np.minimum(idx + y.size, s)
    shift_l = np.minimum(idx + x.size, s)
    for c in range(min(cx, cap)):
        # numpy's stubs type ufunc.at's indices as an integer array only, not a tuple
        np.maximum.at(out[c], (slice(None), shift_t), x.value[c])  # type: ignore[arg-type]
    for c in range(min(cy, cap)):
        np.maximum.at(out[c], shift_l, y.value[c])
    if cx and cy and cap >= 2:
        # both: max over b_x + a_y ≥ s of x[.., a, b_x] + y[.., a_y, b]; with
        # ysuf[a'] = max_{a_y ≥ a'} y[a_y] the constraint is a_y ≥ s − b_x
        ysuf = np.maximum.accumulate(y.value[:, ::-1, :], axis=1)[:, ::-1, :]
        need = ysuf[:, s - idx, :]                      # [cy, b_x, b]
        for i in range(1, min(cx, cap - 1) + 1):
            hi = min(cy, cap - i)
            xa = x.value[i - 1]                         # [a, b_x]
            for j in range(1, hi + 1):
                best = np.max(xa[:, :, None] + need[j - 1][None, :, :], axis=1)
                np.maximum(out[i + j - 1], best, out=out[i + j - 1])
    return _Block(size, out)


def _perfect(half: _Block, k: int, s: int, gap: int) -> _Block:
    """The perfect block of twice ``half``'s size: both halves plus its root node."""
    whole = _concat(half, half, k, s, gap)
    counts = np.arange(1, whole.value.shape[0] + 1, dtype=float)
    whole.value += (counts * counts)[:, None, None]
    return whole


def _programme_work(t: int, k: int, gap: int, s1: int) -> float:
    """Operations (and memory cells) the programme needs for a tree of ``t`` leaves."""
    work, h = 0.0, 0
    while (2 << h) <= t:
        work += _work(1 << h, 1 << h, k, gap, s1)
        h += 1
    size = 0
    for level in range(t.bit_length() - 1, -1, -1):
        if t >> level & 1:
            if size:
                work += _work(size, 1 << level, k, gap, s1)
            size += 1 << level
    return work + (k + 1) * float(s1) ** 2 * t.bit_length()


def tree_sensitivity_squared(steps: int, max_participation: int = 1, min_separation: int = 0,
                             budget: float = WORK_BUDGET) -> tuple[int, bool]:
    """The worst case of Σ_v c_v² over the complete nodes v of a tree of ``steps``
    leaves, over every placement of at most ``max_participation`` occurrences with at
    least ``min_separation`` leaves strictly between consecutive ones (arXiv:2103.00039,
    App. D.2), and whether it is exact: ``(value, True)`` from the dynamic programme
    over the tree's perfect blocks, ``(level_bound(...), False)`` when the programme
    would exceed ``budget`` elementary operations.

    The programme keeps, for each perfect block of 2^h leaves, the best Σ c_v² inside
    it per (count, offset of the first occurrence, empty leaves after the last), the
    offsets capped at s = ``min_separation``; two halves combine when the empty leaves
    between them are ≥ s, and the block's root adds c². T's binary digits give the
    blocks that make up the tree (no node spans two of them)."""
    t = check_count("steps", steps, minimum=0)
    k = check_count("max_participation", max_participation, minimum=0)
    s = check_count("min_separation", min_separation, minimum=0)
    return _squared(t, k, s, float(budget))


@functools.lru_cache(maxsize=256)
def _squared(t: int, k: int, s: int, budget: float) -> tuple[int, bool]:
    """``tree_sensitivity_squared`` on checked integers, remembered: a mechanism asks
    for its pair once per curve."""
    gap = s + 1
    k = _cap(t, k, gap)
    if k == 0:
        return 0, True
    if k == 1:                                      # one occurrence: the deepest leaf
        return tree_depth(t), True
    s = min(s, t)                                   # larger gaps act as ≥ t
    gap = s + 1
    if _programme_work(t, k, gap, s + 1) > budget:
        return level_bound(t, k, s), False
    leaf = np.full((1, s + 1, s + 1), -np.inf)
    leaf[0, 0, 0] = 1.0                             # its own node
    perfect = [_Block(1, leaf)]
    while (2 << (len(perfect) - 1)) <= t:
        perfect.append(_perfect(perfect[-1], k, s, gap))
    tree = None
    for level in range(t.bit_length() - 1, -1, -1):
        if t >> level & 1:
            block = perfect[level]
            tree = block if tree is None else _concat(tree, block, k, s, gap)
    assert tree is not None   # t ≥ 2 here (k ≥ 2 occurrences), so t has a top bit
    best = float(np.max(tree.value))
    return int(round(best)), True


def periodic_sensitivity_squared(steps: int, max_participation: int, min_separation: int,
                                 budget: float = WORK_BUDGET) -> tuple[int, bool]:
    """Σ_v c_v² maximised over the records of a fixed data order: each occurs every
    s + 1 = ``min_separation`` + 1 steps (epochs of s + 1 steps, the same order in every
    epoch), up to ``max_participation`` times — the arithmetic progressions x, x + s + 1,
    … inside [0, T). A shorter progression is part of a longer one (fewer occurrences
    never raise Σ c_v²), so only the starts x < T − (k − 1)(s + 1) of the longest are
    tried. ``(value, True)``; past ``budget``, ``(upper, False)`` with the general worst
    case of ``tree_sensitivity_squared`` above it (every progression is a placement)."""
    t = check_count("steps", steps, minimum=0)
    k = check_count("max_participation", max_participation, minimum=0)
    s = check_count("min_separation", min_separation, minimum=0)
    gap = s + 1
    k = _cap(t, k, gap)
    if k <= 1:
        return (tree_depth(t) if k else 0), True
    starts = t - (k - 1) * gap
    if float(starts) * k * t.bit_length() > budget:
        # every progression is a placement of the general worst case: an upper bound
        return tree_sensitivity_squared(t, k, s, budget)[0], False
    best = 0
    j = np.arange(k, dtype=np.int64)
    for lo in range(0, starts, 4096):
        pos = np.arange(lo, min(starts, lo + 4096), dtype=np.int64)[:, None] + j * gap
        total = np.zeros(pos.shape[0], dtype=np.int64)
        for level in range(t.bit_length()):
            node = pos >> level
            inside = ((node + 1) << level) <= t            # a complete node
            same = np.zeros(pos.shape, dtype=bool)
            same[:, 1:] = node[:, 1:] == node[:, :-1]
            # rank of each occurrence within its node: Σ (2·rank + 1) over a node is c²
            first = np.where(same, 0, j[None, :])
            rank = j[None, :] - np.maximum.accumulate(first, axis=1)
            total += np.sum(np.where(inside, 2 * rank + 1, 0), axis=1)
        best = max(best, int(total.max()))
    return best, True


# ------------------------------------------------------------------------ the pairs
@attrs.frozen
class TreePair(GaussianPair):
    """The Gaussian pair of a tree-aggregation release, μ = Δ√(Σ c_v²)/σ, with a label
    saying where Σ c_v² comes from."""

    label: str = attrs.field(default="tree aggregation", kw_only=True)

    def describe(self) -> str:
        return f"{self.label}: Gaussian(μ={self.mu:g})"


@attrs.frozen
class TreeBracketPair(Pair):
    """A bracket of Gaussian pairs, μ_lower ≤ μ ≤ μ_upper, when the worst-case Σ c_v² is
    only bracketed (the exact programme is past its budget): the upper sides are the
    Gaussian of μ_upper (it dominates the release), the lower ones the Gaussian of
    μ_lower (a placement that occurs). Not exact; no closed-form trade-off (it comes
    from the PLD, which keeps both sides)."""

    exact = False
    symmetric = True

    mu_lower: float = attrs.field(validator=lambda i, a, v: check_positive("mu_lower", v))
    mu_upper: float = attrs.field(validator=lambda i, a, v: check_positive("mu_upper", v))
    label: str = attrs.field(default="tree aggregation", kw_only=True)

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return gaussian_delta(self.mu_upper, eps)

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return gaussian_delta(self.mu_lower, eps)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        return t * (t + 1.0) * self.mu_upper ** 2 / 2.0

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        return t * (t + 1.0) * self.mu_lower ** 2 / 2.0

    def _rho(self, direction: Direction) -> float | None:
        return self.mu_upper ** 2 / 2.0

    def _self_compose(self, count: int) -> Pair | None:
        root = math.sqrt(count)
        return TreeBracketPair(self.mu_lower * root, self.mu_upper * root,
                               label=f"{count} × {self.label}")

    def describe(self) -> str:
        return f"{self.label}: Gaussian(μ in [{self.mu_lower:g}, {self.mu_upper:g}])"


def _gaussian_tree_pair(sensitivity: float, sigma: float, squares: tuple[int, int],
                        label: str) -> Pair:
    """The pair for Σ c_v² in [lower, upper] = ``squares``: no touched node costs
    nothing, no noise is non-private, else the Gaussian with μ = Δ√Σc²/σ (a bracket of
    two when the ends differ)."""
    lo, hi = squares
    if hi == 0:
        return identical_pair(f"{label} (no node holds the record: no privacy loss)")
    corner = corner_pair(sensitivity, sigma, label)
    if corner is not None:
        return corner
    scale = float(sensitivity) / float(sigma)
    if lo == hi:
        return TreePair(scale * math.sqrt(hi), label=label)
    return TreeBracketPair(scale * math.sqrt(lo), scale * math.sqrt(hi), label=label)


def sensitivity_squared_bracket(steps: int, max_participation: int, min_separation: int,
                                periodic: bool = False,
                                budget: float = WORK_BUDGET) -> tuple[int, int]:
    """(lower, upper) on the worst-case Σ_v c_v², equal when it is known exactly: the
    exact answer within ``budget``, else the per-level bound above and the best
    placement found (the periodic one, or a single occurrence) below."""
    if periodic:
        value, exact = periodic_sensitivity_squared(steps, max_participation, min_separation,
                                                    budget)
        if exact:
            return value, value
        return tree_depth(steps) if max_participation else 0, value
    value, exact = tree_sensitivity_squared(steps, max_participation, min_separation, budget)
    if exact:
        return value, value
    low, low_exact = periodic_sensitivity_squared(steps, max_participation, min_separation,
                                                  budget)
    return (low if low_exact else tree_depth(steps)), value


def _flag_field(name: str) -> Any:
    """A yes/no parameter: True/False, or the integers 1/0; anything else is a
    TypeError naming ``name``."""
    def convert(value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)) or (
                isinstance(value, (int, np.integer)) and value in (0, 1)):
            return bool(value)
        raise TypeError(f"{name} must be True or False (or 1/0), got "
                        f"{type(value).__name__} ({value!r})")
    return attrs.field(default=False, converter=convert)


def _step_counts(value: Any) -> tuple[int, ...]:
    """attrs converter: one step count or a non-empty sequence of them, as integers."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"step_counts must be an integer or a sequence of integers, got "
                        f"{type(value).__name__} ({value!r})")
    items = tuple(value) if hasattr(value, "__iter__") else (value,)
    if not items:
        raise ValueError("step_counts must have at least one entry")
    name = "step_counts" if len(items) == 1 else "step_counts[{}]"
    return tuple(check_count(name.format(i), v, minimum=0) for i, v in enumerate(items))


@attrs.frozen
class TreeAggregation(Mechanism):
    """Single-epoch tree aggregation (dp_accounting's SingleEpochTreeAggregationDpEvent).

    ``sigma``: the noise standard deviation on every node, in the units of Δ
    (``sensitivity``, the ℓ2 norm bound of one record's contribution to one step; a
    noise multiplier z is sigma = z·Δ). ``step_counts``: the steps of each tree (the
    tree restarts after each); a record occurs at most once across all of them.
    ``completed``: each tree padded to a power of two. The pair is the Gaussian with
    μ = Δ√depth/σ, depth the largest tree's (see the module docstring). Neighbouring:
    add/remove (the record absent answers like a zero contribution) or replace-one with
    Δ doubled, as for ``gaussian``.
    """

    name = "tree_aggregation"
    sigma: float = parameter(NOISE_SCALE)
    step_counts: tuple[int, ...] = attrs.field(converter=_step_counts, validator=entries_in(STEPS),
                                     metadata={"range": STEPS})
    completed: bool = _flag_field("completed")

    @property
    def depth(self) -> int:
        """The most tree nodes a record's leaf lies in (the largest tree's depth)."""
        return max(tree_depth(t, self.completed) for t in self.step_counts)

    def pair(self) -> Pair:
        label = f"tree aggregation (depth {self.depth})"
        return _gaussian_tree_pair(self.sensitivity, self.sigma, (self.depth, self.depth), label)


@attrs.frozen
class TreeAggregationMultiEpoch(Mechanism):
    """Tree aggregation without restart over ``steps`` leaves, a record occurring at
    most ``max_participation`` times with at least ``min_separation`` steps between
    two occurrences (TF Privacy's ``compute_rdp_single_tree``; arXiv:2103.00039,
    App. D.2). ``periodic``: the data order is fixed, so a record occurs exactly every
    ``min_separation`` + 1 steps (epochs of that many steps) and only those placements
    are maximised over. ``sigma`` and Δ as for ``tree_aggregation``. The pair is the Gaussian
    with μ = Δ√S/σ, S the worst-case Σ c_v² (``sensitivity_squared``): exact up to
    ``WORK_BUDGET``, beyond it a per-level upper bound, labelled.
    """

    name = "tree_aggregation_multi_epoch"
    sigma: float = parameter(NOISE_SCALE)
    steps: int = parameter(STEPS)
    max_participation: int = parameter(PARTICIPATION, default=1)
    min_separation: int = parameter(SEPARATION, default=0)
    periodic: bool = _flag_field("periodic")

    @property
    def sensitivity_squared(self) -> tuple[int, int]:
        """(lower, upper) on the worst-case Σ c_v², equal when it is exact
        (``sensitivity_squared_bracket``)."""
        return sensitivity_squared_bracket(self.steps, self.max_participation,
                                           self.min_separation, self.periodic)

    def pair(self) -> Pair:
        lo, hi = self.sensitivity_squared
        known = f"Σc² = {hi}" if lo == hi else f"Σc² in [{lo}, {hi}], not exact"
        label = f"tree aggregation, {int(self.steps)} steps ({known})"
        return _gaussian_tree_pair(self.sensitivity, self.sigma, (lo, hi), label)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(TreeAggregation)
    register(TreeAggregationMultiEpoch)
