"""Group privacy: the privacy of datasets k neighbouring steps apart, for every curve kind.

``group(obj, k)`` returns a curve for two datasets joined by a chain D_0, …, D_k of
neighbours (k records added, removed or changed). Each hop may be in either direction
of the neighbouring relation, so every rule uses the pessimistic summary (``max``) of
the two directions of one hop, and the result is the same in both directions. Each
result says in its provenance which rule made it and whether it is exact.

====================  ==========================================================  ======
input                 rule                                                        label
====================  ==========================================================  ======
Gaussian pair         μ ↦ kμ (Dong, Roth and Su, arXiv:1905.02383, Thm 2.14 with  exact
(``Pair.gdp_mu``)     G_μ, for which 1 − (1 − G_μ)^{∘k} = G_{kμ})
additive noise        the same mechanism at sensitivity kΔ: |f(D_0) − f(D_k)| ≤   as the
(``AdditiveNoise``)   kΔ by the triangle inequality, and kΔ is reached (a count);  mech.'s
                      the mechanism's own pair dominates every query of that       curve
                      sensitivity (Laplace: kε exactly)
``ZCDP`` (ξ = 0)      ρ ↦ k²ρ (Bun and Steinke, arXiv:1605.02065, Prop. 1.9 of     bound
                      §1; approximate zCDP goes by the RDP rule)
``RDP``               D_α(k) ≤ 3^c D_{2^c α} for α ≥ 2, c = ⌈log₂ k⌉ (Mironov,    bound
                      arXiv:1702.07476, Prop. 2); below α = 2 the value at 2
                      (D_α non-decreasing); D_∞(k) ≤ k D_∞
``TradeOff``, ``PLD`` β(k) = 1 − (1 − f)^{∘k}(α), f the pointwise min of the two    bound
                      directions (Dong, Roth and Su, arXiv:1905.02383, Thm 2.14;
                      its proof needs only f non-increasing)
``PrivacyProfile``    (ε, δ) ↦ (kε, δ(1 + e^ε + … + e^{(k−1)ε})) for every ε       bound
                      (the chain P_0(S) ≤ e^ε P_1(S) + δ applied k times: Dwork and
                      Roth 2014, "The algorithmic foundations of DP", Thm 2.2,
                      whose (kε, k e^{(k−1)ε} δ) this sum never exceeds); pure DP
                      gives kε
====================  ==========================================================  ======

A PLD goes through its trade-off curve (the f-DP rule, which reproduces the (ε, δ) rule
on each f_{ε,δ} and is tighter on the whole curve).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from accounting.analysis.clt import gdp_profile
from accounting.curves.curve import Curve, Provenance, as_kind
from accounting.curves.pld import PLD
from accounting.curves.profile import FunctionSide, PrivacyProfile
from accounting.curves.rdp import CGF, RDP
from accounting.curves.tradeoff import BetaSide, TradeOff
from accounting.curves.zcdp import ZCDP
from accounting.numerics.loss import UNIT_ROUNDOFF
from accounting.pairs.additive import AdditiveNoise
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import Pair, of_kind
from accounting.validation import check_count
from accounting.vocabulary import Direction, Exactness, FloatArray

__all__ = ["group", "GROUP_GRID"]

#: points of the α grid on which a group trade-off curve's δ(ε) is bounded, and the
#: refinement of its cells: each round splits the ``REFINE_CELLS`` cells of largest
#: bound into 16 (cells whose bound is below a value reached keep their bound)
GROUP_GRID = 4097
REFINE_CELLS = 1024
REFINE_ROUNDS = 8


def provenance_of(curve: Curve) -> Provenance:
    """The provenance of ``curve`` (every kind declares it)."""
    prov: Provenance = curve.provenance
    return prov


def _label(curve: Curve, step: str, exactness: Exactness) -> Curve:
    """``curve`` with ``step`` appended to its provenance at ``exactness``."""
    out: Curve = attrs.evolve(curve,  # type: ignore[call-arg]
                              provenance=provenance_of(curve).then(step, exactness))
    return out


def group(obj: Any, k: int, *, kind: type[Curve] | None = None,
          registry: Any = None) -> Curve:
    """The curve of a group of ``k`` (datasets k neighbours apart) for ``obj``: a
    Mechanism, a Pair or a privacy curve (module docstring for each rule and its label).

    ``kind``: for a Mechanism or Pair, the curve kind wanted: for additive noise the
    mechanism's own ``kind`` curve at sensitivity kΔ, for a Gaussian pair the exact
    kμ-GDP profile converted to ``kind``, otherwise the kind the rule is applied to
    (default ``PLD``, through its trade-off curve). Without ``kind`` a Gaussian gives
    its exact ``PrivacyProfile`` (kμ-GDP). For a curve, ``kind`` must be None or its own
    kind."""
    k = check_count("k", k)
    if isinstance(obj, Mechanism):
        pair = obj.pair_in(registry)
        mu = pair.gdp_mu()
        if mu is not None and kind is None:
            return _gaussian(mu, k)
        if isinstance(obj, AdditiveNoise):
            wider = attrs.evolve(obj, sensitivity=k * obj.sensitivity)
            curve = wider.curve(kind or PLD, registry=registry)
            return _label(curve, f"group k={k}: sensitivity k·Δ", Exactness.EXACT)
        return group(pair.curve(kind or PLD, registry=registry), k)
    if isinstance(obj, Pair):
        mu = obj.gdp_mu()
        if mu is not None:
            exact = _gaussian(mu, k)
            return exact if kind is None else as_kind(exact, kind)
        return group(obj.curve(kind or PLD, registry=registry), k)
    if not isinstance(obj, Curve):
        raise TypeError(f"obj must be a Mechanism, a Pair or a privacy curve, got "
                        f"{type(obj).__name__}")
    if kind is not None and not isinstance(obj, kind):
        raise ValueError(f"kind must be None for a curve (or its own kind "
                         f"{type(obj).__name__}), got {kind.__name__}")
    if not provenance_of(obj).exactness.certified:
        raise ValueError(f"group privacy needs a certified curve (exact or an upper "
                         f"bound), got {provenance_of(obj)}")
    if k == 1:
        return obj
    if isinstance(obj, ZCDP) and not any(obj.xi):
        return _zcdp(obj, k)
    if isinstance(obj, ZCDP):
        return _rdp(of_kind(RDP, as_kind(obj, RDP)), k)
    if isinstance(obj, RDP):
        return _rdp(obj, k)
    if isinstance(obj, PLD):
        return _tradeoff(of_kind(TradeOff, as_kind(obj, TradeOff)), k)
    if isinstance(obj, TradeOff):
        return _tradeoff(obj, k)
    if isinstance(obj, PrivacyProfile):
        return _profile(obj, k)
    raise TypeError(f"no group-privacy rule for a {type(obj).__name__}; convert it to "
                    f"PLD, PrivacyProfile, TradeOff, RDP or ZCDP first")


def _gaussian(mu: float, k: int) -> PrivacyProfile:
    """k·μ-GDP: the exact profile of (N(kμ, 1), N(0, 1)) (arXiv:1905.02383, Thm 2.14)."""
    prov = Provenance(Exactness.EXACT, (f"Gaussian μ = {mu:.6g}",
                                        f"group k={k}: μ ↦ kμ (Dong–Roth–Su Thm 2.14)"))
    out: PrivacyProfile = attrs.evolve(gdp_profile(k * mu), provenance=prov)
    return out


def _zcdp(z: ZCDP, k: int) -> ZCDP:
    rho = k * k * z.rho("max")
    prov = z.provenance.then(f"group k={k}: ρ ↦ k²ρ (Bun–Steinke Prop 1.9)", Exactness.UPPER)
    return ZCDP((rho, rho), provenance=prov)


def _rdp(rdp: RDP, k: int) -> RDP:
    """Mironov's group rule (arXiv:1702.07476, Prop. 2) on the sound side."""
    c = math.ceil(math.log2(k))
    scale, stretch = 3.0 ** c, 2.0 ** c
    upper = rdp.upper

    def renyi(alpha: FloatArray) -> FloatArray:
        s = np.asarray(alpha, dtype=float) - 1.0
        return np.asarray(np.max([upper(s, d) for d in Direction.MAX.components], axis=0) / s,
                          dtype=float)

    def cgf(t: FloatArray, _d: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        order = np.maximum(1.0 + t, 2.0)      # below α = 2: the value at 2 (monotone)
        return np.asarray(t * scale * renyi(stretch * order), dtype=float)

    sups = [upper.limit(np.inf, d) for d in Direction.MAX.components]
    known = [s for s in sups if s is not None]
    sup = k * max(known) if len(known) == len(sups) else np.inf

    def limit(order: float, _d: Direction) -> float:
        if order == 1.0:
            return float(scale * renyi(np.array([2.0 * stretch]))[0])
        return float(sup)
    prov = rdp.provenance.then(f"group k={k}: D_α ↦ 3^{c} D_(2^{c}α) (Mironov Prop 2)",
                               Exactness.UPPER)
    return RDP(CGF.of(cgf, limit=limit), provenance=prov)


def _tradeoff(curve: TradeOff, k: int) -> TradeOff:
    """β(k) = 1 − (1 − f)^{∘k} with f = min of both directions (arXiv:1905.02383,
    Thm 2.14); δ(ε) = sup_α 1 − α − e^ε β(α) bounded on each cell [α_i, α_{i+1}] of a
    grid by 1 − α_i − e^ε β(α_{i+1}) (β non-increasing), so the grid never
    under-reports δ; the cells of largest bound are refined until none exceeds a value
    1 − α − e^ε β(α) reached at a grid point, or ``REFINE_ROUNDS`` rounds. The grid is
    geometric towards both ends (its last cell leaves δ a floor of ~1e-16)."""
    def beta(alpha: FloatArray, _d: Direction) -> FloatArray:
        x = np.clip(np.asarray(alpha, dtype=float), 0.0, 1.0)
        for _ in range(k):
            x = np.clip(1.0 - curve.beta(x, "max"), 0.0, 1.0)
        return np.asarray(1.0 - x, dtype=float)

    ends = np.geomspace(1e-300, 1e-3, 512)
    grid = np.unique(np.concatenate([np.linspace(0.0, 1.0, GROUP_GRID), ends, 1.0 - ends]))

    def safe_beta(alpha: FloatArray) -> FloatArray:
        # β(k) = 1 − x loses up to ~k ulps of 1 to cancellation: take them off, so that
        # roundoff never makes β too large (which would under-report δ)
        return np.maximum(beta(alpha, Direction.FORWARD) - (k + 1) * UNIT_ROUNDOFF, 0.0)

    grid_beta = safe_beta(grid)

    def delta_one(e: float) -> float:
        if e == -np.inf:
            return 1.0
        scale = np.exp(min(e, 700.0)) if e < np.inf else np.inf
        lo, hi = grid[:-1], grid[1:]
        b_lo, b_hi = grid_beta[:-1], grid_beta[1:]
        settled = 0.0   # the largest bound of cells no longer refined
        for _ in range(REFINE_ROUNDS):
            with np.errstate(invalid="ignore"):
                bound = np.where(b_hi > 0, 1.0 - lo - scale * b_hi, 1.0 - lo)
                reached = float(np.max(np.where(b_lo > 0, 1.0 - lo - scale * b_lo, 1.0 - lo)))
            order = np.argsort(bound)[::-1]
            top = order[:REFINE_CELLS]
            top = top[bound[top] > reached]
            rest = np.setdiff1d(np.arange(bound.size), top, assume_unique=True)
            if rest.size:
                settled = max(settled, float(np.max(bound[rest])))
            if top.size == 0:
                return float(np.clip(max(settled, reached), 0.0, 1.0))
            pts = lo[top][:, None] + (hi[top] - lo[top])[:, None] * np.linspace(0, 1, 17)[None, :]
            vals = safe_beta(pts.ravel()).reshape(pts.shape)
            lo, hi = pts[:, :-1].ravel(), pts[:, 1:].ravel()
            b_lo, b_hi = vals[:, :-1].ravel(), vals[:, 1:].ravel()
        with np.errstate(invalid="ignore"):
            bound = np.where(b_hi > 0, 1.0 - lo - scale * b_hi, 1.0 - lo)
        return float(np.clip(max(settled, float(np.max(bound))), 0.0, 1.0))

    def delta(eps: FloatArray, _d: Direction) -> FloatArray:
        e = np.asarray(eps, dtype=float)
        out = np.array([delta_one(float(x)) for x in np.ravel(e)])
        return np.asarray(out.reshape(e.shape), dtype=float)

    prov = curve.provenance.then(f"group k={k}: 1 − (1 − f)^∘k (Dong–Roth–Su Thm 2.14)",
                                 Exactness.UPPER)
    return TradeOff(BetaSide(beta, delta), provenance=prov)


def _profile(profile: PrivacyProfile, k: int) -> PrivacyProfile:
    """δ_k(ε) = δ(ε/k)·(e^ε − 1)/(e^{ε/k} − 1) = δ(ε/k)·Σ_{i<k} e^{iε/k} (k·δ(0) at
    ε = 0; 1 below 0; at +∞ 0 if δ(∞) = 0, else 1)."""
    def delta(eps: FloatArray, _d: Direction) -> FloatArray:
        e = np.asarray(eps, dtype=float)
        flat = np.ravel(e)
        base = np.asarray(profile.delta(np.where(flat > 0, flat / k, 0.0), "max"), dtype=float)
        finite = np.isfinite(flat) & (flat > 0)
        safe = np.where(finite, flat, 1.0)
        with np.errstate(over="ignore"):
            factor = np.where(finite, np.expm1(safe) / np.expm1(safe / k), float(k))
            out = np.where(base > 0, base * factor, 0.0)
        at_inf = float(np.asarray(profile.delta(np.inf, "max"))) > 0
        out = np.where(flat == np.inf, 1.0 if at_inf else 0.0, out)
        out = np.where(flat < 0, 1.0, out)
        return np.asarray(np.minimum(out, 1.0).reshape(e.shape), dtype=float)

    prov = profile.provenance.then(f"group k={k}: (kε, δ·Σ e^(iε)) (Dwork–Roth Thm 2.2)",
                                   Exactness.UPPER)
    return PrivacyProfile(FunctionSide(delta), provenance=prov)
