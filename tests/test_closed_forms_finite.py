"""Closed forms beyond Gaussians (issue 24, deliverable 1): pure DP, finite laws, mixed jobs.

* Pure DP: every part with a finite largest loss (Laplace, randomized response, k-ary
  randomized response) gives ε(δ = 0) = Σ kᵢεᵢ exactly (the largest loss of a sum of
  independent losses is the sum of the largest losses), with no grid; calibration at
  δ = 0 solves it in closed form (10 × Laplace at ε = 1: b = 10 exactly).
* Finite laws: compositions of randomized responses are the exact convolution of their
  loss laws (Kairouz, Oh, Viswanath, arXiv:1311.0776, §3), checked against brute force
  over every output sequence in 50-digit arithmetic, and against binomial sums for
  counts whose extreme masses underflow float64.
* Mixed jobs: the Gaussians are combined into one μ-GDP pair and the randomized
  responses into one law before the grid; the certified bracket contains the truth
  (mpmath: δ(ε) = Σᵢ pᵢ δ_{G⊗Lap}(ε − lᵢ), a quadrature over Laplace's continuous loss)
  and is no wider than the bracket of the parts discretised one by one.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accounting as ac
from accounting import PLD, Exactness
from accounting.analysis.calibration import calibrate
from accounting.curves.pld import compose_plds
from accounting.numerics.finite import law_delta, law_from_log_masses
from accounting.numerics.loss import LossPMF
from accounting.pairs.mechanism import Neighbouring
from accounting_mechanisms.kary_randomized_response import kary_rr_distributions

DPS = 50


def rr(p: float) -> ac.Mechanism:
    return ac.mechanism("randomized_response", p=p)


def job(*parts: tuple[ac.Mechanism, int], step: float | None = None) -> ac.Accountant:
    acct = ac.Accountant() if step is None else ac.Accountant(step=step)
    for m, n in parts:
        acct.compose(m, n)
    return acct


# ------------------------------------------------------------------ pure DP
def test_ten_laplace_at_b_10_is_exactly_epsilon_1_with_no_grid():
    acct = job((ac.mechanism("laplace", b=10.0), 10))
    assert acct.epsilon(0.0) == 1.0
    assert acct.epsilon_interval(0.0) == (1.0, 1.0)
    assert acct.epsilon(0.0, bound="lower") == 1.0
    assert not any(k[0] == "refining" for k in acct._cache)      # nothing discretised


def test_mixed_pure_parts_sum_their_largest_losses():
    """Laplace (e = Δ/b), binary RR (log(p/(1−p))) and k-ary RR (log(1 + k(1−r)/r))."""
    acct = job((ac.mechanism("laplace", b=2.0, sensitivity=3.0), 4), (rr(0.8), 7),
               (ac.mechanism("kary_randomized_response", r=0.5, k=6), 3))
    exact = 4 * mp.mpf(3) / 2 + 7 * mp.log(mp.mpf(0.8) / mp.mpf(0.2)) \
        + 3 * mp.log(1 + mp.mpf(6) * 0.5 / 0.5)
    lo, hi = acct.epsilon_interval(0.0)
    assert lo == hi == float(acct.epsilon(0.0))
    assert float(acct.epsilon(0.0)) == pytest.approx(float(exact), rel=1e-14)
    # and the grid's own answer at δ = 0 agrees (its window ends at the same loss)
    coarse = job(*((m, n) for m, n in acct.ledger.mechanisms()), step=1e-2)
    assert float(coarse.curve(PLD).epsilon(0.0)) == pytest.approx(float(exact), rel=1e-9)


def test_a_part_with_unbounded_loss_has_no_pure_answer():
    acct = job((ac.mechanism("laplace", b=1.0), 2), (ac.mechanism("gaussian", sigma=1.0), 1))
    assert acct.pure_epsilon() is None
    # Poisson-subsampled Laplace: D_∞ = log(1 + q(e^e − 1)) forward (rounded outwards),
    # a certified bracket of ε(0) that contains the closed form
    sub = job((ac.mechanism("subsampled_laplace", q=0.1, b=1.0), 5))
    lo, hi = sub.pure_epsilon()
    fwd = 5 * mp.log(1 + mp.mpf(0.1) * mp.expm1(1))
    bwd = -5 * mp.log(1 + mp.mpf(0.1) * mp.expm1(-1))
    assert lo <= max(fwd, bwd) <= hi and hi - lo <= 1e-12 * hi
    assert (float(sub.epsilon(0.0, bound="lower")), float(sub.epsilon(0.0))) == (lo, hi)


@settings(max_examples=30, deadline=None)
@given(bs=st.lists(st.floats(0.05, 50.0), min_size=1, max_size=6),
       ks=st.lists(st.integers(1, 10_000), min_size=6, max_size=6))
def test_pure_epsilon_is_the_correctly_rounded_sum(bs, ks):
    acct = ac.Accountant()
    for b, k in zip(bs, ks):
        acct.compose(ac.mechanism("laplace", b=b), k)
    # the mechanism's ε is the float Δ/b; the answer is Σ k·(Δ/b), rounded once
    exact = float(sum(Fraction(1.0 / b) * k for b, k in zip(bs, ks)))
    lo, hi = acct.epsilon_interval(0.0)
    assert lo == hi == exact


# ----------------------------------------------------------- calibration
def test_pure_dp_calibration_is_exact():
    res = calibrate("laplace", "b", epsilon=1.0, delta=0.0, count=10)
    assert res.value == 10.0 and res.epsilon == 1.0
    assert res.exactness is Exactness.EXACT and res.epsilon_label == "exact"
    lo, hi = res.bracket
    assert hi == 10.0 and lo == math.nextafter(10.0, 0.0)
    res = calibrate("laplace", "b", epsilon=0.3, delta=0.0, count=7,
                    params={"sensitivity": 3.0})
    assert res.value == pytest.approx(70.0, rel=1e-15) and res.epsilon <= 0.3


def test_a_pure_family_not_in_scale_form_keeps_the_search():
    res = calibrate("kary_randomized_response", "r", epsilon=1.0, delta=0.0, count=10,
                    params={"k": 4})
    # ε(0) = 10·log(1 + 4(1 − r)/r) = 1 at r = 4/(4 + e^{0.1} − 1)
    exact = 4.0 / (4.0 + math.expm1(0.1))
    assert res.epsilon <= 1.0 and exact <= res.value <= exact * (1 + 2e-6)
    assert res.exactness is Exactness.EXACT


def test_cli_calibrate_pure_dp_answers_ten(capsys):
    from accounting.cli.app import main
    assert main(["calibrate", "laplace", "--solve", "b", "--compose", "10", "--epsilon", "1",
                 "--delta", "0", "--json"]) == 0
    import json
    res = json.loads(capsys.readouterr().out)
    assert res["value"] == 10.0 and res["exactness"] == "exact"


def test_cli_epsilon_at_delta_zero_is_exact(capsys):
    import json

    from accounting.cli.app import main
    assert main(["epsilon", "laplace", "--b", "10", "--compose", "10", "--delta", "0",
                 "--accountant", "pld", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)["results"]["pld"]
    assert res["epsilon"] == [1.0] and res["interval"] == [[1.0, 1.0]]
    assert res["exactness"] == "exact"


# ------------------------------------------------------------ finite laws
def brute_laws(ps: list[float]) -> list[tuple[mp.mpf, mp.mpf]]:
    """(P(o), Q(o)) of every output sequence of binary RR uses with truth probabilities ps."""
    out = []
    for bits in itertools.product((0, 1), repeat=len(ps)):
        P = Q = mp.mpf(1)
        for b, p in zip(bits, ps):
            p = mp.mpf(p)
            P *= p if b else 1 - p
            Q *= 1 - p if b else p
        out.append((P, Q))
    return out


def brute_delta(laws: list[tuple[mp.mpf, mp.mpf]], eps: float) -> mp.mpf:
    e = mp.e ** mp.mpf(eps)
    return max(sum(max(P - e * Q, 0) for P, Q in laws),
               sum(max(Q - e * P, 0) for P, Q in laws))


PS = [0.75] * 4 + [0.6] * 3 + [0.9] * 2


def rr_job() -> ac.Accountant:
    return job((rr(0.75), 4), (rr(0.6), 3), (rr(0.9), 2))


def test_randomized_response_composition_is_the_brute_force_law():
    with mp.workdps(DPS):
        laws = brute_laws(PS)
        acct = rr_job()
        profile = acct.closed_profile()
        assert profile is not None and profile.provenance.exactness is Exactness.EXACT
        for eps in (0.0, 0.5, 2.0, 5.0, 8.0):
            truth = brute_delta(laws, eps)
            lo, hi = acct.delta_interval(eps)
            assert lo <= truth <= hi
            assert float(acct.delta(eps)) == pytest.approx(float(truth), rel=1e-10)
        for delta in (1e-2, 1e-4, 1e-6):
            lo, hi = acct.epsilon_interval(delta)
            assert brute_delta(laws, float(hi)) <= delta <= brute_delta(laws, float(lo))
            assert hi - lo <= 1e-9 * hi
            assert float(acct.epsilon(delta)) == hi


def test_kary_randomized_response_composition_is_the_brute_force_law():
    """k-ary RR under add/remove (asymmetric) with binary RR: both directions."""
    P1, Q1 = kary_rr_distributions(0.4, 5, Neighbouring.ADD_REMOVE)
    uses = [(P1, Q1)] * 3 + [(np.array([0.7, 0.3]), np.array([0.3, 0.7]))] * 2
    with mp.workdps(DPS):
        laws = []
        for outs in itertools.product(*(range(len(p)) for p, _ in uses)):
            P = Q = mp.mpf(1)
            for o, (p, q) in zip(outs, uses):
                P *= mp.mpf(float(p[o]))
                Q *= mp.mpf(float(q[o]))
            laws.append((P, Q))
        acct = job((ac.mechanism("kary_randomized_response", r=0.4, k=5,
                                 neighbouring="add_remove"), 3), (rr(0.7), 2))
        assert acct.closed_pair() is not None
        for eps in (0.0, 1.0, 3.0):
            lo, hi = acct.delta_interval(eps)
            assert lo <= brute_delta(laws, eps) <= hi
        for delta in (1e-2, 1e-3):
            lo, hi = acct.epsilon_interval(delta)
            assert brute_delta(laws, float(hi)) <= delta <= brute_delta(laws, float(lo))


def test_a_law_too_fine_for_floats_keeps_its_largest_loss():
    """RR(p = 0.9) × 10⁴ ⊗ RR(0.6) × 3: the top mass 0.9^{10⁴} ≈ 1e-458 underflows; it
    is merged upwards, never dropped: ε(0) is the exact sum, the law dominates."""
    k, m = 10_000, 3
    e0, e1 = math.log(0.9 / 0.1), math.log(0.6 / 0.4)
    acct = job((rr(0.9), k), (rr(0.6), m))
    top = float(Fraction(e0) * k + Fraction(e1) * m)
    assert acct.epsilon_interval(0.0) == (top, top)
    law = acct.closed_pair().upper[0]
    assert law.max_loss == pytest.approx(top, rel=1e-12) and law.total_mass <= 1 + 1e-11
    with mp.workdps(DPS):
        # the exact δ at a loss where the atoms above carry ~1e-300 .. 1e-200
        j0 = 9_720

        def exact_delta(eps: float) -> mp.mpf:
            total = mp.mpf(0)
            for j in range(j0 - 40, k + 1):
                for i in range(m + 1):
                    loss = (2 * j - k) * mp.mpf(e0) + (2 * i - m) * mp.mpf(e1)
                    if loss > eps:
                        mass = (mp.binomial(k, j) * mp.mpf(0.9) ** j * mp.mpf(0.1) ** (k - j)
                                * mp.binomial(m, i) * mp.mpf(0.6) ** i * mp.mpf(0.4) ** (m - i))
                        total += mass * (1 - mp.e ** (eps - loss))
            return total
        eps = (2 * j0 - k) * e0
        truth = exact_delta(eps)
        assert 1e-300 < truth < 1e-150
        lo, hi = acct.delta_interval(eps)
        assert lo <= truth <= hi and float(hi) == pytest.approx(float(truth), rel=1e-9)


def test_law_from_log_masses_merges_upwards():
    losses = np.array([-3.0, -1.0, 0.5, 2.0, 4.0])
    logm = np.log(np.array([0.5, 0.5, 1e-320, 1e-300, 1e-310]).clip(1e-323)) \
        + np.array([0, 0, -500, -200, -400])
    law = law_from_log_masses(losses, logm)
    assert law.losses[-1] == 4.0 and law.masses[-1] > 0       # the top atom is kept
    assert law.losses.tolist() == [-3.0, -1.0, 4.0]
    dense = LossPMF(np.array([-1.0, 0.5, 2.0]), np.array([0.4, 0.3, 0.3]))
    # a sum of non-negative terms: accurate just below an atom, where S − e^ε U cancels
    e = 2.0 - 1e-9
    assert float(law_delta(dense, e)) == pytest.approx(0.3 * -math.expm1(e - 2.0), rel=1e-12)


# ------------------------------------------------------------- mixed jobs
E_LAP = 0.25


def gauss_delta(mu: mp.mpf, x: mp.mpf) -> mp.mpf:
    return mp.ncdf(-x / mu + mu / 2) - mp.e ** x * mp.ncdf(-x / mu - mu / 2)


def mixed_truth(mu: float, law: LossPMF, eps: float, laplace: bool) -> mp.mpf:
    """δ(ε) of G(μ) ⊗ law (⊗ Laplace(e)): Σᵢ pᵢ h(ε − lᵢ), h the δ of the Gaussian (with
    the Laplace loss: atoms e (½), −e (½e^{−e}) and density ¼e^{(l−e)/2} on (−e, e))."""
    mu, e = mp.mpf(mu), mp.mpf(E_LAP)

    def h(x: mp.mpf) -> mp.mpf:
        if not laplace:
            return gauss_delta(mu, x)
        return (gauss_delta(mu, x - e) / 2 + mp.e ** (-e) * gauss_delta(mu, x + e) / 2
                + mp.quad(lambda l: mp.e ** ((l - e) / 2) * gauss_delta(mu, x - l) / 4,
                          [-e, e]))
    return mp.fsum(mp.mpf(float(p)) * h(mp.mpf(eps) - mp.mpf(float(l)))
                   for l, p in zip(law.losses, law.masses))


def mixed_job(laplace: bool) -> ac.Accountant:
    acct = job((ac.mechanism("gaussian", sigma=5.0), 3), (ac.mechanism("gaussian", sigma=3.0), 2),
               (rr(0.6), 3), (rr(0.55), 2), step=1e-3)
    if laplace:
        acct.compose(ac.mechanism("laplace", b=1 / E_LAP), 1)
    return acct


def separate_bracket(acct: ac.Accountant, eps: float) -> tuple[float, float]:
    """What the grid gave before: each part discretised on its own (a closed n-fold
    product where the part has one), then composed."""
    parts = []
    for p, c in acct.pair().components:
        closed = p._self_compose(c) if c > 1 else None
        parts.append((closed.curve(PLD, step=acct.step), 1) if closed is not None
                     else (p.curve(PLD, step=acct.step), c))
    lo, hi = compose_plds(parts).delta_interval(eps)
    return float(lo), float(hi)


def test_gaussians_and_randomized_responses_are_combined_before_the_grid():
    acct = mixed_job(laplace=False)
    merged = acct.pair().merged_components()
    assert len(merged) == 2 and merged[0][0].gdp_mu() == pytest.approx(
        math.sqrt(3 / 25 + 2 / 9), rel=1e-15)
    assert acct.closed_pair() is None            # a Gaussian with a finite law: the grid
    mu = merged[0][0].gdp_mu()
    law = merged[1][0].upper[0]
    with mp.workdps(30):
        for eps in (0.5, 1.5, 3.0):
            truth = mixed_truth(mu, law, eps, laplace=False)
            lo, hi = acct.delta_interval(eps)
            assert lo <= truth <= hi
            blo, bhi = separate_bracket(acct, eps)
            assert blo <= truth <= bhi
            assert hi - lo <= (bhi - blo) * (1 + 1e-9)


def test_a_mixed_job_with_a_laplace_part_brackets_the_quadrature_truth():
    acct = mixed_job(laplace=True)
    merged = acct.pair().merged_components()
    assert len(merged) == 3
    mu, law = merged[0][0].gdp_mu(), merged[1][0].upper[0]
    with mp.workdps(20):
        for eps in (1.0, 2.5):
            truth = mixed_truth(mu, law, eps, laplace=True)
            lo, hi = acct.delta_interval(eps)
            assert lo <= truth <= hi
            blo, bhi = separate_bracket(acct, eps)
            assert hi - lo <= (bhi - blo) * (1 + 1e-9)
