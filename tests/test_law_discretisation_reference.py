"""The laws of one mechanism's PLD are pinned to stored reference arrays.

The discretisation of a pair (support scan, grids for both directions, the largest
loss, the optimistic convex minorant and its hull) was rewritten for speed and checked
bit for bit against a verbatim copy of the old algorithm. A copy cannot catch a bug
that both share, so the laws are now compared, bit for bit, with arrays stored in
``tests/data/law_reference/`` (masses, offset, step, mass at +∞, ``sup_loss``, slack,
``bounded``, both directions, both sides), generated once by
``tests/data/law_reference/generate.py`` at the commit named in ``laws.json``, where
the library was asserted bit-identical to the old algorithm. The stored arrays are in
turn checked against the Gaussian's closed form (``test_stored_gaussian_laws_bracket
_the_closed_form``), which no copy of the code can share. The changed primitives are
checked on inputs with ±∞ and NaN against independent values.

Bit-for-bit equality assumes the platform's libm/numpy/scipy give the same floats as
where the arrays were made (versions in ``laws.json``); after an intended change of
the laws, regenerate the arrays (see the generator) and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from functools import lru_cache
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import accounting
import accounting_mechanisms.gaussian as gaussian_plugin
from accounting import PLD
from accounting.numerics import discretise as D
from accounting.vocabulary import Bound, Direction

import closed_forms

_FWD, _BWD = Direction.FORWARD, Direction.BACKWARD
DATA = Path(__file__).parent / "data" / "law_reference"

# ------------------------------------------------------------------ the cases
# (shared with ``data/law_reference/generate.py``, which imports this module)

#: the 100 subsampled Gaussians of issue 11 (q = 0.01, step 1e-3); stored: these
#: indices (both sides of where the largest loss stops being certified, 15 → 16, the
#: middle and the last; the first, σ = 0.8, dropped: the largest laws, 35k masses)
SIGMAS = np.linspace(0.8, 2.0, 100)
SIGMAS_KEPT = (15, 16, 50, 99)
WORKLOAD_OPTIONS = {
    "tail1e-25": dict(step=1e-3, lower=False, tail=1e-25),
    "default-tail": dict(step=1e-3, lower=False),
    "lower": dict(step=1e-3, tail=1e-25),
}

#: every mechanism of the contract suite at the coarse options; these also at the
#: fine ones (with the optimistic side), the others' fine laws being too large to store
COARSE = dict(step=1e-2, tail=1e-25, lower=False)
FINE = dict(step=1e-3)
FINE_KEPT = ("TestGaussianContract", "TestLaplaceContract", "TestRandomizedResponseContract",
             "TestSubsampledLaplaceContract",
             "TestSampledWithoutReplacementContract", "TestDiscreteLaplaceContract",
             "_PoissonReplaceOneLaplace", "_ApproxDP")

EXTRA = {
    "subsampled_gaussian q=0.3": dict(name="subsampled_gaussian", q=0.3, sigma=1.1),
    "subsampled_gaussian q=1e-4": dict(name="subsampled_gaussian", q=1e-4, sigma=0.7),
    "subsampled_gaussian q=1": dict(name="subsampled_gaussian", q=1.0, sigma=1.0),
    "subsampled_laplace": dict(name="subsampled_laplace", q=0.2, b=0.7),
    "poisson(laplace)": dict(name="poisson_subsampled", base=("laplace", dict(b=0.5)), q=0.05),
}
#: the extras also stored at the fine options (q = 0.3 and q = 1 dropped there: 30k and
#: 76k masses; their coarse laws and the issue-11 workload cover the same paths)
EXTRA_FINE = ("subsampled_gaussian q=1e-4", "subsampled_laplace", "poisson(laplace)")

#: the rough profiles given to ``convex_minorant`` directly
NOISES = (0.0, 1e-9, 1e-4, 0.05)
RANGES = {"both": (-3.0, 3.0), "left": (-3.0, -0.5), "right": (0.5, 3.0)}
PASSES = (0, 1, 3, 20, 200)
FLOORS = (0.0, 1e-9)

#: the subsampled Gaussians (q, σ) whose largest loss is searched with wrong guesses
SUP_CASES = ((0.01, 0.5), (0.01, 0.9), (0.01, 1.0), (0.01, 3.0), (0.3, 1.1), (1e-4, 0.7))


#: contract mechanisms added after the arrays were generated (their laws are not pinned;
#: random allocation is checked against brute force in tests/test_allocation.py, the
#: shuffled sampler against brute force over permutations in tests/plugins/test_shuffling.py)
NOT_PINNED = frozenset({"TestRandomAllocationContract", "TestShuffledContract"})


def contract_mechanisms():
    """Every mechanism of the contract suite (``tests/plugins/test_contract.py``)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "plugins"))
    import test_contract
    from accounting.testing import MechanismContract
    return {name: cls.mechanism for name, cls in vars(test_contract).items()
            if isinstance(cls, type) and issubclass(cls, MechanismContract)
            and cls.mechanism is not None}


def extra_mechanism(spec):
    spec = dict(spec)
    name = spec.pop("name")
    if "base" in spec:
        base, params = spec.pop("base")
        spec["base"] = accounting.mechanism(base, **params)
    return accounting.mechanism(name, **spec)


def law_cases():
    """(key, mechanism, options) of every stored PLD."""
    for i in SIGMAS_KEPT:
        mech = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=float(SIGMAS[i]))
        for name, options in WORKLOAD_OPTIONS.items():
            yield f"issue11 sigma[{i}] {name}", mech, options
    for label, mech in contract_mechanisms().items():
        if label in NOT_PINNED:
            continue
        yield f"contract {label} coarse", mech, COARSE
        if label in FINE_KEPT:
            yield f"contract {label} fine", mech, FINE
    for label, spec in EXTRA.items():
        mech = extra_mechanism(spec)
        yield f"extra {label} coarse", mech, COARSE
        if label in EXTRA_FINE:
            yield f"extra {label} fine", mech, FINE


def build_pld(mech, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mech.curve(PLD, **options)


def rough_profile(noise, lo, hi, n=600):
    """Grid values (δ, δ̃) of the Gaussian profile (μ = 1) on [lo, hi], each raised by
    a relative ``noise`` at random, and the same raised again at ε ∓ η (the ``near``
    supports): a profile that is not convex, so that the local passes, the clamp and
    the hull all have work everywhere on the grid."""
    rng = np.random.default_rng(int(noise * 1e6) + int(10 * (lo + 10)))
    step = (hi - lo) / n
    idx = np.arange(int(np.floor(lo / step)), int(np.ceil(hi / step)) + 1)
    eps = idx * step
    fwd = gaussian_plugin.gaussian_delta(1.0, eps)
    rev = gaussian_plugin.gaussian_delta(1.0, -eps)
    dt = np.where(eps < 0, np.exp(eps) * rev, fwd - 1.0 + np.exp(eps))
    bump = 1.0 + noise * rng.random(idx.size)
    dt = np.where(eps < 0, dt * bump, dt)
    d = np.where(eps < 0, (1.0 - np.exp(eps)) + dt, fwd * bump)
    dt = np.where(eps < 0, dt, d - 1.0 + np.exp(eps))
    eta = 1e-3 * step
    shifted = []
    for _ in (-eta, eta):
        bump = 1.0 + noise * rng.random(idx.size)
        shifted.append((d * bump, dt * bump))
    return idx, step, d, dt, (shifted[0], shifted[1], eta)


def hull_points(seed):
    """Points of a convex curve raised at random (many drops in the first pass), for
    odd seeds with a steep end (a chord that sweeps in one point a pass, into the
    chained spans), in both representations."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 3000))
    xs = np.concatenate([[0.0], np.sort(rng.uniform(0.1, 5.0, n)), [5.0 * 1e9]])
    y = np.exp(-xs[1:-1]) + rng.choice([0.0, 1e-3, 1e-12], n) * rng.random(n)
    if seed % 2:
        y[: n // 3] += np.linspace(1.0, 0.0, n // 3) ** 8
    yd = np.concatenate([[1.0], y, [y[-1]]])
    lf = np.concatenate([[True], xs[1:-1] < 1.0, [False]])
    yt = np.concatenate([[0.0], yd[1:-1] - 1.0 + xs[1:-1], [np.inf]])
    return xs, yd, yt, lf


def sup_grid(q, sigma):
    pair = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).pair()

    def f(e):
        return pair._profile(e, _BWD)
    step = 1e-3
    idx = np.arange(-50, int(2 * -math.log1p(-q) / step) + 50)
    return f, idx, step, f(idx * step)


def digest(*arrays):
    """sha256 of arrays' bytes: the stored laws of the direct checks are tied to the
    inputs they were made from."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def law_record(law, arrays):
    """A law's fields, its masses stored (once per distinct content) in ``arrays``."""
    key = "m_" + digest(law.masses)[:16]
    arrays.setdefault(key, np.asarray(law.masses))
    return dict(masses=key, offset=int(law.offset), step=float(law.step),
                inf_mass=float(law.inf_mass), sup_loss=law.sup_loss,
                slack=float(law.slack), bounded=bool(law.bounded))


# --------------------------------------------------------------- the stored data
@lru_cache(maxsize=None)
def _stored():
    meta = json.loads((DATA / "laws.json").read_text())
    with np.load(DATA / "laws.npz", allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return meta, arrays


def _assert_law(law, rec, arrays, label):
    """The law as stored: the same grid (offset, step, size) and flags exactly, and every
    float within 1e-13 relative, a few ulps: bit-identical on the machine the data was
    made on, and robust to a libm or SIMD path that rounds one operation differently
    (a real change of the discretisation moves masses by far more)."""
    want_masses = arrays[rec["masses"]]
    assert law.masses.shape == want_masses.shape, (label, law.masses.shape, want_masses.shape)
    assert law.masses.dtype == want_masses.dtype, label
    np.testing.assert_allclose(law.masses, want_masses, rtol=1e-13, atol=0.0,
                               err_msg=f"{label} masses")
    assert (int(law.offset), float(law.step), bool(law.bounded)) == \
        (rec["offset"], rec["step"], rec["bounded"]), label
    assert (law.sup_loss is None) == (rec["sup_loss"] is None), label
    got = [float(law.inf_mass), float(law.slack)] + ([] if law.sup_loss is None else [law.sup_loss])
    want = [rec["inf_mass"], rec["slack"]] + ([] if rec["sup_loss"] is None else [rec["sup_loss"]])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0.0, err_msg=label)


def _assert_pld(pld, stored, arrays, label):
    for name, side in (("upper", pld.upper), ("lower", pld.lower)):
        ref = stored[name]
        assert (side is None) == (ref is None), (label, name)
        if side is None:
            continue
        assert len(side) == len(ref) == 2, (label, name)
        for d, law, rec in zip(("forward", "backward"), side, ref):
            _assert_law(law, rec, arrays, f"{label} {name} {d}")


def test_the_stored_data_is_complete():
    meta, arrays = _stored()
    keys = [key for key, _, _ in law_cases()]
    assert sorted(meta["laws"]) == sorted(keys)
    used = {rec["masses"] for case in meta["laws"].values() for side in case["pld"].values()
            if side is not None for rec in side}
    assert used <= set(arrays)
    size = sum(p.stat().st_size for p in DATA.iterdir())
    assert size < 2_000_000


@pytest.mark.parametrize("group", ["issue11", "contract", "extra"])
def test_laws_match_the_stored_ones(group):
    """Every stored PLD: both sides, both directions, every field, bit for bit. The
    issue-11 workload has its largest loss both certified and refused."""
    meta, arrays = _stored()
    sups = set()
    for key, mech, options in law_cases():
        if not key.startswith(group + " "):
            continue
        stored = meta["laws"][key]
        assert stored["mechanism"] == repr(mech), key
        assert stored["options"] == options, key
        pld = build_pld(mech, options)
        _assert_pld(pld, stored["pld"], arrays, key)
        if group == "issue11" and not key.endswith("lower"):
            sups.add(pld.upper[1].sup_loss is None)
        if key.endswith(" lower") or key.endswith(" fine"):
            assert (pld.lower is not None) == (stored["pld"]["lower"] is not None)
    if group == "issue11":
        assert sups == {True, False}


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("where", list(RANGES))
def test_minorant_matches_the_stored_laws_on_rough_profiles(noise, where):
    """``convex_minorant`` directly, with and without near-tangent supports, for every
    number of local passes, on profiles smooth and rough (the rough ones drop many
    hull points at once, chain spans, and switch the hull's passes between their
    vectorised and linked forms): bit for bit the stored laws."""
    meta, arrays = _stored()
    lo, hi = RANGES[where]
    idx, step, d, dt, near = rough_profile(noise, lo, hi)
    stored = meta["minorant"][f"{noise!r} {where}"]
    assert stored["inputs"] == digest(idx, d, dt, *near[0], *near[1]), "inputs changed"
    for use_near in (False, True):
        for passes in PASSES:
            for floor in FLOORS:
                law = D.convex_minorant(idx, step, d, dt, inf_floor=floor,
                                        near=near if use_near else None, max_passes=passes)
                label = f"near={use_near} passes={passes} floor={floor!r}"
                _assert_law(law, stored["laws"][label], arrays, f"{noise} {where} {label}")


@pytest.mark.parametrize("small", [0, 1, 3, None, 10**9])
@pytest.mark.parametrize("seed", range(8))
def test_hull_vertices_match_the_stored_ones(seed, small, monkeypatch):
    """``_hull_vertices`` gives the stored vertices, whatever the size at which passes
    move between their vectorised and linked forms (0: never linked; 10⁹: always after
    the first pass; None: the library's)."""
    meta, arrays = _stored()
    if small is not None:
        monkeypatch.setattr(D, "_HULL_SMALL", small)
    pts = hull_points(seed)
    stored = meta["hull"][str(seed)]
    assert stored["inputs"] == digest(*pts), "inputs changed"
    np.testing.assert_array_equal(D._hull_vertices(*pts), arrays[stored["vertices"]])


# ------------------------------------------- the stored arrays against a closed form
def _law_delta(law, eps, slack):
    """δ(ε) of a loss law, summed here: mass at +∞ + Σ_l m_l (1 − e^{ε − l})₊
    (+ its slack when ``slack``)."""
    loss = (law.offset + np.arange(law.masses.size)) * law.step
    out = []
    for e in eps:
        above = loss > e
        out.append(law.inf_mass + float(np.sum(law.masses[above] * -np.expm1(e - loss[above])))
                   + (law.slack if slack else 0.0))
    return np.array(out)


def test_stored_gaussian_laws_bracket_the_closed_form():
    """The stored laws of the Gaussian (σ = 2, μ = 0.5, step 1e-3), read from the data
    files alone: the pessimistic law's δ(ε) is at or above the exact δ(ε) (Balle–Wang,
    40 digits) and within a grid allowance (a relative 1e-3) of it, the optimistic
    law's at or below and within the same allowance, in both directions (the pair is
    symmetric). On grid points (the first row) the pessimistic law interpolates the
    exact profile, so there it may fall below by the roundoff of the sum here (a
    relative 1e-12); between them (the second row) it is strictly above."""
    meta, arrays = _stored()
    stored = meta["laws"]["contract TestGaussianContract fine"]
    assert stored["mechanism"] == "Gaussian(sigma=2.0)"
    mu, rel = 0.5, 1e-12
    on_grid = np.array([-0.5, 0.0, 0.05, 0.2, 0.5, 1.0, 1.5, 2.0])
    between = np.array([-0.4995, 0.0005, 0.0503, 0.2337, 0.5001, 1.0005, 1.4999, 2.0005])
    eps = np.concatenate([on_grid, between])
    exact = closed_forms.gaussian_delta(mu, eps)
    for name in ("upper", "lower"):
        for rec in stored["pld"][name]:
            law = accounting.LossPMF.on_grid(rec["step"], rec["offset"], arrays[rec["masses"]],
                                             inf_mass=rec["inf_mass"], slack=rec["slack"])
            d = _law_delta(law, eps, slack=name == "upper")
            if name == "upper":
                assert np.all(d >= exact * (1 - rel)), (d - exact) / exact
                assert np.all(d[8:] > exact[8:]), (d - exact) / exact
                assert np.all(d <= exact * (1 + 1e-3)), (d - exact) / exact
            else:
                assert np.all(d <= exact * (1 + rel)), (d - exact) / exact
                assert np.all(d >= exact * (1 - 1e-3)), (d - exact) / exact


# ------------------------------------------------- the changed primitives, alone
def _inputs(rng, centre):
    """Arrays around ``centre`` (where a subsampled profile switches formula), all
    finite, with ±∞, with NaN, and scalars."""
    base = centre + np.concatenate([rng.normal(0, 0.05, 40), rng.normal(0, 3, 40),
                                    [0.0, 5e-18, -5e-18]])
    yield base
    yield np.abs(base) + centre                # all on one side
    yield -np.abs(base) + centre
    yield np.concatenate([base, [np.inf, -np.inf]])
    yield np.concatenate([base[:5], [np.nan, np.inf]])
    yield np.array(centre + 0.01)
    yield np.array(-np.inf)
    yield np.array([np.inf])


def test_gaussian_delta_matches_the_closed_form():
    """``gaussian_delta`` against Balle–Wang δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) at
    40 digits, to a relative 1e-9 (deep tails included, 1e-194 and below), with δ(+∞) = 0 and
    δ(−∞) = 1 exactly; a NaN is read as ε = 0 (as it always was); shapes and types
    kept (0-d in, 0-d out)."""
    rng = np.random.default_rng(3)
    for mu in (0.05, 0.5, 1.0, 4.0):
        for eps in _inputs(rng, 0.0):
            new = gaussian_plugin.gaussian_delta(mu, eps)
            assert isinstance(new, np.ndarray) and new.shape == np.shape(eps)
            flat = np.atleast_1d(eps)
            exact = closed_forms.gaussian_delta(mu, np.where(np.isnan(flat), 0.0, flat))
            np.testing.assert_allclose(np.atleast_1d(new), exact, rtol=1e-9, atol=1e-300)
            assert np.all(np.atleast_1d(new)[flat == np.inf] == 0.0)
            assert np.all(np.atleast_1d(new)[flat == -np.inf] == 1.0)


@pytest.mark.parametrize("base", ["gaussian", "laplace", "discrete_gaussian"])
@pytest.mark.parametrize("q", [1e-4, 0.01, 0.3, 0.999])
def test_subsampled_profile_matches_its_masked_form(base, q):
    """``_mixed`` (the base evaluated only where the formula uses it) equals the
    evaluation over the whole array with masks (``_mixed_masked``), bit for bit, in
    both directions, on either side of the switch at ε = ±log(1 − q)."""
    params = {"gaussian": dict(sigma=0.9), "laplace": dict(b=0.7),
              "discrete_gaussian": dict(sigma=2.0)}[base]
    pair = accounting.mechanism("poisson_subsampled", base=accounting.mechanism(base, **params),
                                q=q).pair()
    rng = np.random.default_rng(7)
    log1mq = np.log1p(-q)
    for d, centre in ((_FWD, log1mq), (_BWD, -log1mq)):
        for fn in (pair.base._profile, pair.base._profile_lower):
            for eps in _inputs(rng, centre):
                with np.errstate(all="ignore"):
                    old = pair._mixed_masked(np.asarray(eps, float), d, fn, q, log1mq)
                new = pair._mixed(eps, d, fn)
                assert type(new) is type(old) and new.shape == old.shape
                np.testing.assert_array_equal(new, old)


# ----------------------------------------------------- D_∞ and the largest loss
def _exact_dinf(q, base_dinf, direction):
    with mp.workdps(50):
        q, b = mp.mpf(q), mp.mpf(base_dinf)
        if direction is _FWD:
            return mp.log(1 + q * (mp.exp(b) - 1))
        return -mp.log(1 + q * (mp.exp(-b) - 1))


@pytest.mark.parametrize("q", [1e-6, 0.01, 0.3, 0.999])
def test_subsampled_max_divergence_brackets_the_closed_form(q):
    """D_∞ of the subsampled pair: forward log(1 + q(e^{D₀} − 1)), backward
    −log(1 + q(e^{−D₀} − 1)) (−log(1 − q) for the Gaussian, D₀ = ∞); the upper side
    at or above the 50-digit value, the lower side at or below, both within 1e-14."""
    lap = accounting.mechanism("poisson_subsampled", base=accounting.mechanism("laplace", b=0.5),
                               q=q).pair()
    gau = accounting.mechanism("subsampled_gaussian", q=q, sigma=1.0).pair()
    assert gau._renyi_limit(math.inf, _FWD) == math.inf
    assert gau._renyi_limit(1.0, _FWD) is None and lap._renyi_limit(1.0, _BWD) is None
    cases = [(gau, _BWD, math.inf), (lap, _FWD, 2.0), (lap, _BWD, 2.0)]
    for pair, d, d0 in cases:
        exact = _exact_dinf(q, d0 if d0 != math.inf else 1e6, d)
        up = pair._renyi_limit(math.inf, d, Bound.UPPER)
        assert mp.mpf(up) >= exact
        assert up <= float(exact) * (1 + 1e-14)
        low = pair._renyi_limit(math.inf, d, Bound.LOWER)
        assert mp.mpf(low) <= exact and low >= float(exact) * (1 - 1e-14)


def test_a_wrong_guess_changes_nothing():
    """``profile_sup`` with a guess far off, a few ulps off, or exact ends where the
    search alone ends (the guess only saves profile calls), and that is the stored
    largest loss."""
    meta, _ = _stored()
    for q, sigma in SUP_CASES:
        f, idx, step, d = sup_grid(q, sigma)
        truth = meta["sup"][f"{q!r} {sigma!r}"]
        assert D.profile_sup(f, idx, step, d) == truth, (q, sigma)
        cut = float(-np.log1p(-q))
        for guess in (None, cut, np.nextafter(cut, 1.0), cut * (1 + 8e-16), cut * (1 - 5e-16),
                      cut * 0.9, cut + 0.5 * step, 2.0, -1.0, math.inf, math.nan):
            g = None if guess is None else (lambda guess=guess: guess)
            assert D.profile_sup(f, idx, step, d, g) == truth, (q, sigma, guess)


def test_the_guess_settles_the_search_in_one_call():
    """With the pair's D_∞ as the guess the search is one profile call, for a largest
    loss certified (σ = 0.8) and for one refused near underflow (σ = 2)."""
    for sigma, expect_none in ((0.8, False), (2.0, True)):
        pair = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=sigma).pair()
        calls = []

        def f(e):
            calls.append(np.size(e))
            return pair._profile(e, _BWD)
        idx = np.arange(-50, 60)
        d = pair._profile(idx * 1e-3, _BWD)
        sup = D.profile_sup(f, idx, 1e-3, d, lambda: pair._renyi_limit(math.inf, _BWD))
        assert len(calls) == 1
        assert (sup is None) == expect_none
        assert sup is None or sup >= -math.log1p(-0.01) * (1 - 1e-15)
