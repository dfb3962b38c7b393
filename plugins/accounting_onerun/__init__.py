"""The one-run canary auditor plugin of ``accounting``.

Audits a training run from the scores of m canaries, each included independently
with probability 1/2, after one run (docs/auditing.md, "One-run audits"):

* ``steinke``: the (ε, δ) analysis, Theorem 3.1 of arXiv:2305.08846 (exact binomial
  tails with the δ term);
* ``fdp``: the f-DP analysis of arXiv:2410.22235 (§ 4–5) in the μ-GDP or (ε, δ) family;
* ``guesses``: checked input, guess counts, the abstention grid (Bonferroni);
* ``OneRunAuditor`` (``audit_scores``, ``audit_training``) and its ``OneRunReport``;
* ``experiments``: idealised Gaussian canaries.

Registered through the entry-point group ``accounting`` (module ``accounting_onerun.plugin``).
"""

from .auditor import DEFAULT_AUDITOR, OneRunAuditor
from .experiments import gaussian_canaries, true_mu
from .guesses import Guesses, abstention_grid, check_scores, count_correct
from .report import Candidate, OneRunReport

__all__ = ["OneRunAuditor", "DEFAULT_AUDITOR", "OneRunReport", "Candidate", "Guesses",
           "abstention_grid", "check_scores", "count_correct", "gaussian_canaries", "true_mu"]
