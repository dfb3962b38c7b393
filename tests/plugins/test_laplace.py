"""The Laplace mechanism: Mironov's Table II, the closed-form profile, its PLD."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, Direction, PrivacyProfile

from closed_forms import laplace_delta, laplace_rdp

STEP = 1e-3
ALPHAS = [1.001, 1.01, 1.1, 1.5, 2.0, 2.5, 3.0, 4.2, 7.3, 10.0, 32.0, 64.5, 100.0, 1000.0]


@pytest.mark.parametrize("b", [0.25, 0.5, 1.0, 3.0, 20.0])
def test_rdp_is_mironov_table_ii(b):
    rdp = accounting.mechanism("laplace", b=b).curve(RDP)
    got = rdp.rdp(np.array(ALPHAS))
    want = np.array([laplace_rdp(a, 1.0 / b) for a in ALPHAS])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    for d in ("forward", "backward"):
        np.testing.assert_allclose(rdp.rdp(np.array(ALPHAS), d), want, rtol=1e-9, atol=1e-15)


def test_rdp_limits():
    """α → 1: the KL divergence e + e^{−e} − 1; α → ∞: e (pure ε-DP), e = Δ/b."""
    e = 2.0
    rdp = accounting.mechanism("laplace", b=0.5).curve(RDP)
    assert rdp.rdp(1.0 + 1e-9) == pytest.approx(e + math.exp(-e) - 1, rel=1e-7)
    assert rdp.rdp(1e8) == pytest.approx(e, rel=1e-6)
    assert rdp.rdp(1e8) <= e


@given(st.floats(0.1, 10.0), st.floats(0.2, 5.0))
def test_sensitivity_enters_as_delta_over_b(b, sens):
    mech = accounting.mechanism("laplace", b=b, sensitivity=sens)
    for a in (1.5, 4.0, 50.0):
        assert mech.curve(RDP).rdp(a) == pytest.approx(laplace_rdp(a, sens / b), rel=1e-9)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_profile_is_the_closed_form(b):
    e = 1.0 / b
    prof = accounting.mechanism("laplace", b=b).curve(PrivacyProfile)
    eps = np.concatenate([np.linspace(-3 * e, 3 * e, 121), [e, -e, 0.0]])
    want = laplace_delta(e, eps)
    # and, independently of the formula, by quadrature of (p − e^ε q)₊ over the line
    from scipy import integrate

    def hockey(x):
        f = lambda y: max(0.5 / b * math.exp(-abs(y - 1.0) / b)  # noqa: E731
                          - math.exp(x) * 0.5 / b * math.exp(-abs(y) / b), 0.0)
        return sum(integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
                   for lo, hi in ((-60 * b, 0.0), (0.0, 1.0), (1.0, 60 * b + 1)))
    for d in ("forward", "backward"):
        np.testing.assert_allclose(prof.delta(eps, d), want, rtol=1e-12, atol=1e-15)
    for x in (-0.5 * e, 0.0, 0.3 * e, 0.9 * e):
        assert hockey(x) == pytest.approx(float(laplace_delta(e, x)), rel=1e-8, abs=1e-13)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_pld_brackets_the_profile(b):
    e = 1.0 / b
    pld = accounting.mechanism("laplace", b=b).curve(PLD, step=STEP)
    eps = np.linspace(-1.2 * e, 1.2 * e, 2001) + 0.37 * STEP
    exact = laplace_delta(e, eps)
    for d in ("forward", "backward"):
        lo, up = pld.delta(eps, d, "lower"), pld.delta(eps, d)
        assert np.all(up >= exact * (1 - 1e-12) - 1e-300)
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)
        assert np.max(up - exact) < STEP ** 2        # the pessimistic side is O(step²) tight
    # pure ε-DP: no δ left beyond e (up to one grid cell of the pessimistic rounding)
    assert float(pld.epsilon(1e-12)) <= e + STEP
    deltas = np.array([1e-3, 0.1])
    lo, up = pld.epsilon_interval(deltas)
    exact = e + 2 * np.log1p(-deltas)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_pld_bracket_is_within_the_stated_error(b):
    pld = accounting.mechanism("laplace", b=b).curve(PLD, step=STEP)
    eps = np.linspace(-1.2 / b, 1.2 / b, 2001) + 0.37 * STEP
    for d in ("forward", "backward"):
        assert np.max(pld.delta(eps, d) - pld.delta(eps, d, "lower")) < STEP ** 2


def test_pld_rdp_brackets_table_ii():
    pld = accounting.mechanism("laplace", b=1.0).curve(PLD, step=STEP)
    alphas = np.array([1.5, 2.0, 5.0, 20.0])
    rdp = pld.to(RDP)
    want = np.array([laplace_rdp(a, 1.0) for a in alphas])
    assert np.all(rdp.rdp(alphas) >= want * (1 - 1e-12))
    assert np.all(rdp.rdp(alphas, bound="lower") <= want * (1 + 1e-12))
    np.testing.assert_allclose(rdp.rdp(alphas), want, rtol=1e-5)


def test_rho_is_the_kl_divergence_at_every_scale():
    for b in (0.3, 1.0, 7.0):
        e = 1.0 / b
        z = accounting.mechanism("laplace", b=b).curve(ZCDP)
        assert z.rho() == pytest.approx(e + math.expm1(-e), rel=1e-14)
        # ρ is the sup of D_α/α … reached as α → 1 (the Table II curve lies below ρα)
        alphas = np.linspace(1.001, 50, 200)
        assert np.all([laplace_rdp(a, e) <= z.rho() * a * (1 + 1e-12) for a in alphas])


@pytest.mark.parametrize("b", [1e-300, -1.0, math.nan, math.inf])   # (0: no noise, answered)
def test_bad_scale(b):
    with pytest.raises(ValueError, match="b must"):
        accounting.mechanism("laplace", b=b)


# ------------------------------------------------------------------ declared atoms
def _mp_delta(e, x):
    """δ(x) of Laplace with e = Δ/b in mpmath (the closed form, 40 digits)."""
    x = mp.mpf(x)
    if x >= e:
        return mp.mpf(0)
    if x <= -e:
        return 1 - mp.exp(x)
    return 1 - mp.exp((x - e) / 2)


@pytest.mark.parametrize("b", [0.3, 1.0, 4.0])
def test_declared_atoms_are_the_kinks_of_the_profile(b):
    """An atom m at l is a jump of m·e^{−l} in the slope of δ in x = e^ε: the declared
    masses against one-sided difference quotients of the closed-form profile."""
    with mp.workdps(40):       # h = 1e-20 quotients: not at whatever precision another file left
        _check_kinks(b)


def _check_kinks(b):
    e = mp.mpf(1) / mp.mpf(b)
    pair = accounting.mechanism("laplace", b=b).pair()
    for d in (Direction.FORWARD, Direction.BACKWARD):
        losses, masses = pair.loss_atoms(d)
        assert losses.tolist() == pytest.approx([-float(e), float(e)], rel=1e-15)
        for l, m in zip(losses, masses):
            x0, h = mp.exp(e if l > 0 else -e), mp.mpf(10) ** -20   # the exact kink
            right = (_mp_delta(e, mp.log(x0 + h)) - _mp_delta(e, mp.log(x0))) / h
            left = (_mp_delta(e, mp.log(x0)) - _mp_delta(e, mp.log(x0 - h))) / h
            assert float(x0 * (right - left)) == pytest.approx(m, rel=1e-12)


def test_remainder_profile_is_the_atomless_part():
    """δ minus the atoms' share, normalised: ½(1 − e^{(ε−e)/2})² / s on [−e, e] with
    s = ½(1 − e^{−e}) the remainder's mass, 1 − e^ε below and 0 above (mpmath)."""
    from accounting.numerics.atoms import AtomSplit
    b = 0.8
    e = mp.mpf(1) / mp.mpf(b)
    pair = accounting.mechanism("laplace", b=b).pair()
    split = AtomSplit(pair.loss_atoms(Direction.FORWARD), pair.loss_atoms(Direction.BACKWARD))
    s = (1 - mp.exp(-e)) / 2
    assert split.scale == pytest.approx(float(s), rel=1e-15)
    assert split.floor(Direction.FORWARD) == split.floor(Direction.BACKWARD) == 0.0
    eps = np.concatenate([np.linspace(-1.6, 1.6, 161), [-np.inf, np.inf]])
    want = []
    for x in eps:
        if x == np.inf or x >= e:
            want.append(0.0)
        elif x == -np.inf:
            want.append(1.0)
        elif x <= -e:
            want.append(float(-mp.expm1(x)))
        else:
            want.append(float((1 - mp.exp((mp.mpf(x) - e) / 2)) ** 2 / 2 / s))
    for d in (Direction.FORWARD, Direction.BACKWARD):
        np.testing.assert_allclose(split.remainder(pair._profile)(eps, d), want,
                                   rtol=1e-11, atol=1e-16)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_atoms_on_the_grid_keep_their_place_and_mass(b):
    """Δ/b on the grid: both laws carry ½ at e and ½e^{−e} at −e, plus what the
    remainder (density ¼e^{(l−e)/2} ≤ ¼) puts on those grid points, at most a cell's
    worth; the old minorant moved the top atom a cell down and emptied ~30 cells
    below it."""
    e = 1.0 / b
    pld = accounting.mechanism("laplace", b=b).curve(PLD, step=STEP)
    for side in ("upper", "lower"):
        law = pld.law("forward", side)
        top = int(np.flatnonzero(np.isclose(law.losses, e, rtol=0, atol=STEP / 10))[0])
        assert 0.5 - 1e-15 <= law.masses[top] <= 0.5 + STEP / 4
        bottom = int(np.flatnonzero(np.isclose(law.losses, -e, rtol=0, atol=STEP / 10))[0])
        assert 0.5 * math.exp(-e) * (1 - 1e-15) <= law.masses[bottom] <= 0.5 * math.exp(-e) + STEP / 4
        below = law.masses[top - 30:top]             # the remainder's cells, none emptied
        assert np.all(below > 0.1 * STEP * math.exp(-STEP * 30 / 2) / 4), below
        assert law.losses[top] == law.max_loss   # nothing above the atom


def _mp_two_fold(e, x):
    """δ of two uses at ε = x by E_{L₁}[δ(x − L₁)]: the atoms ½ at e and ½e^{−e} at −e
    plus the density ¼e^{(l−e)/2} on (−e, e) (mpmath quadrature, split at the kinks)."""
    x = mp.mpf(x)
    atoms = (_mp_delta(e, x - e) / 2 + mp.exp(-e) * _mp_delta(e, x + e) / 2)
    cuts = sorted({-e, e} | {c for c in (x - e, x + e) if -e < c < e})
    dens = mp.quad(lambda l: mp.exp((l - e) / 2) / 4 * _mp_delta(e, x - l), cuts)
    return atoms + dens


def test_two_fold_composition_brackets_the_exact_law():
    """Composing the atom-split PLD: the bracket contains the exact two-fold δ (mpmath)
    and is O(step²) wide (it was O(step) before the atoms were declared)."""
    e = mp.mpf(1)
    pld = accounting.mechanism("laplace", b=1.0).curve(PLD, step=STEP)
    two = pld.compose(pld)
    eps = np.array([-0.7, 0.0, 0.4, 0.9995, 1.3, 1.9984])
    exact = np.array([float(_mp_two_fold(e, x)) for x in eps])
    up, lo = two.delta(eps, "forward"), two.delta(eps, "forward", "lower")
    assert np.all(up >= exact * (1 - 1e-12)) and np.all(lo <= exact * (1 + 1e-12)), (lo, exact, up)
    assert np.max(up - lo) < 2 * STEP ** 2
