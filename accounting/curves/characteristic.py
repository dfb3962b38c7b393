"""The characteristic function of the privacy loss as a curve kind.

For one direction of a pair, φ(t) = E[e^{itL}] over the direction's loss law (forward:
L = log dP/dQ under P; backward: −L under Q), t real. It is the cumulant generating
function at imaginary order, φ(t) = exp(K(it)) with K(z) = log E[e^{zL}], wherever K
has an analytic continuation to a strip containing the imaginary axis — which is the
case as soon as the Rényi divergence is finite at some order α > 1 (Su, Yang, Su,
Wang, arXiv:2610.02414, §2: exact RDP then carries the same information as the
PLD). A loss law with mass at +∞ has the defective φ(t) = E[e^{itL}; L < ∞], whose
φ(0) = 1 − (mass at +∞).

A ``CharacteristicFunction`` is a product of terms, each (count, ``PhiTerm``):

* **composition multiplies**: φ of independent losses is the product of their φ, so
  ``compose`` concatenates the terms and ``phi`` evaluates Π φ_i(t)^{c_i};
* each term carries K on complex arguments (``cgf``), and the absolute error of
  exp(K(it)) against the true φ (``error``; None: exact up to rounding). With every
  |φ_i| ≤ 1 (the estimates are clipped to the unit disk, which is non-expansive
  towards the true value), |Π a_i^{c_i} − Π b_i^{c_i}| ≤ Σ c_i |a_i − b_i|;
* a term may declare a sub-Gaussian decay rate a (|φ(s)| ≤ e^{−a s²}, Gaussian noise:
  a = μ²/2) and may know its own certified PLD at a grid step (``lattice``), which the
  inversion below uses.

**Inversion (φ → PLD, ``characteristic_to_pld``).** A discretisation D of an
atomless loss onto the grid hℤ that depends on ℓ only through the offset r = ℓ − a
from the grid point a below it has e^{itD} = e^{itℓ}·g_t(r), h-periodic in ℓ, so
(Fourier series of g_t, then expectation)

    E[e^{itD(L)}] = Σ_n c_n(t)·φ(t + 2πn/h),   c_n = (1/h)∫_0^h g_t(r)e^{−2πinr/h}dr.

The pessimistic side uses connect-the-dots (second order in h), the optimistic one
rounding down; both c_0 are closed forms (``discretisation_factor``), and for |t| ≤
π/h the terms n ≠ 0 sum to at most R (``rounding_remainder``: (4/π)·g/(1 − g⁸), g =
e^{−aπ²/h²}, for a decay rate a, times 1 + 4/(1 − e^{−h}) for connect-the-dots). A
lattice law on the grid is its own discretisation. Sampling the product at the N
frequencies t_j = 2πj/(Nh) and one FFT gives the masses of the rounded law folded
modulo N (the discrete Poisson summation formula), which are the masses themselves
when N covers the support. The window is the sum's Chernoff window (from Σ c_i K_i at
real orders, of the finite part: P(S > x) ≤ e^{K(λ) − λx}, and P(S < x) ≤
e^{K(−λ) + λx} for λ ∈ (0, 1], where K(−λ) ≤ 0), narrowed to the lattice supports'
sum; what it leaves out, at most ``tail``/2, folds into the entries. Every mass is then
within η of the truth, η = R + (mass folded in) + (rounding: the ℓ2 error of the
transforms, 5u·log₂N times the ℓ2 norms (Higham's bound, doubled), and of their inputs),
and

* the pessimistic law takes the masses of the connect-the-dots law (which dominates)
  less η (at least 0) and puts the rest at +∞ — moving mass to larger losses only
  raises δ(ε) = E[(1 − e^{ε−L})₊], so it still dominates;
* the optimistic law takes the masses of the rounding-down law less η and drops the
  rest (δ only falls; rounding down lowers every loss, and δ(ε) = E_P[(1 − e^{ε−L})₊]
  grows with the loss, so the bound survives composition); the optimistic lattice
  laws' slacks add.

The bracket pays Σ_k min(m_k, η) of δ at every ε, as mass at +∞ (about 1e-11
for a Gaussian on 6·10⁴ grid points),
on top of the grid's own width: O(h²) above (connect-the-dots), O(h) below.

**Pairs.** A pair that provides ``cgf_analytic`` (its CGF at complex orders: Gaussian,
Laplace, finite laws) gives an exact term. Any other pair gives the φ of its
pessimistic PLD law on the default grid: connect-the-dots (Doroshenko, Ghazi,
Kamath, Kumar, Manurangsi, arXiv:2207.04380, §3) splits the P-mass of each loss ℓ
between the two grid points around it, so e^{itℓ} becomes an average of e^{ita} and
e^{itb}, within 2 sin(|t|h/2) of it (2h for the losses just below the grid, which go
to its lowest point); the mass below that and the mass the law moves to +∞ add their
size twice (``lattice_phi_error``). That error is stated, not certified (the builder's
roundoff repairs are not in it), so such a term is labelled numerical; its
inversion uses the certified PLD itself (``lattice``), not the estimate.

**RDP → φ** (``rdp_to_characteristic``): φ(t) = exp(Σ c_i K_i(it)) for an RDP curve
whose every CGF term declares its analytic continuation (exact closed forms: a pair's
``cgf_analytic``) with an integer weight (the branch of a complex log is then
immaterial); any other RDP curve is refused — a bound on K, or K known only at
real orders, determines no φ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.curves.curve import Curve, Provenance
from accounting.curves.pld import DEFAULT_STEP, DEFAULT_TAIL, PLD, check_step
from accounting.curves.rdp import RDP
from accounting.numerics.loss import MAX_GRID_POINTS, LossPMF
from accounting.validation import check_array, check_count, check_real
from accounting.vocabulary import Direction, Exactness, as_direction

__all__ = ["CharacteristicFunction", "PhiTerm", "AnalyticContinuation", "law_log_mgf", "lattice_phi_error",
           "characteristic_to_pld", "rdp_to_characteristic", "rounding_remainder",
           "discretisation_factor"]

ComplexFn = Callable[[np.ndarray, Direction], np.ndarray]
_FWD, _BWD = Direction.FORWARD, Direction.BACKWARD
_EPS = float(np.finfo(float).eps)
#: the largest count per term, as for every composition (``validation.MAX_COUNT``)
_DIRECTIONS = (_FWD, _BWD)


def law_log_mgf(law: LossPMF, z: np.ndarray | complex) -> np.ndarray:
    """log Σ_k m_k e^{z ℓ_k} over the finite atoms of ``law``, for complex z (the
    principal branch; −∞ + 0j where the law has no finite atom). At z = it its
    exponential is the law's (defective) characteristic function E[e^{itL}; L < ∞]."""
    z = np.asarray(z, dtype=complex)
    keep = law.masses > 0
    logm, ell = np.log(law.masses[keep]), law.losses[keep]
    flat = z.ravel()
    out = np.empty(flat.shape, dtype=complex)
    if ell.size == 0:
        out[:] = -np.inf
        return out.reshape(z.shape)
    # blocks of z so that the (block × atoms) exponent matrix stays near 8 MB
    block = max(1, (1 << 19) // ell.size)
    for s in range(0, flat.size, block):
        zz = flat[s:s + block, None]
        expo = zz * ell[None, :] + logm[None, :]
        top = expo.real.max(axis=1, keepdims=True)    # log-sum-exp: no overflow
        out[s:s + block] = top[:, 0] + np.log(np.exp(expo - top).sum(axis=1))
    return out.reshape(z.shape)


def lattice_phi_error(law: LossPMF, true_inf_mass: float, gap: float,
                      t: np.ndarray) -> np.ndarray:
    """The stated error |φ_true(t) − φ_law(t)| of a connect-the-dots law (module
    docstring), at most 2. Each loss ℓ ≥ ℓ_0 − h (ℓ_0: the lowest grid point) has its
    P-mass split between grid points within 2h of it: 2 sin(min(2|t|h, π)/2) per unit of
    finite mass. The mass below ℓ_0 − h is at most ``gap``/(e^h − 1), where ``gap`` =
    δ(ℓ_0) − (1 − e^{ℓ_0}) = E_P[(e^{ℓ_0 − L} − 1)₊] of the true profile, and the mass
    the law put at +∞ beyond ``true_inf_mass`` is lost: twice each. Plus rounding."""
    t = np.abs(np.asarray(t, dtype=float))
    h = law.step if law.step is not None else float(np.max(np.diff(law.losses), initial=0.0))
    finite = float(law.masses.sum())
    moved = max(law.inf_mass - true_inf_mass, 0.0)
    below = max(gap, 0.0) / math.expm1(h) if h > 0 else (0.0 if gap <= 0 else 1.0)
    spread = 2.0 * np.sin(np.minimum(2.0 * t * h, np.pi) / 2.0) * finite
    return np.minimum(spread + 2.0 * (moved + below) + 16.0 * _EPS * law.masses.size, 2.0)


def rounding_remainder(rate: float, step: float, connect_the_dots: bool = False) -> float:
    """R = (4/π)·g/(1 − g⁸), g = e^{−a π²/h²}: the terms n ≠ 0 of the rounded law's
    Poisson sum, for |φ(s)| ≤ e^{−a s²} and |t| ≤ π/h (module docstring); times
    (1 + 4/(1 − e^{−h})) for the connect-the-dots law, whose coefficients are that
    much larger (``discretisation_factor``); +∞ for a = 0."""
    x = rate * math.pi ** 2 / step ** 2
    if not x > 0:
        return math.inf
    g = math.exp(-x)
    out = 4.0 / math.pi * g / -math.expm1(-8.0 * x)
    return out * (1.0 + 4.0 / -math.expm1(-step)) if connect_the_dots else out


def discretisation_factor(t: np.ndarray, step: float, pessimistic: bool) -> np.ndarray:
    """c_0(t): the term n = 0 of E[e^{it D(L)}] = Σ_n c_n(t) φ(t + 2πn/h) for the
    discretisation D of an atomless loss onto the grid hℤ (module docstring).

    Pessimistic, connect-the-dots (arXiv:2207.04380, §3): the P-mass at ℓ = a + r,
    r ∈ [0, h), goes to a and b = a + h with weights 1 − w and w = (1 − e^{−r})/(1 −
    e^{−h}) (which keep the Q-mass too), so e^{itD} = e^{itℓ}·e^{−itr}(1 + w(e^{ith} −
    1)), h-periodic in ℓ, and c_0 = (A + (e^{ith} − 1)(A − B)/(1 − e^{−h}))/h with
    A = ∫_0^h e^{−itr}dr = (1 − e^{−ith})/(it), B = ∫_0^h e^{−(1+it)r}dr. Optimistic,
    rounding down (D = a): c_0 = A/h."""
    th = t * step
    safe = np.where(t == 0, 1.0, t)
    a = np.where(t == 0, step, -np.expm1(-1j * th) / (1j * safe))
    if not pessimistic:
        return a / step
    b = -np.expm1(-(1.0 + 1j * t) * step) / (1.0 + 1j * t)
    out: np.ndarray = (a + np.expm1(1j * th) * (a - b) / -math.expm1(-step)) / step
    return out


def _check_decay(value: Any) -> tuple[float | None, float | None]:
    fwd, bwd = value
    return tuple(None if v is None else check_real("PhiTerm.decay", v, lo=0.0, lo_open=True)
                 for v in (fwd, bwd))   # type: ignore[return-value]


@attrs.frozen(eq=False)
class AnalyticContinuation:
    """An exact CGF at complex orders, K(z, direction), with the decay rates of its φ
    (per direction a with |exp(K(is))| ≤ e^{−a s²}, or None): what a Rényi curve term
    carries so that ``rdp_to_characteristic`` can continue it."""

    fn: ComplexFn
    decay: tuple[float | None, float | None] = attrs.field(default=(None, None),
                                                                 converter=_check_decay)

    def __call__(self, z: np.ndarray, direction: Direction) -> np.ndarray:
        return self.fn(z, direction)


@attrs.frozen(eq=False)
class PhiTerm:
    """One factor of a characteristic function, both directions.

    ``cgf(z, d)``: K(z) = log E[e^{zL}] of the law the term evaluates, for complex z
    (φ(t) = exp(K(it))); ``error(t, d)``: a bound on |φ_true(t) − exp(K(it))| for real
    t, None when exact up to rounding; ``decay``: per direction a rate a with |φ(s)| ≤
    e^{−a s²}, or None; ``lattice(step)``: the term's certified PLD on that grid, or
    None; ``exactness``: what exp(K(it)) is (exact, or numerical with the stated
    error)."""

    cgf: ComplexFn
    error: Callable[[np.ndarray, Direction], np.ndarray] | None = None
    decay: tuple[float | None, float | None] = attrs.field(default=(None, None),
                                                                 converter=_check_decay)
    lattice: Callable[[float], PLD] | None = None
    exactness: Exactness = attrs.field(default=Exactness.EXACT,
                                       validator=attrs.validators.instance_of(Exactness))
    label: str = "φ"

    @classmethod
    def from_laws(cls, forward: LossPMF, backward: LossPMF, label: str = "laws") -> PhiTerm:
        """The exact term of two finite loss laws (its φ is theirs); on a grid, the
        laws are also its lattice at their own step (a bracket of width zero)."""
        laws = {_FWD: forward, _BWD: backward}

        def cgf(z: np.ndarray, d: Direction) -> np.ndarray:
            return law_log_mgf(laws[d], z)
        lattice = None
        if forward.step is not None and forward.step == backward.step:
            pld = PLD((forward, backward), (forward, backward))

            def lattice(step: float) -> PLD:
                if step != forward.step:
                    raise ValueError(f"step: these laws sit on the grid of step "
                                     f"{forward.step:g}, not {step:g}")
                return pld
        return cls(cgf, lattice=lattice, label=label)


def _terms(value: Any) -> tuple[tuple[int, PhiTerm], ...]:
    terms = tuple(value)
    if not terms:
        raise ValueError("a CharacteristicFunction needs at least one term")
    out = []
    for i, term in enumerate(terms):
        if not (isinstance(term, tuple) and len(term) == 2 and isinstance(term[1], PhiTerm)):
            raise TypeError(f"CharacteristicFunction.terms[{i}] must be a (count, PhiTerm) "
                            f"pair, got {term!r:.80}")
        out.append((check_count(f"CharacteristicFunction.terms[{i}] count", term[0]), term[1]))
    return tuple(out)


def _concrete(direction: Direction | str) -> Direction:
    d = as_direction(direction)
    if d is Direction.MAX:
        raise ValueError("direction must be 'forward' or 'backward' for a characteristic "
                         "function (φ of the two loss laws differ; there is no 'max')")
    return d


@attrs.frozen(eq=False, repr=False)
class CharacteristicFunction(Curve):
    """φ(t) = E[e^{itL}] of both directions' loss laws, a product of ``PhiTerm``s.

    ``phi(t, direction)``, ``error(t, direction)`` (certified where every term is
    exact, else stated), ``cgf(z, direction)`` at complex z; composition multiplies
    (``compose``, ``+``, ``* count``). Privacy queries (δ, ε, β, D_α, ρ) go through
    the certified inversion to a PLD (``characteristic_to_pld``, module docstring).
    """

    terms: tuple[tuple[int, PhiTerm], ...] = attrs.field(converter=_terms)
    provenance: Provenance = attrs.field(factory=Provenance, kw_only=True)

    NATIVE = frozenset()

    def cgf(self, z: np.ndarray | complex, direction: Direction | str = "forward"
            ) -> np.ndarray:
        """Σ_i c_i K_i(z) at complex orders z (finite); φ(t) = exp(cgf(it))."""
        d = _concrete(direction)
        zz = np.asarray(z, dtype=complex)
        if not np.all(np.isfinite(zz)):
            raise ValueError("z must be finite complex numbers")
        total = np.zeros(zz.shape, dtype=complex)
        for c, term in self.terms:
            total = total + c * np.asarray(term.cgf(zz, d), dtype=complex)
        return total

    def phi(self, t: np.ndarray | float, direction: Direction | str = "forward"
            ) -> np.ndarray:
        """φ(t) = Π_i φ_i(t)^{c_i} for real t, each φ_i clipped to |φ_i| ≤ 1."""
        d = _concrete(direction)
        tt = check_array("t", t)
        total = np.zeros(tt.shape, dtype=complex)
        for c, term in self.terms:
            k = np.asarray(term.cgf(1j * tt, d), dtype=complex)
            total = total + c * (k - np.maximum(k.real, 0.0))   # |e^k| ≤ 1
        return np.exp(total)

    def error(self, t: np.ndarray | float, direction: Direction | str = "forward"
              ) -> np.ndarray:
        """A bound on |φ_true(t) − phi(t)|: Σ c_i e_i(t) plus rounding, at most 2."""
        d = _concrete(direction)
        tt = check_array("t", t)
        total = np.zeros(tt.shape)
        for c, term in self.terms:
            k = np.asarray(term.cgf(1j * tt, d), dtype=complex)
            # exp(cK) is off by about u·c|K| relative, |e^K| ≤ 1 absolute
            total = total + c * 8.0 * _EPS * (1.0 + np.abs(k) * np.exp(np.minimum(k.real, 0.0)))
            if term.error is not None:
                total = total + c * np.asarray(term.error(tt, d), dtype=float)
        return np.minimum(total, 2.0)

    def _summary(self) -> str:
        count = sum(c for c, _ in self.terms)
        return f"{len(self.terms)} term(s), {count} factor(s); |φ(1)| = " \
               f"{float(np.abs(self.phi(1.0))):.4g}"

    # ----------------------------------------------------------- composition
    def compose(self, other: Curve) -> CharacteristicFunction:
        """The φ of the product pair: the product of both (terms concatenated)."""
        if not isinstance(other, CharacteristicFunction):
            raise TypeError(f"can only compose a CharacteristicFunction with a "
                            f"CharacteristicFunction, got {type(other).__name__}")
        return CharacteristicFunction(self.terms + other.terms,
                                      provenance=self.provenance.join(other.provenance))

    def self_compose(self, count: int) -> CharacteristicFunction:
        """The φ of ``count`` independent copies: φ^count."""
        n = check_count("count", count)
        return CharacteristicFunction(tuple((c * n, term) for c, term in self.terms),
                                      provenance=self.provenance)

    def __add__(self, other: Curve) -> CharacteristicFunction:
        return self.compose(other)

    def __mul__(self, count: int) -> CharacteristicFunction:
        return self.self_compose(count)

    __rmul__ = __mul__


# ---------------------------------------------------------------- φ → PLD
def _phase(j: np.ndarray, offset: int, n: int) -> np.ndarray:
    """e^{2πi j·offset/n}, from the exact residue of j·offset mod n (no huge angles)."""
    r = (j * (int(offset) % n)) % n
    return np.exp(2j * np.pi * r / n)


def _chernoff_bottom(cgf: Callable[[np.ndarray], np.ndarray], tail: float) -> float:
    """x with P(L < x) ≤ tail: max over λ ∈ (0, 1] of (log tail − K(−λ))/λ
    (Chernoff; K(−λ) ≤ 0 there for any loss law, K being convex with K(0) ≤ 0 and
    K(−1) = log Q(L > −∞) ≤ 0, so λ = 1 gives the bound P(L < x) ≤ e^{x})."""
    lam = np.linspace(0.01, 1.0, 100)
    with np.errstate(over="ignore", invalid="ignore"):
        k = np.asarray(cgf(-lam), dtype=float)
    x = (math.log(tail) - k) / lam
    x = x[np.isfinite(x)]
    return float(x.max()) if x.size else math.log(tail)


def _chernoff_top(cgf: Callable[[np.ndarray], np.ndarray], tail: float) -> float:
    """x with P(L > x) ≤ tail: min over λ > 0 of (K(λ) + log(1/tail))/λ."""
    lam = np.logspace(-3, 3, 241)
    with np.errstate(over="ignore", invalid="ignore"):
        k = np.asarray(cgf(lam), dtype=float)
    x = (k - math.log(tail)) / lam
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("characteristic_to_pld: the CGF of the atomless terms is infinite "
                         "at every real order; no window holds their loss")
    return float(x.min())


def _invert(curve: CharacteristicFunction, d: Direction, step: float, tail: float,
            pessimistic: bool) -> LossPMF:
    """One direction's law on the grid (module docstring), pessimistic or optimistic."""
    smooth, laws = [], []
    for c, term in curve.terms:
        rate = term.decay[0 if d is _FWD else 1]
        if rate is not None and term.error is None:
            smooth.append((c, term, rate))
        elif term.lattice is not None:
            law = term.lattice(step).law(d, "upper" if pessimistic else "lower")
            if law.step != step or law.offset is None:
                raise ValueError(f"characteristic_to_pld: the lattice law of {term.label!r} "
                                 f"is not on the grid of step {step:g} (its step: {law.step})")
            laws.append((c, law, law.offset))
        else:
            raise ValueError(f"characteristic_to_pld: the term {term.label!r} declares "
                             "neither a decay rate (with an exact φ) nor a lattice law; its φ "
                             "cannot be inverted with a certified error")
    lo = sum(c * offset for c, _, offset in laws)
    hi = sum(c * (offset + law.masses.size - 1) for c, law, offset in laws)
    # the mass at +∞ of the composed lattice part, 1 − Π(1 − inf_i)^{c_i} (the atomless
    # terms have none: K(0) = 0)
    log_finite = sum(c * math.log1p(-law.inf_mass) if law.inf_mass < 1 else -math.inf
                     for c, law, _ in laws)
    folded, remainder = 0.0, 0.0

    def real_cgf(lam: np.ndarray) -> np.ndarray:
        """Σ c·K(λ) of the finite part of the sum (the mass at +∞ is not in φ)."""
        total = np.zeros(lam.shape)
        for c, term, _ in smooth:
            total += c * np.asarray(term.cgf(lam.astype(complex), d), dtype=complex).real
        for c, law, _ in laws:
            total += c * law_log_mgf(law, lam.astype(complex)).real
        return total
    # the Chernoff window of the sum, P(S > top), P(S < bottom) ≤ tail/4 each (one grid
    # step of padding: the discretisation moves a loss by less than a step); a window
    # narrower than the lattice supports' sum folds at most tail/2 into each entry
    top = _chernoff_top(real_cgf, tail / 4.0)
    bottom = _chernoff_bottom(real_cgf, tail / 4.0)
    w_lo, w_hi = math.floor(bottom / step) - 1, math.ceil(top / step) + 1
    if smooth:
        lo, hi = w_lo, w_hi
        folded = tail / 2.0
        remainder = rounding_remainder(sum(c * rate for c, _, rate in smooth), step,
                                       connect_the_dots=pessimistic)
    elif w_lo > lo or w_hi < hi:
        lo, hi = max(lo, w_lo), min(hi, w_hi)
        folded = tail / 2.0
    size = hi - lo + 1
    n = 1 << max(int(size - 1).bit_length(), 1)
    if n > MAX_GRID_POINTS:
        raise ValueError(f"characteristic_to_pld: the inverted law needs {n} grid points at "
                         f"step {step:g} (max {MAX_GRID_POINTS}); use a larger step")
    j = np.fft.fftfreq(n, 1.0 / n).astype(np.int64)   # integers in [−n/2, n/2)
    t = 2.0 * np.pi * j / (n * step)
    logx = np.zeros(n, dtype=complex)
    # rho: the relative rounding of each x_j (exp(Σ c K) is off by about u·Σ c|K|, a
    # power F^c = exp(c log F) by u·c|log F|, each product by a few u)
    counts = sum(c for c, _ in curve.terms)
    rho = np.full(n, 2.0 + 4.0 * counts)
    for c, term, _ in smooth:
        k = np.asarray(term.cgf(1j * t, d), dtype=complex)
        logx += c * k
        rho += c * np.abs(k)
    x = np.exp(logx)
    if smooth:
        x = x * discretisation_factor(t, step, pessimistic)
    fft_error = 0.0
    for c, law, offset in laws:
        spectrum = np.fft.ifft(law.masses, n) * n * _phase(j, offset, n)
        with np.errstate(divide="ignore"):
            rho += c * (np.pi + np.abs(np.log(np.maximum(np.abs(spectrum), 1e-300))))
        x = x * spectrum ** c
        # the forward transform's ℓ2 error, 5u·log2(n)·‖F‖₂ with ‖F‖₂ = √n‖m‖₂
        # (Higham, "Accuracy and Stability of Numerical Algorithms", Thm 24.2), carried
        # through the power (|F| ≤ 1: c times) and the inverse's 1/√n
        fft_error += c * 5.0 * _EPS * math.log2(n) * float(np.linalg.norm(law.masses))
    masses = (np.fft.fft(x * _phase(j, -lo, n)) / n).real
    # every entry is within the ℓ2 error of the masses (ℓ∞ ≤ ℓ2): the transforms', the
    # inputs' (‖ρ⊙x‖₂/√n, Parseval), twice for the second-order terms; then the Poisson
    # remainder and the mass folded in from outside the window. The lattice terms enter
    # by their certified laws and the atomless ones are exact, so no φ error adds.
    norm_m = float(np.linalg.norm(masses))
    rounding = 2.0 * (fft_error + 5.0 * _EPS * math.log2(n) * norm_m
                      + 8.0 * _EPS * float(np.sqrt(np.mean((rho * np.abs(x)) ** 2))))
    eta = remainder + folded + rounding
    kept = np.maximum(masses[:size] - eta, 0.0)
    kept = np.minimum(kept, 1.0)
    finite = float(math.fsum(kept.tolist()))
    if pessimistic:
        return LossPMF.on_grid(step, lo, kept, inf_mass=max(1.0 - finite, 0.0))
    inf_low = -math.expm1(log_finite) if laws else 0.0
    inf_low = min(max(inf_low, 0.0), max(1.0 - finite, 0.0))
    # an optimistic law's slack (the allowance it subtracts from δ) adds under
    # composition, as in ``fourier.compose_pmfs``
    slack = sum(c * law.slack for c, law, _ in laws)
    return LossPMF.on_grid(step, lo, kept, inf_mass=inf_low, slack=slack)


def characteristic_to_pld(curve: CharacteristicFunction, step: float | None = None,
                          tail: float = DEFAULT_TAIL, lower: bool = True,
                          **unknown: Any) -> PLD:
    """The certified PLD of ``curve`` on the grid of ``step`` (default
    ``DEFAULT_STEP``), by the inversion of the module docstring: pessimistic laws from
    the rounding-up law, optimistic ones (``lower``) from the rounding-down law, each
    entry less its error bound; ``tail`` the mass the atomless part's window may leave
    out (folded in, and paid for in the bound)."""
    if unknown:
        names = ", ".join(repr(k) for k in sorted(unknown))
        raise TypeError(f"characteristic→pld got unexpected keyword argument(s) {names}; "
                        f"allowed: step, tail, lower")
    if not isinstance(curve, CharacteristicFunction):
        raise TypeError(f"expected a CharacteristicFunction, got {type(curve).__name__}")
    h = DEFAULT_STEP if step is None else check_step(step)
    tail = check_real("tail", tail, lo=0.0, hi=1e-3, lo_open=True)
    if not isinstance(lower, (bool, np.bool_)):
        raise TypeError(f"lower must be True or False, got {type(lower).__name__}")
    upper = (_invert(curve, _FWD, h, tail, True), _invert(curve, _BWD, h, tail, True))
    low = ((_invert(curve, _FWD, h, tail, False), _invert(curve, _BWD, h, tail, False))
           if lower else None)
    return PLD(upper, low)


# ---------------------------------------------------------------- RDP → φ
def rdp_to_characteristic(rdp: RDP, **options: Any) -> CharacteristicFunction:
    """φ(t) = exp(K(it)) from an RDP curve whose CGF terms all declare their analytic
    continuation with integer weights (arXiv:2610.02414, §2: an RDP curve finite at
    some order > 1 determines the loss law; here the continuation is the closed form
    the pair supplied). Refused (ValueError) otherwise."""
    if options:
        names = ", ".join(repr(k) for k in sorted(options))
        raise TypeError(f"rdp→characteristic takes no options, got {names}")
    terms = []
    for i, (c, fn) in enumerate(rdp.upper.terms):
        analytic = getattr(fn, "analytic", None)
        if analytic is None:
            raise ValueError(f"rdp→characteristic: CGF term {i} declares no analytic "
                             "continuation (only exact closed-form CGFs do: a pair's "
                             "cgf_analytic); its φ is not determined by real orders here")
        if c != round(c) or c < 1:
            raise ValueError(f"rdp→characteristic: CGF term {i} has weight {c:g}; only "
                             "positive integer weights (counts) give φ = Π exp(K_i(it))^{c_i} "
                             "free of the branch of a complex logarithm")
        decay = getattr(analytic, "decay", (None, None))
        terms.append((int(round(c)), PhiTerm(analytic, decay=decay, label=f"rdp term {i}")))
    return CharacteristicFunction(tuple(terms))
