"""The converter graph: path choice, provenance, the exact ring and the lossy edges."""

from __future__ import annotations

import numpy as np
import pluggy
import pytest

import accounting
from accounting import (PLD, RDP, ZCDP, Converter, Exactness, PrivacyProfile, Provenance, TradeOff,
                        convert, hookimpl, make_registry)
from accounting.curves.graph import find_path
from accounting.registry.registry import Registry

from closed_forms import (bun_steinke_epsilon, cks_zcdp_epsilon, discrete_delta, gaussian_delta,
                          gaussian_epsilon)

STEP = 1e-3


# --------------------------------------------------------------- chosen paths
def test_gaussian_rdp_to_profile_is_an_upper_bound(gaussian1):
    prof = gaussian1.curve(RDP).to(PrivacyProfile)
    assert prof.provenance.exactness is Exactness.UPPER
    assert prof.provenance.path == ("Gaussian(μ=1) rdp", "rdp→profile (improved conversion)")
    assert prof.lower is None                    # a bound keeps only its sound side
    with pytest.raises(ValueError, match="no lower side"):
        prof.delta(1.0, bound="lower")
    eps = np.linspace(0, 6, 25)
    assert np.all(prof.delta(eps) >= gaussian_delta(1.0, eps))


def test_pld_to_tradeoff_is_exact(gaussian1_pld):
    to = gaussian1_pld.to(TradeOff)
    assert to.provenance.exactness is Exactness.EXACT
    assert to.provenance.path == ("Gaussian(μ=1) pld", "pld→tradeoff")


def test_zcdp_to_profile_goes_through_rdp():
    prof = ZCDP.symmetric(0.5).to(PrivacyProfile)
    assert prof.provenance.exactness is Exactness.UPPER
    assert prof.provenance.path == ("zcdp→rdp", "rdp→profile (improved conversion)")


def test_cks_example():
    """REFERENCE §3: ρ = 0.5, δ = 1e-6: BS 5.757, CKS 5.222, exact Gaussian σ = 1: 4.887."""
    eps = float(ZCDP.symmetric(0.5).epsilon(1e-6))
    assert eps == pytest.approx(5.222, abs=1e-3)
    assert eps == pytest.approx(cks_zcdp_epsilon(0.5, 1e-6), abs=1e-6)
    assert bun_steinke_epsilon(0.5, 1e-6) == pytest.approx(5.757, abs=1e-3)
    exact = gaussian_epsilon(1.0, 1e-6)
    assert exact == pytest.approx(4.887, abs=1e-3)


def test_gaussian_pld_gives_the_exact_cks_comparison(gaussian1_pld):
    lo, up = gaussian1_pld.epsilon_interval(1e-6)
    exact = gaussian_epsilon(1.0, 1e-6)
    assert float(up) == pytest.approx(4.887, abs=1e-3)
    assert lo <= exact <= up
    assert up - lo < 1e-4


def test_converting_to_the_same_kind_is_the_identity(gaussian1_pld):
    assert gaussian1_pld.to(PLD) is gaussian1_pld


def test_rdp_to_pld_gives_a_sound_pld(gaussian1):
    pld = gaussian1.curve(RDP).to(PLD, step=1e-2)
    assert pld.provenance.exactness is Exactness.UPPER
    eps = np.linspace(0, 6, 25)
    assert np.all(pld.delta(eps) >= gaussian_delta(1.0, eps))


# ------------------------------------------------------- the exact ring round trip
def _round_trip(pld):
    prof = pld.to(PrivacyProfile)
    to = prof.to(TradeOff)
    prof2 = to.to(PrivacyProfile)
    back = prof2.to(PLD, step=STEP)
    return prof, to, prof2, back


@pytest.fixture(scope="module")
def subsampled_round_trip(subsampled_pld):
    return _round_trip(subsampled_pld)


def test_round_trip_is_exact_and_named(subsampled_round_trip):
    *_, back = subsampled_round_trip
    assert back.provenance.exactness is Exactness.EXACT
    assert back.provenance.path == ("PoissonGaussian(q=0.1, z=1) pld", "pld→profile",
                                    "profile→tradeoff", "tradeoff→profile",
                                    "profile→pld (connect-the-dots)")
    for c in subsampled_round_trip:
        assert c.provenance.exactness is Exactness.EXACT
        assert c.is_exact


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_round_trip_keeps_delta_on_an_asymmetric_pair(subsampled, subsampled_pld,
                                                       subsampled_round_trip, direction):
    prof, _, prof2, back = subsampled_round_trip
    eps = np.linspace(-2, 4, 601) + 0.37 * STEP
    exact = subsampled.pair().profile(eps, direction)   # checked against quadrature elsewhere
    start = subsampled_pld.delta(eps, direction)
    for curve in (prof, prof2, back):
        up = curve.delta(eps, direction)
        lo = curve.delta(eps, direction, bound="lower")
        assert np.all(up >= exact * (1 - 1e-12) - 1e-300)
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)
        assert np.max(up - lo) < 2e-5                    # grid accuracy at step 1e-3
        np.testing.assert_allclose(up, start, rtol=1e-8, atol=1e-12)  # the sound side is kept


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_round_trip_keeps_delta_on_a_five_point_pair(five_point_pld, direction):
    from conftest import P5, Q5
    p, q = (P5, Q5) if direction == "forward" else (Q5, P5)
    *_, back = _round_trip(five_point_pld)
    assert back.provenance.exactness is Exactness.EXACT
    eps = np.linspace(-1.5, 1.5, 301) + 0.37 * STEP
    exact = discrete_delta(p, q, eps)
    up = back.delta(eps, direction)
    lo = back.delta(eps, direction, bound="lower")
    assert np.all(up >= exact - 1e-15) and np.all(lo <= exact + 1e-15)
    np.testing.assert_allclose(up, five_point_pld.delta(eps, direction), atol=1e-12)
    assert np.max(up - exact) < 5e-4                     # one grid cell around each atom


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_round_trip_keeps_the_lower_side_on_a_five_point_pair(five_point_pld, direction):
    from conftest import P5, Q5
    p, q = (P5, Q5) if direction == "forward" else (Q5, P5)
    *_, back = _round_trip(five_point_pld)
    eps = np.linspace(-1.5, 1.5, 301) + 0.37 * STEP
    exact = discrete_delta(p, q, eps)
    # the lower side was discretised twice (PLD, then again after the round trip): an
    # off-grid atom can be rounded down by up to a cell each time
    assert np.max(exact - back.delta(eps, direction, bound="lower")) < 1e-3


# --------------------------------------------------------------- path finding
def _edge(src, dst, ex, name):
    return Converter(src, dst, lambda c, **_: c, ex, name)


def test_find_path_prefers_exact_then_short():
    E, U = Exactness.EXACT, Exactness.UPPER
    edges = [_edge(PLD, RDP, U, "lossy direct"), _edge(PLD, PrivacyProfile, E, "a"),
             _edge(PrivacyProfile, TradeOff, E, "b"), _edge(TradeOff, RDP, E, "c")]
    assert [e.name for e in find_path(edges, PLD, RDP)] == ["a", "b", "c"]
    edges.append(_edge(PrivacyProfile, RDP, E, "short"))
    assert [e.name for e in find_path(edges, PLD, RDP)] == ["a", "short"]
    assert find_path(edges, PLD, PLD) == []
    assert find_path(edges, RDP, PLD) is None


def test_find_path_never_chains_upper_and_lower():
    E, U, L = Exactness.EXACT, Exactness.UPPER, Exactness.LOWER
    edges = [_edge(PLD, PrivacyProfile, U, "up"), _edge(PrivacyProfile, TradeOff, L, "down")]
    assert find_path(edges, PLD, TradeOff) is None
    assert find_path(edges, PLD, PrivacyProfile, start=Exactness.LOWER) is None
    # lower-bound edges are taken only on request (never on a default path)
    assert find_path(edges, PrivacyProfile, TradeOff, start=Exactness.LOWER) is None
    assert find_path(edges, PrivacyProfile, TradeOff, start=Exactness.LOWER,
                     allow_lower=True)[0].name == "down"
    assert find_path([_edge(PLD, ZCDP, E, "e")], PLD, ZCDP, start=U)[0].name == "e"


def test_exactness_and_provenance_algebra():
    E, U, L = Exactness.EXACT, Exactness.UPPER, Exactness.LOWER
    assert E.then(U) is U and U.then(E) is U and U.then(U) is U and E.then(E) is E
    assert U.then(L) is None and L.then(U) is None
    p = Provenance().then("x", U)
    assert p.exactness is U and p.path == ("x",)
    with pytest.raises(ValueError, match="cannot chain"):
        p.then("y", L)
    with pytest.raises(ValueError, match="cannot compose"):
        p.join(Provenance(L, ("z",)))
    assert Provenance(E, ("a",)).join(Provenance(U, ("b",))) == Provenance(U, ("a", "b"))
    assert "upper bound" in str(p) and "x" in str(p)


def test_convert_errors(gaussian1_pld):
    with pytest.raises(TypeError, match="curve"):
        convert(3.0, PLD)
    with pytest.raises(TypeError, match="curve class"):
        gaussian1_pld.to(int)
    empty = Registry(pluggy.PluginManager("accounting"))

    class Unreached(PrivacyProfile):
        """A kind of a plugin's own that no edge reaches."""
    with pytest.raises(ValueError, match="no converter path"):
        gaussian1_pld.to(Unreached, registry=empty)
    lower_rdp = RDP(gaussian1_pld.to(RDP).upper, provenance=Provenance(Exactness.LOWER))
    with pytest.raises(ValueError, match="no converter path"):
        lower_rdp.to(PrivacyProfile)          # only an upper-bound edge leaves RDP


def test_a_plugin_converter_is_used_when_asked_and_checked(gaussian1):
    """A third-party shortcut is not taken where a built-in path exists unless named
    in ``via``; a broken one is recorded against its plugin and skipped."""
    class Plugin:
        @staticmethod
        @hookimpl
        def accounting_register_converters(register):
            register(ZCDP, PrivacyProfile,
                     lambda z, **_: PrivacyProfile(accounting.curves.profile.FunctionSide(
                         lambda e, d: np.where(np.asarray(e) < 0, 1.0, 0.123))),
                     Exactness.UPPER, "zcdp→profile (test)")
            register(TradeOff, ZCDP, lambda t, **_: "not a curve", Exactness.UPPER,
                     "tradeoff→zcdp (broken)")

    reg = make_registry(entry_points=False)
    reg.register_plugin(Plugin, "test-converters")
    z = ZCDP.symmetric(0.5)
    default = z.to(PrivacyProfile, registry=reg)
    assert default.provenance.path == ("zcdp→rdp", "rdp→profile (improved conversion)")
    prof = z.to(PrivacyProfile, registry=reg, via="zcdp→profile (test)")
    assert prof.provenance.path == ("zcdp→profile (test)",)
    assert prof.delta(1.0) == pytest.approx(0.123)
    assert not reg.errors
    # the broken edge, asked for: recorded against its plugin, the built-in route is used
    to = gaussian1.curve(TradeOff)
    with pytest.warns(RuntimeWarning, match="test-converters.*tradeoff→zcdp \\(broken\\)"):
        out = to.to(ZCDP, registry=reg, via="tradeoff→zcdp (broken)")
    builtin = to.to(ZCDP, registry=reg)
    assert out.provenance == builtin.provenance and out.rho() == builtin.rho() >= 0.5
    assert "tradeoff→zcdp (broken)" not in out.provenance.path
    [err] = reg.errors
    assert err.plugin == "test-converters" and "str, not ZCDP" in str(err)
    with pytest.raises(ValueError, match="via: unknown converter 'nope'"):
        z.to(PrivacyProfile, registry=reg, via="nope")


# ------------------------------------------------ options of third-party edges
def test_third_party_edges_get_the_options_they_name_and_typos_are_refused():
    import accounting
    from accounting import Direction, Exactness, PrivacyProfile, ZCDP, hookimpl, make_registry
    from accounting.curves.profile import FunctionSide

    seen = {}

    def classic(z, slack=1.0):
        """ε = ρ + 2√(ρ log(1/δ)) (Bun and Steinke 2016, arXiv:1605.02065, Prop. 1.3),
        times ``slack`` ≥ 1 (an upper bound whatever it is)."""
        seen["slack"] = slack
        rho = {Direction.FORWARD: z.upper[0], Direction.BACKWARD: z.upper[1]}

        def delta_fn(eps, d):
            excess = np.maximum(np.asarray(eps) / slack - rho[d], 0.0)
            return np.exp(-excess ** 2 / (4 * rho[d]))
        return PrivacyProfile(FunctionSide(delta_fn))

    class Plugin:
        @hookimpl
        def accounting_register_converters(self, register):
            register(ZCDP, PrivacyProfile, classic, Exactness.UPPER, "classic")

    reg = make_registry()
    reg.register_plugin(Plugin(), "classic_plugin")
    z = accounting.mechanism("gaussian", sigma=1.0).curve(ZCDP)
    prof = z.to(PrivacyProfile, registry=reg, via="classic", slack=2.0)
    assert seen["slack"] == 2.0 and not reg.errors
    # ε = 2·(ρ + 2√(ρ log 1/δ)) at ρ = 1/2
    want = 2 * (0.5 + 2 * np.sqrt(0.5 * np.log(1e6)))
    assert float(prof.epsilon(1e-6)) == pytest.approx(want, rel=1e-9)
    with pytest.raises(TypeError, match=r"'slak'; allowed on the path classic: slack"):
        z.to(PrivacyProfile, registry=reg, via="classic", slak=2.0)
