"""Properties every registered mechanism must satisfy, over its declared parameter ranges.

Each mechanism is drawn by ``strategies.mechanisms`` from the ranges its class declares
(``Mechanism.ranges()``), so a new plugin is covered as soon as it is registered. For
every draw:

* every curve brackets the truth: upper ≥ lower (δ, ε, D_α, ρ; β the other way);
* δ(ε) is non-increasing and in [0, 1]; ε(δ) is non-increasing;
* D_α is non-decreasing in α;
* the trade-off is convex, non-increasing and below 1 − α;
* k-fold composition agrees by every route: the PLD's FFT power, the PLD composed
  with itself k times, the accountant, the pair's closed form where it has one
  (brackets must intersect and contain the closed form), and RDP(k) = k·RDP;
* where an independent high-precision reference exists (Gaussian by Balle–Wang,
  Laplace and randomized response by their exact laws, all in mpmath), the sound
  side is never below it.

A PLD that cannot be built for a draw (losses beyond float64 range) must be refused
with the documented ValueError; its properties are then checked on the other curves.
Default run: a few examples per mechanism at grid step 1e-2; ``-m slow`` runs the
larger profile at step 1e-3.
"""

from __future__ import annotations

import math
import re
import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings, strategies as st

from accounting import (PLD, RDP, ZCDP, Accountant, Direction, Exactness, PrivacyProfile,
                        TradeOff, compose)
from accounting.ledger import parameter_kind
from accounting.pairs.mechanism import Mechanism

from closed_forms import discrete_delta, gaussian_delta, laplace_rdp, rr_rdp
from strategies import mechanisms, registered

NAMES = sorted(registered())

#: default profile (CI): a few draws per mechanism, coarse grid
FAST = settings(max_examples=6, deadline=None, database=None, derandomize=True,
                phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
#: the larger profile behind ``-m slow``
SLOW = settings(max_examples=40, deadline=None, database=None,
                phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
FAST_STEP, SLOW_STEP = 1e-2, 1e-3

EPS = np.concatenate([[-1.0, -0.1], np.linspace(0.0, 4.0, 33), [6.0, 10.0, 20.0, 50.0]])
DELTAS = np.array([0.5, 1e-2, 1e-4, 1e-6, 1e-9, 1e-12])
ALPHAS = np.array([1.01, 1.1, 1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 64.0, 256.0])
TYPE_I = np.linspace(0.0, 1.0, 201)
#: roundoff allowed on probabilities (δ, β): well below every discretisation effect the
#: suite is after (the under-reported tails of issue 10 were 3e-13 of mass)
ABS = 1e-14
#: relative roundoff of closed forms
REL = 1e-9
#: the documented refusals of a grid that float64 cannot hold
PLD_REFUSAL = re.compile(r"cannot be discretised|does not decay|grid points|too (large|many)")


def _pld(mech: Mechanism, step: float):
    """The mechanism's PLD, or None after checking the refusal is the documented one."""
    try:
        return mech.curve(PLD, step=step)
    except ValueError as exc:
        assert PLD_REFUSAL.search(str(exc)), f"{mech!r}: unexpected PLD refusal: {exc}"
        return None


def _monotone(values: np.ndarray, increasing: bool, rel: float = 1e-9, abs_: float = ABS) -> np.ndarray:
    """Where ``values`` step the wrong way by more than roundoff."""
    d = np.diff(values)
    tol = rel * np.maximum(np.abs(values[:-1]), np.abs(values[1:])) + abs_
    with np.errstate(invalid="ignore"):
        return (d < -tol) if increasing else (d > tol)


def _ge(a, b, rel: float = REL, abs_: float = ABS) -> np.ndarray:
    """Elementwise a ≥ b up to roundoff (inf ≥ anything; nothing is NaN)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert not np.isnan(a).any() and not np.isnan(b).any(), (a, b)
    with np.errstate(invalid="ignore"):
        return (a >= b) | (a >= b - rel * np.abs(b) - abs_) | (a == np.inf)


# ------------------------------------------------------------ references (mpmath)
def _laplace_delta_mp(e: float, eps: np.ndarray) -> np.ndarray:
    """Exact δ(ε) of (Lap(Δ, b), Lap(0, b)), e = Δ/b, from its loss law in mpmath:
    the loss is e with P-mass 1 − ½e^{−e}, uniform in between; δ = −expm1((ε − e)/2)
    on |ε| ≤ e, 1 − e^ε below −e, 0 above e."""
    out = []
    for x in eps:
        x_, e_ = mp.mpf(float(x)), mp.mpf(e)
        if x >= e:
            out.append(0.0)
        elif x <= -e:
            out.append(float(-mp.expm1(x_)))
        else:
            out.append(float(-mp.expm1((x_ - e_) / 2)))
    return np.array(out)


def reference(mech: Mechanism):
    """(δ(ε), D_α) of the exact pair by an independent high-precision route, or None."""
    name = type(mech).name
    if name == "gaussian":
        mu = mech.sensitivity / mech.sigma
        return (lambda eps: gaussian_delta(mu, eps)), (lambda a: a * mu * mu / 2.0)
    if name == "laplace":
        e = mech.sensitivity / mech.b
        return (lambda eps: _laplace_delta_mp(e, eps)), (
            lambda a: np.array([laplace_rdp(x, e) for x in a]))
    if name == "randomized_response":
        p = float(mech.p)
        pq = (np.array([p, 1 - p]), np.array([1 - p, p]))
        return (lambda eps: discrete_delta(*pq, eps)), (
            lambda a: np.array([rr_rdp(x, p) for x in a]))
    return None


# ------------------------------------------------------------------ the checks
def check_profile(mech: Mechanism) -> None:
    prof = mech.curve(PrivacyProfile)
    for d in ("forward", "backward", "max"):
        up = prof.delta(EPS, d, "upper")
        lo = prof.delta(EPS, d, "lower")
        for side, v in (("upper", up), ("lower", lo)):
            assert np.all((v >= 0.0) & (v <= 1.0 + ABS)), f"{d} {side}: δ(ε) outside [0, 1]: {v - 1}"
            bad = _monotone(v, increasing=False)
            assert not bad.any(), f"{d} {side}: δ(ε) rises after ε={EPS[:-1][bad]}: {v}"
        bad = ~_ge(up, lo)
        assert not bad.any(), f"{d}: profile upper δ {up[bad]} < lower {lo[bad]} at ε={EPS[bad]}"
    ref = reference(mech)
    if ref is not None:
        exact = ref[0](EPS)
        up = prof.delta(EPS, "max")
        bad = ~_ge(up, exact)
        assert not bad.any(), f"profile δ {up[bad]} below the exact {exact[bad]} at ε={EPS[bad]}"


def check_pld(mech: Mechanism, step: float, k: int) -> None:
    pld = _pld(mech, step)
    if pld is None:
        return
    for d in ("forward", "backward", "max"):
        lo, up = pld.delta_interval(EPS, d)
        for side, v in (("upper", up), ("lower", lo)):
            assert np.all((v >= 0.0) & (v <= 1.0 + ABS)), (
                f"{d} {side}: PLD δ outside [0, 1]: max δ − 1 = {np.max(v) - 1:.3g}")
            bad = _monotone(v, increasing=False)
            assert not bad.any(), f"{d} {side}: PLD δ(ε) rises after ε={EPS[:-1][bad]}"
        bad = ~_ge(up, lo)
        assert not bad.any(), f"{d}: PLD upper δ {up[bad]} < lower {lo[bad]} at ε={EPS[bad]}"
        elo, eup = pld.epsilon_interval(DELTAS, d)
        assert not (np.isnan(elo).any() or np.isnan(eup).any()), (elo, eup)
        bad = ~_ge(eup, elo)
        assert not bad.any(), f"{d}: PLD upper ε {eup[bad]} < lower {elo[bad]}"
        for side, v in (("upper", eup), ("lower", elo)):
            bad = _monotone(v, increasing=True)   # DELTAS decrease, so ε must not fall
            assert not bad.any(), f"{d} {side}: ε(δ) rises with δ at δ={DELTAS[1:][bad]}: {v}"
    ref = reference(mech)
    if ref is not None:
        exact = ref[0](EPS)
        up = pld.delta(EPS)
        bad = ~_ge(up, exact)
        assert not bad.any(), f"PLD δ {up[bad]} below the exact {exact[bad]} at ε={EPS[bad]}"
        eup = pld.epsilon(DELTAS)
        at = ref[0](eup)        # ε_upper ≥ ε_exact ⟺ δ_exact(ε_upper) ≤ δ
        bad = ~_ge(DELTAS, at)
        assert not bad.any(), (f"PLD ε {eup[bad]} below the exact ε(δ) at δ={DELTAS[bad]} "
                               f"(exact δ there {at[bad]})")
    check_composition(mech, pld, step, k)


def _intersect(a: tuple, b: tuple, what: str) -> None:
    (alo, aup), (blo, bup) = a, b
    bad = ~(_ge(aup, blo) & _ge(bup, alo))
    assert not bad.any(), (f"{what}: brackets disjoint at ε={EPS[bad]}: "
                           f"[{alo[bad]}, {aup[bad]}] vs [{blo[bad]}, {bup[bad]}]")


def check_composition(mech: Mechanism, pld: PLD, step: float, k: int) -> None:
    try:
        power = pld.self_compose(k)
        repeated = pld
        for _ in range(k - 1):
            repeated = repeated.compose(pld)
        acc = Accountant(step=step).compose(mech, k).curve(PLD)
    except ValueError as exc:
        assert PLD_REFUSAL.search(str(exc)), f"{mech!r}: unexpected refusal at k={k}: {exc}"
        return
    routes = {"FFT power": power.delta_interval(EPS), "k compositions": repeated.delta_interval(EPS),
              "accountant": acc.delta_interval(EPS)}
    names = list(routes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            _intersect(routes[a], routes[b], f"k={k}: {a} vs {b}")
    pair = mech.pair()
    if pair._self_compose(k) is not None:
        closed = compose((pair, k)).profile(EPS)
        for what, (lo, up) in routes.items():
            bad = ~(_ge(up, closed) & _ge(closed, lo))
            assert not bad.any(), (f"k={k}: closed form δ {closed[bad]} outside the {what} "
                                   f"bracket [{lo[bad]}, {up[bad]}] at ε={EPS[bad]}")
    ref = reference(mech)
    if ref is not None and type(mech).name == "gaussian":
        mu = math.sqrt(k) * mech.sensitivity / mech.sigma
        exact = gaussian_delta(mu, EPS)
        for what, (lo, up) in routes.items():
            bad = ~_ge(up, exact)
            assert not bad.any(), f"k={k} {what}: δ {up[bad]} below Balle–Wang {exact[bad]}"


def check_rdp(mech: Mechanism, k: int) -> None:
    rdp = mech.curve(RDP)
    both = {}
    for d in ("forward", "backward"):
        up = both[d] = rdp.rdp(ALPHAS, d)
        assert not np.isnan(up).any(), f"{d}: D_α is NaN at α={ALPHAS[np.isnan(up)]}"
        assert np.all(up >= -ABS), f"{d}: D_α negative: {up[up < -ABS]}"
        lo = rdp.rdp(ALPHAS, d, "lower") if rdp.lower is not None else None
        if rdp.provenance.exactness is Exactness.UPPER and lo is not None:
            # a bound need not be monotone itself (a chord at α = 1.01 may exceed the
            # series at 1.1), but it must sit above every lower value at smaller α,
            # as the true non-decreasing D_α does
            bad = ~_ge(up, np.maximum.accumulate(lo), abs_=1e-12)
            assert not bad.any(), f"{d}: D_α upper {up} below an earlier lower value {lo}"
        else:
            bad = _monotone(up, increasing=True, abs_=1e-12)
            assert not bad.any(), f"{d}: D_α falls after α={ALPHAS[:-1][bad]}: {up}"
        if lo is not None:
            bad = ~_ge(up, lo, abs_=1e-12)
            assert not bad.any(), f"{d}: RDP upper {up[bad]} < lower {lo[bad]} at α={ALPHAS[bad]}"
    up = np.maximum(both["forward"], both["backward"])
    # k-fold: the curve's own composition is exactly k times the divergence
    kk = rdp.self_compose(k).rdp(ALPHAS, "forward")
    np.testing.assert_allclose(kk, k * both["forward"], rtol=1e-12, atol=0,
                               err_msg=f"RDP of {k}-fold ≠ {k}·RDP")
    pair = mech.pair()
    if pair._self_compose(k) is not None:
        closed = compose((pair, k)).curve(RDP).rdp(ALPHAS)
        np.testing.assert_allclose(closed, k * up, rtol=1e-9, atol=1e-12,
                                   err_msg=f"closed-form {k}-fold RDP ≠ {k}·RDP")
    ref = reference(mech)
    if ref is not None:
        exact = ref[1](ALPHAS)
        bad = ~_ge(up, exact, abs_=1e-12)
        assert not bad.any(), f"D_α {up[bad]} below the exact {exact[bad]} at α={ALPHAS[bad]}"


def check_zcdp(mech: Mechanism) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # "sup at t → ∞" is labelled
        z = mech.curve(ZCDP)
    for d in ("forward", "backward"):
        rho = z.rho(d)
        assert not math.isnan(rho) and rho >= 0, f"{d}: ρ = {rho}"
        if z.lower is not None:
            assert _ge(rho, z.rho(d, "lower")), f"{d}: ρ upper {rho} < lower {z.rho(d, 'lower')}"
    ref = reference(mech)
    if ref is not None:    # ρ* = sup_α D_α/α ≥ D_α/α at every order
        exact = ref[1](ALPHAS) / ALPHAS
        assert _ge(z.rho(), exact.max(), abs_=1e-12), (z.rho(), exact.max())


def check_tradeoff(mech: Mechanism, step: float) -> None:
    try:
        to = mech.curve(TradeOff, step=step)
    except ValueError as exc:
        assert PLD_REFUSAL.search(str(exc)), f"{mech!r}: unexpected trade-off refusal: {exc}"
        return
    sides = ["upper"] + (["lower"] if to.lower is not None else [])
    for side in sides:
        betas = {}
        for d in ("forward", "backward"):
            b = betas[d] = to.beta(TYPE_I, d, side)
            assert not np.isnan(b).any(), f"{d} {side}: β is NaN"
            assert np.all((b >= -ABS) & _ge(1.0 - TYPE_I, b)), (
                f"{d} {side}: β outside [0, 1 − α]: {b[~_ge(1.0 - TYPE_I, b)]}")
            bad = _monotone(b, increasing=False)
            assert not bad.any(), f"{d} {side}: β rises after α={TYPE_I[:-1][bad]}"
            second = b[:-2] - 2.0 * b[1:-1] + b[2:]
            bad = second < -1e-9
            assert not bad.any(), (f"{d} {side}: β not convex near α={TYPE_I[1:-1][bad]} "
                                   f"(second difference {second[bad]})")
        # both neighbourings at once: a pointwise lower bound of both directions (the
        # minimum is not convex in general; Dong, Roth, Su, arXiv:1905.02383, Prop. 2.4)
        b = to.beta(TYPE_I, "max", side)
        np.testing.assert_allclose(b, np.minimum(betas["forward"], betas["backward"]),
                                   rtol=0, atol=ABS, err_msg=f"max {side}: β ≠ min of directions")
        if side == "lower":
            # the sound (upper) side has the smaller β, α = 0 included
            prof = mech.curve(PrivacyProfile)
            for d, rev in (("forward", "backward"), ("backward", "forward")):
                # β_d(0) = Q(P > 0) = 1 − δ_rev(+∞): 1 where the supports coincide
                floor = 1.0 - float(prof.delta(np.inf, rev, "upper"))
                assert to.beta(0.0, d, "lower") >= floor - ABS, (
                    f"{d}: lower-side β(0) = {to.beta(0.0, d, 'lower')} below {floor}")
            for d in ("forward", "backward"):
                up = to.beta(TYPE_I, d, "upper")
                bad = ~_ge(betas[d], up)
                assert not bad.any(), (f"{d}: upper-side β {up[bad]} above the lower side "
                                       f"{betas[d][bad]} at α={TYPE_I[bad]}")


def _run(mech: Mechanism, step: float, k: int, zcdp: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_profile(mech)
        check_rdp(mech, k)
        check_tradeoff(mech, step)
        check_pld(mech, step, k)
        if zcdp:
            check_zcdp(mech)


def _closed_rho(mech: Mechanism) -> bool:
    """Whether ρ* is in closed form (the numerical envelope costs seconds per draw)."""
    return mech.pair()._rho(Direction.FORWARD) is not None


# ------------------------------------------------------------------ known bugs
# Library bugs this suite found in code outside its own files. Each has a pinned
# strict xfail below with the measured numbers; draws in its region are skipped
# (``assume``) so that every other property keeps running on the rest of the range.
# When a fix lands the pinned case passes, the strict xfail fails, and the entry goes.
#: losses beyond this may carry a PLD mass above 1 by roundoff (pinned below)
LARGE_LOSS = 50.0


def known_bug(mech: Mechanism) -> "str | None":
    name = type(mech).name
    if name == "gaussian_mixture" and min(mech.scales) < 1e-2 * mech.noise_width():
        return "mixture components far narrower than the mixture: Rényi curve falls (pinned below)"
    if name == "random_allocation" and mech.resolution >= 0.1:
        return "random allocation on coarse cells: optimistic trade-off not convex (pinned below)"
    if name in ("approx_dp", "permute_and_flip") and mech.epsilon >= 20:
        return "an ε-DP pair with ε ≥ 20: PLD mass above 1 (pinned below)"
    if float(mech.curve(PrivacyProfile).delta(LARGE_LOSS)) > 1e-12:
        # down from 1e-10 to ≤ 2e-14 (discrete Laplace Δ = 108: δ − 1 = 1.9e-14, debts
        # with no mass below them after the convex hull), except the pinned case
        return f"privacy losses beyond {LARGE_LOSS}: PLD mass above 1 (pinned below)"
    return None


@pytest.mark.parametrize("mech", [   # found by this suite, fixed; kept as regressions
    pytest.param(("laplace", dict(b=1 / 20)), id="laplace-20"),
    pytest.param(("discrete_laplace", dict(a=8.787802980400534e-08, sensitivity=505798959)),
                 id="discrete-laplace-44"),
    pytest.param(("randomized_response", dict(p=0.99999)), id="rr"),
    pytest.param(("subsampled_laplace", dict(q=0.1671128928202519, b=0.06233385267696604,
                                             sensitivity=2.154434690031884)),
                 id="subsampled-laplace-35"),
])
def test_tradeoff_lower_side_at_alpha_zero(mech):
    """β(0) = 1 where the supports coincide: the optimistic side says so and is never
    below the sound one there."""
    from accounting import mechanism
    to = mechanism(mech[0], **mech[1]).curve(TradeOff, step=FAST_STEP)
    for d in ("forward", "backward"):
        assert to.beta(0.0, d, "lower") >= 1.0 - ABS
        assert to.beta(0.0, d, "lower") >= to.beta(0.0, d, "upper")


#: pessimistic laws whose total mass was above 1 (δ_upper(ε) − 1 = 1.04e-10 for the
#: discrete Laplace, 4.2e-11, 4.6e-12, 9.1e-11 for the others): the clipped roundoff
#: negatives of connect-the-dots, now paid back from the masses below them
_MASS_ABOVE_ONE = [
    # finite laws whose profile is noisy at 1e-12 where e^ε·p ≈ 1: their pessimistic side
    # now comes from the atoms (``atoms.finite_law_on_grid``; it was 1.9e-12 and 5e-13
    # above 1 through the profile)
    pytest.param(("randomized_response", dict(p=2.628586874843264e-97)), id="rr-extreme"),
    pytest.param(("approx_dp", dict(epsilon=33.0)), id="pure-dp-33"),
    pytest.param(("discrete_laplace", dict(a=0.1, sensitivity=4096)), id="discrete-laplace"),
    pytest.param(("generalised_gaussian", dict(beta=1.0172638794327824, scale=4.3810942992546483e-51,
                                               sensitivity=4.632974445438183e-49)),
                 id="generalised-gaussian"),
    pytest.param(("laplace", dict(b=0.01)), id="laplace-100"),
    pytest.param(("student_t", dict(nu=468.9413239322216, scale=1.2047759155987578e-102,
                                    sensitivity=1.0000000000000328e-100)), id="student-t"),
]


def _check_mass_at_most_one(mech):
    from accounting import mechanism
    pld = mechanism(mech[0], **mech[1]).curve(PLD, step=FAST_STEP)
    for d in ("forward", "backward"):
        assert float(np.max(pld.delta(EPS, d))) <= 1.0 + ABS
        law = pld.law(d, "upper")   # the mass itself, to its roundoff (it was 1 + 1e-10)
        assert math.fsum(law.masses) + law.inf_mass <= 1.0 + 1e-13


@pytest.mark.parametrize("mech", _MASS_ABOVE_ONE)
def test_pld_mass_is_at_most_one(mech):
    _check_mass_at_most_one(mech)


@pytest.mark.xfail(strict=True, reason=(
    "generic Rényi quadrature of a mixture whose components are far narrower than its "
    "spread: D_α = 7.1e-7, 7.7e-7, 1.06e-6 at α = 1.01, 1.1, 1.5, then 26.2 at α = 2 and "
    "less at α = 3 (not monotone; the small values under-report)"))
def test_known_bug_separated_mixture_renyi_curve():
    from accounting import mechanism
    mech = mechanism("gaussian_mixture", sensitivity=7.180732459144514e+55,
                     weights=(0.4740891698844371, 0.11080929262539733, 0.41510153749016554),
                     means=(3.992634127885854e+32, -6.197085654869416e+16, 2.9193622002590423e+59),
                     scales=(3.96290225937547e+53, 5.812922174694393e+52, 6.051586145968267e+58))
    up = mech.curve(RDP).rdp(ALPHAS, "forward")
    assert not _monotone(up, increasing=True, abs_=1e-12).any(), up


def test_whole_dataset_without_replacement_is_the_base():
    """Was a pinned bug: with batch = dataset (γ = 1) the Rényi bound of the symmetric
    profile fell in α (D_64 = 0.10134088 > D_256 = 0.10125077); the batch is then the
    whole dataset every time, so the pair is the base's own, monotone curve."""
    from accounting import mechanism
    base = mechanism("laplace", sensitivity=1.2445789748640071e-08, b=1.229297479895768e-07,
                     neighbouring="replace_one")
    mech = mechanism("sampled_without_replacement", base=base, batch_size=1, dataset_size=1)
    up = mech.curve(RDP).rdp(ALPHAS, "forward")
    assert not _monotone(up, increasing=True, abs_=1e-12).any(), up
    np.testing.assert_allclose(up, base.curve(RDP).rdp(ALPHAS, "forward"), rtol=1e-12)


@pytest.mark.xfail(strict=True, reason="random allocation's optimistic laws on coarse cells "
                   "give a trade-off that is not convex (second difference -4.5e-7)")
def test_known_bug_random_allocation_coarse_lower_tradeoff():
    from accounting_mechanisms.allocation import RandomAllocation
    from accounting_mechanisms.gaussian import Gaussian
    mech = RandomAllocation(base=Gaussian(sigma=7.059541366409445e+55,
                                          sensitivity=4.434721918597113e+53),
                            steps=2, sensitivity=2.0932092052467104e+73,
                            resolution=0.2054394336148291)
    check_tradeoff(mech, FAST_STEP)


# ------------------------------------------------------------------ the tests
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(data=st.data())
def test_properties(name, data):
    mech = data.draw(mechanisms(name), label="mechanism")
    assume(known_bug(mech) is None)
    k = data.draw(st.integers(2, 4), label="k")
    _run(mech, FAST_STEP, k, zcdp=_closed_rho(mech))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@SLOW
@given(data=st.data())
def test_properties_slow(name, data):
    mech = data.draw(mechanisms(name), label="mechanism")
    assume(known_bug(mech) is None)
    k = data.draw(st.integers(2, 12), label="k")
    _run(mech, SLOW_STEP, k, zcdp=True)


def test_every_registered_mechanism_declares_its_ranges():
    """The suite can only draw what is declared: every numeric parameter has a range."""
    structural = {"neighbouring", "base", "mechanisms"}
    for name, cls in registered().items():
        flags = {n for n, a in cls.parameters().items() if parameter_kind(a) == "bool"}
        missing = set(cls.parameters()) - structural - flags - set(cls.ranges())
        assert not missing, f"{name}: no declared range for {sorted(missing)}"


def test_references_are_independent_and_tight():
    """The mpmath references reproduce known values (so a pass means something)."""
    # Balle–Wang at μ = 1, ε = 1 (40-digit evaluation; Dong–Roth–Su Cor. 2.13)
    assert gaussian_delta(1.0, np.array([1.0]))[0] == pytest.approx(0.12693673750664397, rel=1e-12)
    # Laplace e = 1: δ(0) = 1 − e^{−1/2}
    assert _laplace_delta_mp(1.0, np.array([0.0]))[0] == pytest.approx(1 - math.exp(-0.5), rel=1e-15)
    # randomized response p = 0.75, ε = 0: total variation 0.5
    assert discrete_delta(np.array([0.75, 0.25]), np.array([0.25, 0.75]), np.array([0.0]))[0] \
        == pytest.approx(0.5, rel=1e-15)
