"""What full adaptivity and groups cost: filters, the odometer and group privacy
against the non-adaptive accountant and exact answers.

Prints, for a fixed sequence of Gaussian steps (σ = 5 each) at a target (ε, δ) =
(2, 1e-5):

* how many steps the Rényi filter and the Gaussian DP filter admit, against the most
  that the non-adaptive accountant (PLD and RDP) allows on the same fixed sequence;
* the odometer's ε_t against the non-adaptive PLD ε of the same prefix (ratio ≥ 1);
* group privacy of randomized response (p = 0.75) at k = 2…5: each rule's ε(δ)
  against the exact ε of the brute-force pair at distance k (ratio ≥ 1).

Run: ``python benchmarks/adaptive.py`` (about a minute).
"""

from __future__ import annotations

import itertools

import numpy as np

import accounting
from accounting.adaptive import GaussianFilter, RDPFilter, RDPOdometer, group
from accounting.pairs.pair import discrete_pair

EPS, DELTA, SIGMA = 2.0, 1e-5, 5.0


def gaussian(sigma: float) -> accounting.Mechanism:
    return accounting.mechanism("gaussian", sigma=sigma)


def most_steps(query: str) -> int:
    """The largest n with ε(δ) ≤ EPS for n Gaussians, non-adaptively (``pld``/``rdp``)."""
    n = 1
    while True:
        acct = accounting.Accountant().compose(gaussian(SIGMA), n + 1)
        eps = acct.epsilon(DELTA) if query == "pld" else acct.under("rdp").epsilon(DELTA)
        if float(eps) > EPS:
            return n
        n += 1


def filters() -> None:
    rdp = RDPFilter.for_target(EPS, DELTA, plan=gaussian(SIGMA))
    while rdp.propose(gaussian(SIGMA)).admitted:
        pass
    # the μ whose GDP profile gives (EPS, DELTA): bisection on the filter's own profile
    lo, hi = 1e-3, 10.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(GaussianFilter(mid).epsilon(DELTA)) <= EPS else (lo, mid)
    gdp = GaussianFilter(lo)
    while gdp.propose(gaussian(SIGMA)).admitted:
        pass
    pld, rdp_n = most_steps("pld"), most_steps("rdp")
    print(f"Gaussian σ = {SIGMA:g}, target (ε, δ) = ({EPS:g}, {DELTA:g})")
    print(f"  Rényi filter admits {rdp.admitted:3d}  (order α = {rdp.orders[0]:g})")
    print(f"  GDP filter admits   {gdp.admitted:3d}  (μ = {lo:.4f})")
    print(f"  non-adaptive RDP    {rdp_n:3d}   non-adaptive PLD {pld:3d}")
    print(f"  ratio filter/PLD: Rényi {rdp.admitted / pld:.3f}, GDP {gdp.admitted / pld:.3f}")


def odometer() -> None:
    odo = RDPOdometer(DELTA)
    acct = accounting.Accountant()
    print(f"odometer, δ = {DELTA:g}: ε_t against the non-adaptive PLD ε of the prefix")
    for t, sigma in enumerate((3.0, 1.5, 4.0, 2.0, 2.0, 6.0, 5.0, 5.0), start=1):
        eps_t = odo.spend(gaussian(sigma))
        exact = float(acct.compose(gaussian(sigma)).epsilon(DELTA))
        print(f"  t = {t}: σ = {sigma:g}  ε_t = {eps_t:7.4f}  PLD {exact:7.4f}  "
              f"ratio {eps_t / exact:.3f}")


def rr_exact(p: float, k: int) -> accounting.PrivacyProfile:
    P, Q = [], []
    for y in itertools.product((0, 1), repeat=k):
        ones = sum(y)
        P.append(p ** ones * (1 - p) ** (k - ones))
        Q.append((1 - p) ** ones * p ** (k - ones))
    return discrete_pair(np.array(P), np.array(Q)).curve(accounting.PrivacyProfile)


def groups(delta: float = 1e-2) -> None:
    p = 0.75
    rr = accounting.mechanism("randomized_response", p=p)
    kinds = (accounting.PrivacyProfile, accounting.TradeOff, accounting.RDP, accounting.ZCDP)
    print(f"group privacy of randomized response p = {p:g}: ε(δ = {delta:g}) / exact")
    print("  k  exact    " + "  ".join(f"{k.__name__:>14}" for k in kinds))
    for k in (2, 3, 4, 5):
        exact = float(rr_exact(p, k).epsilon(delta))
        ratios = [float(group(rr.curve(kind), k).epsilon(delta)) / exact for kind in kinds]
        print(f"  {k}  {exact:7.4f}  " + "  ".join(f"{r:14.3f}" for r in ratios))
    sigma = 4.0
    exact_g = [float(gaussian(sigma / k).curve(accounting.PrivacyProfile).epsilon(1e-6))
               for k in (2, 4)]
    got = [float(group(gaussian(sigma), k).epsilon(1e-6)) for k in (2, 4)]
    print(f"  Gaussian σ = {sigma:g}, k = 2, 4: group/exact "
          f"{got[0] / exact_g[0]:.6f}, {got[1] / exact_g[1]:.6f} (exact: μ ↦ kμ)")


if __name__ == "__main__":
    filters()
    odometer()
    groups()
