"""Pictures of privacy curves and of the information gap (the ``plot`` extra, matplotlib).

matplotlib is imported inside each function, so ``import accounting.plot`` works
without it and a call says which extra to install. Every function draws on ``ax``
(a new figure when ``None``) and returns the Axes.

Curves (any kind; each plot converts to the kind it draws, and shows both sides of
the bracket where the curve has them — the certified upper side solid, the lower side
dashed, the band between them shaded):

* ``plot_tradeoff`` — β = T(α) with the (ε, δ) lines that bound it, β ≥ 1 − δ − e^ε α
  and β ≥ e^{−ε}(1 − δ − α) (Dong, Roth, Su, arXiv:1905.02383, Prop. 2.5);
* ``plot_profile`` — δ(ε) on a log scale;
* ``plot_pld`` — the privacy-loss masses on the grid, and the mass at +∞;
* ``plot_rdp`` — D_α against α with the zCDP envelope ρα, the gap shaded;
* ``plot_accountants`` — ε(δ) of one or several accountants on one plot;
* ``plot_roc`` — the membership-inference ROC bound, log-log.

Information gap (numbers from ``accounting.analysis.gap``; Su, Yang, Su, Wang,
"Unifying privacy accounting", arXiv:2610.02414v1, §3–§4): ``plot_gap``,
``plot_gap_vs_shift``, ``plot_gap_vs_parameter``, ``plot_allocation``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from accounting.analysis.gap import InformationGap, PairLike, allocation_gap, information_gap
from accounting.curves.curve import as_kind
from accounting.validation import check_array
from accounting.vocabulary import ArrayLike, Bound, Direction, as_direction

__all__ = ["plot_tradeoff", "plot_profile", "plot_pld", "plot_rdp", "plot_accountants", "plot_roc",
           "plot_gap", "plot_gap_vs_shift", "plot_gap_vs_parameter", "plot_allocation",
           "save", "plot_format"]


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("accounting.plot needs matplotlib: install the 'plot' extra "
                          "(pip install 'accounting-dp[plot]')") from exc
    return plt.figure(figsize=(5.0, 3.4)).gca()


def plot_format(path: str | os.PathLike[str]) -> str:
    """The format of a figure file from the suffix of ``path`` (``.png``, ``.pdf``,
    ``.svg``, or any other that matplotlib writes), checked before anything is drawn.
    A path with no suffix (``plot``, ``.png``) or an unknown one is a ValueError naming
    it and the suffixes allowed: the format is never guessed, since matplotlib would
    then write another file (``plot.png``) than the one named."""
    from matplotlib.backend_bases import FigureCanvasBase
    known = FigureCanvasBase.get_supported_filetypes()
    text = os.fspath(path)
    suffix = os.path.splitext(os.path.basename(text))[1].lower()
    allowed = ", ".join(f".{k}" for k in ("png", "pdf", "svg")) + ", " + ", ".join(
        f".{k}" for k in sorted(known) if k not in ("png", "pdf", "svg"))
    if not suffix:
        raise ValueError(f"{text!r} has no suffix, which gives the format: name the file "
                         f"with one of {allowed}")
    if suffix[1:] not in known:
        raise ValueError(f"{text!r}: unknown suffix {suffix!r} (the format follows the "
                         f"suffix: {allowed})")
    return suffix[1:]


def save(ax: Any, path: str, *, dpi: int = 120) -> None:
    """Write the figure of ``ax`` to exactly ``path``, in the format its suffix names
    (``plot_format``: a ValueError for none or an unknown one), and close it."""
    import matplotlib.pyplot as plt
    fmt = plot_format(path)
    fig = ax.get_figure()
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, format=fmt)
    plt.close(fig)


def _sides(curve: Any) -> list[tuple[Bound, str, str]]:
    """The sides to draw: (bound, line style, legend suffix); the lower only if known."""
    sides = [(Bound.UPPER, "-", "upper (certified)" if curve.provenance.exactness.certified
              else "upper")]
    if getattr(curve, "lower", None) is not None:
        sides.append((Bound.LOWER, "--", "lower"))
    return sides


def plot_tradeoff(curve: Any, ax: Any = None, *, direction: Direction | str = "max",
                  epsilons: ArrayLike | None = None, label: str = "") -> Any:
    """β = T(α) of ``curve`` (any kind; converted to a ``TradeOff``), both sides where
    known, the band between them shaded, with the (ε, δ(ε)) lines that bound it from
    below: max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)) (Dong, Roth, Su, arXiv:1905.02383,
    Prop. 2.5), for a few ε (``epsilons``; default three spread over the curve)."""
    from accounting.curves.profile import PrivacyProfile
    from accounting.curves.tradeoff import TradeOff
    trade = as_kind(curve, TradeOff)
    d = as_direction(direction)
    alpha = np.unique(np.concatenate([np.linspace(0.0, 1.0, 401), np.geomspace(1e-6, 1.0, 200)]))
    ax = _axes(ax)
    name = label or "T(α)"
    betas = {}
    for bound, ls, suffix in _sides(trade):
        betas[bound] = trade.beta(alpha, d, bound)
        ax.plot(alpha, betas[bound], ls=ls, color="C0", label=f"{name}, {suffix}")
    if len(betas) == 2:
        ax.fill_between(alpha, betas[Bound.UPPER], betas[Bound.LOWER], color="C0", alpha=0.2)
    profile = as_kind(curve, PrivacyProfile)
    if epsilons is None:   # the ε at δ = 0.1, 0.01 and 0.001, where they are positive
        eps = np.asarray(profile.epsilon(np.array([1e-1, 1e-2, 1e-3]), d), dtype=float)
        epsilons = eps[np.isfinite(eps) & (eps > 0)] if np.any(eps > 0) else [1.0]
    eps = check_array("epsilons", epsilons, lo=0.0)
    for k, e in enumerate(np.atleast_1d(eps)):
        dl = float(profile.delta(e, d))
        line = np.maximum.reduce([np.zeros_like(alpha), 1 - dl - np.exp(e) * alpha,
                                  np.exp(-e) * (1 - dl - alpha)])
        ax.plot(alpha, line, ls=":", lw=1.0, color=f"C{k + 1}",
                label=f"(ε, δ) = ({e:.3g}, {dl:.2g})")
    ax.plot([0, 1], [1, 0], color="0.6", lw=0.6)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("type I error α (false-positive rate)")
    ax.set_ylabel("type II error β = T(α)")
    ax.legend(fontsize="x-small")
    return ax


def plot_profile(curve: Any, ax: Any = None, *, direction: Direction | str = "max",
                 epsilons: ArrayLike | None = None, label: str = "") -> Any:
    """δ(ε) of ``curve`` (converted to a ``PrivacyProfile``) on a log scale, both sides
    where known."""
    from accounting.curves.profile import PrivacyProfile
    prof = as_kind(curve, PrivacyProfile)
    d = as_direction(direction)
    if epsilons is None:
        top = float(prof.epsilon(1e-12, d))
        top = top if np.isfinite(top) and top > 0 else 10.0
        epsilons = np.linspace(0.0, top, 200)
    eps = check_array("epsilons", epsilons, lo=0.0)
    ax = _axes(ax)
    name = label or "δ(ε)"
    deltas = {}
    for bound, ls, suffix in _sides(prof):
        deltas[bound] = prof.delta(eps, d, bound)
        ax.semilogy(eps, np.maximum(deltas[bound], 1e-300), ls=ls, color="C0",
                    label=f"{name}, {suffix}")
    if len(deltas) == 2:
        ax.fill_between(eps, np.maximum(deltas[Bound.LOWER], 1e-300),
                        np.maximum(deltas[Bound.UPPER], 1e-300), color="C0", alpha=0.2)
    ax.set_ylim(bottom=max(1e-16, float(np.min(deltas[Bound.UPPER][deltas[Bound.UPPER] > 0],
                                               initial=1.0)) / 10))
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε)")
    ax.legend(fontsize="small")
    return ax


def plot_pld(curve: Any, ax: Any = None, *, direction: Direction | str = "forward",
             label: str = "") -> Any:
    """The privacy-loss masses of ``curve`` (converted to a ``PLD``) in one direction
    (``forward`` is the loss log dP/dQ under P), both sides where known, on a log scale;
    the mass at +∞ is written in the legend."""
    from accounting.curves.pld import PLD
    pld = as_kind(curve, PLD)
    assert isinstance(pld, PLD)            # as_kind converts to the kind it is given
    d = as_direction(direction)
    if d is Direction.MAX:
        raise ValueError("plot_pld needs direction 'forward' or 'backward', not 'max'")
    ax = _axes(ax)
    name = label or f"PLD ({d.value})"
    for bound, ls, suffix in _sides(pld):
        law = pld.law(d, bound)
        keep = law.masses > 0
        ax.semilogy(law.losses[keep], law.masses[keep], ls=ls, lw=0.9, color="C0",
                    drawstyle="steps-mid",
                    label=f"{name}, {suffix}; mass at +∞ {law.inf_mass + 0.0:.2g}")
    ax.set_xlabel("privacy loss ℓ")
    ax.set_ylabel("mass at ℓ")
    ax.legend(fontsize="small")
    return ax


def plot_rdp(curve: Any, ax: Any = None, *, alphas: Sequence[float] | None = None,
             direction: Direction | str = "max", label: str = "") -> Any:
    """D_α of ``curve`` (converted to ``RDP``) against α, with the zCDP envelope ρα of
    the same curve (its smallest ρ with D_α ≤ ρα for every α > 1) and the gap between
    them shaded (unifying-accounting paper, arXiv:2610.02414v1, §3)."""
    from accounting.curves.rdp import RDP
    from accounting.curves.zcdp import ZCDP
    rdp = as_kind(curve, RDP)
    assert isinstance(rdp, RDP)            # as_kind converts to the kind it is given
    d = as_direction(direction)
    a = check_array("alphas", np.geomspace(1.01, 64.0, 120) if alphas is None else alphas,
                    lo=1.0, lo_open=True)
    ax = _axes(ax)
    name = label or "D_α"
    values = rdp.rdp(a, d)
    line, = ax.plot(a, values, color="C0", label=f"{name} (RDP, {rdp.provenance.exactness.value})")
    rho = float(as_kind(rdp, ZCDP).rho(d))
    if np.isfinite(rho):
        ax.plot(a, rho * a, ls="--", color="C1", label=f"zCDP envelope ρα, ρ = {rho:.4g}")
        ax.fill_between(a, values, rho * a, color="C1", alpha=0.2, label="information gap")
    ax.set_xscale("log")
    ax.set_xlabel("order α")
    ax.set_ylabel("Rényi divergence")
    ax.legend(fontsize="small")
    return ax


#: a method whose ε exceeds the certified PLD's by this factor at every δ is left out of
#: ``plot_accountants`` (with a note): on a shared axis it would flatten the others
USELESS_FACTOR = 5.0


def _log_ticks(axis: Any) -> None:
    """Labels at 1, 2 and 5 of each decade only, so that labels never overlap."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    axis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ScalarFormatter())
    axis.set_minor_formatter(NullFormatter())


def plot_accountants(accountants: Mapping[str, Any] | Any, ax: Any = None, *,
                     deltas: Sequence[float] | np.ndarray | None = None,
                     methods: Sequence[str] = ("pld",)) -> Any:
    """ε(δ) against δ for each accountant (a mapping ``{label: Accountant}``, or one
    accountant) under each of ``methods`` (``"pld"``, ``"rdp"``, ``"zcdp"``): the
    certified PLD bracket shaded, the other methods as lines — accountants and methods
    compared on one plot.

    A method whose ε is more than ``USELESS_FACTOR`` times the certified PLD's at
    every δ is not drawn (it would squash the others to a line at the bottom); the
    legend says which were left out and by how much they lose."""
    from accounting.accountant import Accountant
    if isinstance(accountants, Accountant):
        accountants = {"": accountants}
    if not isinstance(accountants, Mapping) or not accountants:
        raise TypeError("accountants must be an Accountant or a non-empty mapping "
                        "{label: Accountant}")
    dl = check_array("deltas", np.geomspace(1e-12, 1e-2, 60) if deltas is None else deltas,
                     lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    ax = _axes(ax)
    left_out: dict[str, float] = {}   # method → its least ratio to the PLD's ε
    drawn: list[np.ndarray] = []
    for k, (name, acct) in enumerate(accountants.items()):
        if not isinstance(acct, Accountant):
            raise TypeError(f"accountants[{name!r}] must be an Accountant, got "
                            f"{type(acct).__name__}")
        lo, hi = acct.epsilon_interval(dl)
        for j, method in enumerate(methods):
            tag = f"{name}, {method}".lstrip(", ")
            if method == "pld":
                width = float(np.max((hi - lo) / np.where(hi > 0, hi, 1.0)))
                ax.semilogx(dl, hi, color=f"C{k}",
                            label=f"{tag} (certified upper; bracket ≤ {width:.2%})")
                ax.fill_between(dl, lo, hi, color=f"C{k}", alpha=0.35, lw=0)
                drawn += [lo, hi]
                continue
            eps = np.asarray(acct.under(method).epsilon(dl), dtype=float)
            ratio = eps / np.where(hi > 0, hi, np.nan)
            if np.all(ratio > USELESS_FACTOR):
                left_out[method] = min(left_out.get(method, np.inf), float(np.nanmin(ratio)))
                continue
            ax.semilogx(dl, eps, color=f"C{k}", ls=("--", "-.", ":")[j % 3], label=tag)
            drawn.append(eps)
    values = np.concatenate(drawn) if drawn else np.ones(1)
    values = values[np.isfinite(values)]
    low, high = (float(values.min()), float(values.max())) if values.size else (1.0, 1.0)
    if low > 0 and high / low > 20:    # methods far apart: a log scale keeps both legible
        ax.set_yscale("log")
        _log_ticks(ax.yaxis)
    for method, least in left_out.items():   # an invisible entry carries the note
        ax.plot([], [], " ", label=f"{method} not drawn: ε ≥ {least:.0f}× the PLD's")
    ax.set_xlabel("δ")
    ax.set_ylabel("ε(δ)")
    ax.legend(fontsize="x-small")
    return ax


def plot_roc(curve: Any, ax: Any = None, *, fprs: ArrayLike | None = None,
             direction: Direction | str = "max", label: str = "") -> Any:
    """The membership-inference ROC bound on log-log axes: the largest TPR of any
    attack, 1 − T(α), against its FPR α, from 1e-6 to 1 (the low FPRs where attacks
    are judged; Carlini et al., "Membership inference attacks from first principles",
    arXiv:2112.03570, §3), both sides of the bracket where known, the chance line
    TPR = FPR, and the queried ``fprs`` marked at their certified TPR bound.

    ``curve``: any privacy curve (converted to a ``TradeOff``)."""
    from accounting.analysis.risk import tpr_at_fpr
    from accounting.curves.tradeoff import TradeOff
    trade = as_kind(curve, TradeOff)
    alpha = np.geomspace(1e-6, 1.0, 300)
    ax = _axes(ax)
    name = label or "TPR bound"
    for bound, ls, suffix in _sides(trade):
        ax.loglog(alpha, tpr_at_fpr(trade, alpha, direction=direction, bound=bound),
                  ls=ls, color="C0", label=f"{name}, {suffix}")
    ax.loglog(alpha, alpha, color="0.6", lw=0.8, label="chance (TPR = FPR)")
    if fprs is not None:
        at = check_array("fprs", fprs, lo=0.0, hi=1.0, lo_open=True)
        tpr = tpr_at_fpr(trade, at, direction=direction)
        ax.loglog(at, tpr, "o", color="k", ms=4, label="queried FPR")
        for a, t in zip(np.atleast_1d(at), np.atleast_1d(tpr)):
            ax.annotate(f"{t:.3g}", (a, t), textcoords="offset points", xytext=(4, -10),
                        fontsize="x-small")
    ax.set_xlim(1e-6, 1.0)
    ax.set_ylim(1e-6, 1.05)
    ax.set_xlabel("false-positive rate α")
    ax.set_ylabel("true-positive rate ≤ 1 − T(α)")
    ax.legend(fontsize="x-small", loc="lower right")
    return ax


def plot_gap(gap: InformationGap | PairLike, ax: Any = None, *, t: Any = None,
             label: str | None = None) -> Any:
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
                          t: ArrayLike = (1.0,), ax: Any = None, *,
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


def plot_allocation(families: dict[str, Callable[[float], PairLike]], rho_total: float, n: int, ax: Any = None, *,
                    t: Any = None) -> Any:
    """The composed gap Σ_i Γ_i(t) of n mechanisms sharing ``rho_total``, uniform
    against concentrated, for each ``{label: family}`` (family: ρ ↦ mechanism with
    that ρ*; paper §4.3, Fig. 5)."""
    t = np.linspace(0.1, 3.0, 30) if t is None else t
    ax = _axes(ax)
    for label, family in families.items():
        # annotated: mypy cannot infer a fixed point for a variable that is both
        # None and a matplotlib Line2D across the loop ("too many iterations")
        line: Any = None
        for alloc, ls in (("uniform", "-"), ("concentrated", "--")):
            res = allocation_gap(family, rho_total, n, t, alloc)
            kw: dict[str, Any] = {} if line is None else {"color": line.get_color()}
            line, = ax.plot(res.t, res.gap, ls=ls, label=f"{label}, {alloc}", **kw)
    ax.set_xlabel("order offset t = α − 1")
    ax.set_ylabel(f"composed gap (n = {n}, ρ_total = {rho_total:g})")
    ax.legend(fontsize="small")
    return ax
