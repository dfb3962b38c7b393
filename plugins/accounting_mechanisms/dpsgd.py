"""The DP-SGD calibration preset: the noise multiplier σ for a sampling rate and a
number of steps.

One DP-SGD step with Poisson sampling at rate q, clipping norm C and noise N(0, σ²C²)
is the Poisson-subsampled Gaussian with sensitivity 1 (noise multiplier σ) under
add/remove neighbouring (Abadi et al., arXiv:1607.00133, §3.1; its dominating pair:
Mironov, Talwar, Zhang, arXiv:1908.10530, §3.3). A run of T steps is the ledger of
T uses, so calibrating σ is ``calibrate_workload`` over the family σ ↦ that ledger.

User-level DP-SGD (``user_sensitivity``, ``user_level_mechanism``, ``user_dpsgd_ledger``).
Neighbouring datasets differ in *all* the records of one user. Each step samples users,
not records: every user enters the batch independently with probability q (user-level
Poisson sampling; McMahan et al., arXiv:1710.06963, §2, Alg. 1 DP-FedSGD), all of the
user's records together; the user's contribution (the sum of its records' clipped
gradients, itself clipped to the per-user norm C_u, or not) has norm at most Δ_u, and
the noise is N(0, σ_noise²). Against the dataset without that user the release differs
by B·(the user's contribution), B ~ Bernoulli(q): exactly the record-level step with the
user in place of the record, so the step is the Poisson-subsampled Gaussian at rate q
with sensitivity Δ_u and noise std σ_noise (the same dominating pair, Mironov, Talwar,
Zhang arXiv:1908.10530, §3), through the existing ``subsampled_gaussian``. Δ_u is C_u
when the user's sum is clipped, else (triangle inequality) k·C for k records each
clipped to C, the smaller when both are given. With one record per user, C_u = C, it
is example-level DP-SGD exactly. Users with different Δ_u: per-user accounting
(``per_example``, the users' sensitivities Δ_u/C_u in place of the norms).

This preset lives in the mechanisms plugin because it names the plugin's
``subsampled_gaussian``; the core only knows ledgers, and keeps no alias that would
name this module.
"""

from __future__ import annotations

from accounting.analysis.calibration import DEFAULT_RTOL, Calibration, calibrate
from accounting.curves.pld import DEFAULT_STEP
from accounting.ledger import Ledger
from accounting.validation import check_count, check_positive, check_probability

from .subsampled_gaussian import SubsampledGaussian

__all__ = ["calibrate_dpsgd", "dpsgd_ledger", "user_sensitivity", "user_level_mechanism",
           "user_dpsgd_ledger"]


def dpsgd_ledger(q: float, steps: int, sigma: float) -> Ledger:
    """The ledger of ``steps`` DP-SGD steps at sampling rate ``q`` ∈ (0, 1] and noise
    multiplier ``sigma`` (sensitivity 1, so the noise standard deviation ``sigma`` of
    the ``subsampled_gaussian`` it builds is the multiplier σ/Δ; add/remove)."""
    q = check_probability("q", q, hi_open=False)
    steps = check_count("steps", steps)
    sigma = check_positive("sigma", sigma)
    return Ledger.build("subsampled_gaussian", steps, q=q, sigma=sigma)


def calibrate_dpsgd(q: float, steps: int, *, epsilon: float, delta: float,
                    accountant: str = "pld", step: float = DEFAULT_STEP,
                    rtol: float = DEFAULT_RTOL, start: float | None = None) -> Calibration:
    """The noise multiplier σ (noise std / clipping norm) of DP-SGD: ``steps`` uses of
    the Poisson-subsampled Gaussian at rate ``q`` ∈ (0, 1] with sensitivity 1 under
    add/remove (see the module docstring).

    Under ``"zcdp"`` the answer ignores subsampling: ρ* = 1/(2σ²) for every q > 0
    (arXiv:2610.02414, Prop. 4.2), so it is the full-batch σ.
    """
    q = check_probability("q", q, hi_open=False)
    steps = check_count("steps", steps)
    return calibrate("subsampled_gaussian", "sigma", epsilon=epsilon, delta=delta,
                     count=steps, params={"q": q}, accountant=accountant, step=step,
                     rtol=rtol, start=start)


def user_sensitivity(*, user_clip: float | None = None, record_clip: float | None = None,
                     records: int | None = None) -> float:
    """Δ_u of one user's contribution (module docstring): ``user_clip`` C_u, or
    ``records`` × ``record_clip`` (k records each clipped to C), the smaller if both."""
    bounds = []
    if user_clip is not None:
        bounds.append(check_positive("user_clip", user_clip))
    if (record_clip is None) != (records is None):
        raise ValueError("give record_clip and records together (k records each clipped "
                         "to C give Δ_u = k·C)")
    if record_clip is not None and records is not None:
        bounds.append(check_count("records", records) * check_positive("record_clip",
                                                                       record_clip))
    if not bounds:
        raise ValueError("give user_clip, or record_clip with records: the user's "
                         "sensitivity is not known otherwise")
    return min(bounds)


def user_level_mechanism(q: float, noise_std: float, *, user_clip: float | None = None,
                         record_clip: float | None = None, records: int | None = None
                         ) -> SubsampledGaussian:
    """One step of user-level DP-SGD: users Poisson-sampled at rate ``q`` ∈ (0, 1], noise
    std ``noise_std`` (absolute, not a multiplier), sensitivity ``user_sensitivity``:
    the ``subsampled_gaussian`` with ``sensitivity`` Δ_u (add/remove of one user)."""
    q = check_probability("q", q, hi_open=False)
    sigma = check_positive("noise_std", noise_std)
    delta_u = user_sensitivity(user_clip=user_clip, record_clip=record_clip, records=records)
    return SubsampledGaussian(q=q, sigma=sigma, sensitivity=delta_u)


def user_dpsgd_ledger(q: float, steps: int, noise_std: float, *,
                      user_clip: float | None = None, record_clip: float | None = None,
                      records: int | None = None) -> Ledger:
    """The ledger of ``steps`` steps of user-level DP-SGD (``user_level_mechanism``)."""
    steps = check_count("steps", steps)
    return Ledger.of(user_level_mechanism(q, noise_std, user_clip=user_clip,
                                          record_clip=record_clip, records=records), steps)
