"""Honest labels: ``Exactness.NUMERICAL`` for numerical values, and nothing called
exact or certified unless it is.

* the chaining table of ``Exactness.then`` / ``Provenance.join``;
* quadrature Rényi curves (generic additive noise, the generalised Gaussian at
  β = 0.5, Student-t, Gaussian mixtures, Poisson subsampling of a noise density) are
  labelled numerical, and their value sits within its stated error of mpmath;
* whatever is labelled exact or an upper bound is ≥ the mpmath truth (and a lower
  side ≤ it): generalised Gaussian β = 0.5, Student-t, Laplace, Gaussian mixture;
* ``pld.to(RDP)`` is an upper bound (+∞ where the pessimistic law has mass at +∞),
  not exact; calibration and the command line word their answers by the label.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile
from accounting.analysis.calibration import calibrate
from accounting.cli.app import main
from accounting.curves.curve import Provenance
from accounting.vocabulary import Exactness
from accounting.testing import MechanismContract

E, U, L, N = Exactness.EXACT, Exactness.UPPER, Exactness.LOWER, Exactness.NUMERICAL
ALPHAS = (1.5, 2.0, 8.0, 20.0)


# ------------------------------------------------------------------ the table
@pytest.mark.parametrize("a,b,want", [
    (E, E, E), (E, U, U), (E, L, L), (E, N, N),
    (U, E, U), (U, U, U), (U, L, None), (U, N, N),
    (L, E, L), (L, U, None), (L, L, L), (L, N, None),
    (N, E, N), (N, U, N), (N, L, None), (N, N, N),
])
def test_chaining_table(a, b, want):
    assert a.then(b) is want
    pa, pb = Provenance(a, ("a",)), Provenance(b, ("b",))
    if want is None:
        with pytest.raises(ValueError, match="cannot"):
            pa.join(pb)
        with pytest.raises(ValueError, match="cannot chain"):
            pa.then("b", b)
    else:
        assert pa.join(pb).exactness is want
        assert pa.then("b", b).exactness is want


def test_certified_and_provenance_words():
    assert E.certified and U.certified and not L.certified and not N.certified
    assert str(Provenance(N, ("x rdp", "rdp→profile"))) == "numerical (x rdp → rdp→profile)"
    with pytest.raises(TypeError):
        Provenance("exact")
    with pytest.raises(TypeError):
        E.then("upper")


# -------------------------------------------------------------- mpmath truth
mp.mp.dps = 30


def _mp_renyi(logf, delta: float, alpha: float) -> float:
    """D_α(Z + Δ ‖ Z) = log(∫ f(x − Δ)^α f(x)^{1−α} dx / ∫ f) / (α − 1), f = e^{logf}
    unnormalised, by mpmath tanh-sinh with the kinks 0 and Δ as breakpoints."""
    pts = [-mp.inf, 0, delta, mp.inf]
    z = mp.quad(lambda x: mp.e ** logf(x), pts)
    i = mp.quad(lambda x: mp.e ** (alpha * logf(x - delta) + (1 - alpha) * logf(x)), pts)
    return float(mp.log(i / z) / (alpha - 1))


def _mixture_logf(weights, means, scales):
    def logf(x):
        return mp.log(mp.fsum(w / s * mp.e ** (-((x - m) / s) ** 2 / 2)
                              for w, m, s in zip(weights, means, scales)))
    return logf


#: name → (mechanism, mpmath log-density, expected label, stated relative error of a
#: numerical value)
CASES = {
    "generalised_gaussian_0.5": (
        lambda: accounting.mechanism("generalised_gaussian", beta=0.5, scale=1.0),
        lambda x: -mp.fabs(x) ** mp.mpf("0.5"), N, 1e-4),
    "student_t": (
        lambda: accounting.mechanism("student_t", nu=3.0, scale=1.0),
        lambda x: -2 * mp.log(1 + x ** 2 / 3), N, 1e-9),
    "laplace": (
        lambda: accounting.mechanism("laplace", b=1.0),
        lambda x: -mp.fabs(x), E, 0.0),
    "gaussian_mixture": (
        lambda: accounting.mechanism("gaussian_mixture", weights=(0.3, 0.7), means=(0.0, 0.5),
                                     scales=(1.0, 1.5)),
        _mixture_logf((0.3, 0.7), (0.0, 0.5), (1.0, 1.5)), N, 1e-9),
}


@pytest.fixture(scope="module")
def truths():
    return {(name, a): _mp_renyi(logf, 1.0, a)
            for name, (_, logf, _, _) in CASES.items() for a in ALPHAS}


@pytest.mark.parametrize("name", list(CASES))
def test_rdp_label_and_value_against_mpmath(name, truths):
    make, _, label, err = CASES[name]
    rdp = make().curve(RDP)
    assert rdp.provenance.exactness is label, str(rdp.provenance)
    assert rdp.is_exact == (label is E)
    assert label.value in str(rdp.provenance)
    for a in ALPHAS:
        truth = truths[name, a]
        up = float(rdp.rdp(a, "forward"))
        if label.certified:
            # exact or an upper bound: never below the truth
            assert up >= truth * (1 - 1e-12), (name, a, up, truth)
            if rdp.lower is not None:
                assert float(rdp.rdp(a, "forward", "lower")) <= truth * (1 + 1e-12)
            if label is E:
                assert up == pytest.approx(truth, rel=1e-10)
        else:
            # numerical: within its stated error, on whichever side
            assert up == pytest.approx(truth, rel=err), (name, a, up, truth)


def test_generalised_gaussian_cusp_is_numerical_not_exact(truths):
    # the number: D₂₀ = 0.6865361 against mpmath's 0.6865510 — below the truth,
    # so it must not be presented as exact or as an upper bound
    rdp = accounting.mechanism("generalised_gaussian", beta=0.5, scale=1.0).curve(RDP)
    got, truth = float(rdp.rdp(20.0)), truths["generalised_gaussian_0.5", 20.0]
    assert truth == pytest.approx(0.6865510, abs=5e-8)
    assert got < truth                                   # the quadrature is low here
    assert rdp.provenance.exactness is N and not rdp.is_exact
    z = accounting.mechanism("generalised_gaussian", beta=0.5, scale=1.0).curve(ZCDP)
    assert z.provenance.exactness is N
    eps_curve = rdp.to(PrivacyProfile)
    assert eps_curve.provenance.exactness is N and "numerical" in str(eps_curve.provenance)


@pytest.mark.parametrize("name", list(CASES))
def test_rdp_of_the_pld_brackets_the_truth(name, truths):
    pld = CASES[name][0]().curve(PLD, step=1e-2)
    rdp = pld.to(RDP)
    assert rdp.provenance.exactness is U and not rdp.is_exact
    for a in ALPHAS:
        truth = truths[name, a]
        assert float(rdp.rdp(a, "forward")) >= truth
        assert float(rdp.rdp(a, "forward", "lower")) <= truth * (1 + 1e-9)


def test_pld_to_rdp_is_labelled_by_what_it_answers():
    pld = accounting.mechanism("gaussian", sigma=1.0).curve(PLD, step=1e-2)
    rdp = pld.to(RDP)
    assert rdp.provenance.exactness is U and str(rdp.provenance).startswith("upper bound")
    assert np.isinf(rdp.rdp(2.0))                     # mass at +∞ on the pessimistic side
    low = float(rdp.rdp(2.0, bound="lower"))
    assert 0.99 * 1.0 < low <= 1.0                    # Gaussian μ = 1: D₂ = α/2·μ² = 1


def test_subsampled_quadrature_and_bounds_on_it_are_numerical():
    lap = accounting.mechanism("laplace", b=1.0)
    sub = accounting.mechanism("poisson_subsampled", base=lap, q=0.1)
    assert sub.curve(RDP).provenance.exactness is N
    base = accounting.mechanism("laplace", b=2.0, neighbouring="replace_one")
    swr = accounting.mechanism("sampled_without_replacement", base=base, batch_size=10,
                               dataset_size=100)
    assert swr.curve(RDP).provenance.exactness is N    # a bound on a numerical curve
    # the subsampled Gaussian's default curve is certified (exact integer sums, their
    # chords, a series with a proven remainder, sound add bounds): an upper bound whose
    # lower side is a certified lower bound, and the DP-SGD ε from it is certified
    sg = accounting.mechanism("subsampled_gaussian", q=0.1, sigma=1.0)
    rdp = sg.curve(RDP)
    assert rdp.provenance.exactness is U and not rdp.is_exact
    for a in (1.5, 3.0, 4.7):
        for d in ("forward", "backward"):
            assert float(rdp.rdp(a, d, "lower")) <= float(rdp.rdp(a, d)), (a, d)
    profile = rdp.to(PrivacyProfile)
    assert profile.provenance.exactness.certified
    # exact laws stay exact, a bound on an exact CGF is an upper bound
    from accounting_mechanisms.subsampling import PoissonSubsampledPair
    law = accounting.discrete_pair(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]))
    assert PoissonSubsampledPair(law, 0.1).curve(RDP).provenance.exactness is E
    dl = accounting.mechanism("poisson_subsampled",
                              base=accounting.mechanism("discrete_laplace", a=0.5), q=0.1)
    assert dl.curve(RDP).provenance.exactness is U
    dg = accounting.mechanism("poisson_subsampled",
                              base=accounting.mechanism("discrete_gaussian", sigma=2.0), q=0.1)
    assert dg.curve(RDP).provenance.exactness is U


# ---------------------------------------------------------- calibration words
def test_calibration_says_numerical_when_it_is():
    num = calibrate("student_t", "scale", epsilon=2.0, delta=1e-5, params={"nu": 5.0},
                    accountant="rdp", rtol=1e-3)
    assert num.exactness is N and not num.certified
    assert num.order_note.startswith("numerical") and "certified at" not in num.order_note
    assert "numerical" in num.describe() and num.epsilon_label.startswith("numerical")
    sound = calibrate("gaussian", "sigma", epsilon=2.0, delta=1e-5, accountant="rdp",
                      rtol=1e-3)
    assert sound.exactness is U and sound.certified
    assert sound.order_note.startswith("certified at α = ")
    assert sound.epsilon_label == "upper bound"
    pld = calibrate("student_t", "scale", epsilon=2.0, delta=1e-5, params={"nu": 5.0},
                    accountant="pld", step=1e-2, rtol=1e-3)
    assert pld.certified and pld.order_note == ""      # the PLD bracket is certified


def test_command_line_provenance_names_the_label(capsys):
    code = main(["epsilon", "student_t", "--nu", "3", "--scale", "1", "--delta", "1e-5",
                 "--accountant", "rdp"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "rdp: numerical (student_t rdp" in out


# ------------------------------------------------------------ the contract bites
class _LowBound(accounting.Mechanism):
    """A Gaussian whose Rényi curve claims to be an upper bound but is half the truth."""

    name = "low_bound_gaussian"

    def pair(self):
        from accounting_mechanisms.gaussian import GaussianPair

        class Low(GaussianPair):
            def _cgf(self, t, direction):
                return 0.5 * super()._cgf(t, direction)

            def cgf_exactness(self):
                return Exactness.UPPER

            def _rho(self, direction):
                return None
        return Low(1.0)


def test_contract_rejects_an_upper_label_below_the_truth():
    import attrs
    mech = attrs.frozen(_LowBound)()
    case = type("Case", (MechanismContract,), dict(mechanism=mech, step=1e-2))()
    with pytest.raises(AssertionError, match="below the RDP of the optimistic PLD"):
        case.test_rdp_agrees_with_pld()
