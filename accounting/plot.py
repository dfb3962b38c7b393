"""Plots of the information gap (optional: needs the ``plot`` extra, matplotlib).

matplotlib is imported inside each function, so ``import accounting.plot`` works
without it and a call says which extra to install. Every function draws on ``ax``
(a new figure when ``None``) and returns the Axes; the numbers come from
``accounting.analysis.gap`` (see that module for formulas and sources: Su, Yang, Su, Wang,
"Unifying privacy accounting", arXiv:2610.02414v1, §3–§4).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from accounting.analysis.gap import InformationGap, PairLike, allocation_gap, information_gap
from accounting.validation import check_array

__all__ = ["plot_gap", "plot_gap_vs_shift", "plot_gap_vs_parameter", "plot_allocation"]


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("accounting.plot needs matplotlib: install the 'plot' extra "
                          "(pip install 'accounting[plot]')") from exc
    return plt.figure(figsize=(5.0, 3.4)).gca()


def plot_gap(gap: "InformationGap | PairLike", ax: Any = None, *, t: Any = None,
             label: Optional[str] = None) -> Any:
    """The exact Rényi curve D_α = K(t)/t and its zCDP line ρ*α against α = 1 + t, the
    gap Γ(t)/t = ρ*α − D_α shaded between them (paper §3, Fig. 3)."""
    if not isinstance(gap, InformationGap):
        gap = information_gap(gap, np.geomspace(1e-2, 20.0, 80) if t is None else t)
    ax = _axes(ax)
    name = label or gap.description
    alpha = gap.alpha
    rdp = gap.cgf / gap.t
    line, = ax.plot(alpha, rdp, label=f"{name}: D_α")
    ax.plot(alpha, gap.rho * alpha, ls="--", color=line.get_color(),
            label=f"zCDP ρ*α, ρ* = {gap.rho:.4g}")
    ax.fill_between(alpha, rdp, gap.rho * alpha, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("order α = 1 + t")
    ax.set_ylabel("Rényi divergence")
    ax.legend(fontsize="small")
    return ax


def plot_gap_vs_shift(shifts: Sequence[float], gaps: Sequence[float], ax: Any = None, *,
                      label: str = "", fit: bool = True) -> Any:
    """Γ against the shift s on log–log axes, with the fitted slope (paper Fig. 4(a):
    2.00 for a Gaussian mixture, 4.00 for Laplace)."""
    s = check_array("shifts", shifts, lo=0.0, lo_open=True)
    g = check_array("gaps", gaps, lo=0.0, lo_open=True)
    if s.shape != g.shape or s.ndim != 1 or s.size < 2:
        raise ValueError("shifts and gaps must be 1-d arrays of the same length >= 2")
    ax = _axes(ax)
    text = label
    if fit:
        slope, icpt = np.polyfit(np.log(s), np.log(g), 1)
        text = f"{label} (slope {slope:.3f})".strip()
    line, = ax.loglog(s, g, "o", label=text)
    if fit:
        ax.loglog(s, np.exp(icpt) * s ** slope, color=line.get_color(), lw=0.8)
    ax.set_xlabel("shift s = Δ/scale")
    ax.set_ylabel("gap Γ(t)")
    ax.legend(fontsize="small")
    return ax


def plot_gap_vs_parameter(make: Callable[[float], PairLike], values: Sequence[float],
                          t: Sequence[float] = (1.0,), ax: Any = None, *,
                          relative: bool = True, xlabel: str = "parameter",
                          logx: bool = True) -> Any:
    """Γ(t) (or Γ(t)/(ρ*t(t+1)) when ``relative``) of ``make(v)`` for each value v, one
    line per order t — e.g. the Poisson-subsampled Gaussian against q (paper §4.2)."""
    vals = check_array("values", values)
    t = check_array("t", t, lo=0.0, lo_open=True)
    gaps = [information_gap(make(float(v)), np.atleast_1d(t), local=False) for v in vals]
    ys = np.array([g.relative_gap if relative else g.gap for g in gaps])
    ax = _axes(ax)
    for j, tt in enumerate(np.atleast_1d(t)):
        ax.plot(vals, ys[:, j], marker="o", ms=3, label=f"t = {tt:g}")
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Γ(t) / (ρ* t(t+1))" if relative else "Γ(t)")
    ax.legend(fontsize="small")
    return ax


def plot_allocation(families: dict, rho_total: float, n: int, ax: Any = None, *,
                    t: Any = None) -> Any:
    """The composed gap Σ_i Γ_i(t) of n mechanisms sharing ``rho_total``, uniform
    against concentrated, for each ``{label: family}`` (family: ρ ↦ mechanism with
    that ρ*; paper §4.3, Fig. 5)."""
    t = np.linspace(0.1, 3.0, 30) if t is None else t
    ax = _axes(ax)
    for label, family in families.items():
        line = None
        for alloc, ls in (("uniform", "-"), ("concentrated", "--")):
            res = allocation_gap(family, rho_total, n, t, alloc)
            kw = {} if line is None else {"color": line.get_color()}
            line, = ax.plot(res.t, res.gap, ls=ls, label=f"{label}, {alloc}", **kw)
    ax.set_xlabel("order offset t = α − 1")
    ax.set_ylabel(f"composed gap (n = {n}, ρ_total = {rho_total:g})")
    ax.legend(fontsize="small")
    return ax
