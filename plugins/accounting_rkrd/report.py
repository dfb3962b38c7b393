"""The audit report: the claim tested, the verdict, the numbers and how to reproduce it.

A frozen record that prints as a table (``str``) and serialises to JSON (``to_dict``;
infinities as the strings "inf"/"-inf", since JSON has none). Every report states
the claim, the witness chosen, the detectable ε (the largest ε a perfect witness
could certify at these sizes and level) and that "not rejected" is no certificate.
The kernel divergence D̂ is shown only as a labelled descriptive statistic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from .bootstrap import BootstrapResult
from .claims import EpsDeltaClaim
from .estimator import RKRDSweep
from .holdout import ThresholdResult, WitnessTest
from .lower_bound import LowerBound

__all__ = ["AuditReport", "RKRDPResult", "json_safe"]


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


def _str_tuple(notes: Iterable[str]) -> tuple[str, ...]:
    """attrs converter of the warnings (a named function: mypy's attrs plugin cannot
    read the generic ``tuple`` as one)."""
    return tuple(notes)


def _num(x: float, digits: int = 4) -> str:
    return "inf" if math.isinf(x) else f"{x:.{digits}g}"


@attrs.frozen
class RKRDPResult:
    """The finite-sample (α, λ₀, ε)-RKRDP test: thresholds decided from the sizes,
    held-out statistics (None when skipped), its share of the level and its status."""

    alphas: tuple[float, ...]
    thresholds: tuple[float, ...]
    held_out_statistics: tuple[float, ...] | None
    level: float
    status: str

    @property
    def vacuous(self) -> bool:
        return all(math.isinf(t) for t in self.thresholds)

    @property
    def rejected(self) -> bool:
        if self.held_out_statistics is None:
            return False
        return any(s > t for s, t in zip(self.held_out_statistics, self.thresholds))

    def to_dict(self) -> dict[str, Any]:
        return {"alphas": list(self.alphas), "threshold": list(self.thresholds),
                "held_out_statistic": (None if self.held_out_statistics is None
                                       else list(self.held_out_statistics)),
                "level": self.level, "vacuous": self.vacuous, "status": self.status,
                "rejects": self.rejected}


@attrs.frozen
class AuditReport:
    """Result of auditing a claim from samples of M(D) and M(D′).

    ``rejected`` is True when the witness test or the RKRDP test rejects; under a
    mechanism satisfying the claim this happens with probability at most ``level`` =
    ``level_witness`` + ``level_threshold``. Not rejected is *not* a certificate: it
    only says no violation was found that this witness and n could detect.
    ``statistics[i]`` is D̂_{α_i, λ₀} on all samples (descriptive, biased upward at
    small λ, no estimate of ε; None when not computed).
    """

    claim: Any
    level: float
    level_witness: float
    level_threshold: float
    lambda0: float | None
    witness: WitnessTest
    rkrdp: RKRDPResult | None
    statistics: tuple[float, ...] | None
    seed: int
    settings: dict[str, Any] = attrs.field(eq=False)
    bootstrap: BootstrapResult | None = None
    sweep: RKRDSweep | None = attrs.field(default=None, eq=False, repr=False)
    seconds: float = 0.0
    auditor: str = "rkrd"
    #: what makes the audit less informative than it looks (a degenerate kernel, …)
    warnings: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)

    # ------------------------------------------------------------ the claim
    @property
    def epsilon(self) -> float | None:
        return self.claim.epsilon if isinstance(self.claim, EpsDeltaClaim) else None

    @property
    def delta(self) -> float | None:
        return self.claim.delta if isinstance(self.claim, EpsDeltaClaim) else None

    # ------------------------------------------------------------- verdict
    @property
    def epsilon_lower_bound(self) -> float | None:
        """The certified ε lower bound of an (ε, δ) claim's witness test (else None)."""
        return self.witness.epsilon_lower_bound

    @property
    def lower_bound(self) -> LowerBound | None:
        """The certified bound with its best threshold, as a ``LowerBound`` ((ε, δ)
        claims; None for a curve claim)."""
        eps, delta = self.witness.epsilon_lower_bound, self.delta
        if eps is None or delta is None:    # a curve claim has neither
            return None
        w, r = self.witness, self.witness.best
        return LowerBound(eps, self.level_witness, delta, r.threshold, r.fpr_upper,
                          r.fnr_upper, r.false_positives, r.false_negatives, w.m_p, w.m_q,
                          len(w.rows), None, f"{w.family}: {w.detail}")

    @property
    def detectable_epsilon(self) -> float | None:
        """The largest ε a perfect witness could certify at these sizes and level."""
        return self.witness.detectable_epsilon

    @property
    def rejected_by_witness(self) -> bool:
        return self.witness.rejected

    @property
    def rejected_by_threshold(self) -> bool:
        return self.rkrdp is not None and self.rkrdp.rejected

    @property
    def rejected(self) -> bool:
        return self.rejected_by_witness or self.rejected_by_threshold

    @property
    def decision(self) -> str:
        return "reject" if self.rejected else "not rejected"

    @property
    def threshold_vacuous(self) -> bool:
        return self.rkrdp is None or self.rkrdp.vacuous

    def verdict(self) -> str:
        """The verdict in words, with what it does and does not mean."""
        w, lvl = self.witness, f"{self.level:g}"
        if self.rejected:
            if self.epsilon_lower_bound is not None and self.rejected_by_witness:
                return (f"REJECTED at level {lvl}: the mechanism is not ({self.epsilon:g}, "
                        f"{self.delta:g})-DP; with confidence {1 - self.level_witness:g}, ε ≥ "
                        f"{self.epsilon_lower_bound:.4g} at δ = {self.delta:g}.")
            if self.rejected_by_witness:
                fprs = w.beaten_fprs
                where = (f"FPR ≤ {fprs[0]:.3g}" if len(fprs) == 1 else
                         f"{len(fprs)} of {len(w.rows)} thresholds, FPR ≤ "
                         f"{min(fprs):.3g} … {max(fprs):.3g}")
                return (f"REJECTED at level {lvl}: the samples beat {self.claim.describe()} "
                        f"at {where} (rows marked 'yes').")
            return f"REJECTED at level {lvl} by the RKRDP test."
        text = (f"NOT REJECTED at level {lvl}. This is not a certificate of privacy: it "
                f"says only that this audit found no violation it could detect.")
        if self.detectable_epsilon is not None:
            if not w.detectable:
                text += (f" At these sizes even a perfect witness could certify at most ε = "
                         f"{self.detectable_epsilon:.3g} ≤ the claimed ε, so no mechanism, "
                         f"however leaky, could have been rejected: use more samples.")
            else:
                text += (f" A perfect witness could certify up to ε = "
                         f"{self.detectable_epsilon:.3g} at these sizes; violations the "
                         f"chosen witness cannot see go unnoticed.")
        elif not w.detectable:
            text += (" At these sizes even a perfect witness could not beat this curve at "
                     f"any resolvable FPR (≥ {w.min_fpr:.3g}): use more samples.")
        return text

    def to_dict(self, exact: bool = False) -> dict[str, Any]:
        """The report as JSON-ready data: a summary (verdict, numbers; infinities as
        strings), or with ``exact`` every field, losslessly, for ``from_dict``
        (``accounting.save`` writes that form)."""
        if exact:
            from accounting.serialization import encode
            # JSON data: a dict at the top, whose values are whatever the fields hold
            encoded: dict[str, Any] = encode(self, report_types(), "report")
            return encoded
        out: dict[str, Any] = {
            "auditor": self.auditor,
            "claim": self.claim.to_dict(),
            "decision": self.decision,
            "rejected": self.rejected,
            "verdict": self.verdict(),
            "not_rejected_is_not_a_certificate": True,
            "level": self.level,
            "lambda0": self.lambda0,
            "detectable_epsilon": self.detectable_epsilon,
            "witness_test": {**self.witness.to_dict(), "level": self.level_witness},
            "seed": self.seed,
            "settings": dict(self.settings),
            "seconds": self.seconds,
        }
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.lower_bound is not None:
            out["lower_bound"] = {**self.lower_bound.to_dict(),
                                  "rejects": self.rejected_by_witness}
        if self.rkrdp is not None:
            out["rkrdp_test"] = self.rkrdp.to_dict()
        if self.statistics is not None:
            out["descriptive"] = {"alphas": list(self.rkrdp.alphas) if self.rkrdp else None,
                                  "kernel_divergence_at_lambda0": list(self.statistics),
                                  "note": "D̂ is a biased kernel divergence estimate, not "
                                          "an estimate of ε"}
        if self.bootstrap is not None:
            out["bootstrap"] = self.bootstrap.to_dict()
        if self.sweep is not None:
            out["sweep"] = self.sweep.to_dict()
        safe: dict[str, Any] = json_safe(out)   # a dict stays a dict
        return safe

    @classmethod
    def from_dict(cls, data: Any) -> AuditReport:
        """The report of ``to_dict(exact=True)``; nothing is executed or unpickled, and a
        problem is a ValueError/TypeError naming its path (``report.witness.rows[0]``)."""
        from accounting.serialization import decode_report
        return decode_report(data, report_types(), cls, "an AuditReport")

    def __str__(self) -> str:
        s, w = self.settings, self.witness
        lines = [f"RKRD audit of the claim {self.claim.describe()}: {self.decision.upper()} "
                 f"at level {self.level:g}",
                 "  " + self.verdict(),
                 f"  samples n_p = {s.get('n_p')}, n_q = {s.get('n_q')}, d = {s.get('d')}; "
                 f"trained on {s['training'][0]} + {s['training'][1]}, counted on "
                 f"{w.m_p} + {w.m_q} held out; seed {self.seed}",
                 f"  witness: {w.family} — {w.detail} (chosen on the training part among "
                 f"{w.n_candidates} candidates; level {self.level_witness:g})"]
        lines += [f"  warning: {note}" for note in self.warnings]
        if self.detectable_epsilon is not None:
            lines.append(f"  detectable ε (perfect witness, these sizes and level): "
                         f"{self.detectable_epsilon:.4g}")
        rows = [("threshold", "false pos.", "FPR ≤", "false neg.", "FNR ≤", "claim: FNR ≥",
                 "beats the claim")]
        for r in w.rows:
            rows.append((f"{r.threshold:.4g}", f"{r.false_positives}/{w.m_q}",
                         f"{r.fpr_upper:.4g}", f"{r.false_negatives}/{w.m_p}",
                         f"{r.fnr_upper:.4g}", f"{r.claimed_fnr:.4g}",
                         "yes" if r.beaten else "no"))
        widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
        for cells in rows:
            lines.append("    " + "  ".join(c.rjust(wd) for c, wd in zip(cells, widths)))
        if self.epsilon_lower_bound is not None:
            lines.append(f"  certified: ε ≥ {self.epsilon_lower_bound:.4f} at δ = {self.delta:g} with "
                         f"confidence {1 - self.level_witness:g}")
        if self.rkrdp is not None:
            lines.append(f"  RKRDP test at λ₀ = δe^(−ε) = {self.lambda0:.4g}: {self.rkrdp.status}"
                         + (f", level {self.rkrdp.level:g}, "
                            f"{'rejects' if self.rkrdp.rejected else 'does not reject'}"
                            if self.rkrdp.held_out_statistics is not None else ""))
            if self.rkrdp.held_out_statistics is not None:
                for a, ho, t in zip(self.rkrdp.alphas, self.rkrdp.held_out_statistics,
                                    self.rkrdp.thresholds):
                    lines.append(f"    α = {a:g}: held-out D̂ {ho:.4f}, threshold "
                                 f"{'inf (vacuous)' if math.isinf(t) else f'{t:.4f}'}")
        if self.statistics is not None and self.rkrdp is not None:  # both or neither
            stats = ", ".join(f"α={a:g}: {v:.3f}" for a, v in zip(self.rkrdp.alphas,
                                                                   self.statistics))
            lines.append(f"  descriptive only — kernel divergence D̂(α, λ₀) on all samples "
                         f"(biased upward, not an estimate of ε): {stats}")
        if self.bootstrap is not None:
            b = self.bootstrap
            lines.append(f"  parametric bootstrap vs {b.mechanism}: p = {b.p_value:.4g} "
                         f"(D̂(α={b.alpha:g}, λ={b.lam:.4g}) = {b.statistic:.4f}, "
                         f"B = {b.replicates.size}); tests 'the mechanism equals the reference'")
        lines.append(f"  time {self.seconds:.2f} s")
        return "\n".join(lines)


def report_types() -> dict[str, type]:
    """The classes a saved report may hold (with the core's curve classes, for a claim
    that is a trade-off curve): the allow-list of ``accounting.serialization``."""
    from accounting.serialization import curve_types

    from .claims import CurveClaim
    return {**curve_types(), "AuditReport": AuditReport, "RKRDPResult": RKRDPResult,
            "WitnessTest": WitnessTest, "ThresholdResult": ThresholdResult,
            "EpsDeltaClaim": EpsDeltaClaim, "CurveClaim": CurveClaim,
            "BootstrapResult": BootstrapResult, "RKRDSweep": RKRDSweep}
