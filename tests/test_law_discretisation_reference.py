"""The faster discretisation of one mechanism's PLD gives the very laws of the old one.

The PLD of a pair used to be built by evaluating each direction's profile separately
on each grid, a separate δ(∞) call before the support scan, a 1024-ary bisection
for the largest loss, and masks over every ε in the subsampled profile. The new
path (one profile call per direction for both grids, the search started at the
pair's D_∞, the subsampled profile evaluated where its formula applies) must give
bit-identical laws: masses, offset, mass at +∞, ``sup_loss`` and slack. The old
algorithm is kept here as the reference (``_reference_laws``, swapped in for
``converters.profile_laws``), and the changed primitives are checked against their
old forms on inputs with ±∞ and NaN.
"""

from __future__ import annotations

import math
import os
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy.special import log_ndtr

import accounting
import accounting_mechanisms.gaussian as gaussian_plugin
from accounting import PLD
from accounting.conversion import converters
from accounting.curves.pld import DEFAULT_STEP
from accounting.numerics import discretise as D
from accounting.vocabulary import Bound, Direction

_FWD, _BWD = Direction.FORWARD, Direction.BACKWARD


# ------------------------------------------------------------- the old algorithm
def _old_support(delta, tail, resolution):
    """``profile_support`` before: δ(∞) in its own call, then the same scan."""
    floor = float(delta(np.array([np.inf]))[0])
    powers = 2.0 ** np.arange(-12, 18)
    scan = np.concatenate([-powers[::-1], [0.0], powers])
    above = delta(scan) - floor > tail
    if above[-1]:
        raise ValueError("the privacy profile does not decay")
    if not above.any():
        return float(scan[0])
    j = int(np.flatnonzero(above)[-1])
    lo, hi = scan[j], scan[j + 1]
    while hi - lo > resolution:
        pts = np.linspace(lo, hi, 65)
        above = delta(pts) - floor > tail
        k = int(np.flatnonzero(above)[-1]) if above.any() else 0
        lo, hi = pts[k], pts[min(k + 1, 64)]
    return float(hi)


def _old_grid(indices, step, delta, reverse, shift=0.0):
    """``grid_profile`` before: each direction's own evaluation, by masks."""
    left = indices * step < 0
    eps = indices * step + shift
    x = np.exp(eps)
    d = np.empty_like(eps)
    dt = np.empty_like(eps)
    if (~left).any():
        d[~left] = delta(eps[~left])
        dt[~left] = d[~left] - 1.0 + x[~left]
    if left.any():
        dt[left] = x[left] * reverse(-eps[left])
        d[left] = (1.0 - x[left]) + dt[left]
    return d, dt


def _old_sup(delta, indices, step, d):
    """``profile_sup`` before: the 1024-ary bisection, with no starting guess."""
    if d[-1] != 0.0:
        return None
    pos = np.flatnonzero(d > 0)
    if pos.size == 0:
        return float(indices[0] * step)
    a, b = float(indices[pos[-1]] * step), float(indices[pos[-1] + 1] * step)
    for _ in range(64):
        pts = np.unique(np.linspace(a, b, 1025)[1:-1])
        pts = pts[(pts > a) & (pts < b)]
        if pts.size == 0:
            mid = float(np.nextafter(a, b))
            if mid >= b:
                break
            pts = np.array([mid])
        zero = np.flatnonzero(delta(pts) <= 0)
        if zero.size == 0:
            a = float(pts[-1])
        else:
            k = int(zero[0])
            b = float(pts[k])
            if k > 0:
                a = float(pts[k - 1])
    if float(delta(np.array([a]))[0]) < D.SUP_FLOOR:
        return None
    return b


def _old_laws(delta, step, tail, lower, ranges=None, grids=None):
    if ranges is None:
        ranges = {d: _old_support(lambda e, d=d: delta(e, d), tail, step / 4) for d in (_FWD, _BWD)}
    grids = {} if grids is None else grids
    laws = []
    for d in (_FWD, _BWD):
        rev = d.reverse()
        idx = D.grid_indices(-ranges[rev], ranges[d], step)
        if idx.size == 0:
            floor = float(delta(np.array([np.inf]), d)[0])
            laws.append(accounting.LossPMF.on_grid(step, 0, np.zeros(1), inf_mass=floor))
            continue
        fd, fr = (lambda e: delta(e, d)), (lambda e: delta(e, rev))
        if d not in grids:
            grids[d] = _old_grid(idx, step, fd, fr)
        vals, vals_t = grids[d]
        if lower:
            floor = float(delta(np.array([np.inf]), d)[0])
            eta = 1e-3 * step
            near = (_old_grid(idx, step, fd, fr, -eta), _old_grid(idx, step, fd, fr, eta), eta)
            laws.append(D.convex_minorant(idx, step, vals, vals_t, inf_floor=floor, near=near))
        else:
            law = D.connect_the_dots(idx, step, vals, vals_t)     # no profile: no search
            laws.append(accounting.LossPMF.on_grid(
                law.step, law.offset, law.masses, law.inf_mass, law.slack,
                sup_loss=_old_sup(fd, idx, step, vals)))
    return tuple(laws), ranges, grids


def _reference_laws(profile, step, tail, lower):
    if step is None:
        laws = getattr(profile.upper, "laws", None)
        step = laws[0].step if laws is not None and laws[0].step else DEFAULT_STEP
    upper, ranges, grids = _old_laws(profile.upper.delta, step, tail, False)
    lower_laws = None
    if lower and profile.lower is not None:
        same = profile.lower is profile.upper
        lower_laws, _, _ = _old_laws(profile.lower.delta, step, tail, True, ranges,
                                     grids if same else None)
    return upper, lower_laws


# ------------------------------------------------------------------ comparison
def _fields(pld):
    out = []
    for side in (pld.upper, pld.lower):
        out.append(None if side is None else [
            (law.masses, law.offset, law.step, law.inf_mass, law.sup_loss, law.slack)
            for law in side])
    return out


def _assert_identical(new, ref, label):
    for side_new, side_ref, name in zip(_fields(new), _fields(ref), ("upper", "lower")):
        assert (side_new is None) == (side_ref is None), (label, name)
        if side_new is None:
            continue
        for d, a, b in zip(("forward", "backward"), side_new, side_ref):
            np.testing.assert_array_equal(a[0], b[0], err_msg=f"{label} {name} {d} masses")
            assert a[1:] == b[1:], (label, name, d, a[1:], b[1:])


def _both(mech, monkeypatch, **options):
    """(new PLD, reference PLD) of ``mech``: the reference with the old algorithm."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = mech.curve(PLD, **options)
        with monkeypatch.context() as m:
            m.setattr(converters, "profile_laws", _reference_laws)
            ref = mech.curve(PLD, **options)
    return new, ref


_SIGMAS = np.linspace(0.8, 2.0, 100)


@pytest.mark.parametrize("options", [dict(lower=False, tail=1e-25), dict(lower=False)],
                         ids=["tail1e-25", "default-tail"])
def test_issue_11_workload_laws_are_unchanged(options, monkeypatch):
    """The 100 subsampled Gaussians of issue 11 (q = 0.01, σ = 0.8 … 2.0, step 1e-3),
    every one: both directions, every field, bit for bit; the largest loss found
    both where it is certified (small σ) and where it is refused (large σ)."""
    sups = set()
    for sigma in _SIGMAS:
        mech = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=float(sigma))
        new, ref = _both(mech, monkeypatch, step=1e-3, **options)
        _assert_identical(new, ref, f"σ = {sigma}")
        sups.add(new.upper[1].sup_loss is None)
    assert sups == {True, False}


def test_issue_11_workload_lower_side_is_unchanged(monkeypatch):
    for sigma in _SIGMAS[::11]:
        mech = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=float(sigma))
        new, ref = _both(mech, monkeypatch, step=1e-3, tail=1e-25)
        _assert_identical(new, ref, f"σ = {sigma}")


def _contract_mechanisms(monkeypatch):
    """Every mechanism of the contract suite (``tests/plugins/test_contract.py``)."""
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "plugins"))
    import test_contract
    from accounting.testing import MechanismContract
    return {name: cls.mechanism for name, cls in vars(test_contract).items()
            if isinstance(cls, type) and issubclass(cls, MechanismContract)
            and cls.mechanism is not None}


_EXTRA = {
    "subsampled_gaussian q=0.3": dict(name="subsampled_gaussian", q=0.3, sigma=1.1),
    "subsampled_gaussian q=1e-4": dict(name="subsampled_gaussian", q=1e-4, sigma=0.7),
    "subsampled_gaussian q=1": dict(name="subsampled_gaussian", q=1.0, sigma=1.0),
    "subsampled_laplace": dict(name="subsampled_laplace", q=0.2, b=0.7),
}


def test_every_contract_mechanism_has_unchanged_laws(monkeypatch):
    mechs = _contract_mechanisms(monkeypatch)
    assert len(mechs) >= 25
    for label, spec in _EXTRA.items():
        spec = dict(spec)
        mechs[label] = accounting.mechanism(spec.pop("name"), **spec)
    mechs["poisson(laplace)"] = accounting.mechanism(
        "poisson_subsampled", base=accounting.mechanism("laplace", b=0.5), q=0.05)
    for label, mech in mechs.items():
        for options in (dict(step=1e-3), dict(step=1e-2, tail=1e-25, lower=False)):
            new, ref = _both(mech, monkeypatch, **options)
            _assert_identical(new, ref, f"{label} {options}")


# ------------------------------------------------- the changed primitives, alone
def _old_gaussian_delta(mu, eps):
    eps = np.asarray(eps, dtype=float)
    finite = np.isfinite(eps)
    e = np.where(finite, eps, 0.0)
    la = log_ndtr(mu / 2.0 - e / mu)
    lb = log_ndtr(-mu / 2.0 - e / mu)
    with np.errstate(over="ignore"):
        val = np.exp(la) * -np.expm1(np.minimum(e + lb - la, 0.0))
    val = np.where(eps == np.inf, 0.0, val)
    return np.where(eps == -np.inf, 1.0, val)


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


def test_gaussian_delta_matches_its_old_form():
    rng = np.random.default_rng(3)
    for mu in (0.05, 0.5, 1.0, 4.0):
        for eps in _inputs(rng, 0.0):
            new, old = gaussian_plugin.gaussian_delta(mu, eps), _old_gaussian_delta(mu, eps)
            assert type(new) is type(old) and new.shape == old.shape
            np.testing.assert_array_equal(new, old)


@pytest.mark.parametrize("base", ["gaussian", "laplace", "discrete_gaussian"])
@pytest.mark.parametrize("q", [1e-4, 0.01, 0.3, 0.999])
def test_subsampled_profile_matches_its_masked_form(base, q):
    """``_mixed`` (the base evaluated only where the formula uses it) equals the old
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
    search alone ends (the guess only saves profile calls)."""
    for q, sigma in ((0.01, 0.5), (0.01, 0.9), (0.01, 1.0), (0.01, 3.0), (0.3, 1.1), (1e-4, 0.7)):
        pair = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma).pair()

        def f(e):
            return pair._profile(e, _BWD)
        step = 1e-3
        idx = np.arange(-50, int(2 * -math.log1p(-q) / step) + 50)
        d = f(idx * step)
        truth = _old_sup(f, idx, step, d)
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
