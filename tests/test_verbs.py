"""The verbs compose and query (issue 23, "one obvious way"; ``docs/five-verbs.md``).

``accounting.compose`` is the one composition route: it gives the numbers the old
routes gave (``curve + curve``, ``curve * n``, ``pair.self_compose``), which still work
for one release with a DeprecationWarning naming it. The queries ``epsilon``,
``delta``, ``epsilon_interval`` and ``delta_interval`` have one signature on the
accountant and on every curve kind. Reference values: the Gaussian closed form
(``closed_forms``, never the library) and the old routes.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import math
import warnings

import numpy as np
import pytest

import accounting
from accounting import (PLD, RDP, ZCDP, Accountant, ComposedPair, PrivacyProfile, TradeOff,
                        compose, discrete_pair)
from accounting.curves.pld import compose_plds
from closed_forms import gaussian_delta, gaussian_epsilon

STEP = 1e-3
DELTAS = np.array([1e-7, 1e-5, 1e-3])
KINDS = (PLD, PrivacyProfile, TradeOff, RDP, ZCDP)
QUERIES = ("epsilon", "delta", "epsilon_interval", "delta_interval")


@pytest.fixture(scope="module")
def gauss():
    return accounting.mechanism("gaussian", sigma=2.0)


@pytest.fixture(scope="module")
def lap():
    return accounting.mechanism("laplace", b=2.0)


@pytest.fixture(scope="module")
def curves(gauss):
    """One curve of each kind, all of the σ = 2 Gaussian."""
    pld = gauss.curve(PLD, step=STEP)
    return {PLD: pld, PrivacyProfile: pld.to(PrivacyProfile), TradeOff: pld.to(TradeOff),
            RDP: gauss.curve(RDP), ZCDP: gauss.curve(ZCDP)}


@pytest.fixture(scope="module")
def acct(gauss, lap):
    return Accountant(step=STEP).compose(gauss, 20).compose(lap, 3)


# ------------------------------------------------------------------- compose
def test_a_repeated_gaussian_is_the_closed_form(gauss):
    # n Gaussians of μ = 1/2 are one Gaussian of μ = √n/2 (Dong, Roth, Su 2019,
    # arXiv:1905.02383, Cor. 2)
    pair = compose((gauss, 16))
    assert math.isclose(float(pair.mu), 2.0, rel_tol=1e-15)
    eps = np.array([0.0, 1.0, 3.0])
    assert np.allclose(pair.profile(eps), gaussian_delta(2.0, eps), rtol=1e-12, atol=0)


def test_equal_parts_merge_into_one_count(gauss):
    assert math.isclose(float(compose(gauss, gauss, gauss, gauss).mu), 1.0, rel_tol=1e-15)
    assert math.isclose(float(compose((gauss, 3), gauss).mu), 1.0, rel_tol=1e-15)


def test_composed_gaussians_match_the_closed_form():
    # σ = 1 and σ = 2: a Gaussian of μ = √(1 + 1/4)
    one, two = (accounting.mechanism("gaussian", sigma=s) for s in (1.0, 2.0))
    pair = compose(one, two)
    assert isinstance(pair, ComposedPair)
    mu = math.sqrt(1.25)
    pld = pair.curve(PLD, step=STEP)
    lo, hi = pld.epsilon_interval(DELTAS)
    exact = np.array([gaussian_epsilon(mu, d) for d in DELTAS])
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= hi + 1e-12)
    assert np.all(hi - lo < 2e-3 * hi)
    rdp = pair.curve(RDP)
    alphas = np.array([2.0, 10.0])
    assert np.allclose(rdp.renyi(alphas), alphas * mu ** 2 / 2, rtol=1e-12)
    assert math.isclose(pair.curve(ZCDP).rho(), mu ** 2 / 2, rel_tol=1e-12)


def test_composing_curves_gives_the_old_routes_numbers(curves, gauss, lap):
    pld, rdp, z = curves[PLD], curves[RDP], curves[ZCDP]
    other = lap.curve(PLD, step=STEP)
    with pytest.warns(DeprecationWarning, match=r"accounting\.compose\(a, b\)"):
        old_sum = pld + other
    with pytest.warns(DeprecationWarning, match=r"accounting\.compose\(\(curve, n\)\)"):
        old_power = pld * 5
    with pytest.warns(DeprecationWarning, match=r"accounting\.compose"):
        old_rpower = 5 * pld
    new_sum, new_power = compose(pld, other), compose((pld, 5))
    for old, new in ((old_sum, new_sum), (old_power, new_power), (old_rpower, new_power)):
        assert np.allclose(new.epsilon(DELTAS), old.epsilon(DELTAS), rtol=1e-12, atol=0)
    # the n-fold power is the Fourier composition of the internal compose_plds
    assert np.allclose(new_power.epsilon(DELTAS), compose_plds([(pld, 5)]).epsilon(DELTAS),
                       rtol=1e-12, atol=0)
    with pytest.warns(DeprecationWarning):
        old_rdp = rdp * 7 + rdp
    assert np.allclose(compose((rdp, 7), rdp).renyi([2.0, 5.0]), old_rdp.renyi([2.0, 5.0]),
                       rtol=1e-12)
    assert np.allclose(compose((rdp, 8)).renyi([2.0, 5.0]), np.array([2.0, 5.0]), rtol=1e-12)
    with pytest.warns(DeprecationWarning):
        old_z = z * 100
    assert math.isclose(compose((z, 100)).rho(), old_z.rho(), rel_tol=1e-12)
    assert math.isclose(compose((z, 100)).rho(), 12.5, rel_tol=1e-12)


def test_pair_self_compose_warns_and_is_compose(gauss, lap):
    with pytest.warns(DeprecationWarning, match=r"accounting\.compose\(\(pair, n\)\)"):
        old = gauss.pair().self_compose(9)
    assert math.isclose(float(old.mu), float(compose((gauss.pair(), 9)).mu), rel_tol=1e-15)
    with pytest.warns(DeprecationWarning):
        old_lap = lap.pair().self_compose(4)
    new_lap = compose((lap.pair(), 4))
    eps = np.array([0.5, 2.0])
    assert np.allclose(new_lap.curve(PLD, step=STEP).delta(eps),
                       old_lap.curve(PLD, step=STEP).delta(eps), rtol=1e-12, atol=0)


def test_exact_profiles_and_tradeoffs_repeat_through_their_pld():
    pair = discrete_pair([0.6, 0.3, 0.1], [0.2, 0.3, 0.5])
    pld = pair.curve(PLD, step=STEP)
    prof = pld.to(PrivacyProfile)
    assert prof.is_exact
    eps = np.array([0.0, 0.5, 1.5])
    twice = compose((prof, 2))
    assert isinstance(twice, PrivacyProfile)
    assert np.allclose(twice.delta(eps), compose(pld, pld).delta(eps), rtol=1e-9, atol=1e-15)
    assert np.allclose(twice.delta(eps), compose(prof, prof).delta(eps), rtol=1e-9, atol=1e-15)
    bound = accounting.mechanism("gaussian", sigma=1.0).curve(RDP).to(PrivacyProfile)
    with pytest.raises(TypeError, match="only an exact PrivacyProfile composes"):
        compose((bound, 2))


@pytest.mark.parametrize("parts, error, match", [
    ((), ValueError, "at least one part"),
    ((1.5,), TypeError, "argument 0 must be a mechanism, pair or curve"),
    (("gaussian",), TypeError, "got str"),
])
def test_compose_refuses_what_is_not_a_part(parts, error, match):
    with pytest.raises(error, match=match):
        compose(*parts)


def test_compose_refuses_mixtures_and_bad_counts(curves, gauss):
    with pytest.raises(TypeError, match="curves of one kind, got PLD, RDP"):
        compose(curves[PLD], curves[RDP])
    with pytest.raises(TypeError, match="either curves or mechanisms and pairs"):
        compose(curves[PLD], gauss)
    for count in (0, -1, 2.5, True):
        with pytest.raises((TypeError, ValueError), match="count"):
            compose((gauss, count))


# --------------------------------------------------------------------- query
def _shape(fn) -> list:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()
            if p.name not in ("self", "accountant")]


@pytest.mark.parametrize("query", QUERIES)
def test_one_signature_everywhere(query):
    want = _shape(getattr(PLD, query))
    assert want[0][0] in ("delta", "epsilon") and [n for n, _, _ in want[1:]] == (
        ["direction", "bound"] if not query.endswith("_interval") else ["direction", "rtol"])
    for owner in (*KINDS, accounting.curves.pld.RefiningPLD):
        assert _shape(getattr(owner, query)) == want, owner.__name__
    # the accountant's intervals also take ``group`` (grouping a composition by
    # dominance: a curve has no mechanisms to group), keyword-only and off by default
    extra = [("group", inspect.Parameter.KEYWORD_ONLY, None)] if query.endswith("_interval") else []
    assert _shape(getattr(Accountant, query)) == want + extra


def test_the_accountant_answers_as_its_pld(acct):
    # the accountant composes only the tilts each query needs (``RefiningPLD``): its
    # answers agree with the full PLD's within their roundoff allowance (measured:
    # 1.4e-9 relative on the optimistic side of δ, 1e-11 on the sound side)
    pld = acct.curve(PLD)
    for d in ("max", "forward", "backward"):
        for b in ("upper", "lower"):
            assert np.allclose(acct.epsilon(DELTAS, d, b), pld.epsilon(DELTAS, d, b),
                               rtol=1e-8, atol=0)
            assert np.allclose(acct.delta([0.5, 2.0], direction=d, bound=b),
                               pld.delta([0.5, 2.0], direction=d, bound=b), rtol=1e-8,
                               atol=1e-15)
    lo, hi = acct.epsilon_interval(DELTAS, "forward")
    assert np.all(lo <= hi) and np.allclose(hi, acct.epsilon(DELTAS, "forward"), rtol=1e-12)
    lo, hi = acct.delta_interval([0.5, 2.0])
    assert np.all(lo <= hi) and np.allclose(hi, acct.delta([0.5, 2.0]), rtol=1e-12)


def test_other_representations_are_curves_with_the_old_numbers(acct):
    for name, kind in (("rdp", RDP), ("zcdp", ZCDP)):
        new = acct.curve(kind).epsilon(DELTAS)
        with pytest.warns(DeprecationWarning, match=rf"acct\.curve\({kind.__name__}\)"):
            old = acct.epsilon(DELTAS, accountant=name)
        assert np.array_equal(new, old)
        with pytest.warns(DeprecationWarning):
            old_positional = acct.epsilon(DELTAS, name)
        assert np.array_equal(new, old_positional)
        with pytest.warns(DeprecationWarning):
            old_delta = acct.delta(1.0, accountant=name)
        assert np.array_equal(acct.curve(kind).delta(1.0), old_delta)
        assert np.array_equal(acct.under(name).epsilon(DELTAS), new)
    with pytest.warns(DeprecationWarning, match=r"acct\.epsilon\(\.\.\.\)"):
        assert np.array_equal(acct.epsilon(DELTAS, accountant="pld"), acct.epsilon(DELTAS))
    assert acct.under("pld") is acct


def test_rtol_refines_the_accountant_and_is_refused_by_a_curve(acct, curves):
    lo, hi = acct.delta_interval([1.0, 3.0], rtol=1e-3)
    assert np.all(hi - lo <= 1e-3 * hi)
    lo, hi = acct.epsilon_interval(DELTAS, rtol=1e-4)
    assert np.all(hi - lo <= 1e-4 * hi)
    with pytest.warns(DeprecationWarning, match="rtol=rtol"):
        old = acct.epsilon_interval(DELTAS, 1e-4)
    assert np.array_equal(old[1], hi)
    for kind, curve in curves.items():
        if kind in (RDP, ZCDP):
            continue   # no lower side to bracket with; rtol is checked first all the same
        with pytest.raises(ValueError, match=f"rtol must be None for a {kind.__name__}"):
            curve.epsilon_interval(1e-5, rtol=1e-3)
        with pytest.raises(ValueError, match="cannot refine"):
            curve.delta_interval(1.0, rtol=1e-3)
    with pytest.raises(ValueError, match="rtol must be None for a RDP"):
        curves[RDP].epsilon_interval(1e-5, rtol=1e-3)


@pytest.mark.parametrize("call, error, match", [
    (lambda a: a.epsilon(1e-5, rtol=1e-3), TypeError, "rtol"),
    (lambda a: a.epsilon(1e-5, direction="sideways"), ValueError, "direction"),
    (lambda a: a.delta(1.0, bound="tight"), ValueError, "bound"),
    (lambda a: a.epsilon_interval(1e-5, bound="upper"), TypeError, "bound"),
    (lambda a: a.delta_interval(1.0, rtol=2.0), ValueError, "rtol"),
    (lambda a: a.epsilon(1e-5, accountant="moments"), ValueError, "accountant must be one of"),
    (lambda a: a.under("moments"), ValueError, "accountant must be one of"),
])
def test_the_accountant_refuses_bad_query_options(acct, call, error, match):
    with pytest.raises(error, match=match):
        call(acct)


@pytest.mark.parametrize("kind", KINDS)
def test_every_curve_refuses_bad_query_options(curves, kind):
    curve = curves[kind]
    with pytest.raises(TypeError, match="tolerance"):
        curve.epsilon(1e-5, tolerance=1e-3)
    with pytest.raises(ValueError, match="direction"):
        curve.delta(1.0, direction="sideways")
    with pytest.raises(ValueError, match="bound"):
        curve.epsilon(1e-5, bound="tight")


def test_deprecation_warnings_point_at_the_caller(acct, curves, gauss):
    calls = [lambda: acct.epsilon(1e-5, accountant="rdp"), lambda: acct.delta(1.0, "zcdp"),
             lambda: acct.epsilon_interval(1e-5, 0.5), lambda: curves[PLD] + curves[PLD],
             lambda: curves[RDP] * 2, lambda: 2 * curves[ZCDP],
             lambda: gauss.pair().self_compose(2)]
    for call in calls:
        with pytest.warns(DeprecationWarning) as record:
            call()
        assert [w.filename for w in record] == [__file__]


# --------------------------------------------- no warning inside the library
def test_the_library_uses_no_deprecated_route(gauss, lap):
    from accounting.cli import main
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        acct = Accountant(step=STEP).compose(gauss, 10).compose(lap)
        acct.epsilon(DELTAS), acct.delta(1.0), acct.epsilon_interval(DELTAS)
        acct.delta_interval(1.0, rtol=1e-2)
        for kind in (RDP, ZCDP, PrivacyProfile, TradeOff):
            acct.curve(kind).epsilon(1e-5)
        compose((gauss, 3), lap).curve(RDP).renyi(2.0)
        compose((gauss, 3), lap).curve(ZCDP).rho()
        out = io.StringIO()
        for argv in (["epsilon", "gaussian", "--sigma", "2", "--compose", "10", "--delta",
                      "1e-5"],
                     ["delta", "laplace", "--b", "4", "--compose", "5", "--epsilon", "1",
                      "--accountant", "rdp"],
                     ["gap", "laplace", "--b", "1", "--compose", "3", "--t", "1"]):
            with contextlib.redirect_stdout(out):
                assert main(argv) == 0
    assert "ε" in out.getvalue()
