"""The one-run audit report: the certified ε lower bound, the largest ε the canaries
could prove, the guesses behind it and the verdict in words.

A frozen record that prints as a table (``str``) and serialises to JSON-ready data
(``to_dict``; infinities as strings). The ε always names its analysis and family:
the (ε, δ) analysis of arXiv:2305.08846 (Thm 3.1) bounds (ε, δ)-DP itself; the f-DP
analysis of arXiv:2410.22235 bounds the claimed family (μ-GDP, reported as the ε at δ
of μ-GDP, or (ε, δ)-DP through its trade-off curve).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from .guesses import Guesses

__all__ = ["Candidate", "OneRunReport", "FAMILY_LABELS"]

FAMILY_LABELS = {
    "eps-delta": "(ε, δ)-DP",
    "gdp": "μ-GDP (ε at δ of the Gaussian mechanism with that μ)",
}


def _num(x: float, digits: int = 4) -> str:
    return "inf" if math.isinf(x) else f"{x:.{digits}g}"


@attrs.frozen
class Candidate:
    """One guess rule and what it certifies at its share of the level: ``epsilon`` (in
    the report's family), ``parameter`` (μ for the GDP family, else ε) and the same
    two with perfect guesses (``max_epsilon``)."""

    guesses: Guesses
    epsilon: float
    parameter: float
    max_epsilon: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.guesses.to_dict(), "epsilon_lower_bound": self.epsilon,
                "parameter_lower_bound": self.parameter,
                "max_provable_epsilon": self.max_epsilon}


@attrs.frozen
class OneRunReport:
    """Result of a one-run canary audit.

    ``epsilon_lower_bound`` holds with confidence 1 − ``level`` for every run that
    satisfies the family's claim at that ε (with the abstention fixed in advance, or
    the best of the grid with each candidate at ``level / len(candidates)``).
    ``max_provable_epsilon`` is what m canaries could prove with every guess right
    (the best candidate): an audit can never certify more. ``rejected`` is True when a
    claimed ``epsilon`` is below the certified bound. Not rejected is no certificate.
    """

    analysis: str
    family: str
    delta: float
    level: float
    m: int
    included: int
    candidates: tuple[Candidate, ...]
    abstention: str
    epsilon: float | None = None
    seed: int = 0
    sides: str = "both"
    #: a whole claimed curve tested beside the family's bound (its description), and
    #: whether the canaries reject it
    claim: str | None = None
    claim_rejected: bool | None = None
    seconds: float = 0.0
    auditor: str = "onerun"

    # ------------------------------------------------------------- numbers
    @property
    def level_each(self) -> float:
        return self.level / len(self.candidates)

    @property
    def best(self) -> Candidate:
        return max(self.candidates, key=lambda c: c.epsilon)

    @property
    def epsilon_lower_bound(self) -> float:
        return self.best.epsilon

    @property
    def parameter_lower_bound(self) -> float:
        return self.best.parameter

    @property
    def max_provable_epsilon(self) -> float:
        return max(c.max_epsilon for c in self.candidates)

    @property
    def family_label(self) -> str:
        return FAMILY_LABELS[self.family]

    @property
    def method(self) -> str:
        if self.analysis == "eps-delta":
            return "(ε, δ) analysis, Steinke–Nasr–Jagielski arXiv:2305.08846 Thm 3.1"
        return "f-DP analysis, Mahloujifar–Melis–Chaudhuri arXiv:2410.22235 § 4–5"

    # ------------------------------------------------------------- verdict
    @property
    def rejected_epsilon(self) -> bool:
        return self.epsilon is not None and self.epsilon_lower_bound > self.epsilon

    @property
    def rejected(self) -> bool:
        return self.rejected_epsilon or bool(self.claim_rejected)

    @property
    def decision(self) -> str:
        tested = self.epsilon is not None or self.claim is not None
        return "reject" if self.rejected else ("not rejected" if tested else "no claim tested")

    def _family_words(self, eps: float) -> str:
        if self.family == "gdp":
            return (f"not μ-GDP for μ ≤ {self.parameter_lower_bound:.4g}: the Gaussian family's "
                    f"ε at δ = {self.delta:g} is ≥ {eps:.4g} (a statement about the "
                    f"Gaussian family, not about (ε, δ)-DP)")
        return f"not (ε, {self.delta:g})-DP for any ε < {eps:.4g}"

    def verdict(self) -> str:
        """The verdict in words, with what it does and does not mean."""
        lvl, eps = f"{self.level:g}", self.epsilon_lower_bound
        if self.claim is not None:
            curve = (f"REJECTED at level {lvl}: the run does not satisfy {self.claim}. "
                     if self.claim_rejected else
                     f"The run is consistent with {self.claim} at level {lvl}. ")
        else:
            curve = ""
        if self.rejected_epsilon:
            text = (f"REJECTED at level {lvl}: the claim ε = {self.epsilon:g} is below the "
                    f"certified bound; with confidence {1 - self.level:g} the run is "
                    f"{self._family_words(eps)}.")
        elif eps > 0:
            text = (f"With confidence {1 - self.level:g} the run is {self._family_words(eps)}"
                    + (f"; the claim ε = {self.epsilon:g} is not rejected." if
                       self.epsilon is not None else "."))
        elif self.claim is not None:
            text = f"Nothing certified in {self.family_label} at level {lvl}."
        else:
            text = (f"NOTHING CERTIFIED at level {lvl}: the guesses are consistent with "
                    f"ε = 0 in {self.family_label}. This is not a certificate of privacy.")
        mx = self.max_provable_epsilon
        if self.epsilon is not None and mx <= self.epsilon:
            text += (f" Even perfect guesses on these m = {self.m} canaries could prove at "
                     f"most ε = {mx:.3g} ≤ the claimed ε: no run, however leaky, could have "
                     f"been rejected; use more canaries.")
        else:
            text += f" Perfect guesses on m = {self.m} canaries could prove up to ε = {mx:.3g}."
        if not self.rejected and (self.epsilon is not None or self.claim is not None):
            text += " Not rejected is not a certificate of privacy."
        return curve + text

    def to_dict(self, exact: bool = False) -> dict[str, Any]:
        """The report as JSON-ready data (infinities as strings), or with ``exact`` every
        field, losslessly, for ``from_dict`` (``accounting.save`` writes that form)."""
        if exact:
            from accounting.serialization import encode
            doc: dict[str, Any] = encode(self, report_types(), "report")
            return doc
        out: dict[str, Any] = {
            "auditor": self.auditor, "analysis": self.analysis, "method": self.method,
            "family": self.family, "family_label": self.family_label,
            "claimed_epsilon": self.epsilon, "delta": self.delta, "level": self.level,
            "claimed_curve": self.claim, "curve_rejected": self.claim_rejected,
            "decision": self.decision, "rejected": self.rejected, "verdict": self.verdict(),
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "parameter_lower_bound": self.parameter_lower_bound,
            "max_provable_epsilon": self.max_provable_epsilon,
            "m": self.m, "included": self.included, "abstention": self.abstention,
            "level_each": self.level_each, "sides": self.sides,
            "best": self.best.to_dict(),
            "candidates": [c.to_dict() for c in self.candidates],
            "not_rejected_is_not_a_certificate": True, "seed": self.seed,
            "seconds": self.seconds,
        }
        from accounting_rkrd.report import json_safe  # the auditors' one JSON form
        result: dict[str, Any] = json_safe(out)
        return result

    @classmethod
    def from_dict(cls, data: Any) -> OneRunReport:
        """The report of ``to_dict(exact=True)``; nothing is executed or unpickled, and a
        problem is a ValueError/TypeError naming its path."""
        from accounting.serialization import decode_report
        return decode_report(data, report_types(), cls, "a OneRunReport")

    def __str__(self) -> str:
        lines = [f"One-run canary audit ({self.method}): {self.decision.upper()} at level "
                 f"{self.level:g}",
                 "  " + self.verdict(),
                 f"  canaries m = {self.m} ({self.included} included); family "
                 f"{self.family_label}; δ = {self.delta:g}; abstention {self.abstention} "
                 f"(each candidate at level {self.level_each:.4g})"]
        rows = [("guesses", "k+", "k-", "correct", "ε ≥", "param ≥", "perfect: ε ≥")]
        for c in self.candidates:
            g = c.guesses
            rows.append((str(g.r), str(g.k_plus), str(g.k_minus), str(g.correct),
                         _num(c.epsilon), _num(c.parameter), _num(c.max_epsilon)))
        widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
        for r in rows:
            lines.append("    " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
        lines.append(f"  certified: ε ≥ {self.epsilon_lower_bound:.4f} ({self.family_label}) "
                     f"with confidence {1 - self.level:g}; at most "
                     f"{self.max_provable_epsilon:.4f} is provable with these canaries")
        lines.append(f"  seed {self.seed}; time {self.seconds:.2f} s")
        return "\n".join(lines)


def report_types() -> dict[str, type]:
    """The classes a saved report may hold: the allow-list of ``accounting.serialization``."""
    return {"OneRunReport": OneRunReport, "Candidate": Candidate, "Guesses": Guesses}
