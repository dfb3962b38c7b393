"""Calibration: the smallest noise parameter that meets a target (ε, δ), a risk or a count.

A family is a map x ↦ ``Ledger``: the composition run at the shared noise value x.
Any callable returning a ledger will do; ``MechanismFamily`` builds the common one,
``count`` uses of one mechanism whose noise parameter is ``multiplier × x``, and a
sequence of them (or ledgers added in a callable) describes a heterogeneous job whose
mechanisms share one noise multiplier (DP-SGD groups with different clipping norms, a
Gaussian release beside a Laplace one, …). ``calibrate_workload`` finds the smallest
x with ε(δ; x) ≤ ε under one accountant, each an upper bound, max over both
neighbouring directions:

* ``"pld"``: the composed pessimistic PLD (sound; tight up to the grid ``step``);
* ``"rdp"``: the composed Rényi curve — k uses scale the CGF K(t) by k (Mironov
  2017, Prop. 1), closed forms come through each pair's own curve — converted by the
  improved conversion ε = D_α + log(1 − 1/α) − (log δ + log α)/(α − 1) (Canonne,
  Kamath, Steinke 2020, Prop. 12), minimised over continuous α;
* ``"zcdp"``: the composed ρ* = sup_t K(t)/(t(t + 1)) — k uses scale ρ by k (Bun and
  Steinke 2016, Lemma 2.3) — through the same conversion applied to K(t) = ρt(t + 1),
  which is the tight zCDP conversion (CKS 2020, Cor. 13).

Method. ε(δ; x) is *assumed* non-increasing in x (more noise never costs privacy). It
is not proved for every family, so it is checked: a bracket is found by growing steps
(factors 1.1, 1.21, 1.46, 2.1, 4.6, then 16) from ``start`` — for ``pld`` by default
the root of the same calibration on a grid five times coarser (to 2e-3, each evaluation
a fraction of the cost), whose log–log slope also predicts the first step, so that it
straddles the fine root; the RDP answer to 1e-3 where the coarse grid cannot answer —
ε must not rise along those steps, every evaluation made on the way and during the
root find must be ordered (no feasible x below an infeasible one), and the ends must
straddle the target; otherwise a ``ValueError`` says so. A step the accountant refuses
for its grid size (``GridSizeError``) is retried halfway back, in log x, so the bracket
is found where grids fit. When x is a mechanism's own noise parameter and the search
cannot go lower (the target holds at every x tried, down to the parameter's range or
what the accountant discretises), x = 0 — no noise — is evaluated, and the answer is 0
if it meets the target. A safeguarded secant in (log x, log ε) then narrows the
bracket (``search``: regula falsi and bisection guards as in Brent 1973, ch. 4), placing
its last point so that the bracket closes. The answer is the *feasible* end of the
final bracket — the smallest x evaluated with ε ≤ target — so ε at the answer never
exceeds the target; the true threshold lies in the reported bracket (lo, value],
whose width is below rtol·lo.

Orders. For ``rdp``/``zcdp`` the best order is found by a 9-point log-grid window
around the previous best (shifted until the minimum is inside), then a bounded
scalar minimisation on the bracketing cell. Every order gives a valid bound, so the
ε reported is sound whatever the search finds; the window costs ~25 CGF evaluations
per direction instead of ~240 for a global search, which matters when the CGF is a
quadrature (Gaussian mixtures, generic noise).

The package, one concept per module: ``family`` (``MechanismFamily``: x ↦ Ledger),
``search`` (the shared root finding: bracket, secant, the order search), ``epsilon``
(``calibrate``, ``calibrate_workload``), ``risk`` (``calibrate_risk``) and ``count``
(``calibrate_count``). The names below are those this module has always offered.
"""

from __future__ import annotations

from typing import Any

from accounting.analysis.calibration.count import calibrate_count
from accounting.analysis.calibration.epsilon import Calibration, calibrate, calibrate_workload
from accounting.analysis.calibration.family import MechanismFamily
from accounting.analysis.calibration.risk import RiskCalibration, calibrate_risk
from accounting.analysis.calibration.search import DEFAULT_RTOL

__all__ = ["RiskCalibration", "calibrate_risk", "calibrate_count", "Calibration",
           "MechanismFamily", "calibrate", "calibrate_workload", "DEFAULT_RTOL"]


def __getattr__(name: str) -> Any:
    """Deprecated name: ``Term`` (now ``MechanismFamily``). (``calibrate_dpsgd`` moved to
    the mechanisms plugin, which the core does not name: see the CHANGELOG.)"""
    import warnings
    if name == "Term":
        warnings.warn("Term is deprecated; use MechanismFamily (a family is x -> Ledger)",
                      DeprecationWarning, stacklevel=2)
        return MechanismFamily
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
