"""LossPMF: exact queries of a finite loss law, and composition on a grid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from accounting import LossPMF
from accounting.numerics.fourier import compose_laws, self_compose_law

from closed_forms import discrete_delta, discrete_rdp


def _pmf_strategy(max_atoms: int = 7, grid: bool = False):
    """Random sub-probability loss laws; on the grid i·0.1 when ``grid``."""
    @st.composite
    def build(draw):
        n = draw(st.integers(1, max_atoms))
        idx = sorted(draw(st.lists(st.integers(-25, 25), min_size=n, max_size=n, unique=True)))
        w = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
        inf = draw(st.sampled_from([0.0, 0.0, 0.01, 0.2]))
        scale = draw(st.floats(0.5, 1.0))
        m = w / w.sum() * (1.0 - inf) * scale
        if grid:
            offset = idx[0]
            masses = np.zeros(idx[-1] - idx[0] + 1)
            masses[np.array(idx) - offset] = m
            return LossPMF.on_grid(0.1, offset, masses, inf_mass=inf)
        return LossPMF(np.array(idx) * 0.1, m, inf)
    return build()


def _direct_delta(pmf: LossPMF, eps: float) -> float:
    """δ(ε) = E_P[(1 − e^{ε−L})₊] + P(L = ∞), summed atom by atom."""
    return float(sum(p * max(0.0, 1.0 - np.exp(eps - l)) for l, p in zip(pmf.losses, pmf.masses))
                 + pmf.inf_mass)


# -------------------------------------------------------------------- construction
def test_rejects_malformed_laws():
    with pytest.raises(ValueError, match="strictly increasing"):
        LossPMF(np.array([0.0, 0.0]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="non-negative"):
        LossPMF(np.array([0.0, 1.0]), np.array([0.5, -0.1]))
    with pytest.raises(ValueError, match="finite"):
        LossPMF(np.array([0.0, np.inf]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="inf_mass"):
        LossPMF(np.array([0.0]), np.array([0.5]), inf_mass=1.5)
    with pytest.raises(ValueError, match="total mass"):
        LossPMF(np.array([0.0, 1.0]), np.array([0.7, 0.7]))
    with pytest.raises(ValueError, match="same length"):
        LossPMF(np.array([0.0, 1.0]), np.array([1.0]))


def test_from_atoms_merges_and_sorts():
    pmf = LossPMF.from_atoms(np.array([1.0, -1.0, 1.0, 2.0]), np.array([0.2, 0.3, 0.1, 0.0]),
                             inf_mass=0.1)
    np.testing.assert_array_equal(pmf.losses, [-1.0, 1.0])
    np.testing.assert_allclose(pmf.masses, [0.3, 0.3])
    assert pmf.inf_mass == 0.1
    assert pmf.total_mass == pytest.approx(0.7)


def test_on_grid_trims_zero_ends():
    pmf = LossPMF.on_grid(0.5, -3, np.array([0.0, 0.0, 0.4, 0.0, 0.6, 0.0]))
    assert pmf.offset == -1
    np.testing.assert_allclose(pmf.losses, [-0.5, 0.0, 0.5])
    np.testing.assert_allclose(pmf.masses, [0.4, 0.0, 0.6])


# ------------------------------------------------------------------------- queries
@given(_pmf_strategy())
def test_delta_is_the_hockey_stick_sum(pmf):
    eps = np.array([-3.0, -0.55, -0.1, 0.0, 0.05, 0.3, 1.0, 2.6])
    got = pmf.delta(eps)
    want = np.array([_direct_delta(pmf, e) for e in eps])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_delta_at_infinities():
    pmf = LossPMF(np.array([-1.0, 0.5]), np.array([0.3, 0.6]), inf_mass=0.1)
    assert pmf.delta(np.inf) == pytest.approx(0.1)
    assert pmf.delta(-np.inf) == pytest.approx(1.0)


def test_delta_of_a_finite_pair_matches_its_distributions():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    pmf = LossPMF.from_atoms(np.log(p / q), p)
    eps = np.linspace(-2, 2, 41)
    np.testing.assert_allclose(pmf.delta(eps), discrete_delta(p, q, eps), atol=1e-15)


@given(_pmf_strategy(), st.floats(1e-6, 0.95))
def test_epsilon_inverts_delta_minimally(pmf, delta):
    eps = float(pmf.epsilon(delta))
    if np.isinf(eps):
        # only when the mass at +∞ alone exceeds δ
        assert pmf.inf_mass > delta * (1 - 1e-12)
        return
    assert eps >= 0.0
    assert pmf.delta(eps) <= delta * (1 + 1e-9) + 1e-15        # δ(ε(δ)) ≤ δ
    if eps > 0:                                                  # and ε is the smallest
        assert pmf.delta(eps - 1e-7 * max(1.0, eps)) > delta * (1 - 1e-9)


def test_epsilon_between_atoms_solves_the_affine_piece():
    # δ(ε) = 0.5(1 − e^{ε−1}) for ε ∈ [0, 1): ε(0.25) = 1 + log(0.5)
    pmf = LossPMF(np.array([-1.0, 1.0]), np.array([0.5, 0.5]))
    assert pmf.epsilon(0.25) == pytest.approx(1.0 + np.log(0.5), rel=1e-12)
    assert pmf.epsilon(0.9) == 0.0
    assert pmf.epsilon(np.array([0.25, 0.9])).shape == (2,)


def test_epsilon_is_infinite_below_the_infinite_mass():
    pmf = LossPMF(np.array([0.0, 1.0]), np.array([0.5, 0.3]), inf_mass=0.2)
    assert np.isinf(pmf.epsilon(0.1))
    assert np.isfinite(pmf.epsilon(0.25))


def test_spill_below_a_certified_sup_keeps_pure_dp_answerable():
    """Mass at +∞ that is only a pessimistic allowance for losses ≤ sup_loss
    (``bounded``) leaves δ(ε ≥ sup) = 0 and ε(δ) ≤ sup, δ = 0 included, and still
    counts in full below sup; genuine mass at +∞ (not ``bounded``) answers ε(δ) = +∞
    below it, as before."""
    masses = np.array([0.25, 0.5, 0.25 - 1e-32])
    spill = LossPMF.on_grid(0.5, 0, masses, inf_mass=1e-32, sup_loss=2.0, bounded=True)
    assert spill.capped and spill.max_loss == 2.0
    np.testing.assert_array_equal(spill.epsilon(np.array([0.0, 1e-300, 1e-40])), 2.0)
    assert float(spill.delta(2.0)) == 0.0
    # δ at ε = 1 − tiny: the atom at 1 contributes 0.25·(1 − e^{ε − 1}) ≈ 0, the spill 1e-32
    assert float(spill.delta(1.0)) == pytest.approx(1e-32, rel=1e-12)
    genuine = LossPMF.on_grid(0.5, 0, masses, inf_mass=1e-32, sup_loss=2.0)
    assert not genuine.capped and genuine.max_loss == np.inf
    assert float(genuine.epsilon(0.0)) == np.inf and float(genuine.epsilon(1e-40)) == np.inf


@given(_pmf_strategy())
def test_cgf_matches_direct_sum(pmf):
    t = np.array([-0.5, 0.5, 1.0, 3.0])
    got = pmf.cgf(t)
    direct = np.log([np.sum(pmf.masses * np.exp(tt * pmf.losses)) for tt in t])
    if pmf.inf_mass > 0:
        np.testing.assert_array_equal(got[t > 0], np.inf)
        np.testing.assert_allclose(got[t < 0], direct[t < 0], rtol=1e-12)
    else:
        np.testing.assert_allclose(got, direct, rtol=1e-12, atol=1e-14)


def test_cgf_of_a_finite_pair_is_its_renyi_divergence():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    pmf = LossPMF.from_atoms(np.log(p / q), p)
    for alpha in (1.5, 2.0, 7.25):
        assert pmf.cgf(alpha - 1) / (alpha - 1) == pytest.approx(discrete_rdp(p, q, alpha), rel=1e-12)
    # K(0) = log of the total mass, and the mean is the KL divergence
    assert pmf.cgf(0.0) == pytest.approx(0.0, abs=1e-15)
    assert pmf.mean() == pytest.approx(float(np.sum(p * np.log(p / q))), rel=1e-12)


def test_tradeoff_vertices_follow_neyman_pearson():
    pmf = LossPMF(np.array([-1.0, 0.0, 1.0]), np.array([0.2, 0.3, 0.4]), inf_mass=0.1)
    alpha_c, beta = pmf.tradeoff_vertices()
    q = pmf.masses * np.exp(-pmf.losses)
    # rejecting nothing, then the atoms with the smallest losses first
    np.testing.assert_allclose(alpha_c[:4], [1.0, 0.8, 0.5, 0.1])
    np.testing.assert_allclose(beta[:4], [q.sum(), q[1:].sum(), q[2:].sum(), 0.0])
    assert np.all(np.diff(alpha_c) <= 0) and np.all(np.diff(beta) <= 0)


# --------------------------------------------------------------------- composition
@given(_pmf_strategy(grid=True), _pmf_strategy(grid=True))
def test_compose_is_np_convolve(a, b):
    c = compose_laws(a, b)
    direct = np.convolve(a.masses, b.masses)
    lo = a.offset + b.offset
    full = np.zeros(direct.size)
    full[c.offset - lo:c.offset - lo + c.masses.size] = c.masses
    # within the reported roundoff allowance (entrywise, then the total settled at
    # the lowest losses)
    assert np.all(np.abs(full - direct) <= 1e-12 * direct + c.roundoff + 1e-16)
    assert c.roundoff < 1e-13
    assert c.step == pytest.approx(0.1)
    # masses at +∞ combine as 1 − (1 − m₁)(1 − m₂)
    want_inf = 1.0 - (1.0 - a.inf_mass) * (1.0 - b.inf_mass)
    assert want_inf - 1e-16 <= c.inf_mass <= want_inf + 1e-13


def test_compose_large_uses_fft_and_stays_certified():
    rng = np.random.default_rng(3)
    a = LossPMF.on_grid(0.01, -150, rng.random(300) / 300 * 0.9, inf_mass=0.05)
    b = LossPMF.on_grid(0.01, -100, rng.random(200) / 200 * 0.8, inf_mass=0.1)
    up = compose_laws(a, b, pessimistic=True)
    lo = compose_laws(a, b, pessimistic=False)
    direct = np.convolve(a.masses, b.masses)
    exact = LossPMF.on_grid(0.01, a.offset + b.offset, direct,
                            inf_mass=1 - (1 - 0.05) * (1 - 0.1))
    eps = np.linspace(-4, 4, 81)
    ex = exact.delta(eps)
    assert np.all(up.delta(eps) >= ex - 1e-15)
    assert np.all(lo.delta(eps) <= ex + 1e-15)
    assert np.max(up.delta(eps) - lo.delta(eps)) < 1e-10


def test_compose_needs_a_common_grid():
    a = LossPMF.on_grid(0.1, 0, np.array([0.5, 0.5]))
    b = LossPMF.on_grid(0.2, 0, np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="grid steps"):
        compose_laws(a, b)
    off_grid = LossPMF(np.array([0.0, 0.3]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="grid"):
        compose_laws(off_grid, a)
    with pytest.raises(ValueError, match="grid"):
        self_compose_law(off_grid, 2)


@pytest.mark.parametrize("count", [2, 5, 13])
def test_self_compose_matches_repeated_compose(count):
    rng = np.random.default_rng(count)
    m = rng.random(9)
    base = LossPMF.on_grid(0.05, -4, m / m.sum() * 0.93, inf_mass=0.02)
    fast = self_compose_law(base, count)
    slow = base
    slow_opt = base
    for _ in range(count - 1):
        slow = compose_laws(slow, base)
        slow_opt = compose_laws(slow_opt, base, pessimistic=False)
    # the error each computation reports (its ``roundoff``), allowed for on the safe
    # side in the masses
    opt = self_compose_law(base, count, pessimistic=False)
    err_fast, err_slow = opt.roundoff + fast.roundoff, slow_opt.roundoff + slow.roundoff
    assert err_fast >= 0 and err_slow >= 0
    eps = np.linspace(-3, 5, 161)
    assert np.max(np.abs(fast.delta(eps) - slow.delta(eps))) <= err_fast + err_slow + 1e-15
    lower = opt.delta(eps)                         # already net of the slack
    assert np.all(lower <= slow.delta(eps) + 1e-15)
    assert np.all(lower >= slow.delta(eps) - 2 * (err_fast + err_slow) - 1e-15)
    # the masses at +∞ combine as 1 − (1 − m)^k, for both
    exact_inf = 1.0 - (1.0 - 0.02) ** count
    assert fast.inf_mass >= exact_inf - 1e-15 and slow.inf_mass >= exact_inf - 1e-15
    assert fast.inf_mass == pytest.approx(exact_inf, abs=1e-12)


def test_self_compose_infinite_masses_combine():
    base = LossPMF.on_grid(0.1, 0, np.array([0.3, 0.3]), inf_mass=0.4)
    got = self_compose_law(base, 3)
    assert got.inf_mass == pytest.approx(1 - 0.6 ** 3, abs=1e-13)
    assert got.inf_mass >= 1 - 0.6 ** 3 - 1e-16


def test_self_compose_one_is_identity_and_rejects_bad_counts():
    base = LossPMF.on_grid(0.1, 0, np.array([0.5, 0.5]))
    assert self_compose_law(base, 1) is base
    with pytest.raises(ValueError, match="count"):
        self_compose_law(base, 0)
    with pytest.raises(TypeError, match="count"):
        self_compose_law(base, 1.5)


def test_self_compose_of_a_symmetric_walk_is_binomial():
    # L = ±0.1 with masses e^{0.1}/(1+e^{0.1}), 1/(1+e^{0.1}): k steps give a binomial law
    a = 0.1
    p = np.exp(a) / (1 + np.exp(a))
    base = LossPMF.on_grid(a, -1, np.array([1 - p, 0.0, p]))
    k = 40
    got = self_compose_law(base, k)
    from scipy.stats import binom
    j = np.arange(k + 1)
    losses = (2 * j - k) * a
    masses = binom.pmf(j, k, p)
    eps = np.linspace(-1, 3, 41)
    want = np.array([np.sum(masses * np.maximum(0, 1 - np.exp(e - losses))) for e in eps])
    err = got.roundoff      # the reported roundoff
    assert np.all(got.delta(eps) >= want - 1e-15)
    np.testing.assert_allclose(got.delta(eps), want, rtol=0, atol=err + 1e-15)


def test_circular_composition_error_bound_holds_entrywise():
    """The bound E of ``_circular_compose`` (now (1/n)·Σ|ΔZ| over the spectrum, at
    most the former ‖ΔZ‖₂/√n) covers every entry's error against an exact
    long-double direct convolution, and is far below the ℓ2 form for a long power."""
    from accounting.numerics.fourier import _circular_compose
    rng = np.random.default_rng(3)
    m = rng.uniform(0, 1, 40)
    m /= m.sum()
    law = LossPMF.on_grid(0.01, -20, m)
    count, n = 12, 1024
    circ, e, _, _ = _circular_compose([(law, count)], n, 0.0, np.float64)
    exact = np.array([1.0], dtype=np.longdouble)
    w = law.masses.astype(np.longdouble)
    for _ in range(count):
        exact = np.convolve(exact, w)
    folded = np.zeros(n, dtype=np.longdouble)
    np.add.at(folded, (law.offset * count + np.arange(exact.size)) % n, exact)
    assert np.all(np.abs(circ - folded.astype(float)) <= e)
    assert e < 1e-14
