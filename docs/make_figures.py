"""Draw the figures of docs/information-gap.md and docs/plots.md into docs/img/ (needs the
``plot`` extra).

    python docs/make_figures.py              # into docs/img/
    python docs/make_figures.py --out DIR    # elsewhere (tests/test_docs_figures.py)

Each figure is a PNG under 150 KB; the numbers come from ``accounting.analysis.gap``
and the curves. The PNGs carry no date or version metadata, so that the same
matplotlib draws the same bytes.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import accounting  # noqa: E402
from accounting.analysis.gap import calibrated_family, information_gap  # noqa: E402
from accounting.plot import (  # noqa: E402
    plot_accountants,
    plot_allocation,
    plot_gap,
    plot_gap_vs_parameter,
    plot_gap_vs_shift,
    plot_pld,
    plot_profile,
    plot_rdp,
    plot_roc,
    plot_tradeoff,
)

OUT = Path(__file__).resolve().parent / "img"
#: no creation date or software version in the files: regenerating changes nothing
METADATA = {"Software": None, "Creation Time": None}


def mixture(sigma: float, s: float = 1.0):
    return accounting.mechanism("gaussian_mixture", weights=(0.5, 0.5), means=(-sigma, sigma),
                                scales=(sigma, sigma), sensitivity=s)


def save(fig, name: str, out: Path = OUT) -> None:
    fig.tight_layout()
    path = out / name
    fig.savefig(path, dpi=110, metadata=METADATA)
    plt.close(fig)
    size = path.stat().st_size
    assert size < 150_000, f"{name} is {size} bytes"
    print(f"{path}: {size / 1024:.0f} KB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="directory (default docs/img)")
    parser.add_argument("--only", choices=("gap", "curves"), default=None,
                        help="draw one group of figures")
    ns = parser.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    if ns.only != "curves":
        gap_figures(ns.out)
    if ns.only != "gap":
        curve_figures(ns.out)


def gap_figures(out: Path) -> None:
    """The pictures of docs/information-gap.md."""
    t = np.geomspace(1e-2, 20.0, 60)

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    plot_gap(information_gap(accounting.mechanism("laplace", b=1.0), t), ax, label="Laplace b = 1")
    plot_gap(information_gap(mixture(1.0), t, "forward"), ax, label="mixture σ = 1")
    plot_gap(information_gap(accounting.mechanism("gaussian", sigma=1.2), t), ax,
             label="Gaussian σ = 1.2")
    ax.set_ylim(0, 12)
    save(fig, "gap-rdp-vs-zcdp.png", out)

    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    s = np.geomspace(1e-3, 1e-1, 9)
    for label, make, direction in (("Gaussian mixture", lambda x: mixture(1.0, x), "forward"),
                                   ("Laplace", lambda x: accounting.mechanism(
                                       "laplace", b=1.0, sensitivity=x), "max")):
        gaps = [float(information_gap(make(x), 1.0, direction, local=False).gap) for x in s]
        plot_gap_vs_shift(s, gaps, ax, label=label)
    ax.set_title("Γ(1) against the shift", fontsize="medium")
    save(fig, "gap-vs-shift.png", out)

    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    plot_gap_vs_parameter(lambda q: accounting.mechanism("subsampled_gaussian", q=q, sigma=1.0),
                          np.geomspace(1e-3, 1.0, 13), t=(1.0, 5.0, 20.0), ax=ax,
                          xlabel="sampling rate q (σ = 1)")
    save(fig, "gap-subsampled.png", out)

    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    laplace = calibrated_family(lambda b: accounting.mechanism("laplace", b=b), 1e-3, 1e3)
    plot_allocation({"Laplace": laplace,
                     "mixture": lambda rho: mixture(1.0 / math.sqrt(2.0 * rho))}, 0.5, 8, ax,
                    t=np.linspace(0.1, 3.0, 24))
    save(fig, "gap-allocation.png", out)


def curve_figures(out: Path) -> None:
    """The pictures of docs/plots.md: one per curve kind, and accountants compared."""
    gauss = accounting.Accountant().compose(accounting.mechanism("gaussian", sigma=2.0), count=10)
    save(plot_tradeoff(gauss.tradeoff(), label="10 × Gaussian σ=2").get_figure(),
         "curve-tradeoff.png", out)
    save(plot_profile(gauss.curve(accounting.PLD), label="10 × Gaussian σ=2").get_figure(),
         "curve-profile.png", out)
    laplace = accounting.Accountant(step=1e-2).compose(accounting.mechanism("laplace", b=1.0),
                                                       count=3)
    save(plot_pld(laplace.curve(accounting.PLD), label="3 × Laplace b=1").get_figure(),
         "curve-pld.png", out)
    save(plot_rdp(accounting.mechanism("laplace", b=1.0).curve(accounting.RDP),
                  label="Laplace b=1", alphas=np.geomspace(1.01, 20.0, 100)).get_figure(),
         "curve-rdp.png", out)

    def dpsgd(sigma: float):
        mech = accounting.mechanism("subsampled_gaussian", sigma=sigma, q=0.01)
        return accounting.Accountant().compose(mech, count=1000)
    save(plot_accountants({"σ=1": dpsgd(1.0), "σ=2": dpsgd(2.0)},
                          methods=("pld", "rdp", "zcdp")).get_figure(),
         "curve-accountants.png", out)
    fig, ax = plt.subplots(figsize=(5.0, 5.0))
    plot_roc(gauss.tradeoff(), ax, fprs=[1e-4, 1e-3, 1e-2], label="10 × Gaussian σ=2")
    save(fig, "curve-roc.png", out)


if __name__ == "__main__":
    main()
