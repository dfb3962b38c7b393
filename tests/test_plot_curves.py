"""The curve plots (``accounting.plot``) draw the curves' own numbers.

Each test reads the data back from the Axes and compares it with the curve's values
or a closed form: the Gaussian's trade-off β = Φ(Φ⁻¹(1 − α) − μ) and zCDP ρ = 1/(2σ²)
(Dong, Roth, Su, arXiv:1905.02383, §2; Bun, Steinke, arXiv:1605.02065, Prop. 1.6).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import accounting as ac

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accounting import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def gauss10():
    return ac.Accountant().compose(ac.mechanism("gaussian", sigma=2.0), count=10)


def _line(ax, prefix):
    [line] = [ln for ln in ax.get_lines() if ln.get_label().startswith(prefix)]
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def test_tradeoff_plot_draws_beta_and_the_eps_delta_lines_below_it(gauss10):
    trade = gauss10.tradeoff()
    ax = plot.plot_tradeoff(trade, label="G", epsilons=[1.0, 3.0])
    x, y = _line(ax, "G, upper")
    np.testing.assert_array_equal(y, trade.beta(x))
    mu = np.sqrt(10) / 2.0                     # 10 Gaussians of σ = 2: μ = √10/σ
    exact = stats.norm.cdf(stats.norm.ppf(1 - x) - mu)
    assert np.all(y <= exact + 1e-12) and np.max(exact - y) < 5e-3
    for eps in (1.0, 3.0):
        dl = float(gauss10.curve(ac.PrivacyProfile).delta(eps))
        lx, ly = _line(ax, f"(ε, δ) = ({eps:.3g}")
        np.testing.assert_allclose(ly, np.maximum.reduce(
            [0 * lx, 1 - dl - np.exp(eps) * lx, np.exp(-eps) * (1 - dl - lx)]))
        assert np.all(ly <= exact + 1e-9)      # an (ε, δ) line never crosses T from above


def test_profile_plot_draws_delta_on_both_sides(gauss10):
    pld = gauss10.curve(ac.PLD)
    eps = np.linspace(0, 8, 50)
    ax = plot.plot_profile(pld, epsilons=eps, label="G")
    x, up = _line(ax, "G, upper")
    _, lo = _line(ax, "G, lower")
    np.testing.assert_array_equal(up, np.maximum(pld.delta(eps), 1e-300))
    assert np.all(lo <= up) and ax.get_yscale() == "log"


def test_pld_plot_draws_the_laws_masses():
    pld = ac.Accountant(step=1e-2).compose(ac.mechanism("laplace", b=1.0), count=3).curve(ac.PLD)
    ax = plot.plot_pld(pld, label="L")
    x, y = _line(ax, "L, upper")
    law = pld.law("forward", "upper")
    keep = law.masses > 0
    np.testing.assert_array_equal(x, law.losses[keep])
    np.testing.assert_array_equal(y, law.masses[keep])
    assert "mass at +∞ 0" in ax.get_lines()[0].get_label()
    with pytest.raises(ValueError, match="forward.*backward"):
        plot.plot_pld(pld, direction="max")


def test_rdp_plot_draws_the_gaussian_line_and_its_envelope():
    sigma = 1.5
    rdp = ac.mechanism("gaussian", sigma=sigma).curve(ac.RDP)
    ax = plot.plot_rdp(rdp, label="G", alphas=np.linspace(1.5, 30, 40))
    x, y = _line(ax, "G")
    np.testing.assert_allclose(y, x / (2 * sigma ** 2), rtol=1e-9)
    ex, ey = _line(ax, "zCDP envelope")
    np.testing.assert_allclose(ey, ex / (2 * sigma ** 2), rtol=1e-6)


def test_accountants_plot_compares_methods_on_one_axes():
    accts = {f"σ={s}": ac.Accountant().compose(ac.mechanism("gaussian", sigma=s), count=4)
             for s in (1.0, 2.0)}
    deltas = np.geomspace(1e-9, 1e-3, 7)
    ax = plot.plot_accountants(accts, deltas=deltas, methods=("pld", "rdp"))
    for name, acct in accts.items():
        _, hi = _line(ax, f"{name}, pld")
        _, r = _line(ax, f"{name}, rdp")
        np.testing.assert_array_equal(hi, acct.epsilon_interval(deltas)[1])
        np.testing.assert_array_equal(r, acct.under("rdp").epsilon(deltas))
        assert np.all(hi <= r + 1e-9)          # the PLD is tighter than RDP
    with pytest.raises(TypeError, match="accountants"):
        plot.plot_accountants({})
    with pytest.raises(TypeError, match=r"accountants\['x'\]"):
        plot.plot_accountants({"x": 3})


def test_a_plot_refuses_what_is_not_a_curve_and_saves_a_png(tmp_path, gauss10):
    with pytest.raises(TypeError, match="privacy curve"):
        plot.plot_profile([1, 2, 3])
    path = tmp_path / "t.png"
    plot.save(plot.plot_profile(gauss10.curve(ac.PLD)), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_accountants_plot_leaves_out_a_method_far_above_the_pld_and_says_so():
    """DP-SGD's zCDP ε is thousands of times its PLD ε (the zCDP of a subsampled
    Gaussian is its worst-order bound): drawn, it would flatten the others."""
    mech = ac.mechanism("subsampled_gaussian", q=0.004266, sigma=1.1)
    acct = ac.Accountant().compose(mech, count=2000)
    deltas = np.geomspace(1e-8, 1e-5, 4)
    ax = plot.plot_accountants(acct, deltas=deltas, methods=("pld", "rdp", "zcdp"))
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert "zcdp" not in labels           # (the line's label would be the bare method)
    [note] = [lb for lb in labels if "not drawn" in lb]
    ratio = acct.under("zcdp").epsilon(deltas) / acct.epsilon_interval(deltas)[1]
    assert note == f"zcdp not drawn: ε ≥ {ratio.min():.0f}× the PLD's"
    assert ratio.min() > plot.USELESS_FACTOR
    _, r = _line(ax, "rdp")          # RDP stays: within a few times the PLD
    np.testing.assert_array_equal(r, acct.under("rdp").epsilon(deltas))
    lo, hi = acct.epsilon_interval(deltas)
    [pld_label] = [lb for lb in labels if lb.startswith("pld")]
    assert f"bracket ≤ {np.max((hi - lo) / hi):.2%}" in pld_label


def test_a_log_scaled_accountants_plot_labels_only_one_two_and_five():
    """Labels at 1, 2, 5 of each decade: the minor labels at 3, 4, 6, … overlapped."""
    accts = {f"σ={s}": ac.Accountant().compose(ac.mechanism("gaussian", sigma=s), count=4)
             for s in (0.5, 40.0)}
    ax = plot.plot_accountants(accts, deltas=np.geomspace(1e-9, 1e-3, 7), methods=("pld",))
    assert ax.get_yscale() == "log"
    ax.figure.canvas.draw()
    shown = [t.get_text() for t in ax.yaxis.get_ticklabels(which="both") if t.get_text()]
    assert shown
    mantissas = {f"{float(t.replace('−', '-')):.0e}"[0] for t in shown}
    assert mantissas <= {"1", "2", "5"}


def test_roc_plot_is_log_log_and_marks_the_queried_fprs(gauss10):
    """TPR ≤ 1 − T(α) = Φ(Φ⁻¹(α) + μ) for μ-GDP (Dong, Roth, Su, §2), μ = √10/2."""
    fprs = np.array([1e-4, 1e-3, 1e-2])
    ax = plot.plot_roc(gauss10.tradeoff(), fprs=fprs, label="G")
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlim()[0] <= 1e-6
    x, y = _line(ax, "G, upper")
    mu = np.sqrt(10) / 2.0
    exact = stats.norm.cdf(stats.norm.ppf(x) + mu)
    assert np.all(y >= exact - 1e-9)                  # an upper bound on every attack
    np.testing.assert_allclose(y, exact, rtol=2e-3, atol=1e-9)
    qx, qy = _line(ax, "queried FPR")
    np.testing.assert_array_equal(qx, fprs)
    np.testing.assert_allclose(qy, stats.norm.cdf(stats.norm.ppf(fprs) + mu), rtol=2e-3)
    cx, cy = _line(ax, "chance")
    np.testing.assert_array_equal(cx, cy)
    with pytest.raises(ValueError, match="fprs"):
        plot.plot_roc(gauss10.tradeoff(), fprs=[0.0])
