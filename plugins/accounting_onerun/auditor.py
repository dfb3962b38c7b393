"""The one-run auditor: certify an ε lower bound from per-canary scores of one run.

This is the object the plugin registers under the name "onerun". It offers the score
entry point of ``accounting.registry.auditor.ScoreAuditor``:

* ``audit_scores(scores, inclusion, *, abstain=None, epsilon=None, delta=None,
  level=None, analysis=None, seed=None, **settings)``: ``scores[j]`` the auditor's
  score of canary j (higher: more likely included), ``inclusion[j]`` ∈ {0, 1} whether
  it was included (each independently with probability 1/2, before the run);

a whole claimed curve (``claim=``: a registered mechanism instance or a curve of the
library, tested by the f-DP analysis on its sound side, ``fdp.curve_blow_up``) beside
the family's bound; and, for a training function, ``audit_training(train, *, m, ...)``, which draws the
inclusion bits itself and calls ``train(inclusion, rng)`` once for the m scores.

Two analyses: ``analysis="fdp"`` (default; arXiv:2410.22235, ``fdp``) in the family
``family="gdp"`` (default) or ``"eps-delta"``, and ``analysis="eps-delta"``
(arXiv:2305.08846 Thm 3.1, ``steinke``). The abstention is either fixed in advance
(``abstain``: the number of canaries not guessed) or, by default, the best of a grid
of guess counts, each tested at level / (grid size) (Bonferroni), so the reported
bound holds at ``level`` either way. The guesses are the k₊ top scores ("included")
and, with ``sides="both"`` (default), as many bottom scores ("excluded").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.validation import check_count, check_probability, check_real

from .guesses import GRID_FRACTIONS, Guesses, abstention_grid, check_scores, count_correct
from .report import Candidate, OneRunReport

__all__ = ["OneRunAuditor", "DEFAULT_AUDITOR", "ANALYSES", "SIDES"]

ANALYSES = ("fdp", "eps-delta")
SIDES = ("both", "plus")
_SETTINGS = ("family", "sides", "grid", "claim")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


@attrs.frozen
class OneRunAuditor:
    """Defaults of the audit; each can be overridden per call as a keyword.

    * ``level``: probability that the bound exceeds the run's true ε (family's units);
    * ``delta``: the δ of the (ε, δ) statement (and of the GDP family's ε at δ);
    * ``analysis``: "fdp" (arXiv:2410.22235) or "eps-delta" (arXiv:2305.08846);
    * ``family``: the claimed family of the f-DP analysis, "gdp" or "eps-delta";
    * ``sides``: "both" (top scores guessed in, as many bottom ones out) or "plus";
    * ``grid``: the guess counts tried without a fixed abstention, as fractions of m.
    """

    name = "onerun"
    #: the entry points this auditor is the natural choice for
    primary_methods = ("audit_scores",)

    level: float = 0.05
    delta: float = 1e-5
    analysis: str = "fdp"
    family: str = "gdp"
    sides: str = "both"
    grid: tuple[float, ...] = GRID_FRACTIONS

    def audit_scores(self, scores: Any, inclusion: Any, *, abstain: int | None = None,
                     epsilon: float | None = None, delta: float | None = None,
                     level: float | None = None, analysis: str | None = None,
                     seed: int | None = None, **settings: Any) -> OneRunReport:
        """Audit one run from its canary scores (module doc); returns a ``OneRunReport``."""
        # scipy.stats and scipy.optimize take about a second to import: not at registration
        from . import fdp
        t0 = time.perf_counter()
        unknown = sorted(set(settings) - set(_SETTINGS))
        if unknown:
            raise TypeError(f"audit_scores: unknown setting(s) {', '.join(unknown)}; the "
                            f"settings are {', '.join(_SETTINGS)}")
        level = check_probability("level", self.level if level is None else level)
        delta = check_real("delta", self.delta if delta is None else delta, lo=0.0, hi=1.0,
                           hi_open=True)
        analysis = _choice("analysis", self.analysis if analysis is None else analysis,
                           ANALYSES)
        family = _choice("family", settings.get("family", self.family), fdp.FAMILIES)
        if analysis == "eps-delta":
            if settings.get("family", "eps-delta") != "eps-delta":
                raise ValueError(f"family: the (ε, δ) analysis has no family to choose, got "
                                 f"{family!r}; use analysis='fdp' for it")
            family = "eps-delta"
        if family == "gdp" and delta <= 0.0:
            raise ValueError("delta must be > 0 for the GDP family (its ε at δ = 0 is "
                             "infinite), got 0")
        sides = _choice("sides", settings.get("sides", self.sides), SIDES)
        grid = tuple(settings.get("grid", self.grid))
        for f in grid:
            check_real("grid fraction", f, lo=0.0, hi=1.0, lo_open=True)
        if not grid:
            raise ValueError("grid must hold at least one fraction in (0, 1]")
        if epsilon is not None:
            epsilon = check_real("epsilon", epsilon, lo=0.0)
        seed = 0 if seed is None else check_count("seed", seed, minimum=0)
        F, label, curve_rejected = None, None, None
        if settings.get("claim") is not None:
            if analysis != "fdp":
                raise ValueError("claim: a whole claimed curve is tested by the f-DP "
                                 "analysis only (analysis='fdp')")
            from accounting_rkrd.claims import as_claim
            curve = as_claim(settings["claim"])
            F, label = fdp.curve_blow_up(curve.beta), curve.describe()
        s, b = check_scores(scores, inclusion)
        m = s.size
        splits = abstention_grid(m, abstain, sides, grid)
        each = level / len(splits)
        found = count_correct(s, b, splits, seed)
        candidates = tuple(self._candidate(g, analysis, family, delta, each) for g in found)
        if F is not None:
            curve_rejected = any(bool(fdp.rejects(F, g.m, g.r, g.correct, each, 1)[0])
                                 for g in found)
        return OneRunReport(
            analysis=analysis, family=family, delta=delta, level=level, m=m,
            included=int(b.sum()), candidates=candidates,
            abstention=(f"fixed, {abstain} of {m} not guessed" if abstain is not None else
                        f"best of {len(splits)} guess counts, paid for (Bonferroni)"),
            epsilon=epsilon, seed=seed, sides=sides, claim=label,
            claim_rejected=curve_rejected, seconds=time.perf_counter() - t0)

    @staticmethod
    def report_from_dict(data: Any) -> OneRunReport:
        """A report saved by ``accounting.save`` (``OneRunReport.from_dict``)."""
        return OneRunReport.from_dict(data)

    def audit_training(self, train: Callable[[np.ndarray, np.random.Generator], Any], *,
                       m: int, seed: int | None = None, **options: Any) -> OneRunReport:
        """Draw m inclusion bits (each 1 w.p. 1/2, from ``seed``), run ``train(inclusion,
        rng)`` once for the m canary scores, and audit them (``audit_scores`` options)."""
        m = check_count("m", m)
        seed = 0 if seed is None else check_count("seed", seed, minimum=0)
        rng = np.random.default_rng(seed)
        inclusion = rng.integers(0, 2, size=m)
        scores = train(inclusion.astype(bool), rng)
        return self.audit_scores(scores, inclusion, seed=seed, **options)

    @staticmethod
    def _candidate(g: Guesses, analysis: str, family: str, delta: float,
                   level: float) -> Candidate:
        from . import fdp, steinke

        def certify(correct: int) -> tuple[float, float]:
            if analysis == "eps-delta":
                e = steinke.epsilon_lower_bound(g.m, g.r, correct, delta, level)
                return e, e
            p = fdp.largest_rejected(family, g.m, g.r, correct, level, delta)
            return (fdp.gdp_epsilon(p, delta) if family == "gdp" else p), p
        eps, param = certify(g.correct)
        top, _ = certify(g.r)
        return Candidate(g, eps, param, top)


#: the auditor the plugin registers
DEFAULT_AUDITOR = OneRunAuditor()
