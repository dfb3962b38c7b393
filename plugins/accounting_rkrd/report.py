"""The audit report: what was tested, the numbers, the decision and how to reproduce it.

A frozen record that prints as a table (``str``) and serialises to JSON (``to_dict``;
infinities as the strings "inf"/"-inf", since JSON has none).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import attrs

from .bootstrap import BootstrapResult
from .estimator import RKRDSweep
from .lower_bound import LowerBound

__all__ = ["AuditReport", "json_safe"]


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars/arrays as Python ones and ±∞/NaN as strings."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist"):
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _num(x: float, digits: int = 4) -> str:
    return "inf" if math.isinf(x) else f"{x:.{digits}g}"


@attrs.frozen
class AuditReport:
    """Result of auditing a claim (ε, δ) from samples of M(D) and M(D′).

    ``rejected`` is True when the certified lower bound exceeds ε or the finite-sample
    RKRDP test at λ₀ = δe^{−ε} rejects; under an (ε, δ)-DP mechanism this happens with
    probability at most ``level`` = ``level_lower_bound`` + ``level_threshold``.
    ``statistics[i]`` is D̂_{α_i, λ₀} on all samples (descriptive: D̂ > ε is no test,
    D̂ is biased upward at small λ); ``thresholds[i]`` is the test's rejection
    threshold for D̂ on the held-out parts, ``held_out_statistics[i]`` (inf: vacuous).
    """

    epsilon: float
    delta: float
    lambda0: float
    level: float
    level_lower_bound: float
    level_threshold: float
    alphas: tuple
    statistics: tuple
    held_out_statistics: tuple
    thresholds: tuple
    lower_bound: LowerBound
    seed: int
    settings: dict = attrs.field(eq=False)
    bootstrap: Optional[BootstrapResult] = None
    sweep: Optional[RKRDSweep] = attrs.field(default=None, eq=False, repr=False)
    seconds: float = 0.0
    auditor: str = "rkrd"

    @property
    def rejected_by_lower_bound(self) -> bool:
        return self.lower_bound.epsilon > self.epsilon

    @property
    def rejected_by_threshold(self) -> bool:
        return any(s > t for s, t in zip(self.held_out_statistics, self.thresholds))

    @property
    def rejected(self) -> bool:
        return self.rejected_by_lower_bound or self.rejected_by_threshold

    @property
    def decision(self) -> str:
        return "reject" if self.rejected else "not rejected"

    @property
    def threshold_vacuous(self) -> bool:
        return all(math.isinf(t) for t in self.thresholds)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "auditor": self.auditor,
            "claim": {"epsilon": self.epsilon, "delta": self.delta},
            "decision": self.decision,
            "rejected": self.rejected,
            "level": self.level,
            "lambda0": self.lambda0,
            "lower_bound": {**self.lower_bound.to_dict(),
                            "rejects": self.rejected_by_lower_bound},
            "rkrdp_test": {
                "level": self.level_threshold,
                "alphas": list(self.alphas),
                "statistic": list(self.statistics),
                "held_out_statistic": list(self.held_out_statistics),
                "threshold": list(self.thresholds),
                "vacuous": self.threshold_vacuous,
                "rejects": self.rejected_by_threshold,
            },
            "seed": self.seed,
            "settings": dict(self.settings),
            "seconds": self.seconds,
        }
        if self.bootstrap is not None:
            out["bootstrap"] = self.bootstrap.to_dict()
        if self.sweep is not None:
            out["sweep"] = self.sweep.to_dict()
        return json_safe(out)

    def __str__(self) -> str:
        s, lb = self.settings, self.lower_bound
        lines = [
            f"RKRD audit of the claim (ε, δ) = ({self.epsilon:g}, {self.delta:g}): "
            f"{self.decision.upper()} at level {self.level:g}",
            f"  samples n_p = {s.get('n_p')}, n_q = {s.get('n_q')}, d = {s.get('d')}; RBF "
            f"bandwidth {_num(s.get('bandwidth', math.nan))} ({s.get('bandwidth_rule')}); "
            f"seed {self.seed}",
            f"  certified lower bound: ε ≥ {lb.epsilon:.4f} at level {lb.level:g} "
            f"({'rejects' if self.rejected_by_lower_bound else 'does not reject'}; "
            f"τ = {lb.threshold:.4g}, FPR ≤ {lb.fpr_upper:.4g}, FNR ≤ {lb.fnr_upper:.4g} "
            f"on {lb.m_p} + {lb.m_q} held-out samples, T = {lb.n_thresholds})",
            f"  RKRDP test at λ₀ = δe^(−ε) = {self.lambda0:.4g}, level {self.level_threshold:g}"
            + (" — vacuous at this n (needs n·λ₀ ≫ log(1/λ₀)): never rejects"
               if self.threshold_vacuous else ""),
        ]
        rows = [("α", "D̂(α, λ₀)", "held-out D̂", "threshold", "rejects")]
        for a, st, ho, t in zip(self.alphas, self.statistics, self.held_out_statistics,
                                self.thresholds):
            rows.append((f"{a:g}", f"{st:.4f}", f"{ho:.4f}",
                         "inf (vacuous)" if math.isinf(t) else f"{t:.4f}",
                         "yes" if ho > t else "no"))
        widths = [max(len(r[k]) for r in rows) for k in range(5)]
        for r in rows:
            lines.append("    " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
        lines.append("  note: D̂ > ε alone is not a valid test (D̂ is biased upward at small λ)")
        if self.bootstrap is not None:
            b = self.bootstrap
            lines.append(f"  parametric bootstrap vs {b.mechanism}: p = {b.p_value:.4g} "
                         f"(D̂(α={b.alpha:g}, λ={b.lam:.4g}) = {b.statistic:.4f}, "
                         f"B = {b.replicates.size}); tests 'the mechanism equals the reference'")
        lines.append(f"  time {self.seconds:.2f} s")
        return "\n".join(lines)
