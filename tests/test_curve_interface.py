"""Contract of the curve interface: every kind answers every query, in every direction,
on both bracket sides, against closed forms.

Gaussian pair N(0, 1) vs N(μ, 1), μ = 1: all five notions have closed forms —
δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle and Wang 2018, arXiv:1805.06530,
Thm 8), β(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth, Su 2019, arXiv:1905.02383, Def. 2.7),
D_α = αμ²/2 and ρ = μ²/2 (Bun and Steinke 2016, arXiv:1605.02065, Prop. 1.6). An
asymmetric pair on three outcomes checks the directions, by exact finite sums.

The sound (``upper``) side never under-reports: δ, ε, D_α, ρ at least the truth, β at
most; the ``lower`` side, where a kind has one, the reverse; intervals contain the
truth; a side a conversion cannot give is refused with a ValueError naming it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile, TradeOff, discrete_pair
from accounting.curves.curve import QUERIES, Provenance
from accounting.vocabulary import Exactness

KINDS = (PLD, PrivacyProfile, TradeOff, RDP, ZCDP)
MU = 1.0
EPS = np.array([0.0, 0.5, 1.0, 2.0])
DELTAS = np.array([1e-2, 1e-4, 1e-6])
ALPHAS_T = np.array([0.01, 0.1, 0.3, 0.6])      # type-I errors
ORDERS = np.array([1.5, 2.0, 8.0])               # Rényi orders α > 1
#: slack for roundoff in a sound answer (the answers are certified, not approximate)
TOL = 1e-9


def gauss_delta(eps):
    eps = np.asarray(eps, dtype=float)
    return norm.cdf(-eps / MU + MU / 2) - np.exp(eps) * norm.cdf(-eps / MU - MU / 2)


def gauss_epsilon(delta):
    return np.array([brentq(lambda e: float(gauss_delta(e)) - d, 0.0, 50.0, xtol=1e-14)
                     for d in np.ravel(delta)])


def closed_form(query):
    return {"delta": (EPS, gauss_delta), "epsilon": (DELTAS, gauss_epsilon),
            "beta": (ALPHAS_T, lambda a: norm.cdf(norm.ppf(1 - a) - MU)),
            "renyi": (ORDERS, lambda a: a * MU ** 2 / 2),
            "rho": (None, lambda _: MU ** 2 / 2)}[query]


def ask(curve, query, x, direction="max", bound="upper"):
    if query == "rho":
        return np.asarray(curve.rho(direction, bound), dtype=float)
    return np.asarray(getattr(curve, query)(x, direction, bound), dtype=float)


def interval(curve, query, x, direction="max"):
    if query == "rho":
        return curve.rho_interval(direction)
    return getattr(curve, f"{query}_interval")(x, direction)


#: the grid of the Gaussian's PLD here: coarse enough that D_α and ρ of its loss laws
#: (a CGF per order, 161+ orders for the envelope) stay quick
STEP = 2e-3


@pytest.fixture(scope="module")
def gauss_curves():
    g = accounting.mechanism("gaussian", sigma=1.0 / MU)
    return {kind: g.curve(kind, step=STEP) for kind in KINDS}


def _slow_if(kind, query):
    """ρ of a closed-form profile or trade-off goes through a PLD at the default grid
    (2e-4: ~1e5 points, an envelope of ~20 s): behind the ``slow`` marker."""
    marks = [pytest.mark.slow] if kind in (PrivacyProfile, TradeOff) and query == "rho" else []
    return pytest.param(kind, query, marks=marks, id=f"{kind.__name__}-{query}")


def sound(query, value, truth, bound):
    """value is on the right side of the truth for its bound (β runs the other way)."""
    value, truth = np.asarray(value, dtype=float), np.asarray(truth, dtype=float)
    slack = TOL * np.maximum(1.0, np.abs(truth))
    above = (bound == "upper") != (query == "beta")
    return np.all(value >= truth - slack) if above else np.all(value <= truth + slack)


# ------------------------------------------------------------- every kind × query
@pytest.mark.parametrize("kind,query", [_slow_if(k, q) for k in KINDS for q in QUERIES])
@pytest.mark.parametrize("direction", ["forward", "backward", "max"])
def test_every_kind_answers_every_query_soundly(gauss_curves, kind, query, direction):
    curve = gauss_curves[kind]
    x, truth_fn = closed_form(query)
    truth = truth_fn(x)
    up = ask(curve, query, x, direction, "upper")
    assert up.shape == np.shape(truth) and not np.any(np.isnan(up))
    assert sound(query, up, truth, "upper"), (query, up, truth)
    prov = curve.explain(query)
    assert isinstance(prov, Provenance)
    native = query in type(curve).NATIVE
    assert (curve.answered_by(query) is curve) == native
    if not native:   # the path names the converters that answered
        assert len(prov.path) > len(curve.provenance.path)
        assert prov.path[:len(curve.provenance.path)] == curve.provenance.path
    if curve.answered_by(query).lower is None:
        with pytest.raises(ValueError, match=r"bound='lower'|no lower side"):
            ask(curve, query, x, direction, "lower")
        return
    lo = ask(curve, query, x, direction, "lower")
    assert sound(query, lo, truth, "lower"), (query, lo, truth)
    # the sound side is the pessimistic one: upper ≥ lower (β: upper ≤ lower)
    if query == "beta":
        assert np.all(up <= lo + TOL)
    else:
        assert np.all(up >= lo - TOL)
    a, b = interval(curve, query, x, direction)
    assert np.all(np.asarray(a) <= np.asarray(b) + TOL)
    slack = 1e-9 * np.maximum(1.0, np.abs(truth))
    assert np.all(np.asarray(a) <= truth + slack) and np.all(truth <= np.asarray(b) + slack)


# tightness of each kind's own formulas, and of the exact conversions
@pytest.mark.parametrize("kind,query,rtol", [
    (PLD, "delta", 1e-4), (PLD, "epsilon", 1e-4), (PLD, "beta", 1e-4),
    (PrivacyProfile, "delta", 1e-12), (PrivacyProfile, "epsilon", 1e-9),
    (PrivacyProfile, "beta", 1e-6),
    (TradeOff, "beta", 1e-12), (TradeOff, "delta", 1e-6), (TradeOff, "epsilon", 1e-6),
    (RDP, "renyi", 1e-12), (RDP, "rho", 1e-6), (ZCDP, "rho", 1e-12), (ZCDP, "renyi", 1e-12),
])
def test_exact_routes_are_tight(gauss_curves, kind, query, rtol):
    x, truth_fn = closed_form(query)
    truth = truth_fn(x)
    got = ask(gauss_curves[kind], query, x)
    np.testing.assert_allclose(got, truth, rtol=rtol, atol=1e-9)


def test_lossy_routes_are_labelled_and_loose_on_the_safe_side(gauss_curves):
    # RDP → (ε, δ): the improved conversion, an upper bound strictly above the truth
    rdp = gauss_curves[RDP]
    assert rdp.explain("epsilon").exactness is Exactness.UPPER
    assert "rdp→profile (improved conversion)" in rdp.explain("epsilon").path
    eps = rdp.epsilon(DELTAS)
    assert np.all(eps > gauss_epsilon(DELTAS)) and np.all(eps < 1.2 * gauss_epsilon(DELTAS))
    # ZCDP: through D_α ≤ ρα, the same numbers as the RDP of a Gaussian
    z = gauss_curves[ZCDP]
    np.testing.assert_allclose(z.epsilon(DELTAS), eps, rtol=1e-12)
    assert str(z.explain("epsilon")).startswith("upper bound (")
    # a PLD's pessimistic laws put their cut tail at +∞: D_α is the trivial bound there
    assert gauss_curves[PLD].renyi(2.0) == np.inf
    assert gauss_curves[PLD].renyi(2.0, bound="lower") == pytest.approx(MU ** 2, rel=1e-3)


def test_conversions_are_made_once_and_kept(gauss_curves):
    prof = gauss_curves[PrivacyProfile]
    assert prof.answered_by("beta") is prof.answered_by("beta")
    rdp = prof.answered_by("renyi")
    assert prof.answered_by("renyi") is rdp and rdp.answered_by("renyi") is rdp
    with pytest.raises(ValueError, match="query must be one of"):
        prof.explain("gamma")


# ------------------------------------------------------------------ directions
@pytest.fixture(scope="module")
def skewed():
    p = np.array([0.6, 0.3, 0.1])
    q = np.array([0.2, 0.3, 0.5])
    return p, q, discrete_pair(p, q)


def _delta_exact(a, b, eps):
    return np.array([np.maximum(a - math.exp(e) * b, 0.0).sum() for e in np.ravel(eps)])


def _beta_exact(a, b, alpha):
    """T(A, B)(α) = sup_ε e^{−ε}(1 − α − δ_{A‖B}(ε)), the sup over ε at the atoms'
    log-ratios (δ is piecewise of the form c − e^ε d between them)."""
    atoms = np.log(a / b)
    vals = [np.exp(-atoms[:, None]) * (1 - al - _delta_exact(a, b, atoms)[:, None])
            for al in np.ravel(alpha)]
    return np.array([max(0.0, float(v.max())) for v in vals])


def _renyi_exact(a, b, order):
    return np.array([math.log(float(np.sum(a ** o * b ** (1 - o)))) / (o - 1)
                     for o in np.ravel(order)])


def _rho_exact(a, b):
    """sup_t K(t)/(t(t + 1)) on a dense log grid, K(t) = log Σ a^{1+t} b^{−t}."""
    t = np.geomspace(1e-6, 1e4, 200001)
    k = np.logaddexp.reduce((1 + t) * np.log(a)[:, None] - t * np.log(b)[:, None], axis=0)
    return float(np.max(k / (t * (t + 1))))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_directions_match_exact_sums(skewed, kind):
    p, q, pair = skewed
    curve = pair.curve(kind)
    for direction, (a, b) in (("forward", (p, q)), ("backward", (q, p))):
        truth = {"delta": _delta_exact(a, b, EPS), "beta": _beta_exact(a, b, ALPHAS_T),
                 "renyi": _renyi_exact(a, b, ORDERS), "rho": _rho_exact(a, b)}
        args = {"delta": EPS, "beta": ALPHAS_T, "renyi": ORDERS, "rho": None}
        for query, want in truth.items():
            if query == "beta" and kind in (RDP, ZCDP):
                continue   # a grid of the RDP profile (~20 s here); the Gaussian test covers it
            got = ask(curve, query, args[query], direction)
            assert sound(query, got, want, "upper"), (kind, direction, query, got, want)
    # max is the pessimistic summary of the two directions
    pairs = (("delta", np.maximum), ("renyi", np.maximum))
    if kind not in (RDP, ZCDP):
        pairs += (("beta", np.minimum),)
    for query, combine in pairs:
        x = {"delta": EPS, "beta": ALPHAS_T, "renyi": ORDERS}[query]
        both = combine(ask(curve, query, x, "forward"), ask(curve, query, x, "backward"))
        np.testing.assert_array_equal(ask(curve, query, x, "max"), both)
    assert curve.rho() == max(curve.rho("forward"), curve.rho("backward"))


def test_exact_law_curves_are_tight_in_each_direction(skewed):
    p, q, pair = skewed
    prof, to, rdp = (pair.curve(k) for k in (PrivacyProfile, TradeOff, RDP))
    for direction, (a, b) in (("forward", (p, q)), ("backward", (q, p))):
        np.testing.assert_allclose(prof.delta(EPS, direction), _delta_exact(a, b, EPS),
                                   atol=1e-15)
        np.testing.assert_allclose(to.beta(ALPHAS_T, direction), _beta_exact(a, b, ALPHAS_T),
                                   atol=1e-12)
        np.testing.assert_allclose(rdp.renyi(ORDERS, direction), _renyi_exact(a, b, ORDERS),
                                   rtol=1e-12)
        np.testing.assert_allclose(rdp.rho(direction), _rho_exact(a, b), rtol=1e-6)
    # the two directions really differ here
    assert abs(float(prof.delta(1.0, "forward")) - float(prof.delta(1.0, "backward"))) > 0.05


# ------------------------------------------------------------ argument parsing
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_direction_and_bound_are_parsed_by_the_vocabulary(gauss_curves, kind):
    curve = gauss_curves[kind]
    with pytest.raises(ValueError, match="direction"):
        curve.delta(1.0, direction="sideways")
    with pytest.raises(ValueError, match="bound"):
        curve.beta(0.1, bound="middle")
    with pytest.raises(ValueError, match="bound"):
        curve.rho(bound="pessimistic")
    with pytest.raises(ValueError, match="alpha"):
        curve.renyi(0.5)   # α = 1 (KL) and α = ∞ are answered; below 1 is refused
    with pytest.raises(ValueError, match="alpha"):
        curve.beta(1.5)


# ------------------------------------------------------------------------ reprs
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_reprs_are_short_and_say_kind_provenance_and_a_headline(gauss_curves, kind):
    text = repr(gauss_curves[kind])
    assert text.startswith(kind.__name__ + "(exact (") and len(text) < 200, text
    headline = {PLD: "ε(1e-6) = 4.88", PrivacyProfile: "δ(ε=1) = 0.1269",
                TradeOff: "β(α=0.1) = 0.6109", RDP: "D_2 = 1, D_32 = 16",
                ZCDP: "ρ = (0.5, 0.5)"}[kind]
    assert headline in text


def test_repr_of_a_composed_tradeoff_is_short():
    acct = accounting.Accountant()
    acct.compose(accounting.mechanism("gaussian", sigma=2.0), 10)
    text = repr(acct.tradeoff())
    assert len(text) < 200 and text.startswith("TradeOff(")


# ------------------------------------------------------------------ composition
def test_every_kind_composes_or_says_why():
    g = accounting.mechanism("gaussian", sigma=2.0)
    two = accounting.compose((g.pair(), 2))     # closed form: a Gaussian with μ√2
    want = float(two.curve(PrivacyProfile).epsilon(1e-6))
    for kind in KINDS:
        c = g.curve(kind, step=STEP)
        both = accounting.compose(c, c)
        assert type(both) is kind
        got = float(both.epsilon(1e-6))
        # sound always; tight for the exact routes (RDP and zCDP: the improved conversion)
        assert got >= want - 1e-9
        assert got <= want * (1.2 if kind in (RDP, ZCDP) else 1.0 + 1e-3), (kind, got, want)
        with pytest.warns(DeprecationWarning, match="accounting.compose"):
            assert type(c + c) is kind   # the old route, for one release
    # a profile or trade-off composes through its PLD, and says so
    prof = accounting.compose(g.curve(PrivacyProfile), g.curve(PrivacyProfile))
    assert "profile→pld (connect-the-dots)" in prof.provenance.path


def test_composition_refusals_name_the_kinds():
    g = accounting.mechanism("gaussian", sigma=2.0)
    with pytest.raises(TypeError, match="PrivacyProfile, TradeOff"):
        accounting.compose(g.curve(PrivacyProfile), g.curve(TradeOff))
    with pytest.raises(TypeError, match="PLD, RDP"):
        accounting.compose(g.curve(PLD, step=STEP), g.curve(RDP))
    with pytest.raises(TypeError, match="got int"):
        accounting.compose(g.curve(RDP), 3)
    # an upper-bound profile (from RDP) is no profile of a pair: its grid laws are no
    # dominating pair, so it does not compose
    bound = g.curve(RDP).to(PrivacyProfile)
    with pytest.raises(TypeError, match="PrivacyProfile curves labelled upper bound"):
        accounting.compose(bound, bound)
    with pytest.raises(TypeError, match="TradeOff"):
        g.curve(TradeOff).compose(g.curve(ZCDP))
