"""Fixed-size batches drawn without replacement (``sampled_without_replacement``) under
add/remove and replace-one, for additive-noise bases, checked against a brute-force
enumeration of the mechanism itself (every dataset of a few bits, every b-subset),
against closed forms and mpmath, against a Monte Carlo estimate with its standard
error, and against dp_accounting where it is installed."""

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from closed_forms import sg_rdp_integer, sg_rdp_quad
from hypothesis import given, settings
from hypothesis import strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, Accountant, PrivacyProfile, TradeOff
from accounting.vocabulary import Direction, Exactness
from accounting_mechanisms.subsampling import (
    PoissonSubsampledPair,
    SampledWithoutReplacement,
    WorstDirectionPair,
)

F, B = Direction.FORWARD, Direction.BACKWARD
M = accounting.mechanism
EPS = np.array([-1.5, -0.6, -0.3, -0.1, 0.0, 0.05, 0.2, 0.5, 1.0, 2.0])


def wor(base, b, n, relation="add_remove"):
    return M("sampled_without_replacement", base=base, batch_size=b, dataset_size=n,
             neighbouring=relation)


# ------------------------------------------------------------- brute force
def law(records, b, noise):
    """The exact output law of 'sum of a uniform b-subset of ``records``, plus noise':
    the mixture over every b-subset (itertools.combinations) of the shifted noise.
    ``noise(shift)`` is the noise law moved by ``shift`` (a vector on a fixed grid)."""
    subsets = list(itertools.combinations(range(len(records)), b))
    return sum(noise(sum(records[i] for i in s)) for s in subsets) / len(subsets)


def hockey(p, q, eps, weights=1.0):
    """δ_{p‖q}(ε) = Σ (p − e^ε q)₊ (times quadrature weights for densities)."""
    return np.array([np.sum(np.maximum(p - math.exp(e) * q, 0.0) * weights) for e in eps])


def brute_force(n, b, noise, eps, relation, weights=1.0, larger=False):
    """The worst δ(ε) over every dataset of n records in {0, 1} and each of its
    neighbours, in both orders: (remove, add) under add/remove (``larger``: the
    neighbours with one record added, n + 1 records), else the replace-one worst."""
    rem, add = np.zeros(len(eps)), np.zeros(len(eps))
    for x in itertools.product((0, 1), repeat=n):
        p = law(x, b, noise)
        if relation == "replace_one":
            neighbours = [x[:i] + (1 - x[i],) + x[i + 1:] for i in range(n)]
        elif larger:
            neighbours = [x + (r,) for r in (0, 1)]
        else:
            neighbours = [x[:i] + x[i + 1:] for i in range(n)]
        for y in neighbours:
            q = law(y, b, noise)
            big, small = (q, p) if larger else (p, q)
            rem = np.maximum(rem, hockey(big, small, eps, weights))
            add = np.maximum(add, hockey(small, big, eps, weights))
    return rem, add


def discrete_laplace_noise(scale, reach=60):
    k = np.arange(-reach, reach + 8)
    pmf = np.exp(-np.abs(k) / scale)
    pmf /= pmf.sum()

    def noise(shift):
        return np.roll(pmf, int(shift))      # the support is wide: the roll wraps zeros
    return noise


def test_add_remove_matches_brute_force_enumeration_discrete_laplace():
    """n = 5 records in {0, 1}, batches of 2, discrete Laplace noise (replace-one
    sensitivity 1): the worst dataset attains the dominating pair's profile in both
    directions at every ε, negative ones included, to float64 roundoff."""
    n, b, scale = 5, 2, 1.4
    base = M("discrete_laplace", scale=scale, neighbouring="replace_one")
    mech = wor(base, b, n)
    rem, add = brute_force(n, b, discrete_laplace_noise(scale), EPS, "add_remove")
    # (atol: the enumeration's noise is cut at ±60, which leaves δ ~ 1e-20 where it is 0)
    np.testing.assert_allclose(mech.pair().profile(EPS, "forward"), rem, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(mech.pair().profile(EPS, "backward"), add, rtol=1e-10, atol=1e-15)
    # the neighbours with a record added (6 records, γ = 2/6) are covered, with room
    rem6, add6 = brute_force(n, b, discrete_laplace_noise(scale), EPS, "add_remove", larger=True)
    assert np.all(rem6 <= rem + 1e-14) and np.all(add6 <= add + 1e-14)
    assert rem6[7] < 0.9 * rem[7]
    # the pessimistic PLD is above the truth, the optimistic one below
    pld = mech.curve(PLD, step=1e-3)
    truth = np.maximum(rem, add)
    assert np.all(pld.delta(EPS) >= truth * (1 - 1e-9) - 1e-15)
    assert np.all(pld.delta(EPS, bound="lower") <= truth * (1 + 1e-9) + 1e-15)


def test_add_remove_is_not_replace_one():
    """The two relations differ below ε = 0 and agree above: replace-one is symmetric
    (its backward profile is its forward one), add/remove is not."""
    n, b, scale = 5, 2, 1.4
    base = M("discrete_laplace", scale=scale, neighbouring="replace_one")
    rep = brute_force(n, b, discrete_laplace_noise(scale), EPS, "replace_one")[0]
    np.testing.assert_allclose(wor(base, b, n, "replace_one").pair().profile(EPS, "forward"),
                               rep, rtol=1e-10, atol=1e-15)
    ar = wor(base, b, n).pair()
    pos = EPS >= 0
    np.testing.assert_allclose(ar.profile(EPS[pos], "max"), rep[pos], rtol=1e-10, atol=1e-15)
    assert not np.allclose(ar.profile(EPS[~pos], "forward"), rep[~pos], rtol=1e-3)


def _density_grid(heavy=False):
    """Quadrature nodes and trapezoid weights: x = 4 sinh(u) reaching |x| ≈ 3e5 for a
    heavy tail (a t₃'s beyond it is below 1e-16), else a uniform grid of step 1/400
    on [−30, 31] (through the integers, where Laplace densities have their kinks)."""
    if heavy:
        u = np.linspace(-12.0, 12.0, 120001)
        x, w = 4.0 * np.sinh(u), 4.0 * np.cosh(u) * (u[1] - u[0])
    else:
        x = np.linspace(-30.0, 31.0, 61 * 400 + 1)
        w = np.full(x.shape, x[1] - x[0])
    w[[0, -1]] *= 0.5
    return x, w


NOISES = {
    "gaussian": (dict(sigma=0.9), lambda z: np.exp(-z * z / (2 * 0.81)) / math.sqrt(2 * math.pi * 0.81)),
    "laplace": (dict(b=0.8), lambda z: np.exp(-np.abs(z) / 0.8) / 1.6),
    "student_t": (dict(nu=3.0, scale=0.7),
                  lambda z: (math.gamma(2.0) / (math.sqrt(3 * math.pi) * 0.7 * math.gamma(1.5))
                             * (1 + (z / 0.7) ** 2 / 3.0) ** -2.0)),
}


@pytest.mark.parametrize("name", sorted(NOISES))
def test_add_remove_matches_brute_force_densities(name):
    """Continuous 1-D additive noise: the worst of 4-record datasets in {0, 1} with
    batches of 2 (every subset, every neighbour) by quadrature on a fine grid, against
    the library's pair (the Gaussian's closed form, the others' generic numerics). The
    grid's trapezoid rule is O(h²) at the Laplace kinks: ~1e-7 absolute."""
    params, density = NOISES[name]
    x, w = _density_grid(heavy=name == "student_t")
    n, b = 4, 2
    eps = EPS[EPS > -1.0]
    rem, add = brute_force(n, b, lambda s: density(x - s), eps, "add_remove", weights=w)
    pair = wor(M(name, neighbouring="replace_one", **params), b, n).pair()
    np.testing.assert_allclose(pair.profile(eps, "forward"), rem, rtol=2e-6, atol=3e-7)
    np.testing.assert_allclose(pair.profile(eps, "backward"), add, rtol=2e-6, atol=3e-7)


def test_an_asymmetric_base_takes_its_worse_direction_in_both_orders():
    """A two-component Gaussian mixture noise is not symmetric: the records 0 → 1 and
    1 → 0 meet different directions of its pair. The brute force over datasets in
    {0, 1} (both kinds of record present) attains the max of the two, which is what
    the wrapper reports, and neither direction alone suffices."""
    weights, means = (0.3, 0.7), (-1.0, 1.0)
    base = M("gaussian_mixture", weights=weights, means=means, scales=(1.0, 1.0),
             neighbouring="replace_one")

    def density(z):
        return sum(wt * np.exp(-(z - m) ** 2 / 2) for wt, m in zip(weights, means)) \
            / math.sqrt(2 * math.pi)
    x, w = _density_grid()
    eps = np.array([-0.4, -0.1, 0.1, 0.3, 0.8])
    rem, add = brute_force(4, 2, lambda s: density(x - s), eps, "add_remove", weights=w)
    pair = wor(base, 2, 4).pair()
    assert isinstance(pair, PoissonSubsampledPair) and isinstance(pair.base, WorstDirectionPair)
    np.testing.assert_allclose(pair.profile(eps, "forward"), rem, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(pair.profile(eps, "backward"), add, rtol=1e-5, atol=1e-9)
    one_way = PoissonSubsampledPair(base.pair(), 0.5)
    assert min(one_way.profile(eps, "forward") / rem) < 0.99
    assert wor(base, 2, 4).curve(RDP).rdp(2.0) > 0     # from the PLD: a bound, not a crash


# ------------------------------------------------------------- composition
def test_two_steps_match_brute_force_of_the_composition():
    """Two steps, each a fresh batch: the output law is the product of the per-step
    laws, δ of the product for every dataset by enumeration; the composed PLD brackets
    the worst of them (the composed dominating pair is attained by the worst dataset)."""
    n, b, scale = 4, 2, 1.0
    noise = discrete_laplace_noise(scale, reach=40)
    eps = np.array([-0.5, 0.0, 0.3, 0.8, 1.5])
    worst = np.zeros(len(eps))
    for x in itertools.product((0, 1), repeat=n):
        p = law(x, b, noise)
        pp = np.outer(p, p).ravel()
        for i in range(n):
            q = law(x[:i] + x[i + 1:], b, noise)
            qq = np.outer(q, q).ravel()
            worst = np.maximum(worst, np.maximum(hockey(pp, qq, eps), hockey(qq, pp, eps)))
    mech = wor(M("discrete_laplace", scale=scale, neighbouring="replace_one"), b, n)
    pld = Accountant(step=1e-4).compose(mech, count=2).curve(PLD)
    up, lo = pld.delta(eps), pld.delta(eps, bound="lower")
    assert np.all(up >= worst * (1 - 1e-9) - 1e-15) and np.all(lo <= worst * (1 + 1e-9))
    assert np.all(up - lo < 2e-3)


def _mc_losses(rng, n, b, sigma, size, remove=True):
    """Privacy losses of the real sampler (a uniform b-subset of D = [1, 0, …, 0], then
    N(0, σ²) noise on the sum) against D′ = D minus its 1: draws by sorting uniforms,
    exact densities by counting the subsets that hold the record."""
    holding = sum(1 for s in itertools.combinations(range(n), b) if 0 in s) / math.comb(n, b)
    if remove:
        batches = np.argsort(rng.random((size, n)), axis=1)[:, :b]
        y = (batches == 0).any(axis=1) + sigma * rng.standard_normal(size)
    else:
        y = sigma * rng.standard_normal(size)        # D′ has no 1: the sum is 0
    log_ratio = (2 * y - 1) / (2 * sigma ** 2)        # log φ(y − 1)/φ(y)
    loss = np.logaddexp(math.log1p(-holding), math.log(holding) + log_ratio)
    return loss if remove else -loss


@pytest.mark.parametrize("remove", [True, False])
def test_monte_carlo_of_the_sampler_composed(remove):
    """δ_T(ε) = E[(1 − e^{ε − ΣL})₊] over T steps of the real sampler, estimated from
    40 000 draws: within 4 standard errors of the certified bracket."""
    rng = np.random.default_rng(20240525)
    n, b, sigma, steps, size = 12, 3, 0.8, 5, 40000
    total = sum(_mc_losses(rng, n, b, sigma, size, remove) for _ in range(steps))
    base = M("gaussian", sigma=sigma, neighbouring="replace_one")
    pld = Accountant(step=1e-4).compose(wor(base, b, n), count=steps).curve(PLD)
    direction = "forward" if remove else "backward"
    for e in (0.0, 0.5, 1.0, 2.0):
        terms = -np.expm1(np.minimum(e - total, 0.0))
        est, se = terms.mean(), terms.std(ddof=1) / math.sqrt(size)
        up = float(pld.delta(e, direction))
        lo = float(pld.delta(e, direction, bound="lower"))
        assert lo - 4 * se <= est <= up + 4 * se, (e, lo, est, up, se)
        assert se < 0.05 * est + 1e-4


@pytest.mark.bench
def test_composition_matches_dp_accounting_poisson_at_twice_the_sensitivity():
    """dp_accounting has no fixed-size add/remove event, but the dominating pair is the
    Poisson-subsampled Gaussian of the replace-one sensitivity: its PLD of
    PoissonSampled(b/n, Gaussian(σ/2)) must fall in our bracket."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant as pld_acc
    n, b, sigma, steps = 60000, 256, 2.2, 2000
    base = M("gaussian", sigma=sigma, sensitivity=2.0, neighbouring="replace_one")
    acc = Accountant(step=1e-4).compose(wor(base, b, n), count=steps)
    lo, hi = acc.epsilon_interval(1e-5)
    theirs = pld_acc.PLDAccountant(value_discretization_interval=1e-4).compose(
        dpa.PoissonSampledDpEvent(b / n, dpa.GaussianDpEvent(sigma / 2.0)), steps
    ).get_epsilon(1e-5)
    assert lo - 1e-4 <= theirs <= hi + 1e-4
    assert hi - lo < 0.02


# ------------------------------------------------------------- Rényi curves
def test_gaussian_add_remove_renyi_curve_is_the_exact_subsampled_gaussian():
    """The remove direction is the Poisson-subsampled Gaussian at q = b/n, σ/Δ_replace:
    Mironov–Talwar–Zhang's binomial sum at integer α, mpmath quadrature at fractional α
    and in the add direction (labelled an upper bound: the library's Poisson-Gaussian
    curve is certified as one, and equals the exact value here)."""
    n, b, sigma = 1000, 10, 1.6          # σ/Δ = 0.8 with Δ = 2
    rdp = wor(M("gaussian", sigma=sigma, sensitivity=2.0, neighbouring="replace_one"),
              b, n).curve(RDP)
    assert rdp.provenance.exactness in (Exactness.EXACT, Exactness.UPPER)
    for alpha in (2, 3, 8):
        assert float(rdp.rdp(alpha, "forward")) == pytest.approx(
            sg_rdp_integer(0.01, 0.8, alpha), rel=1e-9)
    for alpha in (1.5, 4.5):
        # measured: forward within 4e-7 of the quadrature, backward 0.3–0.4 % above it
        assert float(rdp.rdp(alpha, "forward")) == pytest.approx(
            sg_rdp_quad(0.01, 0.8, alpha), rel=1e-6)
        exact = sg_rdp_quad(0.01, 0.8, alpha, "backward")
        assert exact * (1 - 1e-9) <= float(rdp.rdp(alpha, "backward")) <= 1.01 * exact
    assert wor(M("gaussian", sigma=sigma, sensitivity=2.0, neighbouring="replace_one"),
               b, n).curve(ZCDP).rho() == pytest.approx(1 / (2 * 0.8 ** 2), rel=1e-9)


def test_laplace_add_remove_renyi_curve_against_mpmath():
    """Laplace base (scale 1, Δ = 1): D_α of ((1 − γ)Lap(0) + γLap(1), Lap(0)) in both
    directions by 30-digit quadrature; ours is the library's quadrature (labelled
    numerical), within 1e-8 relative."""
    gamma = mp.mpf(1) / 20
    rdp = wor(M("laplace", b=1.0, neighbouring="replace_one"), 5, 100).curve(RDP)
    mp.mp.dps = 30

    def lap(x, s=0):
        return mp.exp(-abs(x - s)) / 2

    for alpha in (2.0, 5.5):
        a = mp.mpf(alpha)
        fwd = mp.quad(lambda x, a=a: ((1 - gamma) * lap(x) + gamma * lap(x, 1)) ** a
                      * lap(x) ** (1 - a), [-mp.inf, 0, 1, mp.inf])
        bwd = mp.quad(lambda x, a=a: lap(x) ** a * ((1 - gamma) * lap(x) + gamma * lap(x, 1))
                      ** (1 - a), [-mp.inf, 0, 1, mp.inf])
        assert float(rdp.rdp(alpha, "forward")) == pytest.approx(
            float(mp.log(fwd) / (a - 1)), rel=1e-8)
        assert float(rdp.rdp(alpha, "backward")) == pytest.approx(
            float(mp.log(bwd) / (a - 1)), rel=1e-8)


# ------------------------------------------------------------- every base, every curve
BASES = [
    ("gaussian", dict(sigma=2.0)),
    ("laplace", dict(b=2.0)),
    ("student_t", dict(nu=4.0, scale=2.0)),
    ("generalised_gaussian", dict(beta=1.5, scale=2.0)),
    ("discrete_laplace", dict(scale=2.0)),
    ("gaussian_mixture", dict(weights=(0.3, 0.7), means=(-1.0, 1.0), scales=(1.5, 1.5))),
]


@pytest.mark.parametrize("name, params", BASES, ids=[b[0] for b in BASES])
def test_every_curve_of_every_additive_base_under_add_remove(name, params):
    """Every curve answers, and they agree: the PLD brackets the exact profile, the
    trade-off's β is a trade-off function, RDP is finite and (for a symmetric base, by
    joint convexity) at most the base's."""
    base = M(name, neighbouring="replace_one", **params)
    mech = wor(base, 20, 1000)
    pair = mech.pair()
    eps = np.array([0.0, 0.1, 0.5, 1.0])
    pld = mech.curve(PLD, step=1e-3)
    prof = pair.profile(eps, "max")
    assert np.all(pld.delta(eps) >= prof * (1 - 1e-9))
    assert np.all(pld.delta(eps, bound="lower") <= prof * (1 + 1e-9) + 1e-15)
    assert float(mech.curve(PrivacyProfile).delta(0.5)) == pytest.approx(prof[2], rel=1e-9)
    beta = mech.curve(TradeOff).beta(np.array([0.01, 0.1, 0.5]))
    assert np.all((beta >= 0) & (beta <= 1 - np.array([0.01, 0.1, 0.5]) + 1e-12))
    rdp = mech.curve(RDP).rdp(np.array([2.0, 4.0]))
    assert 0 < rdp[0] <= rdp[1]
    if base.pair().symmetric:
        assert rdp[1] < np.inf
        assert rdp[0] <= float(base.curve(RDP).rdp(2.0)) * (1 + 1e-9)
    rho = float(mech.curve(ZCDP).rho())
    assert rho >= 0 and rho >= (rdp[0] - 1e-12) / 2.0 * (1 - 1e-9)   # D_2 ≤ 2ρ
    # an asymmetric base has no Rényi curve of its worst direction: RDP comes from the
    # PLD, whose upper side may be +∞ at high orders (an honest, useless bound)
    # the subsampled mechanism is more private than its base, and Poisson sampling at
    # the same rate with the same (replace-one) base is the same pair
    assert float(pld.epsilon(1e-6)) < float(base.curve(PLD, step=1e-3).epsilon(1e-6))


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, error, message", [
    (dict(batch_size=11, dataset_size=10), ValueError, r"batch_size must be at most dataset_size"),
    (dict(batch_size=10, dataset_size=10, neighbouring="add_remove"), ValueError,
     r"dataset_size − 1 \(9\) under add_remove"),
    (dict(batch_size=-1, dataset_size=10), ValueError, r"batch_size must be an integer >= 0"),
    (dict(batch_size=2, dataset_size=10.5), TypeError, r"dataset_size must be an integer"),
    (dict(batch_size=2.5, dataset_size=10), TypeError, r"batch_size must be an integer"),
    (dict(batch_size=2, dataset_size=0), ValueError, r"dataset_size must be an integer >= 1"),
    (dict(batch_size=2, dataset_size="10"), TypeError, r"dataset_size"),
    (dict(batch_size=2, dataset_size=10, neighbouring="sideways"), ValueError,
     r"neighbouring must be 'add_remove' or 'replace_one'"),
])
def test_bad_input_is_refused_with_a_clear_message(kwargs, error, message):
    base = M("gaussian", sigma=1.0, neighbouring="replace_one")
    with pytest.raises(error, match=message):
        M("sampled_without_replacement", base=base, **kwargs)


def test_an_add_remove_base_is_refused_under_either_relation():
    base = M("gaussian", sigma=1.0)        # add/remove: its sensitivity is one record's
    for relation in ("add_remove", "replace_one"):
        with pytest.raises(ValueError, match=r"must be declared under replace_one .*twice the "
                                             r"clipping norm.*neighbouring='add_remove'"):
            SampledWithoutReplacement(base, 10, 100, neighbouring=relation)


def test_degenerate_sizes():
    base = M("laplace", b=1.0, neighbouring="replace_one")
    assert float(wor(base, 0, 10).curve(PLD).epsilon(1e-6)) == 0.0
    # the whole dataset under replace-one is the base itself
    whole = wor(base, 10, 10, "replace_one").curve(PLD).epsilon(1e-6)
    assert float(whole) == pytest.approx(float(base.curve(PLD).epsilon(1e-6)), rel=1e-9)
    # b = n − 1 under add/remove: γ close to 1, still less than the base
    assert float(wor(base, 9, 10).curve(PLD).epsilon(1e-6)) < float(whole)


# ------------------------------------------------------------- properties
@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 10 ** 6), frac=st.floats(0.0, 1.0), z=st.floats(0.3, 10.0),
       eps=st.floats(-3.0, 5.0))
def test_profiles_increase_with_the_batch_and_agree_above_zero(n, frac, z, eps):
    """For a fixed dataset, a larger batch never costs less (the profile is convex in γ
    with its least value at γ = 0), in both directions; for ε ≥ 0 the larger of the
    add/remove directions is the replace-one profile (both are γ·δ₀(ε′) there)."""
    b = 1 + int(frac * (n - 3))
    base = M("gaussian", sigma=z, neighbouring="replace_one")
    small, big = wor(base, b, n).pair(), wor(base, b + 1, n).pair()
    for d in ("forward", "backward"):
        assert big.profile(eps, d) >= small.profile(eps, d) * (1 - 1e-9) - 1e-15
    if eps >= 0:
        assert float(small.profile(eps, "max")) == pytest.approx(
            float(wor(base, b, n, "replace_one").pair().profile(eps, "forward")),
            rel=1e-9, abs=1e-15)
