"""Canary scores to guesses: the checked input, the guess counts and the abstention grid.

The one-run game (Steinke, Nasr, Jagielski, arXiv:2305.08846, § 2, Alg. 1): each of m
canaries is included in the training set independently with probability 1/2; after
the one run the auditor scores every canary (higher: more likely included) and
guesses "included" for the ``k_plus`` highest scores, "excluded" for the ``k_minus``
lowest and abstains on the rest. Only the number of guesses r = k₊ + k₋ and the
number v of correct ones enter the analyses, so the guess rule must be fixed before
the scores are seen: a fixed abstention, or a grid of them paid for by a union bound
(Bonferroni: each of the G candidates is tested at level/G).

Scores are read as float64; NaN/±∞, inclusion bits other than 0/1, m = 0 and
mismatched lengths are refused with a ValueError naming the parameter. Ties among
scores are broken by a seeded random permutation, so a guess never depends on the
order in which the canaries were listed.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from accounting.validation import check_count

__all__ = ["Guesses", "check_scores", "count_correct", "abstention_grid", "GRID_FRACTIONS"]

#: the default grid of guess counts r, as fractions of m (each a candidate, paid for)
GRID_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def check_scores(scores: Any, inclusion: Any) -> tuple[np.ndarray, np.ndarray]:
    """``scores`` as a finite float64 vector and ``inclusion`` as a 0/1 int vector of the
    same length m ≥ 1 (a list, an array of any real or boolean dtype)."""
    s = _vector("scores", scores)
    b = _vector("inclusion", inclusion)
    if s.size != b.size:
        raise ValueError(f"scores and inclusion must have the same length m, got "
                         f"{s.size} scores and {b.size} inclusion bits")
    if s.dtype.kind not in "fiu":
        raise ValueError(f"scores must be real numbers, got dtype {s.dtype}")
    s = s.astype(np.float64)
    bad = ~np.isfinite(s)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"scores must be finite, got {s[i].item()} at index {i}")
    if b.dtype.kind not in "biuf":
        raise ValueError(f"inclusion must be 0/1 bits, got dtype {b.dtype}")
    bits = b.astype(np.float64)
    wrong = ~((bits == 0.0) | (bits == 1.0))
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise ValueError(f"inclusion must hold only 0 and 1, got {b[i].item()!r} at index {i}")
    return s, bits.astype(np.int64)


def _vector(name: str, value: Any) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(value).__name__}")
    arr = np.asarray(value)
    if arr.dtype.hasobject:
        raise TypeError(f"{name} must be numbers, got Python objects")
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 2 and 1 in arr.shape else arr
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a vector of m values, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must hold m >= 1 canaries, got m = 0")
    return arr


@attrs.frozen
class Guesses:
    """One guess rule applied: ``k_plus`` "included" and ``k_minus`` "excluded" guesses
    among m canaries, ``correct`` of the r = k₊ + k₋ guesses right."""

    m: int
    k_plus: int
    k_minus: int
    correct: int

    def __attrs_post_init__(self) -> None:
        for name in ("m", "k_plus", "k_minus", "correct"):
            check_count(name, getattr(self, name), minimum=0)
        if not 0 <= self.correct <= self.k_plus + self.k_minus <= self.m:
            raise ValueError(f"need 0 <= correct <= k_plus + k_minus <= m, got {self.correct}, "
                             f"{self.k_plus} + {self.k_minus}, {self.m}")

    @property
    def r(self) -> int:
        return self.k_plus + self.k_minus

    @property
    def abstain(self) -> int:
        return self.m - self.r

    def to_dict(self) -> dict[str, int]:
        return {"m": self.m, "guesses": self.r, "k_plus": self.k_plus, "k_minus": self.k_minus,
                "abstain": self.abstain, "correct": self.correct}


def order(scores: np.ndarray, seed: int) -> np.ndarray:
    """Indices of ``scores`` from the highest to the lowest, ties in a seeded random order."""
    perm = np.random.default_rng(seed).permutation(scores.size)
    return perm[np.argsort(-scores[perm], kind="stable")]


def count_correct(scores: np.ndarray, inclusion: np.ndarray, splits: list[tuple[int, int]],
                  seed: int = 0) -> list[Guesses]:
    """The correct-guess count of each (k₊, k₋) in ``splits`` (k₊ + k₋ <= m): the k₊ top
    scores guessed included, the k₋ bottom ones excluded."""
    m = scores.size
    ranked = inclusion[order(scores, seed)]
    top = np.concatenate(([0], np.cumsum(ranked)))                # included among the top j
    bottom = np.concatenate(([0], np.cumsum(1 - ranked[::-1])))    # excluded among the bottom j
    out = []
    for kp, km in splits:
        if kp < 0 or km < 0 or kp + km > m:
            raise ValueError(f"guesses must satisfy 0 <= k_plus + k_minus <= m = {m}, "
                             f"got k_plus = {kp}, k_minus = {km}")
        out.append(Guesses(m, kp, km, int(top[kp] + bottom[km])))
    return out


def split_of(r: int, sides: str) -> tuple[int, int]:
    """(k₊, k₋) of r guesses: all "included" (``sides="plus"``) or half and half
    (``"both"``, the odd one an "included")."""
    if sides == "plus":
        return r, 0
    return r - r // 2, r // 2


def abstention_grid(m: int, abstain: int | None, sides: str,
                    fractions: tuple[float, ...] = GRID_FRACTIONS) -> list[tuple[int, int]]:
    """The guess splits to try: one, m − ``abstain`` guesses, when the abstention is fixed
    in advance; else r = ⌈f·m⌉ for f in ``fractions`` (distinct, at least 1)."""
    m = check_count("m", m)
    if abstain is not None:
        a = check_count("abstain", abstain, minimum=0, maximum=m - 1)
        return [split_of(m - a, sides)]
    rs = sorted({min(m, max(1, math.ceil(f * m))) for f in fractions})
    return [split_of(r, sides) for r in rs]
