"""Per-example (individual) privacy accounting of DP-SGD.

**Setting.** A fixed dataset D; x_i one of its examples; D⁻ⁱ = D without x_i (add/remove
neighbouring). Step t of DP-SGD samples a Poisson batch at rate q, clips every sampled
example's gradient g(x_j, θ_{t−1}) to norm C and releases the sum plus N(0, σ²C²·I)
(Abadi et al., arXiv:1607.00133, Alg. 1). Against D⁻ⁱ the release differs by
B·clip_C(g(x_i, θ_{t−1})), B ~ Bernoulli(q), a vector of norm s_{i,t}·C with

    s_{i,t} = min(‖g(x_i, θ_{t−1})‖, C)/C ∈ [0, 1],

so, given the past, the step's pair for x_i is the Poisson-subsampled Gaussian with
sensitivity s_{i,t} and noise std σ, i.e. noise multiplier σ/s_{i,t} (the Gaussian is
rotation invariant; its dominating pair: Mironov, Talwar, Zhang, arXiv:1908.10530, §3).
The worst case s = 1 at every step is the aggregate DP-SGD accountant.

**What guarantee.** Every number here is *individual* (per-instance) privacy: it
concerns the one pair (D, D⁻ⁱ), the other examples' data held fixed, as in Feldman and
Zrnic's personalised privacy losses (arXiv:2008.11193, §1 and §4: the loss of x_i's
participation, with individual, data-dependent privacy parameters) and in Koskela,
Tobaben and Honkela's individual accounting (arXiv:2209.15596, §1). It is not DP over
all datasets, and the ε_i themselves depend on the data (publishing them is a release).
Three readings, each labelled where it is returned:

1. ``IndividualReport.epsilon`` / ``epsilon_interval`` — the composition of the T pairs
   with the sensitivities s_{i,·} as given, *taken as a plan fixed in advance*: a
   certified PLD bracket (the aggregate ``Accountant.epsilon_interval`` on the
   example's own ledger) and the certified Rényi bound. Exactly individual (ε, δ)-DP
   when the s_{i,t} do not depend on the released outputs; in DP-SGD they do (θ_{t−1}),
   and then this is the "individual PLD" of Koskela et al. (§1: an approximative
   individual accountant), not by itself a theorem.
2. ``IndividualReport.odometer`` — fully adaptive: the sensitivities may depend on the
   past. ρ_t(α) of the step is a function of the past (predictable), so the Rényi
   odometer (``accounting.adaptive.odometer``: Ville's inequality, union over the
   orders; Whitehouse et al., arXiv:2203.05481, §1) bounds x_i's realised privacy loss
   by ε_i at every step at once, with probability ≥ 1 − δ: an ex-post bound.
3. ``IndividualFilter`` — fully adaptive with a budget fixed in advance: Feldman and
   Zrnic's individual Rényi filter (arXiv:2008.11193, Thm 3.1 applied to each example,
   §4): an example is used only while its summed ρ_t(α) stays within the budget, so
   every example, whatever its data, ends (α, B)-RDP individually, hence (ε, δ).

**Quantisation (sound).** s is rounded *up* to a grid of levels (``SensitivityGrid``,
default 0, 1/32, …, 1: ``DEFAULT_LEVELS``; a norm ≥ C is the top level, every other
s goes to the first level s_k ≥ ‖g‖/C, decided exactly: fl(‖g‖/C) < s_k implies
‖g‖/C < s_k, and a tie fl(‖g‖/C) = s_k is settled by the exact product s_k·C against
‖g‖ (Dekker's two-product), so float roundoff never rounds down). The pair at s′ ≤ s is a post-processing of the pair at s
(x ↦ x·s′/s + N(0, σ²(1 − s′²/s²)) maps N(s, σ²) to N(s′, σ²), N(0, σ²) to itself and
the mixtures alike), so a larger level only adds loss. Composition commutes, so an
example's history is its vector of counts per level: memory linear in the examples,
whatever the number of steps. Examples with equal count vectors (equal bytes: the
digest of the history) are accounted once.

**Coarsening (sound, optional).** ``coarsen_counts(counts, every)`` rounds each
c_k = #{steps at level ≥ k} (k ≥ 1) *up* to a multiple of ``every``: c′_k ≥ c_k and c′
is non-increasing, so the steps of the true history map one-to-one onto steps of the
coarse one at a level at least as high, and the coarse one's extra steps are more
outputs (dropping them is post-processing). Its curves therefore dominate the true
ones (composition preserves domination; Dong, Roth and Su, arXiv:1905.02383, §3) and
far fewer distinct histories remain for the PLD. The lower end of a bracket is then a
lower bound of the coarse history's ε only — and, with any grid, of the quantised
history's: the brackets bracket the ε of the grid, whose upper side is sound for the
true norms.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import numpy as np

from accounting.accountant import Accountant
from accounting.adaptive.filters import DEFAULT_ORDERS, RDPFilter, check_orders, rdp_cost
from accounting.adaptive.odometer import odometer_epsilon
from accounting.curves.converters import improved_epsilon
from accounting.curves.pld import DEFAULT_STEP, check_step
from accounting.ledger import Ledger
from accounting.parallel.executor import Engine, map_tasks
from accounting.validation import check_array, check_count, check_positive, check_real
from accounting.vocabulary import AnyArray, FloatArray, IntArray

from .subsampled_gaussian import SubsampledGaussian

__all__ = ["DEFAULT_LEVELS", "GUARANTEES", "SensitivityGrid", "Segment", "HistoryCounter",
           "IndividualReport", "IndividualFilter", "check_norms", "count_levels",
           "counts_from_npy", "coarsen_counts", "merge_levels", "PLD_LEVELS", "account_individuals",
           "individual_epsilons", "history_interval", "level_costs"]

#: levels of the default grid: 0, 1/32, …, 1 (exact in binary)
DEFAULT_LEVELS = 32
#: levels of the default grid of the PLD brackets: 0, 1/8, …, 1 (a PLD per distinct
#: history costs about 0.1 s per level used, so the PLD's grid is coarser)
PLD_LEVELS = 8
#: examples × steps read at once from a norms array (float64: 8 MB; larger temporaries
#: cost more in page faults than they save, measured on a 2-core VM)
_CHUNK_CELLS = 1 << 20
#: relative slack of a filter's budget check (as ``accounting.adaptive.filters``)
_ROUNDOFF = 1e-12

#: the guarantee of each reading, in words (module docstring)
GUARANTEES = {
    "epsilon": "individual (ε, δ)-DP of example i against D without it, the others' data "
               "fixed, for the composition of its per-step sensitivities taken as a fixed "
               "plan (certified PLD bracket and Rényi bound on the quantised history); under "
               "data-dependent sensitivities the individual PLD of Koskela et al. "
               "(arXiv:2209.15596), not by itself a theorem",
    "odometer": "fully adaptive ex-post bound: with probability ≥ 1 − δ the realised privacy "
                "loss of example i stays below it at every step (Rényi odometer, Ville's "
                "inequality; arXiv:2203.05481, arXiv:2008.11193)",
    "filter": "fully adaptive individual (ε, δ)-DP with the budget fixed in advance "
              "(individual Rényi filter, Feldman–Zrnic arXiv:2008.11193 Thm 3.1, §4)",
}


def _check_levels(value: Any) -> tuple[float, ...]:
    a = check_array("levels", value, lo=0.0, hi=1.0)
    if a.ndim != 1 or a.size < 1:
        raise ValueError(f"levels must be a 1-d sequence of sensitivities in [0, 1], got "
                         f"shape {a.shape}")
    if np.any(np.diff(a) <= 0):
        raise ValueError("levels must be strictly increasing")
    if a[-1] != 1.0:
        raise ValueError(f"levels must end at 1 (the clip norm: a clipped gradient), got "
                         f"{a[-1]!r}")
    return tuple(float(v) for v in a)


def check_norms(norms: Any, name: str = "norms") -> FloatArray:
    """``norms`` as a float64 array of finite numbers ≥ 0; NaN, ±∞, negatives, strings
    and booleans are refused naming ``name``."""
    return check_array(name, norms, lo=0.0)


@attrs.frozen
class SensitivityGrid:
    """Sensitivity levels 0 ≤ s_0 < … < s_{L−1} = 1 (in units of the clip norm C); a
    normalised sensitivity goes to the first level at or above it (module docstring)."""

    levels: tuple[float, ...] = attrs.field(converter=_check_levels)

    @classmethod
    def uniform(cls, n: int = DEFAULT_LEVELS) -> SensitivityGrid:
        """0, 1/n, 2/n, …, 1."""
        n = check_count("n", n, maximum=1 << 16)
        return cls(tuple(float(v) for v in np.arange(n + 1) / n))

    @property
    def size(self) -> int:
        return len(self.levels)

    def array(self) -> FloatArray:
        return np.asarray(self.levels, dtype=float)

    def index(self, norms: Any, clip: float) -> IntArray:
        """The level of each norm (any shape): ≥ min(norm, C)/C, rounded up (sound)."""
        c = check_positive("clip", clip)
        n = check_norms(norms)
        levels = self.array()
        with np.errstate(over="ignore", invalid="ignore"):
            ratio = n / c
        m = levels.size - 1
        if m & (m - 1) == 0 and np.array_equal(levels, np.arange(m + 1) / m):
            # uniform levels j/m, m a power of 2: ratio·m is exact, so ⌈ratio·m⌉ is the
            # first level ≥ ratio, as the search below, ~5× faster
            with np.errstate(invalid="ignore"):
                k = np.minimum(np.ceil(ratio * m), m).astype(np.int64)
        else:
            k = np.minimum(np.searchsorted(levels, ratio, side="left"), m)
        # fl(n/C) < s_k implies n/C < s_k; only a tie fl(n/C) = s_k may hide n/C > s_k
        tie = (levels[k] == ratio) & (n < c)
        if tie.any():
            over = ~_product_at_least(levels[k[tie]], c, n[tie])
            k[tie] = np.minimum(k[tie] + over, levels.size - 1)
        k[n >= c] = m
        k[n == 0.0] = 0
        out: IntArray = k.astype(np.int64, copy=False)
        return out


def _two_product(a: FloatArray, b: float) -> tuple[FloatArray, FloatArray]:
    """(p, e) with p = fl(a·b) and a·b = p + e exactly (Dekker 1971, Veltkamp split)."""
    p = a * b
    split = 134217729.0                      # 2^27 + 1
    ta = split * a
    ah = ta - (ta - a)
    al = a - ah
    tb = split * b
    bh = tb - (tb - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _product_at_least(a: FloatArray, b: float, n: FloatArray) -> AnyArray:
    """a·b ≥ n, decided exactly, where fl(n/b) = a (so p = fl(a·b) is within a few ulps
    of n, p − n is exact by Sterbenz's lemma and (p − n) + e has the sign of a·b − n)."""
    p, e = _two_product(a, b)
    out: AnyArray = (p - n) + e >= 0.0
    return out


def _grid(grid: SensitivityGrid | None) -> SensitivityGrid:
    if grid is None:
        return SensitivityGrid.uniform()
    if not isinstance(grid, SensitivityGrid):
        raise TypeError(f"grid must be a SensitivityGrid, got {type(grid).__name__}")
    return grid


def count_levels(norms: Any, clip: float, grid: SensitivityGrid | None = None, *,
                 out: AnyArray | None = None) -> AnyArray:
    """Per-example counts of steps per level, shape (examples, levels), from ``norms``
    of shape (steps, examples) (``norms[t, i]``: example i's gradient norm at step t,
    or its sensitivity ≤ C). Read in chunks of steps, so a ``numpy.memmap`` streams;
    ``out`` (uint32, same shape) is added to in place and returned."""
    g = _grid(grid)
    arr = np.asarray(norms) if not isinstance(norms, np.ndarray) else norms
    if arr.ndim != 2:
        raise ValueError(f"norms must have shape (steps, examples), got shape {arr.shape}")
    steps, n = arr.shape
    if n == 0 or steps == 0:
        raise ValueError(f"norms must hold at least one step and one example, got shape "
                         f"{arr.shape}")
    if out is None:
        out = np.zeros((n, g.size), dtype=np.uint32)
    elif out.shape != (n, g.size):
        raise ValueError(f"out must have shape ({n}, {g.size}), got {out.shape}")
    rows = max(1, _CHUNK_CELLS // n)
    for t in range(0, steps, rows):
        _tally(out, g.index(arr[t:t + rows], clip))
    return out


def _tally(out: AnyArray, levels: IntArray) -> None:
    """out[i, k] += #{t: levels[t, i] = k} for levels of shape (steps, examples)."""
    n, size = out.shape
    base = (np.arange(n, dtype=np.int64) * size)[None, :]
    out += np.bincount((levels + base).ravel(), minlength=n * size).reshape(
        n, size).astype(out.dtype)


def _count_block(config: dict[str, Any], seed: Any = None) -> AnyArray:
    """Task: the counts of examples [start, stop) of the (steps, examples) .npy file."""
    norms = np.load(config["path"], mmap_mode="r")
    grid = SensitivityGrid(tuple(config["levels"]))
    block = norms[:, config["start"]:config["stop"]]
    return count_levels(block, config["clip"], grid)


def counts_from_npy(path: str, clip: float, grid: SensitivityGrid | None = None, *,
                    engine: Engine | None = None, block: int = 1 << 16,
                    progress: bool = False) -> AnyArray:
    """``count_levels`` of the (steps, examples) array in the .npy file ``path``, read as
    a memmap by blocks of ``block`` examples, one task per block on ``engine`` (serial,
    local processes or Dask; every worker must see ``path``). Memory: the counts
    (examples × levels) and one block's chunk at a time."""
    g = _grid(grid)
    c = check_positive("clip", clip)
    block = check_count("block", block)
    head = np.load(path, mmap_mode="r")
    if head.ndim != 2:
        raise ValueError(f"{path} must hold an array of shape (steps, examples), got "
                         f"shape {head.shape}")
    n = int(head.shape[1])
    del head
    tasks = [{"path": str(path), "start": a, "stop": min(a + block, n), "clip": c,
              "levels": list(g.levels)} for a in range(0, n, block)]
    parts = map_tasks(_count_block, tasks, engine=engine, seed=0, progress=progress,
                      label="norm blocks")
    out: AnyArray = np.concatenate(parts, axis=0)
    return out


def coarsen_counts(counts: Any, every: int) -> AnyArray:
    """Counts whose history dominates ``counts`` (module docstring): each
    c_k = #{steps at level ≥ k}, k ≥ 1, rounded up to a multiple of ``every``."""
    every = check_count("every", every)
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 2:
        raise ValueError(f"counts must have shape (examples, levels), got {c.shape}")
    above = np.cumsum(c[:, :0:-1], axis=1)[:, ::-1]          # c_k for k = 1 … L−1
    above = -(-above // every) * every
    coarse = np.zeros_like(c)
    coarse[:, 1:] = above - np.concatenate([above[:, 1:], np.zeros((c.shape[0], 1),
                                                                   np.int64)], axis=1)
    coarse[:, 0] = np.maximum(c.sum(axis=1) - coarse[:, 1:].sum(axis=1), 0)
    out: AnyArray = coarse.astype(np.uint32)
    return out


def merge_levels(counts: Any, grid: SensitivityGrid, coarse: SensitivityGrid) -> AnyArray:
    """Counts on ``grid`` moved to ``coarse``: each level to the first coarse level at or
    above it (sound: a larger sensitivity only adds loss, module docstring)."""
    c = np.asarray(counts)
    if c.ndim != 2 or c.shape[1] != grid.size:
        raise ValueError(f"counts must have shape (examples, {grid.size}), got {c.shape}")
    target = np.searchsorted(coarse.array(), grid.array(), side="left")
    out: AnyArray = np.zeros((c.shape[0], coarse.size), dtype=np.uint32)
    for k, j in enumerate(target):
        out[:, j] += c[:, k].astype(np.uint32)
    return out


class HistoryCounter:
    """Streams per-step norms of ``examples`` examples into their level counts.

    ``add(norms)``: one step (shape (examples,)) or several (shape (steps, examples));
    ``add(norms, indices=idx)``: norms known only for the examples ``idx`` (e.g. the
    batch, whose per-sample gradients were computed); every other example is counted
    at the top level, its worst case, which is sound.
    """

    def __init__(self, examples: int, clip: float, grid: SensitivityGrid | None = None
                 ) -> None:
        self.examples = check_count("examples", examples, maximum=1 << 40)
        self.clip = check_positive("clip", clip)
        self.grid = _grid(grid)
        self.counts: AnyArray = np.zeros((self.examples, self.grid.size), dtype=np.uint32)
        self.steps = 0

    def add(self, norms: Any, *, indices: Any = None) -> None:
        arr = np.asarray(norms)
        if indices is None:
            block = arr[None, :] if arr.ndim == 1 else arr
            if block.ndim != 2 or block.shape[1] != self.examples:
                raise ValueError(f"norms must have shape ({self.examples},) or (steps, "
                                 f"{self.examples}), got shape {arr.shape}")
            count_levels(block, self.clip, self.grid, out=self.counts)
            self.steps += block.shape[0]
            return
        idx = np.asarray(indices)
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise TypeError("indices must be a 1-d array of example indices (integers)")
        if idx.size and (idx.min() < 0 or idx.max() >= self.examples):
            raise ValueError(f"indices must lie in [0, {self.examples}), got "
                             f"[{idx.min()}, {idx.max()}]")
        if np.unique(idx).size != idx.size:
            raise ValueError("indices must not repeat an example")
        block = arr[None, :] if arr.ndim == 1 else arr
        if block.ndim != 2 or block.shape[1] != idx.size:
            raise ValueError(f"norms must have shape ({idx.size},) or (steps, {idx.size}) "
                             f"for {idx.size} indices, got shape {arr.shape}")
        levels = np.full((block.shape[0], self.examples), self.grid.size - 1, dtype=np.int64)
        levels[:, idx] = self.grid.index(block, self.clip)
        _tally(self.counts, levels)
        self.steps += block.shape[0]

    def add_worst(self, steps: int = 1) -> None:
        """``steps`` steps at the top level for every example (norms unknown)."""
        steps = check_count("steps", steps)
        self.counts[:, -1] += np.uint32(steps)
        self.steps += steps

    def refine(self, norms: Any, *, indices: Any = None) -> None:
        """Move one step counted at the top level (``add_worst``) of the examples
        ``indices`` (default: all) to the levels of ``norms``, their norms at it."""
        arr = np.asarray(norms)
        idx = np.arange(self.examples) if indices is None else np.asarray(indices)
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise TypeError("indices must be a 1-d array of example indices (integers)")
        if arr.shape != idx.shape:
            raise ValueError(f"norms must have one entry per example ({idx.size}), got "
                             f"shape {arr.shape}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.examples):
            raise ValueError(f"indices must lie in [0, {self.examples}), got "
                             f"[{idx.min()}, {idx.max()}]")
        if np.unique(idx).size != idx.size:
            raise ValueError("indices must not repeat an example")
        if np.any(self.counts[idx, -1] == 0):
            raise ValueError("refine moves a step counted at the worst case; these "
                             "examples have none")
        levels = self.grid.index(arr, self.clip)
        self.counts[idx, -1] -= np.uint32(1)
        np.add.at(self.counts, (idx, levels), np.uint32(1))

    def segment(self, q: float, sigma: float) -> Segment:
        """These counts as a ``Segment`` at rate ``q`` and noise multiplier ``sigma``."""
        return Segment(q, sigma, self.grid, self.counts.copy())


def _check_q(q: Any) -> float:
    return check_real("q", q, lo=0.0, hi=1.0, lo_open=True)


def _check_sigma(sigma: Any) -> float:
    return check_real("sigma", sigma, lo=0.0, lo_open=True)


@attrs.frozen(eq=False)
class Segment:
    """Steps at one sampling rate ``q`` and noise multiplier ``sigma`` (noise std / C):
    ``counts[i, k]`` steps of example i at level k of ``grid``."""

    q: float = attrs.field(converter=_check_q)
    sigma: float = attrs.field(converter=_check_sigma)
    grid: SensitivityGrid
    counts: AnyArray = attrs.field(repr=False)

    def __attrs_post_init__(self) -> None:
        c = np.asarray(self.counts)
        if c.ndim != 2 or c.shape[1] != self.grid.size:
            raise ValueError(f"counts must have shape (examples, {self.grid.size}), got "
                             f"{c.shape}")
        if c.dtype.kind not in "iu" or (c.dtype.kind == "i" and c.size and c.min() < 0):
            raise ValueError("counts must be non-negative integers")

    def mechanism(self, k: int) -> SubsampledGaussian:
        """The step's mechanism at level k: sensitivity s_k, noise std ``sigma``."""
        return SubsampledGaussian(q=self.q, sigma=self.sigma, sensitivity=self.grid.levels[k])


def level_costs(segment: Segment, orders: FloatArray, used: Any = None) -> FloatArray:
    """D_α at ``orders`` of one step at each level (shape (levels, orders)): the
    certified Rényi curve of the subsampled Gaussian, the larger of both directions
    (``accounting.adaptive.filters.rdp_cost``); rows of unused levels (``used`` False)
    are left at 0, level 0 costs 0 when s_0 = 0."""
    table = np.zeros((segment.grid.size, orders.size))
    for k in range(segment.grid.size):
        if (used is not None and not used[k]) or segment.grid.levels[k] == 0.0:
            continue
        table[k] = rdp_cost(segment.mechanism(k), orders)
    return table


def history_interval(config: dict[str, Any], seed: Any = None) -> list[float]:
    """Task: the certified PLD bracket [lower, upper] of ε(δ) of one history, given as
    ``uses`` = [[q, sigma, sensitivity, count], …], at ``delta`` on grid ``step``."""
    ledger = _ledger(config["uses"])
    if not ledger.entries:
        return [0.0, 0.0]
    lo, hi = Accountant.of(ledger, config["step"]).epsilon_interval(config["delta"])
    return [float(lo), float(hi)]


def _uses(segments: Sequence[Segment], grids: Sequence[SensitivityGrid], row: AnyArray
          ) -> list[list[float]]:
    """[[q, sigma, sensitivity, count], …] of one history (counts on ``grids`` side by
    side, one grid per segment)."""
    out, j = [], 0
    for seg, grid in zip(segments, grids):
        for k in range(grid.size):
            n = int(row[j + k])
            if n:
                out.append([seg.q, seg.sigma, grid.levels[k], n])
        j += grid.size
    return out


def _rdp_epsilon(spent: FloatArray, orders: FloatArray, delta: float) -> FloatArray:
    """min over orders of the improved conversion (``improved_epsilon``) of each row."""
    t = orders - 1.0
    eps = improved_epsilon(spent * t, t, math.log(delta))
    out: FloatArray = np.maximum(np.min(eps, axis=-1), 0.0)
    return out


@attrs.frozen(eq=False)
class IndividualReport:
    """Per-example ε of one run (module docstring, ``GUARANTEES``).

    ``index[i]``: example i's distinct history on the fine grid; per such history j:
    ``histories[j]`` (counts, segments side by side), ``rdp[j]`` (certified Rényi ε),
    ``odometer[j]``. With ``pld``: ``pld_index[i]``, ``pld_histories`` (the histories
    moved to the PLD's grid and coarsened) and their certified brackets
    ``pld_lower``/``pld_upper``. ``worst_*``: the same for the worst case (every step
    at the clip norm), which is the aggregate accountant's answer."""

    delta: float
    segments: tuple[Segment, ...] = attrs.field(repr=False)
    index: AnyArray = attrs.field(repr=False)
    histories: AnyArray = attrs.field(repr=False)
    rdp: FloatArray = attrs.field(repr=False)
    odometer: FloatArray = attrs.field(repr=False)
    worst_rdp: float
    worst_odometer: float
    step: float
    pld_grid: SensitivityGrid | None = attrs.field(default=None, repr=False)
    pld_index: AnyArray | None = attrs.field(default=None, repr=False)
    pld_histories: AnyArray | None = attrs.field(default=None, repr=False)
    pld_lower: FloatArray | None = attrs.field(default=None, repr=False)
    pld_upper: FloatArray | None = attrs.field(default=None, repr=False)
    worst_pld: tuple[float, float] | None = None
    seconds: float = 0.0

    @property
    def examples(self) -> int:
        return int(self.index.size)

    @property
    def distinct(self) -> int:
        """Distinct histories on the fine grid (the Rényi and odometer work)."""
        return int(self.histories.shape[0])

    @property
    def pld_distinct(self) -> int:
        """Distinct histories on the PLD's grid (one PLD each); 0 without ``pld``."""
        return 0 if self.pld_histories is None else int(self.pld_histories.shape[0])

    def rdp_epsilon(self) -> FloatArray:
        """Per example: the certified Rényi bound of reading 1."""
        out: FloatArray = self.rdp[self.index]
        return out

    def epsilon(self) -> FloatArray:
        """Per example: the smaller of the PLD's certified upper end and the Rényi bound
        (both upper bounds of reading 1, ``GUARANTEES["epsilon"]``)."""
        up = self.rdp_epsilon()
        if self.pld_upper is not None and self.pld_index is not None:
            up = np.minimum(up, self.pld_upper[self.pld_index])
        return up

    def epsilon_interval(self) -> tuple[FloatArray, FloatArray]:
        """Per example (lower, upper) of reading 1: the certified PLD bracket, lower end
        of the history on the PLD's grid (rounded up, module docstring), upper end as
        ``epsilon``; needs ``pld=True``."""
        if self.pld_lower is None or self.pld_index is None:
            raise ValueError("this report has no PLD brackets: build it with pld=True")
        return np.minimum(self.pld_lower[self.pld_index], self.epsilon()), self.epsilon()

    def odometer_epsilon(self) -> FloatArray:
        """Per example: the fully adaptive ex-post bound (``GUARANTEES["odometer"]``)."""
        out: FloatArray = self.odometer[self.index]
        return out

    def worst_epsilon(self) -> float:
        """The worst case's ε (every step at the clip norm), as ``epsilon``."""
        return (self.worst_rdp if self.worst_pld is None
                else min(self.worst_rdp, self.worst_pld[1]))

    def digests(self) -> list[str]:
        """The SHA-256 of each distinct history's counts (its canonical bytes)."""
        return [hashlib.sha256(np.ascontiguousarray(h, dtype="<u4").tobytes()).hexdigest()
                for h in self.histories]

    def accountant(self, example: int) -> Accountant:
        """Example ``example``'s own composition (its history on the fine grid) as a
        core ``Accountant``: every curve kind of it (``curve(PLD)``, ``curve(RDP)``, …)."""
        i = check_count("example", example, minimum=0, maximum=self.examples - 1)
        grids = [s.grid for s in self.segments]
        return Accountant.of(_ledger(_uses(self.segments, grids,
                                           self.histories[self.index[i]])), self.step)

    def check_budget(self, epsilon: float, *, reading: str = "epsilon") -> None:
        """A ValueError naming how many examples, and the first, whose ε (``reading``:
        "epsilon" or "odometer") exceeds ``epsilon``."""
        eps = check_real("epsilon", epsilon, lo=0.0)
        if reading not in ("epsilon", "odometer"):
            raise ValueError(f"reading must be 'epsilon' or 'odometer', got {reading!r}")
        values = self.epsilon() if reading == "epsilon" else self.odometer_epsilon()
        over = np.flatnonzero(values > eps)
        if over.size:
            i = int(over[0])
            raise ValueError(f"budget exceeded: {over.size} of {self.examples} examples have "
                             f"{reading} ε above {eps:g} at δ = {self.delta:g} (first: example "
                             f"{i}, ε = {values[i]:.6g})")

    def summary(self) -> dict[str, float]:
        """Quantiles of the per-example ε against the worst case."""
        e = self.epsilon()
        return {"examples": float(self.examples), "distinct": float(self.distinct),
                "pld_distinct": float(self.pld_distinct),
                "min": float(e.min()), "median": float(np.median(e)),
                "p90": float(np.quantile(e, 0.9)), "max": float(e.max()),
                "worst_case": self.worst_epsilon()}


def _distinct(rows: AnyArray) -> tuple[AnyArray, AnyArray]:
    """(distinct rows, index of each row's distinct row), by their bytes."""
    c = np.ascontiguousarray(rows)
    keys = c.view(np.dtype((np.void, c.dtype.itemsize * c.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return c[first], inverse.astype(np.int64).ravel()


def _ledger(uses: list[list[float]]) -> Ledger:
    ledger = Ledger(())
    for q, sigma, s, n in uses:
        if s > 0 and n > 0:
            ledger = ledger + Ledger.of(SubsampledGaussian(q=q, sigma=sigma, sensitivity=s),
                                        int(n))
    return ledger


def account_individuals(segments: Segment | Iterable[Segment], *, delta: float,
                        orders: Any = DEFAULT_ORDERS, pld: bool = False,
                        pld_grid: SensitivityGrid | None = None, coarsen: int | None = None,
                        step: float = DEFAULT_STEP, engine: Engine | None = None,
                        max_pld: int = 20_000, progress: bool = False) -> IndividualReport:
    """Every example's ε at ``delta`` from its level counts (one ``Segment`` per run of
    steps at one q and σ, all of the same examples), each distinct history once.

    The Rényi bound and the odometer take one matrix product (distinct histories ×
    per-level costs at ``orders``). ``pld=True`` adds the certified PLD bracket of
    every distinct history on ``pld_grid`` (default ``PLD_LEVELS`` uniform levels; the
    fine counts are moved up to it, ``merge_levels``, and with ``coarsen=every``
    coarsened, ``coarsen_counts``), one task each on ``engine`` — refused beyond
    ``max_pld`` of them. The worst case (every step at the clip norm) is beside."""
    t0 = time.perf_counter()
    segs = (segments,) if isinstance(segments, Segment) else tuple(segments)
    if not segs or not all(isinstance(s, Segment) for s in segs):
        raise TypeError("segments must be a Segment or a non-empty sequence of Segments")
    n = segs[0].counts.shape[0]
    if any(s.counts.shape[0] != n for s in segs):
        raise ValueError(f"every segment must count the same examples ({n}), got "
                         f"{[s.counts.shape[0] for s in segs]}")
    dl = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    a = check_orders(orders)
    step = check_step(step)
    if not isinstance(pld, bool):
        raise TypeError(f"pld must be True or False, got {pld!r}")
    max_pld = check_count("max_pld", max_pld)
    if coarsen is not None:
        coarsen = check_count("coarsen", coarsen)
    parts = [np.asarray(s.counts, dtype=np.uint32) for s in segs]
    histories, index = _distinct(np.concatenate(parts, axis=1))
    spent = np.zeros((histories.shape[0], a.size))
    worst_spent = np.zeros(a.size)
    j = 0
    for seg in segs:
        block = histories[:, j:j + seg.grid.size].astype(float)
        table = level_costs(seg, a, used=block.sum(axis=0) > 0)
        top = level_costs(seg, a, used=np.arange(seg.grid.size) == seg.grid.size - 1)[-1]
        spent += block @ table
        worst_spent += float(block.sum(axis=1).max()) * top
        j += seg.grid.size
    report = IndividualReport(
        dl, segs, index, histories, _rdp_epsilon(spent, a, dl), odometer_epsilon(a, spent, dl),
        float(_rdp_epsilon(worst_spent[None, :], a, dl)[0]),
        float(odometer_epsilon(a, worst_spent, dl)), step)
    if pld:
        coarse = SensitivityGrid.uniform(PLD_LEVELS) if pld_grid is None else _grid(pld_grid)
        moved = [merge_levels(p, s.grid, coarse) for p, s in zip(parts, segs)]
        if coarsen is not None:
            moved = [coarsen_counts(m, coarsen) for m in moved]
        pld_histories, pld_index = _distinct(np.concatenate(moved, axis=1))
        if pld_histories.shape[0] > max_pld:
            raise ValueError(f"{pld_histories.shape[0]} distinct histories exceed max_pld "
                             f"= {max_pld}: coarsen them (coarsen=…), use a coarser "
                             f"pld_grid, raise max_pld or ask for pld=False")
        grids = [coarse] * len(segs)
        tasks = [{"uses": _uses(segs, grids, row), "delta": dl, "step": step}
                 for row in pld_histories]
        worst = [[s.q, s.sigma, 1.0, int(p.sum(axis=1).max())] for s, p in zip(segs, parts)]
        tasks.append({"uses": worst, "delta": dl, "step": step})
        vals = np.asarray(map_tasks(history_interval, tasks, engine=engine, seed=0,
                                    progress=progress, label="histories"), dtype=float)
        report = attrs.evolve(report, pld_grid=coarse, pld_index=pld_index,
                              pld_histories=pld_histories, pld_lower=vals[:-1, 0],
                              pld_upper=vals[:-1, 1],
                              worst_pld=(float(vals[-1, 0]), float(vals[-1, 1])))
    return attrs.evolve(report, seconds=time.perf_counter() - t0)


def individual_epsilons(norms: Any, *, clip: float, q: float, sigma: float, delta: float,
                        grid: SensitivityGrid | None = None, **options: Any
                        ) -> IndividualReport:
    """``account_individuals`` of ``norms`` (shape (steps, examples): gradient norms, or
    sensitivities ≤ ``clip``) at rate ``q`` and noise multiplier ``sigma`` (noise std
    / ``clip``); ``options`` as there."""
    g = _grid(grid)
    counts = count_levels(norms, clip, g)
    return account_individuals(Segment(q, sigma, g, counts), delta=delta, **options)


class IndividualFilter:
    """Feldman and Zrnic's individual Rényi filter (arXiv:2008.11193, Thm 3.1 per
    example, §4) for DP-SGD over ``examples`` examples, budget (``epsilon``, ``delta``).

    The budget is one Rényi order α* and B(α*) converting to (ε, δ), chosen for the
    worst-case step (``RDPFilter.for_target`` with that plan). ``step(norms)`` takes
    the norms of the next step, *before* it runs (all examples, or ``indices`` and the
    rest counted at the worst case), and returns the mask of examples it may use: those
    whose spent + cost stays within B. The caller must leave every other example out of
    the step (its gradient zeroed: sensitivity 0, cost 0). An example refused once is
    refused for good. Guarantee: ``GUARANTEES["filter"]``, ``epsilon()``.
    """

    def __init__(self, examples: int, *, epsilon: float, delta: float, q: float,
                 sigma: float, clip: float, grid: SensitivityGrid | None = None,
                 orders: Any = DEFAULT_ORDERS) -> None:
        self.examples = check_count("examples", examples, maximum=1 << 40)
        self.clip = check_positive("clip", clip)
        self.grid = _grid(grid)
        seg = Segment(q, sigma, self.grid, np.zeros((1, self.grid.size), dtype=np.uint32))
        plan = seg.mechanism(self.grid.size - 1)
        self.rdp_filter = RDPFilter.for_target(epsilon, delta, orders, plan=plan)
        self.order = float(self.rdp_filter.orders[0])
        self.budget = float(self.rdp_filter.budget[0])
        self.delta = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        self.costs = level_costs(seg, np.array([self.order]))[:, 0]
        self.spent: FloatArray = np.zeros(self.examples)
        self.active = np.ones(self.examples, dtype=bool)
        self.steps = 0

    def step(self, norms: Any, *, indices: Any = None) -> AnyArray:
        """The mask of examples admitted to the next step (and count their costs)."""
        if indices is None:
            arr = np.asarray(norms)
            if arr.shape != (self.examples,):
                raise ValueError(f"norms must have shape ({self.examples},), got "
                                 f"{arr.shape}")
            level = self.grid.index(arr, self.clip)
        else:
            idx = np.asarray(indices)
            if idx.ndim != 1 or idx.dtype.kind not in "iu":
                raise TypeError("indices must be a 1-d array of example indices (integers)")
            arr = np.asarray(norms)
            if arr.shape != idx.shape:
                raise ValueError(f"norms must have one entry per index ({idx.size}), got "
                                 f"shape {arr.shape}")
            level = np.full(self.examples, self.grid.size - 1, dtype=np.int64)
            level[idx] = self.grid.index(arr, self.clip)
        cost = self.costs[level]
        ok = self.active & (self.spent + cost <= self.budget * (1.0 + _ROUNDOFF))
        self.spent[ok] += cost[ok]
        self.active &= ok
        self.steps += 1
        return ok.copy()

    def remaining(self) -> FloatArray:
        """B − spent per example (≥ 0)."""
        out: FloatArray = np.maximum(self.budget - self.spent, 0.0)
        return out

    def epsilon(self) -> float:
        """ε at the filter's δ that every example is guaranteed (the budget converted;
        the roundoff slack of the admission test counted)."""
        held = max(self.budget, float(self.spent.max(initial=0.0)))
        return float(_rdp_epsilon(np.array([[held]]), np.array([self.order]), self.delta)[0])

    def __repr__(self) -> str:
        return (f"IndividualFilter(α = {self.order:g}, B = {self.budget:.4g}, "
                f"{int(self.active.sum())}/{self.examples} active, {self.steps} steps)")
