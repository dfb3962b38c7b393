"""D̂_{α,λ} against λ for several α, with the ε and λ₀ = δe^{−ε} lines (arXiv:2205.13941, Fig. 1).

matplotlib is the optional ``plot`` extra, imported only when a plot is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .estimator import RKRDSweep
from .threshold import dp_lambda

__all__ = ["plot_sweep"]

_STYLES = ("-", "--", ":", "-.")


def plot_sweep(sweeps: RKRDSweep | Sequence[RKRDSweep], *,
               epsilon: float | None = None, delta: float | None = None,
               claim: tuple[float, float] | None = None, ax: Any = None,
               title: str | None = None) -> Any:
    """Draw D̂ against λ (log axis), one colour per α and one line style per sample size.

    Sweeps with the same sample size are repetitions: their mean is drawn, with the
    min–max band. ``epsilon``/``delta`` draw the dash-dotted lines ε and λ₀ = δe^{−ε} of
    the mechanism's calibration, ``claim`` = (ε, δ) dotted ones for an audited claim.
    Returns the matplotlib axes.
    """
    import matplotlib.pyplot as plt

    sweeps = [sweeps] if isinstance(sweeps, RKRDSweep) else list(sweeps)
    if not sweeps:
        raise ValueError("sweeps must hold at least one RKRDSweep")
    first = sweeps[0]
    for s in sweeps:
        if not (np.array_equal(s.alphas, first.alphas)
                and np.array_equal(s.lambdas, first.lambdas)):
            raise ValueError("sweeps must share the same alphas and lambdas")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.0, 3.6))
    sizes = sorted({s.n_p for s in sweeps})
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, n in enumerate(sizes):
        stack = np.stack([s.values for s in sweeps if s.n_p == n])
        mean = stack.mean(axis=0)
        for i, a in enumerate(first.alphas):
            colour = colours[i % len(colours)]
            ax.plot(first.lambdas, mean[i], _STYLES[k % len(_STYLES)], color=colour,
                    label=f"α={a:g}, n={n}", lw=1.2)
            if stack.shape[0] > 1:
                ax.fill_between(first.lambdas, stack[:, i].min(axis=0), stack[:, i].max(axis=0),
                                color=colour, alpha=0.12, lw=0)
    for pair, style in ((None if epsilon is None else (epsilon, delta), "-."), (claim, ":")):
        if pair is None:
            continue
        eps, dlt = pair
        ax.axhline(eps, color="k", ls=style, lw=0.9)
        if dlt is not None:
            ax.axvline(dp_lambda(eps, dlt), color="k", ls=style, lw=0.9)
    ax.set_xscale("log")
    ax.set_xlabel("λ")
    ax.set_ylabel(r"$\hat{D}_{\alpha,\lambda}$")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=len(sizes))
    return ax
