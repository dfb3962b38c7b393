"""Random allocation (balls-and-bins): each record is used in one of ``steps`` steps,
chosen uniformly at random, with certified upper and lower privacy profiles.

The sampler. An epoch has t steps; each record joins exactly one of them, chosen
uniformly and independently of the other records (Chua et al., "Balls-and-Bins
Sampling for DP-SGD", arXiv:2412.16802; Feldman and Shenfeld, "Privacy amplification
by random allocation", arXiv:2502.08202, the case k = 1 of k-out-of-t allocation).
Each step runs a base mechanism with dominating pair (P, Q) (add/remove).

The dominating pair. Under add/remove the t outputs of the epoch are dominated by

    P_t = (1/t) Σ_i Q ⊗ … ⊗ P (coordinate i) ⊗ … ⊗ Q,    Q_t = Q^{⊗t},

forward P_t‖Q_t = remove, backward Q_t‖P_t = add. For the Gaussian this is the pair
((1/t) Σ_i N(e_i μ, I_t), N(0, I_t)), μ = Δ/σ, shown tightly dominating for the
adaptive (DP-SGD) setting in arXiv:2412.16802 (its dominating pair of ABLQ with
balls-and-bins batches); for a general base with dominating pair (P, Q) the same
reduction is the starting point of arXiv:2502.08202 and of the PLD computation of
Feldman and Shenfeld, "Efficient privacy loss accounting for subsampling and random
allocation", arXiv:2602.17284 (the log-sum-exp form of the loss and its t-wise
convolution). Its privacy loss, with Y_i = dP/dQ(x_i) the base's likelihood ratio, is

    L = log((1/t) Σ_i Y_i),      Y_1, …, Y_t i.i.d. under Q,

so with S = Σ_i Y_i (a sum of t i.i.d. copies of Y under Q) and p_∞ = P(dQ = 0):

    δ_remove(ε) = p_∞ + E_Q[(S/t − e^ε)₊],        δ_add(ε) = E_Q[(1 − e^ε S/t)₊].

Both are expectations of convex functions of S, nondecreasing (remove) or
nonincreasing (add), which is what makes them certifiable by a convolution.

The certificate (this module's own derivation, no paper's algorithm copied):

1. Base law on a linear grid c_j = j·h of likelihood ratios, from the base's upper
   profile alone. The call function φ(c) = E_Q[(Y − c)₊] = δ_fwd(log c) − p_∞ and the
   put function ψ(c) = E_Q[(c − Y)₊] = c·δ_bwd(−log c) are known at the nodes. The
   law Y′ whose call function is the piecewise-linear interpolation of φ at the nodes
   (masses: second differences, (ψ_{j−1} − 2ψ_j + ψ_{j+1})/h; the top node takes the
   slope (φ_{N−1} − φ_N)/h and φ(c_N) goes to p_∞) is a mean-preserving spread of Y
   cell by cell: Y ≤_cx Y′. A convex-order spread of the likelihood ratio is a pair
   that Blackwell-dominates the base (splitting an outcome into outcomes of extreme
   likelihood ratios; merging them back is a post-processing), so it dominates in
   both directions, and P_t, Q_t built from it dominate the true allocation pair by
   data processing coordinatewise. Stochastic bounds bracket Y below and above:
   Y′ − h ≤_st Y ≤_st Y′ + h (the survival of Y′ at a node is a chord slope of φ,
   between the survivals of Y at the cell's ends).
2. The t-fold sum by repeated squaring. Convex order, and first-order dominance, are
   kept by independent sums, so each partial sum may be re-gridded (to a step 2^s·h)
   by a two-point spread (upper), or rounded down / up (lower, remove / add), and
   capped: for remove, min(A, M) with the excess E[(A − M)₊] added to δ (a convex
   nondecreasing 1-Lipschitz functional g has g(A + B) ≤ g(min(A, M) + B) + (A − M)₊);
   for add, at M = t, where the functional vanishes (ε ≥ 0). The lower sides drop the
   excess (min(A, M) ≤ A).
3. δ from the final law by suffix (remove) and prefix (add) sums; ε < 0 by the
   complement identity δ_d(ε) = 1 − e^ε + e^ε δ_{d̄}(−ε), which maps upper bounds to
   upper bounds. FFT roundoff is allowed for on both sides with the usual bound
   |ĉ_k − c_k| ≤ 8·log₂(n)·u·‖a‖₂‖b‖₂ per entry (a standard bound, not re-proved).

Looseness, stated: upper minus lower is O(h·t^0) in S/t from the one-step shift of
the lower laws plus the re-gridding spreads (variance added ≈ levels·η²·Var(Y)/4 per
record, η = h/sd(Y)); measured for the Gaussian in the tests (σ = 1, t = 1000:
ε(1e-5) bracket width below 1 %). Nothing here is Monte Carlo; ``monte_carlo_delta``
is an independent estimate for tests.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import attrs
import numpy as np
from scipy.signal import fftconvolve
from scipy.special import ndtr

from accounting.pairs.mechanism import Mechanism, Neighbouring, Range, parameter
from accounting.pairs.pair import LawPair, Pair, disjoint_pair, identical_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.registry.registry import Registry
from accounting.validation import check_count, check_positive
from accounting.vocabulary import Direction, FloatArray

__all__ = ["RandomAllocationPair", "RandomAllocation", "allocation_pair",
           "monte_carlo_delta", "AllocationTables"]

#: mass of the base's remove profile left above the top grid node (sent to +∞)
DEFAULT_TAIL = 1e-14
#: grid step of the likelihood ratio, as a fraction of its standard deviation under Q
DEFAULT_RESOLUTION = 0.02
#: most grid points of any one law in the computation
MAX_POINTS = 1 << 22
_U = float(np.finfo(float).eps) / 2


@attrs.frozen(eq=False)
class AllocationTables:
    """The final laws of S = Σ Y_i on their grids (index j ↦ value j·step), one per
    direction and side, with the additive terms of δ: ``inf_mass`` (p_∞), ``excess``
    (E of what the caps cut, remove upper only), ``roundoff`` (ℓ2 FFT allowance) and
    ``law_error`` (ℓ1 allowance for the base's grid masses)."""

    step: float
    masses: np.ndarray
    inf_mass: float
    excess: float
    roundoff: float
    #: ℓ1 error bound of the final masses from those of the base's grid law (t times
    #: the base's, to first order)
    law_error: float = 0.0


def _coarsen(a: np.ndarray, mode: str) -> np.ndarray:
    """Re-grid masses on j·H to the grid i·2H: ``spread`` splits odd points half and
    half to their neighbours (a mean-preserving spread), ``floor`` / ``ceil`` round
    them down / up."""
    if a.size % 2:
        a = np.append(a, 0.0)
    even, odd = a[0::2], a[1::2]
    out = np.zeros(even.size + 1)
    out[:-1] += even
    if mode == "spread":
        out[:-1] += odd / 2
        out[1:] += odd / 2
    elif mode == "floor":
        out[:-1] += odd
    else:
        out[1:] += odd
    if out[-1] == 0:
        out = np.trim_zeros(out, "b")
    return out if out.size else np.zeros(1)


def _cap(a: np.ndarray, step: float, cap: float, excess: bool) -> tuple[np.ndarray, float]:
    """min(A, cap) on the grid (cap rounded up to a node); the expected excess
    E[(A − node)₊] when ``excess`` (else 0)."""
    k = int(math.ceil(cap / step - 1e-9))
    if a.size <= k + 1:
        return a, 0.0
    over = a[k + 1:]
    cut = float(np.dot(over, np.arange(1, over.size + 1))) * step if excess else 0.0
    out = a[:k + 1].copy()
    out[k] += float(over.sum())
    return out, cut


class _State:
    """A law on j·step with its accumulated excess and roundoff allowance."""

    def __init__(self, masses: np.ndarray, step: float, excess: float, roundoff: float):
        self.masses, self.step, self.excess, self.roundoff = masses, step, excess, roundoff


def _fit(s: _State, step: float, mode: str) -> _State:
    m = s.masses
    st = s.step
    while st < step * (1 - 1e-12):
        m = _coarsen(m, mode)
        st *= 2
    return _State(m, st, s.excess, s.roundoff)


def _convolve(a: _State, b: _State, mode: str, cap: float, excess: bool, target: float
              ) -> _State:
    step = max(a.step, b.step, target)
    a, b = _fit(a, step, mode), _fit(b, step, mode)
    x = a.masses if a.masses.size else np.zeros(1)
    y = b.masses if b.masses.size else np.zeros(1)
    n = x.size + y.size - 1
    if min(x.size, y.size) <= 64:
        c = np.convolve(x, y)
        err = 0.0
    else:
        c = fftconvolve(x, y)
        # ℓ2 bound of the FFT error, 3·log₂(n)·u·‖x‖₁‖y‖₂ (clipping negative
        # entries to 0 only moves them towards the exact, non-negative values)
        l2 = min(float(x.sum()) * float(np.linalg.norm(y)),
                 float(y.sum()) * float(np.linalg.norm(x)))
        err = 3.0 * math.log2(n) * _U * l2
    c = np.maximum(c, 0.0)
    # ℓ2 error of the product of two perturbed laws, plus this transform's own
    prop = (a.roundoff * float(y.sum()) + b.roundoff * float(x.sum())
            + a.roundoff * b.roundoff * math.sqrt(n))
    s = _State(c, step, a.excess + b.excess, prop + err)
    while s.masses.size > MAX_POINTS:
        s = _fit(s, s.step * 2, mode)
    m, cut = _cap(s.masses, s.step, cap, excess)
    return _State(m, s.step, s.excess + cut, s.roundoff)


def _power(base: _State, count: int, mode: str, cap: float, excess: bool, h: float
           ) -> _State:
    """The law of the sum of ``count`` i.i.d. copies, re-gridded to the step
    h·2^⌊log₂√k⌋ for a partial sum of k copies (its spread grows like √k)."""
    def target(k: int) -> float:
        return h

    m, cut = _cap(base.masses, base.step, cap, excess)
    power = _State(m, base.step, cut, 0.0)
    result: _State | None = None
    k_pow, k_res = 1, 0
    c = count
    while True:
        if c & 1:
            if result is None:
                result = power
            else:
                result = _convolve(result, power, mode, cap, excess, target(k_res + k_pow))
            k_res += k_pow
        c >>= 1
        if not c:
            break
        power = _convolve(power, power, mode, cap, excess, target(2 * k_pow))
        k_pow *= 2
    assert result is not None
    return result


def _grid_law(base: Pair, h: float, n: int, lower: bool) -> tuple[np.ndarray, float, float]:
    """Masses of Y′ on the nodes 0, h, …, n·h (the spread law of the module docstring)
    and the P-mass sent to +∞ (p_∞ + φ(c_n)): from closed-form cell masses for a μ-GDP
    base, from the atoms of a loss-law base, else from the base's profiles (second
    differences, which lose ~u/h of absolute accuracy per mass)."""
    mu = base.gdp_mu()
    if mu is not None:
        return _gaussian_grid_law(float(mu), h, n)
    if isinstance(base, LawPair):
        law = base.law(Direction.FORWARD, "lower" if lower else "upper")
        w, p_inf = _atoms_grid_law(law.losses, law.masses, law.inf_mass, h, n)
        # each atom's y, Q-mass and split carry a few ulps: ℓ1 ≤ 8u·Σ q(2 + y/h)
        y = np.exp(law.losses)
        q = law.masses / y
        return w, p_inf, 8.0 * _U * float(np.sum(q * (2.0 + y / h))) + 8.0 * _U
    return _profile_grid_law(base, h, n, lower)


def _spread_cells(q: np.ndarray, p: np.ndarray, h: float, n: int) -> np.ndarray:
    """Masses on the nodes 0..n of the cells [c_j, c_{j+1}] (j = 0..n−1) of Q-mass q_j
    and P-mass p_j (= E_Q[Y; cell]): each cell's two-point spread onto its ends, the
    mean p_j/q_j kept."""
    c = np.arange(n + 1) * h
    w = np.zeros(n + 1)
    w[:-1] += np.maximum(q * c[1:] - p, 0.0) / h
    w[1:] += np.maximum(p - q * c[:-1], 0.0) / h
    return w


_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


def _gaussian_grid_law(mu: float, h: float, n: int) -> tuple[np.ndarray, float, float]:
    """The μ-GDP pair: Y = e^{μx − μ²/2}, x ~ N(0, 1) under Q and N(μ, 1) under P, cells
    in x at a_j = (log c_j + μ²/2)/μ. Each cell's two-point spread puts
    ∫(c_{j+1} − y)/h dQ on its left node and ∫(y − c_j)/h dQ on its right one: both
    integrands are non-negative, so 8-point Gauss–Legendre on the cell gives them with
    a small relative error (no cancellation; ~1e-15 measured); the first cell (x from −∞) and the tail above
    the top node from Φ in closed form."""
    c = np.arange(n + 1) * h
    with np.errstate(divide="ignore"):
        a = (np.log(c) + 0.5 * mu * mu) / mu
    lo, hi = a[1:-1], a[2:]                       # cells j = 1..n−1
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    x = mid[:, None] + half[:, None] * _GL_X[None, :]
    dens = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi) * (half[:, None] * _GL_W[None, :])
    y = np.exp(mu * x - 0.5 * mu * mu)
    left = np.sum(dens * np.maximum(c[2:, None] - y, 0.0), axis=1) / h
    right = np.sum(dens * np.maximum(y - c[1:-1, None], 0.0), axis=1) / h
    w = np.zeros(n + 1)
    w[1:-1] += left
    w[2:] += right
    # cell 0: y ∈ [0, h], Q-mass Φ(a_1), P-mass Φ(a_1 − μ)
    q0, p0 = float(ndtr(a[1])), float(ndtr(a[1] - mu))
    w[0] += max(q0 - p0 / h, 0.0)
    w[1] += p0 / h
    q_top, p_top = float(ndtr(-a[n])), float(ndtr(-(a[n] - mu)))
    w[n] += q_top
    # 8-point Gauss–Legendre on a cell (x-width ≤ log 2/μ) of this smooth integrand:
    # allowed 16u relative per mass (a measured, not a proved, accuracy)
    err = 16.0 * _U * float(w.sum()) + 8.0 * _U
    return w, max(p_top - c[n] * q_top, 0.0), err


def _atoms_grid_law(losses: np.ndarray, masses: np.ndarray, inf_mass: float, h: float,
                    n: int) -> tuple[np.ndarray, float]:
    """A loss law (forward atoms ℓ with P-masses m, P-mass at +∞): likelihood ratios
    y = e^ℓ of Q-mass m e^{−ℓ}, each split onto its two neighbouring nodes (mean kept);
    Q-mass left over is at y = 0 (loss −∞); atoms above c_n keep Q-mass at c_n and send
    their P-excess to +∞."""
    y = np.exp(np.asarray(losses, dtype=float))
    q = np.asarray(masses, dtype=float) * np.exp(-np.asarray(losses, dtype=float))
    w = np.zeros(n + 1)
    top = y >= n * h
    x = y[~top] / h
    i = np.floor(x).astype(np.int64)
    frac = x - i
    np.add.at(w, i, q[~top] * (1.0 - frac))
    np.add.at(w, np.minimum(i + 1, n), q[~top] * frac)
    w[n] += float(q[top].sum())
    p_inf = float(inf_mass) + float(np.sum(q[top] * (y[top] - n * h)))
    w[0] += max(1.0 - float(w.sum()), 0.0)
    return w, p_inf


#: relative accuracy assumed of a base's profile values (ulps), for the allowance on the
#: masses computed from their second differences
PROFILE_ULPS = 64.0


def _profile_grid_law(base: Pair, h: float, n: int, lower: bool
                      ) -> tuple[np.ndarray, float, float]:
    """``_grid_law`` from the base's profiles alone, with the ℓ1 error bound of its
    masses: each second difference of values accurate to ``PROFILE_ULPS`` ulps errs by
    at most PROFILE_ULPS·u·(|g_{j−1}| + 2|g_j| + |g_{j+1}|)/h."""
    bound = "lower" if lower else "upper"
    c = np.arange(n + 1) * h
    with np.errstate(divide="ignore"):
        logc = np.log(c)
    p_inf = float(base.profile(np.array([np.inf]), "forward", bound)[0])
    fwd = base.profile(logc, "forward", bound) - p_inf          # φ(c)
    bwd = base.profile(-logc, "backward", bound)
    psi = c * bwd                                               # ψ(c)
    psi[0] = 0.0
    mean = 1.0 - p_inf
    low = c <= 1.0
    # second differences: of ψ where c ≤ 1 (small values there), of φ above
    g = np.where(low, psi, fwd + c - mean)   # ψ everywhere, for the crossing stencil
    w = np.empty(n + 1)
    w[0] = psi[1] / h if n >= 1 else 1.0
    d2_psi = (psi[:-2] - 2 * psi[1:-1] + psi[2:]) / h
    d2_phi = (fwd[:-2] - 2 * fwd[1:-1] + fwd[2:]) / h
    d2_mix = (g[:-2] - 2 * g[1:-1] + g[2:]) / h
    inner_low = low[2:]
    inner_high = ~low[:-2]
    w[1:-1] = np.where(inner_low, d2_psi, np.where(inner_high, d2_phi, d2_mix))
    w[n] = (fwd[n - 1] - fwd[n]) / h
    bad = w < -1e-9
    if bad.any():
        raise ValueError(f"{base.describe()}: its profile is not convex in e^ε (a mass "
                         f"{w.min():.3g} < 0 on the likelihood-ratio grid); random "
                         "allocation needs the profile of one pair")
    w = np.maximum(w, 0.0)
    vals = np.abs(np.where(low, psi, fwd))
    err = PROFILE_ULPS * _U * (4.0 * float(vals.sum()) + 1.0) / h
    return w, p_inf + max(float(fwd[n]), 0.0), err


def _lower_laws(w: np.ndarray, h: float, steps: int
                ) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """Grid laws Z_f ≤_icx Y (remove side) and Z_b ≤_dcx Y∧t (add side) from the
    spread law's masses ``w``, and whether each needed a large repair (then the
    stochastic bounds Y′ − h, Y′ + h may be tighter: ``_tables`` computes those too).

    φ is convex and known at the nodes; on cell j its chord exceeds it by at most
    4G_j·λ(1 − λ), G_j = h(w_j + w_{j+1})/4 (the derivative on the cell lies between
    the neighbouring chord slopes). Lowering the node values of the call function by
    e_j = max(G_{j−1}, G_j) (4G at an end where the next node value is pinned) gives a
    piecewise-linear function below φ everywhere: the call function of Z_f (survival
    τ_j = T_j − (e_j − e_{j+1})/h, T the spread law's survival), with no mass at the top
    node. The same for the put function ψ gives Z_b (c.d.f. ρ_j = F_j − (e_{j+1} −
    e_j)/h), its missing mass put at a node ≥ t, where the add integrand vanishes.
    Where the result is not a law (τ or ρ not monotone, or the function negative near
    a large atom) it is repaired only downwards: lowering a survival or c.d.f. entry
    lowers the call or put function, and the maximum of a convex function and 0 is
    convex and still below φ or ψ."""
    n = w.size - 1
    fallback_down = np.concatenate(([w[0] + w[1]], w[2:])) if n >= 2 else np.array([1.0])
    fallback_up = np.concatenate(([0.0], w))
    if n < 4:
        return fallback_down, fallback_up, True, True
    g = h * (w[:-1] + w[1:]) / 4.0          # G_j, cells j = 0..n−1
    surv = np.cumsum(w[::-1])[::-1]          # Q(Y′ ≥ c_j)
    cdf = np.cumsum(w)                       # Q(Y′ ≤ c_j)
    # remove side: e_0..e_{n−1}, e_{n−1} = 0, e_{n−2} with 4G
    e = np.zeros(n)
    e[: n - 2] = np.maximum(np.concatenate(([0.0], g[: n - 3])), g[: n - 2])
    e[n - 2] = max(g[n - 3], 4.0 * g[n - 2])
    raw = np.append(surv[1:n] - (e[: n - 1] - e[1:n]) / h, 0.0)   # Q(Z ≥ c_{j+1})
    tau = np.minimum.accumulate(np.minimum(raw, 1.0))
    call = np.maximum(h * np.cumsum(tau[::-1])[::-1], 0.0)     # at c_0..c_{n−1}
    tau = np.clip(-np.diff(np.append(call, 0.0)) / h, 0.0, 1.0)
    tau = np.minimum.accumulate(tau)
    down = np.maximum(-np.diff(np.concatenate(([1.0], tau))), 0.0)
    big_f = _beats(fallback_down, down, call=True)
    # add side: e_0 = 0, e_1 with 4G_0, e_n = e_{n−1}
    eb = np.zeros(n + 1)
    eb[1] = max(4.0 * g[0], g[1])
    eb[2:n] = np.maximum(g[1: n - 1], g[2:n])
    eb[n] = eb[n - 1]
    raw_b = cdf[:n] - (eb[1:] - eb[:-1]) / h            # Q(Z ≤ c_j), j = 0..n−1
    rho = np.minimum.accumulate(np.minimum(raw_b, 1.0)[::-1])[::-1]
    put = np.maximum(np.concatenate(([0.0], h * np.cumsum(rho))), 0.0)
    rho = np.clip(np.diff(put) / h, 0.0, 1.0)
    body = np.maximum(np.diff(np.concatenate(([0.0], rho))), 0.0)
    # the missing mass at a node ≥ t (the add grid ends at min(c_top, t), with
    # t/h ≤ 2^20 nodes there; a grid that far exceeds that is the remove side's, whose
    # Z_b is not used)
    top = int(math.ceil(steps / h)) + 1 if steps / h <= 4 * MAX_POINTS else n + 1
    up = np.zeros(max(top, n) + 1)
    up[:n] = body
    up[-1] += max(1.0 - float(body.sum()), 0.0)
    big_b = _beats(fallback_up, up[: n + 1], call=False)
    return down, up, big_f, big_b


def _beats(alt: np.ndarray, ours: np.ndarray, call: bool) -> bool:
    """Whether the law ``alt`` has a larger call (``call``) or put function than ``ours``
    at some node (both on one grid): then its lower bound may be the better one."""
    k = max(alt.size, ours.size)
    a, b = np.zeros(k), np.zeros(k)
    a[: alt.size], b[: ours.size] = alt, ours
    x = np.arange(k, dtype=float)
    if call:   # Σ m (x − x_j)₊ by suffix sums
        def f(m: np.ndarray) -> np.ndarray:
            s1 = np.cumsum(m[::-1])[::-1]
            sx = np.cumsum((m * x)[::-1])[::-1]
            out: np.ndarray = sx - x * s1
            return out
    else:      # Σ m (x_j − x)₊ by prefix sums
        def f(m: np.ndarray) -> np.ndarray:
            out: np.ndarray = x * np.cumsum(m) - np.cumsum(m * x)
            return out
    return bool(np.max(f(a) - f(b)) > 1e-12)


def _top_ratio(base: Pair, tail: float) -> float:
    """The smallest c = e^ε (found on a doubling then bisection in ε) with
    δ_fwd(ε) − p_∞ ≤ ``tail`` (the call function φ(c) the grid leaves above)."""
    p_inf = float(base.profile(np.array([np.inf]), "forward")[0])

    def phi(e: float) -> float:
        return float(base.profile(np.array([e]), "forward")[0]) - p_inf
    hi = 1.0
    while phi(hi) > tail and hi < 700:
        hi *= 2
    lo = 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if phi(mid) > tail:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def _variance(w: np.ndarray, h: float) -> float:
    y = np.arange(w.size) * h
    m = float(np.dot(w, y))
    return max(float(np.dot(w, y * y)) - m * m, 0.0)


def _tables(base: Pair, steps: int, resolution: float, tail: float
            ) -> dict[tuple[str, str], AllocationTables]:
    top = _top_ratio(base, tail)
    # a first look at the law on a coarse grid sets the step
    n0 = 4096
    w0, _, _ = _grid_law(base, top / n0, n0, lower=False)
    sd = math.sqrt(_variance(w0, top / n0)) or 1.0
    h = max(resolution * sd, top / MAX_POINTS, 1e-12)
    n = max(int(math.ceil(top / h)), 2)
    h = top / n
    cap_fwd = top + steps + 40.0 * math.sqrt(steps) * sd
    t = float(steps)
    out: dict[tuple[str, str], AllocationTables] = {}
    sides = (("upper", False),) if base.exact else (("upper", False), ("lower", True))
    # the add side needs resolution near S = t e^{−ε} ≤ t only: its own, finer grid
    # on [0, min(top, t)]
    hb = max(t / (1 << 20), min(h, t * 1e-5))
    nb = max(int(math.ceil(min(top, t) / hb)), 4)
    hb = min(top, t) / nb
    if base.gdp_mu() is None and not isinstance(base, LawPair):
        # masses from second differences lose u/h each: not much finer than h
        hb = max(hb, h / 4)
        nb = max(int(math.ceil(min(top, t) / hb)), 4)
        hb = min(top, t) / nb
    laws = {side: _grid_law(base, h, n, lower) for side, lower in sides}
    laws_b = {side: _grid_law(base, hb, nb, lower) for side, lower in sides}
    for side in ("upper", "lower"):
        w, p_up, err_f = laws["upper" if base.exact else side]
        wb, _, err_b = laws_b["upper" if base.exact else side]
        p_inf = float(base.profile(np.array([np.inf]), "forward", side)[0])
        if side == "upper":
            fwd = _power(_State(w, h, 0.0, 0.0), steps, "spread", cap_fwd, True, h)
            bwd = _power(_State(wb, hb, 0.0, 0.0), steps, "spread", t, False, hb)
            out[("forward", side)] = AllocationTables(fwd.step, fwd.masses, p_up, fwd.excess,
                                                      fwd.roundoff, steps * err_f)
        else:
            down, _, big_f, _ = _lower_laws(w, h, steps)
            _, up, _, big_b = _lower_laws(wb, hb, steps)
            fwd = _power(_State(down, h, 0.0, 0.0), steps, "floor", cap_fwd, False, h)
            bwd = _power(_State(up, hb, 0.0, 0.0), steps, "ceil", t, False, hb)
            out[("forward", side)] = AllocationTables(fwd.step, fwd.masses, p_inf, 0.0,
                                                      fwd.roundoff, steps * err_f)
            # two valid lower bounds: the larger counts (``RandomAllocationPair``)
            if big_f:
                alt = _power(_State(np.concatenate(([w[0] + w[1]], w[2:])), h, 0.0, 0.0),
                             steps, "floor", cap_fwd, False, h)
                out[("forward", "lower_alt")] = AllocationTables(
                    alt.step, alt.masses, p_inf, 0.0, alt.roundoff, steps * err_f)
            if big_b:
                top_b = int(math.ceil(t / hb)) + 1
                shifted = np.zeros(max(top_b, wb.size) + 1)
                shifted[1: wb.size + 1] = wb
                alt = _power(_State(shifted, hb, 0.0, 0.0), steps, "ceil", t, False, hb)
                out[("backward", "lower_alt")] = AllocationTables(
                    alt.step, alt.masses, 0.0, 0.0, alt.roundoff, steps * err_b)
        out[("backward", side)] = AllocationTables(bwd.step, bwd.masses, 0.0, 0.0,
                                                   bwd.roundoff, steps * err_b)
    return out


def _remove_delta(tab: AllocationTables, steps: int, eps: np.ndarray, upper: bool
                  ) -> np.ndarray:
    """p_∞ + (E[(S − t e^ε)₊] + excess)/t at ε ≥ 0, by suffix sums."""
    a = tab.masses
    s = np.arange(a.size) * tab.step
    suf_m = np.concatenate((np.cumsum(a[::-1])[::-1], [0.0]))
    suf_s = np.concatenate((np.cumsum((a * s)[::-1])[::-1], [0.0]))
    with np.errstate(over="ignore"):
        x = steps * np.exp(eps)
    j = np.searchsorted(s, x, side="right")
    xs = np.where(np.isfinite(x), x, 0.0)
    part = np.maximum(suf_s[j] - xs * suf_m[j], 0.0)
    part = np.where(np.isfinite(x), part, 0.0)
    # the roundoff allowance is an ℓ2 bound: times the ℓ2 norm of the integrand
    suf_q = np.concatenate((np.cumsum((s * s)[::-1])[::-1], [0.0]))
    suf_1 = np.concatenate((np.arange(a.size, 0, -1, dtype=float), [0.0]))
    suf_l = np.concatenate((np.cumsum(s[::-1])[::-1], [0.0]))
    inside = j < a.size
    xi = np.where(inside, xs, 0.0)
    sq = np.where(inside, np.maximum(suf_q[j] - 2 * xi * suf_l[j] + xi * xi * suf_1[j], 0.0),
                  0.0)
    slack = tab.roundoff * np.sqrt(sq) / steps * 1.01 + tab.roundoff * 1e-9
    # the ℓ1 allowance times the largest integrand on the grid
    slack = slack + tab.law_error * np.where(inside, np.maximum(s[-1] - xi, 0.0), 0.0) / steps
    if upper:
        val = tab.inf_mass + (part + tab.excess) / steps + slack
    else:
        val = tab.inf_mass + part / steps - slack
    return np.clip(val, 0.0, 1.0)


def _add_delta(tab: AllocationTables, steps: int, eps: np.ndarray, upper: bool) -> np.ndarray:
    """E[(1 − e^ε S/t)₊] at ε ≥ 0, by prefix sums."""
    a = tab.masses
    s = np.arange(a.size) * tab.step
    pre_m = np.concatenate(([0.0], np.cumsum(a)))
    pre_s = np.concatenate(([0.0], np.cumsum(a * s)))
    with np.errstate(over="ignore"):
        c = np.exp(eps)
    x = steps / c
    # the nodes s < t/c; the node s = 0 always (S = 0 is the add loss +∞)
    j = np.maximum(np.searchsorted(s, x, side="left"), 1)
    with np.errstate(invalid="ignore"):
        part = np.maximum(pre_m[j] - np.where(np.isfinite(c), c * pre_s[j], 0.0) / steps, 0.0)
    slack = tab.roundoff * np.sqrt(j.astype(float)) + tab.law_error
    val = part + (slack if upper else -slack)
    out: np.ndarray = np.clip(val, 0.0, 1.0)
    return out


@attrs.frozen(eq=False)
class RandomAllocationPair(Pair):
    """The random-allocation pair (P_t, Q_t) of a base pair over ``steps`` steps,
    bracketed (module docstring): ``_profile`` an upper bound in each direction,
    ``_profile_lower`` a lower one, both certified. Build with ``allocation_pair``."""

    base: Pair
    steps: int
    tables: dict[tuple[str, str], AllocationTables] = attrs.field(repr=False)

    exact = False

    def _side(self, eps: FloatArray, direction: Direction, side: str) -> FloatArray:
        eps = np.asarray(eps, dtype=float)
        upper = side == "upper"
        flat = np.ravel(eps)
        out = np.empty(flat.shape)
        pos = flat >= 0
        own = "forward" if direction is Direction.FORWARD else "backward"
        other = "backward" if own == "forward" else "forward"

        def native(d: str, e: np.ndarray) -> np.ndarray:
            fn = _remove_delta if d == "forward" else _add_delta
            val = fn(self.tables[(d, side)], self.steps, e, upper)
            alt = self.tables.get((d, "lower_alt")) if not upper else None
            if alt is not None:
                val = np.maximum(val, fn(alt, self.steps, e, False))
            return val
        if pos.any():
            out[pos] = native(own, flat[pos])
        neg = ~pos
        if neg.any():
            e = flat[neg]
            with np.errstate(over="ignore", invalid="ignore"):
                mirrored = native(other, -e)
                val = -np.expm1(e) + np.exp(e) * mirrored
            out[neg] = np.where(np.isneginf(e), 1.0, np.clip(val, 0.0, 1.0))
        # a NaN (roundoff at extreme parameters) is answered by the trivial bound of its
        # side: δ ≤ 1 above, δ ≥ 0 below — sound, never a silent NaN
        out = np.where(np.isnan(out), 1.0 if upper else 0.0, out)
        return out.reshape(eps.shape)

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self._side(eps, direction, "upper")

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self._side(eps, direction, "lower")

    def describe(self) -> str:
        return f"RandomAllocation(t={self.steps})∘{self.base.describe()}"


def allocation_pair(base: Pair, steps: int, *, resolution: float = DEFAULT_RESOLUTION,
                    tail: float = DEFAULT_TAIL) -> Pair:
    """The certified random-allocation pair of ``base`` over ``steps`` steps (one use
    per record). ``resolution``: the likelihood-ratio grid step as a fraction of its
    standard deviation (smaller: tighter and slower); ``tail``: the base's remove
    profile mass left above the grid (added to δ)."""
    if not isinstance(base, Pair):
        raise TypeError(f"base must be a Pair, got {type(base).__name__}")
    steps = check_count("steps", steps)
    check_positive("resolution", resolution)
    if not resolution <= 1.0:
        raise ValueError(f"resolution must be in (0, 1], got {resolution}")
    check_positive("tail", tail)
    if not tail < 1e-3:
        raise ValueError(f"tail must be in (0, 1e-3), got {tail}")
    try:
        tables = _cached_tables(base, steps, float(resolution), float(tail))
    except TypeError:     # an unhashable base: computed afresh
        tables = _tables(base, steps, resolution, tail)
    return RandomAllocationPair(base, steps, tables)


@functools.lru_cache(maxsize=16)
def _cached_tables(base: Pair, steps: int, resolution: float, tail: float
                   ) -> dict[tuple[str, str], AllocationTables]:
    """``_tables``, remembered: a mechanism rebuilds its pair for every curve, and the
    tables (never mutated) take seconds at t ≥ 1000."""
    return _tables(base, steps, resolution, tail)


def monte_carlo_delta(mu: float, steps: int, eps: FloatArray, direction: str, samples: int,
                      rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """Monte Carlo δ(ε) of the Gaussian random-allocation pair with μ = Δ/σ, and its
    standard error: remove by sampling P_t (x₁ ~ N(μ, 1), the others N(0, 1), by
    symmetry), δ = E_P[(1 − e^{ε − L})₊]; add by sampling Q_t, δ = E_Q[(1 − e^{ε + L})₊],
    L = log((1/t) Σ e^{μ x_i − μ²/2}). Both integrands lie in [0, 1] (the
    importance-sampling form of arXiv:2412.16802's estimator). An estimate, not a
    bound: for tests."""
    check_positive("mu", mu)
    steps = check_count("steps", steps)
    samples = check_count("samples", samples)
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    total = np.zeros(eps.shape)
    total2 = np.zeros(eps.shape)
    chunk = max(1, min(samples, 2_000_000 // steps))
    done = 0
    while done < samples:
        m = min(chunk, samples - done)
        x = rng.standard_normal((m, steps))
        if direction == "forward":
            x[:, 0] += mu
        z = mu * x - 0.5 * mu * mu
        top = z.max(axis=1)
        loss = top + np.log(np.exp(z - top[:, None]).sum(axis=1)) - math.log(steps)
        sign = 1.0 if direction == "forward" else -1.0
        with np.errstate(over="ignore"):
            v = np.maximum(-np.expm1(eps[None, :] - sign * loss[:, None]), 0.0)
        total += v.sum(axis=0)
        total2 += (v * v).sum(axis=0)
        done += m
    mean = total / samples
    var = np.maximum(total2 / samples - mean * mean, 0.0)
    return mean, np.sqrt(var / samples)


#: steps of an epoch: integers up to 10^4 (t = 10^4 takes about 40 s; larger t through
#: ``allocation_pair`` directly)
STEPS = Range(1, 1e4, integer=True, log=True)


def _steps(value: Any) -> int:
    return check_count("steps", value)


def _selected(value: Any) -> int:
    return check_count("selected", value)


def _add_remove_base(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator of ``base``: a Mechanism declared under add/remove."""
    if not isinstance(value, Mechanism):
        raise TypeError(f"base must be a Mechanism, got {type(value).__name__}")
    if value.neighbouring is not Neighbouring.ADD_REMOVE:
        raise ValueError(f"random allocation is accounted under add_remove neighbouring, but "
                         f"{type(value).__name__} declares {value.neighbouring.value}")


@attrs.frozen
class RandomAllocation(Mechanism):
    """Random allocation (balls-and-bins): each record is used in ``selected`` of the
    ``steps`` steps of an epoch, chosen uniformly at random, each step running ``base``.

    Neighbouring: add/remove (the base's too). The pair is ``RandomAllocationPair``:
    certified upper and lower profiles (module docstring). ``selected`` must be 1 for
    now (k-out-of-t with k > 1 is refused, not approximated); ``selected > steps`` is
    refused.
    """

    name = "random_allocation"
    base: Mechanism = attrs.field(validator=_add_remove_base)
    steps: int = attrs.field(converter=_steps, metadata={"range": STEPS})
    #: only 1 is accepted for now (k-out-of-t is refused)
    selected: int = attrs.field(default=1, converter=_selected,
                                metadata={"range": Range(1, 1, integer=True)})
    resolution: float = parameter(Range(5e-3, 1.0, log=True), default=DEFAULT_RESOLUTION,
                                  kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ValueError("random allocation is accounted under add_remove neighbouring, "
                             f"got {self.neighbouring.value}")
        if self.selected > self.steps:
            raise ValueError(f"selected must be at most steps ({self.steps}), got "
                             f"{self.selected}")
        if self.selected != 1:
            raise ValueError(f"selected must be 1 (one use per record per epoch); "
                             f"k-out-of-t allocation with k = {self.selected} > 1 is not "
                             "supported yet")

    def pair(self) -> Pair:
        return self.pair_in(None)

    def pair_in(self, registry: Registry | None = None) -> Pair:
        """The pair, its base's looked up in ``registry``."""
        base = self.base.pair_in(registry)
        if self.steps == 1:
            return base
        if base.profile(np.array([0.0]), "max")[0] == 0.0:
            return identical_pair(f"{self.name} (base without privacy loss)")
        if float(base.profile(np.array([np.inf]), "forward")[0]) == 1.0:
            # P₀ ⊥ Q₀: every output reveals the record's step, P_t ⊥ Q_t
            return disjoint_pair(f"{self.name} (base without noise: non-private)")
        return allocation_pair(base, self.steps, resolution=self.resolution)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(RandomAllocation)
