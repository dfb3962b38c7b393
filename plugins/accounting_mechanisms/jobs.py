"""Named jobs of the built-in plugins: the DP-SGD job that ``accounting`` runs by default.

DP-SGD on MNIST-sized data (Abadi et al., arXiv:1607.00133, §3.1 and §5.1): 60,000
examples, batches of 256 by Poisson sampling (q = 256/60000), noise multiplier
σ = 1.1, 60 epochs = 14,062 steps, reported at δ = 1e-5. One training step is the
Poisson-subsampled Gaussian under add/remove (Mironov, Talwar, Zhang,
arXiv:1908.10530, §3.3). ``accounting calibrate --dpsgd`` calibrates σ of this job's
mechanism for a given sampling rate and number of steps.
"""

from __future__ import annotations

from collections.abc import Callable

from accounting.registry.hookspecs import hookimpl

#: the DP-SGD job as a workload file (see ``accounting.workload``)
DPSGD_TOML = """\
description = "DP-SGD: Poisson-subsampled Gaussian, q = 256/60000, sigma = 1.1, 14062 steps"
delta = 1e-5

[[mechanism]]
name = "subsampled_gaussian"
q = 0.004266666666666667   # 256 / 60000
sigma = 1.1                # noise multiplier (clipping norm = sensitivity = 1)
count = 14062
"""

#: printed beside the zCDP answer: ρ* of the subsampled Gaussian does not depend on q
#: (the sup of K(t)/(t(t+1)) is its t → ∞ limit, 1/(2σ²); arXiv:2610.02414, Prop. 4.2)
ZCDP_NOTE = ("zCDP cannot see amplification by subsampling: ρ* of a Poisson-subsampled "
             "Gaussian is 1/(2σ²) whatever q (the sup of K(t)/(t(t+1)) is its t → ∞ limit), "
             "so its ε here is that of the full-batch mechanism — sound but useless.")


@hookimpl
def accounting_register_jobs(register: Callable[..., None]) -> None:
    register("dpsgd", DPSGD_TOML, "DP-SGD", default=True, solve="sigma",
             notes={"zcdp": ZCDP_NOTE})
