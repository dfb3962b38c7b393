"""The DP-SGD calibration preset: the noise multiplier σ for a sampling rate and a
number of steps.

One DP-SGD step with Poisson sampling at rate q, clipping norm C and noise N(0, σ²C²)
is the Poisson-subsampled Gaussian with sensitivity 1 (noise multiplier σ) under
add/remove neighbouring (Abadi et al., arXiv:1607.00133, §3.1; its dominating pair:
Mironov, Talwar, Zhang, arXiv:1908.10530, §3.3). A run of T steps is the ledger of
T uses, so calibrating σ is ``calibrate_workload`` over the family σ ↦ that ledger.

This preset lives in the mechanisms plugin because it names the plugin's
``subsampled_gaussian``; the core only knows ledgers, and keeps no alias that would
name this module.
"""

from __future__ import annotations

from accounting.analysis.calibration import DEFAULT_RTOL, Calibration, calibrate
from accounting.curves.pld import DEFAULT_STEP
from accounting.ledger import Ledger
from accounting.validation import check_count, check_positive, check_probability

__all__ = ["calibrate_dpsgd", "dpsgd_ledger"]


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
