"""PLD accountant benchmark: ours against dp_accounting and prv_accountant, one process.

Workloads:
  (a) DP-SGD: Poisson-subsampled Gaussian, q = 256/60000, σ = 1.1, 14062 steps, δ = 1e-5
  (b) q = 0.01, σ = 1.0, 1000 steps, δ = 1e-5
  (c) 100 distinct σ (0.8 … 2.0) × 1000 steps each at q = 0.01, δ = 1e-5
  (d) δ at 1000 values of ε for workload (a)
  (e) small δ (1e-5 … 1e-15) for workload (a): our certified bracket, dp_accounting at
      grids 1e-3 and 1e-4, prv_accountant, and RDP (improved conversion)
  (f) heterogeneous: 20 and 100 distinct σ (0.8 … 2.0) × 1000 steps at q = 0.01,
      ours at step 1e-3 and the default against dp_accounting at grid 1e-3 (interval
      and upper-only speed-ups), and dp_accounting's own discretised laws composed
      exactly (certified by our engine) beside its answer; (f') DP-SGD's interval at
      step 1e-3 against theirs
  (g) the RDP accountant for workload (a): ours, dp_accounting's, a compiled one
  (h) tiny δ (1e-5 … 1e-30): our certified bracket, its width and time, for
      DP-SGD (q = 0.01, σ = 1, 1000 steps; σ = 0.8, 10⁴ steps) and a mixed job, with
      dp_accounting's ε at grid 1e-4 and prv_accountant's (or the exception they raise)
  (i) one default step: ε of one DP-SGD run from the core, the command
      line, the training accountant and the Opacus bridge, with times; DP-SGD
      calibration to 1e-6 relative at the default step

Prints ε (with our certified interval), wall times, and our time / their time.
Run:  pip install -e ".[bench]" && python benchmarks/pld.py [--quick] [--only tiny|step]
The anchors are optional: a missing one is reported and skipped.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from timing import timed

import accounting as ac

try:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant
except ImportError:  # pragma: no cover - optional anchor
    dp_event = None
try:
    import prv_accountant
except ImportError:  # pragma: no cover - optional anchor
    prv_accountant = None


def ours_epsilon(workload, delta, step=None):
    acct = ac.Accountant() if step is None else ac.Accountant(step=step)
    for q, sigma, count in workload:
        acct.compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), count)
    return float(acct.epsilon(delta))


def ours_interval(workload, delta, step=None):
    acct = ac.Accountant() if step is None else ac.Accountant(step=step)
    for q, sigma, count in workload:
        acct.compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), count)
    lo, hi = acct.epsilon_interval(delta)
    return float(lo), float(hi)


def dpa_accountant(workload, grid):
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=grid)
    for q, sigma, count in workload:
        acc.compose(dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), count))
    return acc


def prv(workload, delta, eps_error=0.01):
    mechs = [prv_accountant.PoissonSubsampledGaussianMechanism(noise_multiplier=s, sampling_probability=q)
             for q, s, _ in workload]
    counts = [c for _, _, c in workload]
    acc = prv_accountant.PRVAccountant(prvs=mechs, max_self_compositions=counts,
                                       eps_error=eps_error, delta_error=delta / 1000)
    return acc, counts


def row(name, eps, seconds, ours_seconds=None):  # noqa: D103
    ratio = f"{ours_seconds / seconds:7.3f}" if ours_seconds is not None and seconds > 0 else "      -"
    e = eps if isinstance(eps, str) else f"{eps:.5f}"
    print(f"  {name:<44} {e:>26}  {seconds:9.3f} s   ours/theirs {ratio}", flush=True)


def epsilon_workload(label, workload, delta, repeat, prv_subset=None):
    print(f"\n{label}")
    e_up, t_up = timed(lambda: ours_epsilon(workload, delta), repeat)
    (lo, hi), t_iv = timed(lambda: ours_interval(workload, delta), repeat)
    row("ours: upper ε (default step)", e_up, t_up)
    row("ours: certified [lower, upper]", f"[{lo:.5f}, {hi:.5f}]", t_iv)
    print(f"  {'':<44} width {100 * (hi - lo) / hi:.3f}% of upper")
    if dp_event is not None:
        for grid in (1e-3, 1e-4):
            e, t = timed(lambda: dpa_accountant(workload, grid).get_epsilon(delta), repeat)
            row(f"dp_accounting PLD (connect-dots), grid {grid:g}", e, t, t_up)
    else:
        print("  dp_accounting not installed: skipped")
    if prv_accountant is not None:
        part = workload if prv_subset is None else workload[::len(workload) // prv_subset]
        scale = len(workload) / len(part)

        def run():
            acc, counts = prv(part, delta)
            return acc.compute_epsilon(delta=delta, num_self_compositions=counts)
        (e_lo, e_est, e_hi), t = timed(run, repeat)
        if prv_subset is None:
            row("prv_accountant (eps_error 0.01)", f"[{e_lo:.5f}, {e_hi:.5f}]", t, t_up)
        else:  # ~minutes per mechanism here: time a subset, scale linearly (an estimate)
            row(f"prv_accountant, {len(part)} of {len(workload)} mechanisms, time ×{scale:g}",
                f"ε(subset) {e_est:.4f}", scale * t, t_up)
    else:
        print("  prv_accountant not installed: skipped")


def delta_sweep(workload, repeat):
    print("\n(d) δ at 1000 values of ε, workload (a)")
    eps = np.linspace(0.5, 5.0, 1000)

    def ours():
        acct = ac.Accountant()
        for q, sigma, count in workload:
            acct.compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), count)
        return acct.delta(eps)
    d_ours, t_ours = timed(ours, repeat)
    row("ours: δ(ε) vectorised", f"δ(1.0) = {np.interp(1.0, eps, d_ours):.4e}", t_ours)
    if dp_event is not None:
        def dpa():
            acc = dpa_accountant(workload, 1e-4)
            return np.array([acc.get_delta(float(e)) for e in eps])
        d, t = timed(dpa)
        row("dp_accounting grid 1e-4, 1000 get_delta", f"δ(1.0) = {np.interp(1.0, eps, d):.4e}", t, t_ours)
    if prv_accountant is not None:
        few = eps[::20]  # 50 of the 1000: prv_accountant takes ~1 s per query here

        def prv_run():
            acc, counts = prv(workload, 1e-5)
            return np.array([acc.compute_delta(epsilon=float(e), num_self_compositions=counts)[1]
                             for e in few])
        d, t = timed(prv_run)
        row("prv_accountant, 50 compute_delta × 20 (est.)", f"δ(1.0) = {np.interp(1.0, few, d):.4e}",
            20 * t, t_ours)


def small_delta_table(workload, repeat):
    print("\n(e) small δ, workload (a): ε at each δ (one composition per accountant)")
    deltas = np.array([1e-5, 1e-7, 1e-9, 1e-10, 1e-12, 1e-15])

    def ours():
        acct = ac.Accountant()
        for q, sigma, count in workload:
            acct.compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), count)
        return acct.epsilon_interval(deltas), acct
    ((lo, hi), acct), t = timed(ours, repeat)
    rdp = acct.under("rdp").epsilon(deltas)
    cols = {"ours lower": lo, "ours upper": hi, "width %": 100 * (hi - lo) / hi, "RDP": rdp}
    times = {"ours (interval, all δ)": t}
    if dp_event is not None:
        for grid in (1e-3, 1e-4):
            acc, tg = timed(lambda: dpa_accountant(workload, grid), 1)
            vals = []
            t0 = time.perf_counter()
            for d in deltas:
                vals.append(acc.get_epsilon(float(d)))
            times[f"dp_accounting {grid:g}"] = tg + time.perf_counter() - t0
            cols[f"dpa {grid:g}"] = np.array(vals)
    if prv_accountant is not None:
        vals = []
        t0 = time.perf_counter()
        for d in deltas:
            try:
                acc, counts = prv(workload, float(d))
                vals.append(acc.compute_epsilon(delta=float(d), num_self_compositions=counts)[2])
            except Exception as exc:  # noqa: BLE001 - report the anchor's refusal
                print(f"  prv_accountant at δ={d:g}: {type(exc).__name__}: {exc}")
                vals.append(np.nan)
        times["prv_accountant (upper)"] = time.perf_counter() - t0
        cols["prv upper"] = np.array(vals)
    print("  " + f"{'δ':>8}" + "".join(f"{k:>14}" for k in cols))
    for i, d in enumerate(deltas):
        print("  " + f"{d:8.0e}" + "".join(f"{v[i]:14.5f}" for v in cols.values()))
    print("  upper ≤ RDP at every δ:", bool(np.all(hi <= rdp)))
    base = times["ours (interval, all δ)"]
    for k, v in list(times.items())[1:]:
        print(f"  ours/theirs time vs {k}: {base / v:.2f}")
    for k, v in times.items():
        print(f"  time {k:<30} {v:8.3f} s")


def heterogeneous(n_distinct, repeat):
    print(f"\n(f) {n_distinct} distinct σ × 1000 steps at q = 0.01, δ = 1e-5")
    work = [(0.01, float(s), 1000) for s in np.linspace(0.8, 2.0, n_distinct)]
    res = {}
    for step in (1e-3, None):
        (lo, hi), t = timed(lambda: ours_interval(work, 1e-5, step), repeat)
        label = f"ours: certified [lower, upper], step {step or 'default'}"
        row(label, f"[{lo:.5f}, {hi:.5f}]", t)
        res[step] = (hi, t)
    e_up, t_up = timed(lambda: ours_epsilon(work, 1e-5, 1e-3), repeat)
    row("ours: upper ε only, step 0.001", e_up, t_up)
    if dp_event is not None:
        e, t = timed(lambda: dpa_accountant(work, 1e-3).get_epsilon(1e-5), 1)
        row("dp_accounting PLD, grid 0.001", e, t, res[1e-3][1])
        rel = (e_up - e) / e
        print(f"  speed-up at grid 1e-3: interval {t / res[1e-3][1]:.2f}×, upper only "
              f"{t / t_up:.2f}×; our upper − theirs: {e_up - e:+.2e} ({rel:+.1e} relative)")
        exact = dpa_laws_composed_exactly(work, 1e-3, 1e-5)
        if exact is not None:
            lo, hi = exact
            print(f"  dp_accounting's own laws composed exactly (certified): ε in [{lo:.10f}, "
                  f"{hi:.10f}]; it reports {e:.10f} "
                  f"({'below' if e < lo else 'above' if e > hi else 'inside'} that), "
                  f"ours {e_up:.10f} ({'≤ the upper end' if e_up <= hi else 'ABOVE'})")
        # as tight: ours no higher than the exact composition of their own laws can be
        tight = e_up <= e or (exact is not None and e_up <= exact[1])
        print(f"  our upper ε is {'at most' if tight else 'above'} theirs (or the exact "
              f"composition of their laws)")


def dpa_laws_composed_exactly(work, grid, delta):
    """ε(δ) of dp_accounting's own discretised laws (its connect-the-dots PMFs at
    ``grid``) composed exactly, certified by our engine: (lower, upper), max over its
    remove and add directions. Their accountant's answer below the lower end means its
    composition (tail truncation, unbounded FFT roundoff) under-reports ε for its own
    laws. Reads dp_accounting's PMF internals: None if they have moved."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    from accounting.numerics.fourier import RefiningLaw
    out = []
    try:
        plds = [pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, use_connect_dots=True,
                                               value_discretization_interval=grid)
                for q, sigma, _ in work]
        for which in ("_pmf_remove", "_pmf_add"):
            items = []
            for pld, (_, _, count) in zip(plds, work):
                pmf = getattr(pld, which)
                pmf = pmf.to_dense_pmf() if hasattr(pmf, "to_dense_pmf") else pmf
                law = ac.LossPMF.on_grid(grid, pmf._lower_loss, np.clip(pmf._probs, 0.0, None),
                                         min(pmf._infinity_mass, 1.0))
                items.append((law, count))
            out.append([float(RefiningLaw(items, pessimistic=p).epsilon(delta))
                        for p in (False, True)])
    except AttributeError:   # pragma: no cover - the anchor's internals moved
        return None
    return max(out[0][0], out[1][0]), max(out[0][1], out[1][1])


def dpsgd_interval_speed(repeat):
    """The certified interval for DP-SGD at step 1e-3 against dp_accounting's single
    number at grid 1e-3."""
    print("\n(f') DP-SGD (workload (a)) at step 1e-3: our interval vs dp_accounting's ε")
    work = [(256 / 60000, 1.1, 14062)]
    (lo, hi), t_iv = timed(lambda: ours_interval(work, 1e-5, 1e-3), repeat)
    row("ours: certified [lower, upper], step 0.001", f"[{lo:.5f}, {hi:.5f}]", t_iv)
    e_up, t_up = timed(lambda: ours_epsilon(work, 1e-5, 1e-3), repeat)
    row("ours: upper ε only, step 0.001", e_up, t_up)
    if dp_event is not None:
        e, t = timed(lambda: dpa_accountant(work, 1e-3).get_epsilon(1e-5), repeat)
        row("dp_accounting PLD, grid 0.001", e, t, t_iv)
        print(f"  speed-up at grid 1e-3: interval {t / t_iv:.2f}×, upper only {t / t_up:.2f}×")


def rdp_timing(repeat):
    """The RDP route (benchmarks/rdp.py's functions) for DP-SGD, in this run."""
    print("\n(g) RDP accountant, workload (a), δ = 1e-5")
    import rdp as rdp_bench
    q, sigma, steps, delta = 256 / 60000, 1.1, 14062, 1e-5
    e_ours, t_ours = timed(lambda: rdp_bench.ours(q, sigma, steps, delta), repeat)
    row("ours: RDP (continuous α, improved conversion)", e_ours, t_ours)
    if dp_event is not None:
        e, t = timed(lambda: rdp_bench.theirs(q, sigma, steps, delta), repeat)
        row("dp_accounting RdpAccountant", e, t, t_ours)
        print(f"  ε ours ≤ theirs: {e_ours <= e * (1 + 1e-12)}")
    e_c, t_c = timed(lambda: rdp_bench.compiled(q, sigma, steps, delta), repeat)
    if e_c is not None:
        row("compiled RDP (dp_accelerator)", e_c, t_c, t_ours)
    else:
        print("  compiled RDP accountant (dp_accelerator) not installed: skipped")


#: jobs of the tiny-δ table (h): (label, [(kind, params, count)]); "sg" is the
#: Poisson-subsampled Gaussian (q, σ), "laplace" (b), "gaussian" (σ), sensitivity 1
TINY_JOBS = [
    ("DP-SGD q=0.01, σ=1, 1000 steps", [("sg", (0.01, 1.0), 1000)]),
    ("DP-SGD q=0.01, σ=0.8, 10⁴ steps", [("sg", (0.01, 0.8), 10000)]),
    ("mixed: DP-SGD (q=0.01, σ=1) × 1000 + Laplace(b=20) × 10 + Gaussian(σ=5) × 5",
     [("sg", (0.01, 1.0), 1000), ("laplace", (20.0,), 10), ("gaussian", (5.0,), 5)]),
]
TINY_DELTAS = [1e-5, 1e-10, 1e-15, 1e-20, 1e-25, 1e-30]


def _job_accountant(job):
    acct = ac.Accountant()
    for kind, par, count in job:
        if kind == "sg":
            m = ac.mechanism("subsampled_gaussian", q=par[0], sigma=par[1])
        elif kind == "laplace":
            m = ac.mechanism("laplace", b=par[0])
        else:
            m = ac.mechanism("gaussian", sigma=par[0])
        acct.compose(m, count)
    return acct


def _dpa_job(job, grid):
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=grid)
    for kind, par, count in job:
        if kind == "sg":
            ev = dp_event.PoissonSampledDpEvent(par[0], dp_event.GaussianDpEvent(par[1]))
        elif kind == "laplace":
            ev = dp_event.LaplaceDpEvent(par[0])
        else:
            ev = dp_event.GaussianDpEvent(par[0])
        acc.compose(dp_event.SelfComposedDpEvent(ev, count))
    return acc


def _prv_job(job, delta):
    mechs, counts = [], []
    for kind, par, count in job:
        if kind == "sg":
            mechs.append(prv_accountant.PoissonSubsampledGaussianMechanism(
                noise_multiplier=par[1], sampling_probability=par[0]))
        elif kind == "laplace":
            mechs.append(prv_accountant.LaplaceMechanism(mu=1.0 / par[0]))
        else:
            mechs.append(prv_accountant.GaussianMechanism(noise_multiplier=par[0]))
        counts.append(count)
    acc = prv_accountant.PRVAccountant(prvs=mechs, max_self_compositions=counts,
                                       eps_error=0.01, delta_error=delta / 1000)
    return acc.compute_epsilon(delta=delta, num_self_compositions=counts)[2]


def tiny_delta_table():
    """(h) Certified brackets down to δ = 1e-30: below ``DEEP_BELOW`` the
    accountant answers from its deep tier (1e-40 of tail cut in all; the tilted
    composition resolves the far tail), automatically. Each δ on a fresh accountant
    (the time includes discretisation and composition); dp_accounting at grid 1e-4
    and prv_accountant (eps_error 0.01) print what they give, or the exception."""
    from accounting.curves.pld import DEEP_BELOW
    print(f"\n(h) tiny δ: certified [lower, upper] (deep tier below δ = {DEEP_BELOW:g})")
    for label, job in TINY_JOBS:
        print(f"  {label}")
        print(f"  {'δ':>8} {'ours lower':>12} {'ours upper':>12} {'width %':>9} {'time s':>7}"
              f" {'dpa 1e-4':>12} {'prv upper':>22}")
        worst = 0.0
        dpa = None
        if dp_event is not None:     # one composition, queried at every δ
            dpa = _dpa_job(job, 1e-4)
        for d in TINY_DELTAS:
            (lo, hi), t = timed(lambda: _job_accountant(job).epsilon_interval(d), 1)
            lo, hi = float(lo), float(hi)
            worst = max(worst, (hi - lo) / hi)
            theirs = prv_text = "not installed"
            if dpa is not None:
                try:
                    theirs = f"{dpa.get_epsilon(d):.5f}"
                except Exception as exc:  # noqa: BLE001 - report the anchor's refusal
                    theirs = type(exc).__name__
            if prv_accountant is not None:
                try:
                    prv_text = f"{_prv_job(job, d):.5f}"
                except Exception as exc:  # noqa: BLE001 - report the anchor's refusal
                    prv_text = type(exc).__name__
            print(f"  {d:8.0e} {lo:12.6f} {hi:12.6f} {100 * (hi - lo) / hi:9.5f} {t:7.2f}"
                  f" {theirs:>12} {prv_text:>22}", flush=True)
        print(f"  widest bracket {100 * worst:.5f}% of the upper end")


def one_default_step():
    """(i) One run, one ε: the core, the command line, the training
    accountant and the Opacus bridge at their default step, with times, and the
    bridges' former step 1e-3 beside them (time: fresh objects, composition
    included). Then DP-SGD calibration (σ to 1e-6 relative) at the default step."""
    import contextlib
    import io
    import json

    from accounting.cli import main as cli_main
    from accounting.curves.pld import DEFAULT_STEP
    from accounting_bridges.training import TrainingAccountant
    from accounting_mechanisms.dpsgd import calibrate_dpsgd
    print(f"\n(i) one default step ({DEFAULT_STEP:g}) for every entry point, δ = 1e-5")
    runs = [(0.01, 1.0, 1000), (0.004, 0.8, 10000), (0.1, 1.0, 20)]
    try:
        from accounting_bridges.opacus import OpacusAccountant
    except ImportError:
        OpacusAccountant = None
        print("  opacus not installed: the Opacus bridge is skipped (it is the training "
              "accountant made an IAccountant)")
    for q, sigma, steps in runs:
        print(f"  q={q:g}, σ={sigma:g}, {steps} steps")

        def core(step=DEFAULT_STEP):
            acct = ac.Accountant(step=step).compose(
                ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), steps)
            return float(acct.epsilon(1e-5))

        def cli():
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                cli_main(["epsilon", "subsampled_gaussian", "--q", str(q), "--sigma",
                          str(sigma), "--compose", str(steps), "--delta", "1e-5",
                          "--accountant", "pld", "--json"])
            return json.loads(buf.getvalue())["results"]["pld"]["epsilon"][0]

        def training(cls=TrainingAccountant, step=None):
            acc = cls() if step is None else cls(grid_step=step)
            acc.history = [(sigma, q, steps)]
            return acc.get_epsilon(1e-5)
        values = {}
        for name, fn in [("core Accountant", core), ("command line", cli),
                         ("training accountant", training)] + (
                [("Opacus bridge", lambda: training(OpacusAccountant))]
                if OpacusAccountant is not None else []):
            values[name], t = timed(fn, 3)
            print(f"    {name + ', default step':<44} {values[name]:.6f}  {t:7.3f} s (best of 3)")
        e_old, t_old = timed(lambda: training(step=1e-3), 3)
        print(f"    {'training accountant, former step 1e-3':<44} {e_old:.6f}  {t_old:7.3f} s")
        same = len(set(values.values())) == 1
        base = values["core Accountant"]
        print(f"  one ε for the run: {'yes' if same else 'NO'}; step 1e-3 gave "
              f"{100 * (e_old - base) / base:+.3f}%")
    print("  calibration: DP-SGD σ to a relative 1e-6 at the default step, δ = 1e-5 "
          "(best of 3; a coarse search on a 5× coarser grid, then the secant)")
    for q, steps, eps in [(256 / 60000, 10000, 1.0), (0.01, 1000, 3.0), (0.001, 100000, 2.0)]:
        res, t = timed(lambda: calibrate_dpsgd(q, steps, epsilon=eps, delta=1e-5, rtol=1e-6), 3)
        print(f"    q={q:.5g}, {steps} steps, ε = {eps:g}: σ = {res.value:.8f} in {t:.3f} s, "
              f"{res.evaluations} evaluations at the default step")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip workload (c), the slow one for the anchors")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs for the fast cases")
    ap.add_argument("--only", choices=["tiny", "step"], default=None,
                    help="run only the tiny-δ table (h) or the one-default-step section (i)")
    args = ap.parse_args()
    if args.only == "tiny":
        return tiny_delta_table()
    if args.only == "step":
        return one_default_step()
    dpsgd = [(256 / 60000, 1.1, 14062)]
    epsilon_workload("(a) DP-SGD q=256/60000, σ=1.1, 14062 steps, δ=1e-5", dpsgd, 1e-5, args.repeat)
    epsilon_workload("(b) q=0.01, σ=1.0, 1000 steps, δ=1e-5", [(0.01, 1.0, 1000)], 1e-5, args.repeat)
    if not args.quick:
        hetero = [(0.01, float(s), 1000) for s in np.linspace(0.8, 2.0, 100)]
        epsilon_workload("(c) 100 distinct σ × 1000 steps at q=0.01, δ=1e-5", hetero, 1e-5, 1,
                         prv_subset=5)
    delta_sweep(dpsgd, args.repeat)
    small_delta_table(dpsgd, 1)
    heterogeneous(20, 1)
    if not args.quick:
        heterogeneous(100, 1)
    dpsgd_interval_speed(args.repeat)
    rdp_timing(args.repeat)
    tiny_delta_table()
    one_default_step()


if __name__ == "__main__":
    main()
