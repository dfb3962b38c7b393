"""The contract test suite of mechanism plugins (``accounting.testing.MechanismContract``).

A plugin author checks their mechanism against the relations every mechanism must
satisfy (both directions present, the PLD bracket ordered and consistent with the
profile, Rényi curve monotone, within discretisation of its own PLD's when exact or
numerical and on the right side of it when a bound, dominated by zCDP, the trade-off function consistent
with the profile, parameters validated) by subclassing ``MechanismContract`` in a
pytest module:

    from accounting.testing import MechanismContract

    class TestMyNoise(MechanismContract):
        mechanism = MyNoise(sigma=2.0)          # an instance
        bad_parameters = [dict(sigma=-1.0), dict(sigma=float("nan"))]   # each must raise ValueError/TypeError
        step = 1e-3                              # PLD grid for the checks (optional)

pytest collects the inherited ``test_*`` methods of ``TestMyNoise`` (the base class
itself is not collected: its name does not start with ``Test``). Curves are built
once per subclass and cached, so the whole contract takes a few seconds at
``step = 1e-3``. Each check uses plain ``assert`` with numpy; a failure names the
direction and the point where the relation breaks.

Class attributes:

* ``mechanism``: the ``Mechanism`` instance under test (required);
* ``bad_parameters``: dicts of parameter overrides, each of which must make
  ``type(mechanism)(**{**current, **bad})`` raise ``ValueError`` or ``TypeError``
  (the test is skipped when the list is empty);
* ``step``: the PLD grid step used by the checks (default ``1e-3``);
* ``samples``: how many outputs the sampling check draws (default 100 000).

A mechanism that provides ``sample(rng, shape)`` also has its samples checked against
its profile: no threshold set {x > t} or {x < t} may show P̂(S) − e^ε Q̂(S) above the
profile's upper δ(ε) by more than six standard errors (the profile bounds every set),
and an additive noise's likelihood-ratio set {L > ε}, computed from its
``log_density``, must give δ(ε) within six standard errors of the profile bracket
(the samples follow the density).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from accounting.curves.curve import Curve
from accounting.curves.pld import PLD
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import RDP
from accounting.curves.tradeoff import TradeOff
from accounting.curves.zcdp import ZCDP
from accounting.pairs.additive import AdditiveNoise
from accounting.pairs.mechanism import Mechanism
from accounting.vocabulary import Exactness

__all__ = ["MechanismContract"]

_DIRECTIONS = ("forward", "backward")
#: ε grid of the profile and PLD checks
EPS_GRID = np.linspace(-2.0, 5.0, 141)
#: δ values of the ε(δ) bracket check
DELTAS = np.array([1e-3, 1e-6])
#: fractional Rényi orders of the monotonicity check
ALPHA_GRID = np.geomspace(1.1, 64.0, 30)
#: Rényi orders of the PLD-vs-RDP and zCDP checks
ALPHAS = np.array([1.5, 2.0, 4.0])
#: type-I error grid of the trade-off checks
TYPE_I_GRID = np.linspace(0.0, 1.0, 4001)
#: ε of the sampling checks
SAMPLE_EPS = np.array([0.0, 0.5, 1.0])
#: standard errors allowed between an estimate from samples and the profile
SAMPLE_SE = 6.0


def _estimate(x_in: np.ndarray, y_in: np.ndarray, eps: float) -> tuple[float, float]:
    """P̂(S) − e^ε Q̂(S) and its standard error, from indicator arrays of S."""
    n, m = x_in.size, y_in.size
    p, q = float(x_in.mean()), float(y_in.mean())
    se = np.sqrt(p * (1 - p) / n + np.exp(2 * eps) * q * (1 - q) / m)
    return p - np.exp(eps) * q, float(se)


#: the mechanism the curves were built for, and its curves by kind
_ContractCache = tuple[Mechanism | None, dict[type[Curve], Curve]]


class MechanismContract:
    """Base class of a mechanism's contract tests; subclass it with ``Test…``."""

    mechanism: ClassVar[Mechanism | None] = None
    bad_parameters: ClassVar[list[dict[str, Any]]] = []
    step: ClassVar[float] = 1e-3
    samples: ClassVar[int] = 100_000
    #: declared only (no value here): each subclass sets its own, read from its __dict__
    _contract_cache: ClassVar[_ContractCache]

    # ------------------------------------------------------------ helpers
    def _mech(self) -> Mechanism:
        mech = type(self).mechanism
        assert isinstance(mech, Mechanism), (
            f"{type(self).__name__}.mechanism must be a Mechanism instance, got {mech!r}")
        return mech

    def _curve(self, kind: type[Curve]) -> Any:
        """The mechanism's curve of ``kind`` at ``step``, cached on the subclass."""
        cls = type(self)
        cache: _ContractCache | None = cls.__dict__.get("_contract_cache")
        if cache is None or cache[0] is not cls.mechanism:
            cache = (cls.mechanism, {})
            cls._contract_cache = cache
        curves = cache[1]
        if kind not in curves:
            curves[kind] = self._mech().curve(kind, step=cls.step)
        return curves[kind]

    # ------------------------------------------------------------ profile
    def test_profile_both_directions(self) -> None:
        prof = self._curve(PrivacyProfile)
        for d in _DIRECTIONS:
            delta = np.asarray(prof.delta(EPS_GRID, d), dtype=float)
            assert delta.shape == EPS_GRID.shape, f"{d}: δ(ε) has shape {delta.shape}"
            assert np.all(np.isfinite(delta)), f"{d}: δ(ε) not finite at ε={EPS_GRID[~np.isfinite(delta)]}"
            assert np.all((delta >= 0.0) & (delta <= 1.0)), (
                f"{d}: δ(ε) outside [0, 1]: min {delta.min()!r}, max {delta.max()!r}")
            rises = np.diff(delta) > 1e-12
            assert not rises.any(), f"{d}: δ(ε) increases after ε={EPS_GRID[:-1][rises]}"
            at_minus_inf = float(np.asarray(prof.delta(-np.inf, d)))
            assert abs(at_minus_inf - 1.0) <= 1e-12, f"{d}: δ(−∞) = {at_minus_inf!r}, expected 1"

    # ---------------------------------------------------------------- PLD
    def test_pld_bracket_delta(self) -> None:
        pld = self._curve(PLD)
        prof = self._curve(PrivacyProfile)
        for d in _DIRECTIONS:
            up = pld.delta(EPS_GRID, d, "upper")
            lo = pld.delta(EPS_GRID, d, "lower")
            bad = up < lo - 1e-12
            assert not bad.any(), (f"{d}: PLD upper δ < lower δ at ε={EPS_GRID[bad]} "
                                   f"(upper {up[bad]}, lower {lo[bad]})")
            ref = prof.delta(EPS_GRID, d, "upper")
            bad = lo > ref + 1e-9
            assert not bad.any(), (f"{d}: PLD lower δ exceeds the profile upper δ at "
                                   f"ε={EPS_GRID[bad]} (PLD {lo[bad]}, profile {ref[bad]})")

    def test_pld_bracket_epsilon(self) -> None:
        pld = self._curve(PLD)
        for d in (*_DIRECTIONS, "max"):
            lo, up = pld.epsilon_interval(DELTAS, d)
            assert not np.any(np.isnan(lo) | np.isnan(up)), f"{d}: ε(δ) is NaN: {lo}, {up}"
            assert np.all(lo <= up), f"{d}: PLD ε lower {lo} > upper {up} at δ={DELTAS}"

    # ---------------------------------------------------------------- RDP
    def test_rdp_monotone_in_order(self) -> None:
        rdp = self._curve(RDP)
        for d in _DIRECTIONS:
            div = rdp.rdp(ALPHA_GRID, d)
            assert not np.any(np.isnan(div)), f"{d}: D_α is NaN at α={ALPHA_GRID[np.isnan(div)]}"
            assert np.all(div >= -1e-12), f"{d}: D_α negative: {div[div < -1e-12]}"
            finite = np.isfinite(div)
            # once infinite, stays infinite
            assert np.all(np.diff(finite.astype(int)) <= 0), f"{d}: D_α infinite below a finite order"
            f = div[finite]
            falls = np.diff(f) < -1e-9 * np.maximum(np.abs(f[:-1]), 1e-12)
            assert not falls.any(), (f"{d}: D_α decreases in α after "
                                     f"α={ALPHA_GRID[finite][:-1][falls]}")

    def test_rdp_dominates_pld_lower(self) -> None:
        rdp = self._curve(RDP)
        from_pld = self._curve(PLD).to(RDP)
        for d in _DIRECTIONS:
            mine = rdp.rdp(ALPHAS, d)
            low = from_pld.rdp(ALPHAS, d, "lower")
            bad = low > mine * (1.0 + 1e-6) + 1e-12
            assert not bad.any(), (f"{d}: RDP of the PLD's lower side {low[bad]} exceeds the "
                                   f"mechanism's RDP {mine[bad]} at α={ALPHAS[bad]}")

    def test_rdp_agrees_with_pld(self) -> None:
        """The Rényi curve against the RDP of the mechanism's own PLD, by its label.

        * exact, or a numerical estimate of the truth (a quadrature: both sides hold
          it): it and the RDP of the optimistic PLD differ only by the discretisation —
          the optimistic losses sit at most a grid step below the true ones, so D_α
          moves by about a step (2 steps allowed; measured ≤ 0.7 on the built-ins);
        * an upper bound (the subsampling wrappers' bounds), or a numerical one (a
          bound computed from a numerical curve, no lower side): never below the RDP
          of the optimistic PLD (a lower bound of the truth, up to the grid), and its
          lower side, where it has one, never above the RDP of the pessimistic PLD;
        * a lower bound: its lower side never above the RDP of the pessimistic PLD.
        """
        rdp = self._curve(RDP)
        from_pld = self._curve(PLD).to(RDP)
        label = rdp.provenance.exactness
        step = type(self).step
        for d in _DIRECTIONS:
            pld_low = from_pld.rdp(ALPHAS, d, "lower")
            pld_up = from_pld.rdp(ALPHAS, d, "upper")
            if label is not Exactness.LOWER:
                mine = rdp.rdp(ALPHAS, d)
                bad = mine < pld_low * (1.0 - 1e-6) - 1e-12
                assert not bad.any(), (f"{d}: {label.value} RDP {mine[bad]} is below the RDP "
                                       f"of the optimistic PLD {pld_low[bad]} at α={ALPHAS[bad]}")
            estimate = label is Exactness.NUMERICAL and rdp.lower is not None
            if label is Exactness.EXACT or estimate:
                bad = mine - pld_low > 2.0 * step + 1e-9 * np.abs(mine)
                assert not bad.any(), (f"{d}: {label.value} RDP {mine[bad]} is more than two "
                                       f"grid steps above the PLD's {pld_low[bad]} at "
                                       f"α={ALPHAS[bad]}")
            elif rdp.lower is not None:
                low = rdp.rdp(ALPHAS, d, "lower")
                bad = low > pld_up * (1.0 + 1e-6) + 1e-12
                assert not bad.any(), (f"{d}: lower RDP {low[bad]} exceeds the RDP of the "
                                       f"pessimistic PLD {pld_up[bad]} at α={ALPHAS[bad]}")

    # --------------------------------------------------------------- zCDP
    def test_zcdp_envelope_dominates_rdp(self) -> None:
        z = self._curve(ZCDP)
        rdp = self._curve(RDP)
        for d in _DIRECTIONS:
            rho = z.rho(d)
            assert rho >= 0.0 and not np.isnan(rho), f"{d}: ρ = {rho!r}"
            div = rdp.rdp(ALPHAS, d)
            bad = rho * ALPHAS < div * (1.0 - 1e-9)
            assert not bad.any(), (f"{d}: ρα = {rho * ALPHAS[bad]} below D_α = {div[bad]} "
                                   f"at α={ALPHAS[bad]}")

    # ----------------------------------------------------------- trade-off
    def test_tradeoff_function(self) -> None:
        to = self._curve(TradeOff)
        for d in _DIRECTIONS:
            beta = to.beta(TYPE_I_GRID, d)
            assert np.all(np.isfinite(beta)), f"{d}: β(α) not finite"
            assert np.all((beta >= -1e-12) & (beta <= 1.0 + 1e-12)), (
                f"{d}: β(α) outside [0, 1]: min {beta.min()!r}, max {beta.max()!r}")
            rises = np.diff(beta) > 1e-12
            assert not rises.any(), f"{d}: β(α) increases after α={TYPE_I_GRID[:-1][rises]}"

    def test_tradeoff_total_variation(self) -> None:
        """δ(0) = TV(P, Q) = 1 − min_α (α + β(α)) (forward direction)."""
        to = self._curve(TradeOff)
        prof = self._curve(PrivacyProfile)
        beta = to.beta(TYPE_I_GRID, "forward")
        tv_tradeoff = 1.0 - float(np.min(TYPE_I_GRID + beta))
        tv_profile = float(np.asarray(prof.delta(0.0, "forward")))
        assert abs(tv_tradeoff - tv_profile) <= 1e-3, (
            f"total variation: 1 − min(α + β) = {tv_tradeoff!r} but δ(0) = {tv_profile!r}")

    # ------------------------------------------------------------ samples
    def _draws(self) -> tuple[np.ndarray, np.ndarray]:
        import pytest

        mech = self._mech()
        if not mech.provides("sample"):
            pytest.skip(f"{type(mech).__name__} does not provide sample(rng, shape)")
        rng = np.random.default_rng(20260101)
        x, y = mech.sample(rng, (type(self).samples,))
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        assert x.shape == y.shape == (type(self).samples,), (
            f"sample(rng, shape) returned shapes {x.shape}, {y.shape}")
        assert not (np.isnan(x).any() or np.isnan(y).any()), "sample returned NaN"
        again = mech.sample(np.random.default_rng(20260101), (type(self).samples,))
        assert np.array_equal(x, again[0]) and np.array_equal(y, again[1]), (
            "sample is not a function of the rng's state")
        return x, y

    def test_samples_respect_the_profile(self) -> None:
        """No threshold set separates the samples more than the profile allows."""
        x, y = self._draws()
        prof = self._curve(PrivacyProfile)
        cuts = np.unique(np.quantile(np.concatenate([x, y]), np.linspace(0.01, 0.99, 99)))
        for eps in SAMPLE_EPS:
            bound = float(np.asarray(prof.delta(eps, "forward", "upper")))
            for sets in ((x[:, None] > cuts, y[:, None] > cuts),
                         (x[:, None] < cuts, y[:, None] < cuts)):
                for j in range(cuts.size):
                    est, se = _estimate(sets[0][:, j], sets[1][:, j], eps)
                    assert est <= bound + SAMPLE_SE * se + 1e-12, (
                        f"samples give δ({eps:g}) ≥ {est:.5g} ± {se:.2g} on a threshold set "
                        f"at {cuts[j]:.5g}, above the profile's {bound:.5g}")

    def test_samples_follow_the_density(self) -> None:
        """Additive noise: the likelihood-ratio set {L > ε} of ``log_density`` gives
        the profile's δ(ε) (forward), within the sampling error and the bracket."""
        import pytest

        mech = self._mech()
        if not isinstance(mech, AdditiveNoise):
            pytest.skip("not an additive noise: no density to compare the samples with")
        x, y = self._draws()
        prof = self._curve(PrivacyProfile)
        shift = mech.sensitivity
        with np.errstate(invalid="ignore", over="ignore"):
            lx = mech.log_density(x - shift) - mech.log_density(x)
            ly = mech.log_density(y - shift) - mech.log_density(y)
        for eps in SAMPLE_EPS:
            est, se = _estimate(lx > eps, ly > eps, eps)
            up = float(np.asarray(prof.delta(eps, "forward", "upper")))
            lo = float(np.asarray(prof.delta(eps, "forward", "lower")))
            assert lo - SAMPLE_SE * se - 1e-9 <= est <= up + SAMPLE_SE * se + 1e-9, (
                f"samples give δ({eps:g}) = {est:.5g} ± {se:.2g}; the profile says "
                f"[{lo:.5g}, {up:.5g}]")

    # ---------------------------------------------------------- parameters
    def test_parameters_validated(self) -> None:
        import pytest

        if not self.bad_parameters:
            pytest.skip("no bad_parameters given")
        mech = self._mech()
        current = attrs.asdict(mech, recurse=False)
        init = {name for name in type(mech).parameters()}
        current = {k: v for k, v in current.items() if k in init}
        for bad in self.bad_parameters:
            with pytest.raises((ValueError, TypeError)):
                type(mech)(**{**current, **bad})
