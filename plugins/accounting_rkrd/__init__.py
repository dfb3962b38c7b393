"""The kernel Rényi (RKRD) auditor plugin of ``accounting``.

Audits a black-box mechanism from samples of its outputs on two neighbouring
datasets, with the regularized kernel Rényi divergence between covariance operators
(arXiv:2205.13941, "Auditing differential privacy in high dimensions with the kernel quantum
Rényi divergence", arXiv:2205.13941; docs/auditing.md):

* ``rkrd``, ``rkrd_sweep``: the estimator D̂_{α,λ} (n × n form, symmetric eigensolvers);
* ``rkrdp_threshold``, ``rkrdp_test``, ``dp_lambda``: the finite-sample RKRDP test and
  the λ₀ = δe^{−ε} that turns it into an (ε, δ)-DP test;
* ``epsilon_lower_bound``: a certified ε lower bound (kernel witness, Clopper–Pearson);
* ``witnesses``, ``holdout``, ``claims``: witness families chosen on a training split,
  the held-out Clopper–Pearson test of an (ε, δ) claim or of a whole trade-off curve;
* ``bootstrap_test``: parametric bootstrap against a claimed registered mechanism;
* ``RKRDAuditor``, ``audit_samples``, ``audit_callable``: the black-box API and its
  ``AuditReport``; ``plot_sweep`` draws D̂ against λ (matplotlib, optional);
* ``sequential_test``, ``SequentialReport`` (``RKRDAuditor.audit_sequential``): the
  anytime-valid sequential audit, an e-process on hockey-stick witnesses that stops
  as soon as a violation is certain.

Registered through the entry-point group ``accounting`` (module ``accounting_rkrd.plugin``).
"""

from .auditor import MechanismError, RKRDAuditor, audit_callable, audit_samples
from .bootstrap import BootstrapResult, bootstrap_test, noise_sampler
from .claims import CurveClaim, EpsDeltaClaim, as_claim
from .estimator import RKRDSweep, rkrd, rkrd_direct, rkrd_from_grams, rkrd_sweep
from .experiments import gaussian_outputs, gaussian_sigma
from .holdout import WitnessTest, detectable_epsilon
from .lower_bound import LowerBound, clopper_pearson_upper, epsilon_lower_bound
from .plot import plot_sweep
from .report import AuditReport, RKRDPResult
from .resources import MemoryBudgetError
from .sequential import SequentialReport, sequential_test
from .threshold import RKRDPTest, Threshold, dp_lambda, rkrdp_test, rkrdp_threshold

__all__ = [
    "RKRDAuditor", "audit_samples", "audit_callable", "AuditReport", "RKRDPResult",
    "MechanismError", "MemoryBudgetError", "EpsDeltaClaim", "CurveClaim", "as_claim",
    "WitnessTest", "detectable_epsilon",
    "rkrd", "rkrd_sweep", "rkrd_from_grams", "rkrd_direct", "RKRDSweep",
    "rkrdp_threshold", "rkrdp_test", "dp_lambda", "Threshold", "RKRDPTest",
    "epsilon_lower_bound", "clopper_pearson_upper", "LowerBound",
    "bootstrap_test", "BootstrapResult", "noise_sampler",
    "gaussian_sigma", "gaussian_outputs", "plot_sweep",
    "sequential_test", "SequentialReport",
]
