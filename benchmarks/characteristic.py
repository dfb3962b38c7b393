"""The characteristic-function route against the direct PLD.

For a few jobs, the PLD recovered from φ (``characteristic→pld (inversion)``) and the
direct PLD (``compose_plds``) at the default step: wall time of each and their ratio,
the ε(δ) brackets, the inversion's floor (the rounding allowance it sends to +∞), and
the grid points of the inverted law. Run: ``python benchmarks/characteristic.py``.
The numbers are measurements of this machine, not claims in the library.
"""

from __future__ import annotations

import time

import accounting
from accounting.curves.characteristic import CharacteristicFunction
from accounting.curves.pld import PLD, compose_plds

DELTA = 1e-6


def _jobs() -> list[tuple[str, list[tuple[accounting.Mechanism, int]]]]:
    m = accounting.mechanism
    return [
        ("Gaussian σ=1", [(m("gaussian", sigma=1.0), 1)]),
        ("3×Gaussian σ=2 + 2×Laplace b=4",
         [(m("gaussian", sigma=2.0), 3), (m("laplace", b=4.0), 2)]),
        ("100×subsampled Gaussian q=0.01 σ=1", [(m("subsampled_gaussian", q=0.01, sigma=1.0), 100)]),
        ("Gaussian σ=2 + 3×subsampled q=0.05 + RR p=0.6",
         [(m("gaussian", sigma=2.0), 1), (m("subsampled_gaussian", q=0.05, sigma=1.0), 3),
          (m("randomized_response", p=0.6), 1)]),
    ]


def main() -> None:
    print(f"{'job':48s} {'t_phi/t_pld':>11s} {'eps bracket (phi)':>22s} "
          f"{'eps bracket (direct)':>22s} {'floor':>9s} {'points':>8s}")
    for label, parts in _jobs():
        t0 = time.perf_counter()
        phi = None
        for mech, count in parts:
            part = mech.curve(CharacteristicFunction) * count
            phi = part if phi is None else phi + part
        assert phi is not None
        inverted = phi.to(PLD)
        lo, up = inverted.epsilon_interval(DELTA)
        t1 = time.perf_counter()
        direct = compose_plds([(mech.curve(PLD), count) for mech, count in parts])
        dlo, dup = direct.epsilon_interval(DELTA)
        t2 = time.perf_counter()
        floor = inverted.law("forward").inf_mass
        points = inverted.law("forward").masses.size
        print(f"{label:48s} {(t1 - t0) / (t2 - t1):11.2f} "
              f"[{float(lo):.5f}, {float(up):.5f}]   [{float(dlo):.5f}, {float(dup):.5f}] "
              f"{floor:9.2e} {points:8d}")


if __name__ == "__main__":
    main()
