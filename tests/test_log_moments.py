"""LossPMF.cgf: K(t) = log E_P[e^{tL}] by blocked matrix products on a grid and by a
max-shifted log-sum-exp elsewhere, against mpmath at 50 digits."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from accounting.numerics.loss import LossPMF, log_moments

T = np.array([-5.0, -1.0, 0.0, 1e-6, 0.5, 3.0, 40.0, 500.0])


def _mp_cgf(losses, masses, t):
    with mp.workdps(50):
        return float(mp.log(mp.fsum(mp.mpf(m) * mp.exp(mp.mpf(t) * mp.mpf(l))
                                    for l, m in zip(losses, masses) if m > 0)))


def _law(rng, n, step=0.01, offset=-73):
    # masses spread over 30 orders of magnitude, a few exact zeros
    masses = 10.0 ** rng.uniform(-30, 0, n)
    masses[rng.choice(n, 5, replace=False)] = 0.0
    return LossPMF.on_grid(step, offset, masses / masses.sum())


@pytest.mark.parametrize("n", [200, 3000])
def test_grid_law_matches_mpmath(n):
    law = _law(np.random.default_rng(n), n)
    got = law.cgf(T)
    want = np.array([_mp_cgf(law.losses, law.masses, t) for t in T])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_off_grid_law_matches_mpmath():
    rng = np.random.default_rng(7)
    losses = np.sort(rng.uniform(-3, 5, 300))
    masses = rng.dirichlet(np.ones(300))
    law = LossPMF.from_atoms(losses, masses)
    assert law.step is None
    want = np.array([_mp_cgf(law.losses, law.masses, t) for t in T])
    np.testing.assert_allclose(law.cgf(T), want, rtol=1e-12, atol=1e-15)


def test_blocked_and_plain_routes_agree_on_a_wide_grid():
    law = _law(np.random.default_rng(3), 40_000, step=2e-4, offset=-20_000)
    t = np.concatenate([np.linspace(-2, 60, 97), [1e3, 1e5]])
    with np.errstate(divide="ignore"):
        logp = np.log(law.masses)
    blocked = log_moments(logp, law.losses, t, law.step)
    plain = log_moments(logp, law.losses, t)          # no step: every atom on its own
    np.testing.assert_allclose(blocked, plain, rtol=1e-12, atol=1e-14)


def test_mass_at_infinity_and_empty_laws():
    law = LossPMF.on_grid(0.1, -3, np.array([0.2, 0.3, 0.4]), inf_mass=0.1)
    k = law.cgf(np.array([-1.0, 0.0, 0.5]))
    assert k[0] == pytest.approx(_mp_cgf(law.losses, law.masses, -1.0), rel=1e-14)
    assert k[1] == pytest.approx(0.0, abs=1e-15) and k[2] == np.inf
    empty = LossPMF.on_grid(0.1, 0, np.zeros(1))
    assert np.all(empty.cgf(np.array([-1.0, 0.0, 2.0])) == -np.inf)
    assert np.all(log_moments(np.array([]), np.array([]), np.array([1.0])) == -np.inf)
