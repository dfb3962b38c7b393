"""The RKRD auditor: audit a privacy claim from samples, or from a black-box mechanism.

This is the object the plugin registers under the name "rkrd"; it implements the
auditor interface of ``accounting.registry.hookspecs.accounting_register_auditors``:

* ``audit_samples(x, y, *, epsilon, delta, seed=None, claim=None, **settings)`` with
  x ~ M(D), y ~ M(D′) of shape (n, d);
* ``audit_callable(fn, d0, d1, *, n, epsilon, delta, seed=None, claim=None, **settings)``
  with ``fn(dataset, rng)`` returning one output vector; n outputs on each dataset.

The claim is one (ε, δ) (``epsilon``, ``delta``) or a whole trade-off curve
(``claim``: a registered mechanism instance or a privacy curve; ``claims``). Both
return an ``AuditReport``. The decision combines two tests, each valid for every
mechanism that satisfies the claim:

* the split-sample witness test (``holdout``): a witness chosen among several
  families (``witnesses``) on the training part, Clopper–Pearson counts on the
  held-out part;
* for (ε, δ) claims, the finite-sample (α, λ₀, ε)-RKRDP test at λ₀ = δe^{−ε}
  (``threshold``, Bonferroni over the α ≥ 2) on the held-out part, with the kernel
  bandwidth chosen on the training part. Whether its threshold is finite depends only
  on (n, λ₀, α, level), never on the data: it is decided *before* any kernel matrix
  is built. When it is vacuous it is skipped and the witness test gets the whole
  level; otherwise the level is split in halves.

D̂ on all samples and the λ sweep are descriptive (D̂ is no estimate of ε); they are
computed only on request (``sweep=True``, or ``sweep=None`` for n <= ``AUTO_SWEEP_MAX``
per side), within ``memory_budget``. Everything else is linear in n.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.progress import progress
from accounting.validation import check_count, check_positive, check_probability

from .bootstrap import bootstrap_test
from .claims import EpsDeltaClaim, as_claim
from .estimator import check_alphas, check_lambdas, rkrd_sweep
from .experiments import PAPER_ALPHAS, PAPER_LAMBDAS
from .holdout import witness_test
from .kernel import KernelWarning, check_bandwidth, check_samples, real_array, typical_distance
from .lower_bound import split_samples, witness_bandwidth
from .report import AuditReport, RKRDPResult
from .resources import (
    DEFAULT_MEMORY_BUDGET,
    check_memory,
    kernel_bytes,
    thread_limit,
    threads_capped,
)
from .sequential import SEQUENTIAL_SETTINGS, SequentialReport, array_source, sequential_test
from .threshold import dp_lambda, rkrdp_threshold
from .witnesses import FAMILIES, candidates, check_families

__all__ = ["RKRDAuditor", "MechanismError", "audit_samples", "audit_callable",
           "AUTO_SWEEP_MAX"]

#: the descriptive sweep is computed by default up to this many samples per side
AUTO_SWEEP_MAX = 1000
#: pairs a sequential audit of a callable may draw by default
DEFAULT_SEQUENTIAL_MAX = 20_000


class MechanismError(ValueError):
    """The audited mechanism ``fn`` raised: the error is in the user's code.

    The message names the exception type, its message, the dataset and the draw; the
    original exception is ``original`` (and ``__cause__``). ``SystemExit`` raised by
    ``fn`` is reported the same way (it must not end the audit silently).
    """

    def __init__(self, message: str, original: BaseException) -> None:
        super().__init__(message)
        self.original = original


class _Progress:
    """``rkrd: …`` lines on stderr: one per stage, and about every tenth of a loop."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def stage(self, what: str) -> None:
        if self.enabled:
            print(f"rkrd: [{time.perf_counter() - self.t0:6.1f} s] {what}", file=sys.stderr,
                  flush=True)

    def loop(self, what: str) -> Callable[[int, int], None] | None:
        """``report(k, total)`` for a loop: the library's progress bar on stderr (tqdm
        when installed, else ``rkrd: what: k/total done, … left`` lines)."""
        if not self.enabled:
            return None
        bar: Any = None

        def report(k: int, total: int) -> None:
            nonlocal bar
            if bar is None:
                bar = progress(total=total, desc=f"rkrd: {what}", enabled=True, delay=0.0)
            bar.update(k - bar.n)
            if k >= total:
                bar.close()
        return report


@attrs.frozen
class RKRDAuditor:
    """Settings of the audit; each can be overridden per call as a keyword.

    * ``witnesses``: the witness families to choose from (``witnesses.FAMILIES``);
    * ``n_thresholds``, ``train_fraction``: T thresholds of an (ε, δ) claim's witness
      test and the training fraction of the split;
    * ``kernel_points``: at most this many training points per side for kernel witnesses;
    * ``level``: probability of rejecting a true claim (split as described above);
    * ``alphas``: Rényi orders of the statistics and of the RKRDP test (α >= 2 tested);
    * ``bandwidth``: RBF bandwidth h of the kernel statistics and the base of the kernel
      witnesses' bandwidth grid, or None for the median heuristic (of the training part
      for witnesses);
    * ``rkrdp``: None runs the RKRDP test when it is not vacuous; False never; True
      also computes the held-out D̂ when it is vacuous (it then cannot reject);
    * ``lambdas``, ``sweep``: λ grid of the descriptive sweep; ``sweep`` True computes
      it and D̂ on all samples (n × n, seconds at n = 600), None only for
      n <= AUTO_SWEEP_MAX per side, False (default) never;
    * ``reference``, ``shift``, ``n_boot``: a claimed registered mechanism, the query
      difference f(D) − f(D′) and the replicate count of the parametric bootstrap;
    * ``memory_budget``: bytes allowed for dense n × n matrices (default 2 GiB);
    * ``threads``: BLAS threads inside the audit (None: no cap; needs threadpoolctl);
    * ``progress``: print progress to stderr.
    """

    name = "rkrd"

    alphas: tuple[float, ...] = PAPER_ALPHAS
    level: float = 0.05
    bandwidth: float | None = None
    n_thresholds: int = 2
    train_fraction: float = 1.0 / 3.0
    witnesses: tuple[str, ...] = FAMILIES
    kernel_points: int = 1500
    rkrdp: bool | None = None
    lambdas: tuple[float, ...] = PAPER_LAMBDAS
    sweep: bool | None = False
    reference: Any = None
    shift: Any = None
    n_boot: int = 99
    memory_budget: float = DEFAULT_MEMORY_BUDGET
    threads: int | None = 1
    progress: bool = False

    def configure(self, **settings: Any) -> RKRDAuditor:
        """A copy with some settings changed; an unknown name is a TypeError."""
        known = {a.name for a in attrs.fields(type(self))}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(f"unknown audit setting(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(known))}")
        return attrs.evolve(self, **settings)

    @staticmethod
    def report_from_dict(data: Any) -> AuditReport:
        """A report saved by ``accounting.save`` (``AuditReport.from_dict``)."""
        return AuditReport.from_dict(data)

    # ------------------------------------------------------------------ samples
    def audit_samples(self, x: Any, y: Any, *, epsilon: float | None = None,
                      delta: float | None = None, seed: int | None = None,
                      claim: Any = None, **settings: Any) -> AuditReport:
        """Audit the claim — (``epsilon``, ``delta``)-DP, or the trade-off curve
        ``claim`` — from x ~ M(D) and y ~ M(D′), shape (n, d)."""
        if settings:
            return self.configure(**settings).audit_samples(
                x, y, epsilon=epsilon, delta=delta, seed=seed, claim=claim)
        with thread_limit(self._threads()):
            return self._audit(x, y, epsilon, delta, seed, claim)

    def _threads(self) -> int | None:
        return None if self.threads is None else check_count("threads", self.threads)

    def _audit(self, x: Any, y: Any, epsilon: float | None, delta: float | None,
               seed: int | None, claim_in: Any) -> AuditReport:
        t0 = time.perf_counter()
        prog = _Progress(bool(self.progress))
        x, y = check_samples(x, y)
        claim = as_claim(claim_in, epsilon, delta)
        eps_claim = isinstance(claim, EpsDeltaClaim)
        level = check_probability("level", self.level)
        alphas = check_alphas(self.alphas)
        lambdas = check_lambdas(self.lambdas)
        families = check_families(self.witnesses)
        t = check_count("n_thresholds", self.n_thresholds)
        kernel_points = check_count("kernel_points", self.kernel_points, minimum=4)
        budget = check_positive("memory_budget", self.memory_budget)
        bandwidth = None if self.bandwidth is None else check_positive("bandwidth",
                                                                       self.bandwidth)
        for name in ("rkrdp", "sweep"):
            if not (getattr(self, name) is None or isinstance(getattr(self, name), bool)):
                raise TypeError(f"{name} must be None, True or False, got "
                                f"{getattr(self, name)!r}")
        seed = _seed(seed)
        _, split_ss, boot_ss, witness_ss = np.random.SeedSequence(seed).spawn(4)
        n_p, n_q, d = x.shape[0], y.shape[0], x.shape[1]
        # λ₀ = δe^{−ε} of an (ε, δ) claim (None for a curve claim: λ₀ is None iff not eps_claim)
        point = claim if isinstance(claim, EpsDeltaClaim) else None
        lam0 = None if point is None else dp_lambda(point.epsilon, point.delta)

        # ---- plan: everything below is decided from sizes and settings, not data
        split_seed = int(split_ss.generate_state(1)[0])
        xa, xb, ya, yb = split_samples(x, y, train_fraction=self.train_fraction,
                                       seed=split_seed)
        m_p, m_q = xb.shape[0], yb.shape[0]
        tested = alphas >= 2.0
        k = int(np.count_nonzero(tested))
        thresholds: tuple[float, ...] = ()
        rkrdp_status = "not applicable (the claim is a curve, not one (ε, δ))"
        run_rkrdp = False
        if point is not None and lam0 is not None and self.rkrdp is not False:
            if k == 0:
                rkrdp_status = "not run: no α >= 2 in alphas"
            elif not lam0 > 0.0:
                # δe^{−ε} underflows to 0: η → ∞ as λ → 0, no finite threshold exists
                thresholds = tuple(math.inf for _ in alphas)
                rkrdp_status = ("vacuous: λ₀ = δe^{−ε} underflows to 0 at this ε; skipped")
            else:
                thresholds = tuple(
                    rkrdp_threshold(point.epsilon, a, lam0, m_p, m_q,
                                    level / (2.0 * k)).value if ok else math.inf
                    for a, ok in zip(alphas, tested))
                vacuous = all(math.isinf(v) for v in thresholds)
                run_rkrdp = (not vacuous) or self.rkrdp is True
                rkrdp_status = ("vacuous at these sizes (needs n·λ₀ ≫ log(1/λ₀)); skipped"
                                if vacuous and not run_rkrdp else
                                "vacuous at these sizes; held-out D̂ computed on request"
                                if vacuous else "run")
        elif eps_claim:
            rkrdp_status = "not run (rkrdp=False)"
        rkrdp_uses_level = run_rkrdp and not all(math.isinf(v) for v in thresholds)
        level_t = level / 2.0 if rkrdp_uses_level else 0.0
        do_sweep = (self.sweep if self.sweep is not None
                    else max(n_p, n_q) <= AUTO_SWEEP_MAX)
        # memory, refused before anything large is allocated
        if do_sweep:
            check_memory(f"the descriptive λ sweep on all samples (n_p = {n_p}, n_q = {n_q})",
                         kernel_bytes(n_p, n_q), budget,
                         "pass sweep=False (it is descriptive: the decision does not use it)")
        if run_rkrdp:
            check_memory(f"the RKRDP test on the held-out part (m_p = {m_p}, m_q = {m_q})",
                         kernel_bytes(m_p, m_q), budget,
                         "pass rkrdp=False (the witness test then gets the whole level)")
        if self.reference is not None:
            if self.shift is None:
                raise ValueError("shift: give f(D) − f(D′), a vector of length d, with "
                                 "reference")
            check_memory(f"the parametric bootstrap (n_p = {n_p}, n_q = {n_q})",
                         kernel_bytes(n_p, n_q), budget, "drop reference=")
        kp = min(kernel_points, xa.shape[0], ya.shape[0])
        if {"kernel", "likelihood_ratio"} & set(families):
            check_memory(f"the kernel witnesses ({kp} training points per side)",
                         8 * 7 * kp * kp, budget, "lower kernel_points")
        centre = 0.5 * (xa.mean(axis=0) + ya.mean(axis=0))
        xa_c, ya_c, xb_c, yb_c = xa - centre, ya - centre, xb - centre, yb - centre
        # the kernels' scale: the median distinct distance of at most kp training points
        # per side (memory 8·kp², below the witnesses'); a bandwidth that cannot resolve
        # it is refused before any kernel is built
        scale = typical_distance(xa_c, ya_c, kp)
        check_bandwidth(bandwidth, scale)
        notes: list[str] = []
        if scale is None:
            notes.append("every training sample of x coincides with every one of y (all "
                         "distances 0): the RBF kernel has no scale (the bandwidth "
                         "collapses), so no kernel witness was used and kernel statistics "
                         "are degenerate")
        for note in notes:
            warnings.warn(f"rkrd audit: {note}", KernelWarning, stacklevel=4)

        # ---- witness test on the split
        prog.stage(f"witness selection on the training part ({xa.shape[0]} + {ya.shape[0]} "
                   f"samples, families {', '.join(families)})")
        cands = candidates(xa_c, ya_c, families=families, bandwidth=bandwidth,
                           kernel_points=kernel_points,
                           rng=np.random.default_rng(witness_ss), progress=prog.stage)
        wt = witness_test(cands, xb_c, yb_c, claim=claim, level=level - level_t,
                          n_thresholds=t, progress=prog.stage)

        # ---- kernel statistics, only where they are needed or asked for
        rkrdp_result = None
        if eps_claim and thresholds:
            held_out = None
            if run_rkrdp:
                prog.stage(f"RKRDP test: n × n kernel statistics on the held-out part "
                           f"({m_p} + {m_q})")
                h_w = witness_bandwidth(xa, ya) if bandwidth is None else bandwidth
                held_out = tuple(float(v) for v in
                                 rkrd_sweep(xb, yb, alphas, [lam0], bandwidth=h_w).values[:, 0])
            rkrdp_result = RKRDPResult(tuple(alphas.tolist()), thresholds, held_out,
                                       level_t, rkrdp_status)
        elif eps_claim:
            rkrdp_result = RKRDPResult(tuple(alphas.tolist()), (), None, 0.0, rkrdp_status)
        sweep = statistics = None
        if do_sweep:
            prog.stage(f"descriptive λ sweep: n × n kernel statistics ({n_p} + {n_q})")
            grid = np.unique(np.append(lambdas, lam0) if lam0 is not None else lambdas)
            sweep = rkrd_sweep(x, y, alphas, grid, bandwidth=bandwidth)
            if lam0 is not None:
                statistics = tuple(sweep.at(a, lam0) for a in alphas)
        boot = None
        if self.reference is not None:
            prog.stage("parametric bootstrap")
            lam_b = lam0 if lam0 is not None else float(lambdas.min())
            boot = bootstrap_test(x, y, mechanism=self.reference, shift=self.shift,
                                  alpha=float(alphas.max()), lam=lam_b,
                                  n_boot=self.n_boot, bandwidth=bandwidth,
                                  rng=np.random.default_rng(boot_ss),
                                  progress=prog.loop("bootstrap"))
        prog.stage("done")
        settings_out = {
            "n_p": n_p, "n_q": n_q, "d": d,
            "bandwidth": bandwidth, "bandwidth_rule": "given" if bandwidth is not None
            else "median heuristic (of the training part for witnesses)",
            "witnesses": list(families), "kernel_points": kernel_points,
            "alphas": alphas.tolist(), "lambdas": sweep.lambdas.tolist() if sweep else [],
            "level": level, "n_thresholds": t, "train_fraction": self.train_fraction,
            "training": [int(xa.shape[0]), int(ya.shape[0])], "held_out": [m_p, m_q],
            "memory_budget": budget, "threads": self.threads,
            "threads_capped": self.threads is not None and threads_capped(),
        }
        if self.reference is not None:
            settings_out.update(reference=str(self.reference), n_boot=self.n_boot,
                                shift=np.atleast_1d(np.asarray(self.shift, float)).tolist())
        return AuditReport(
            claim=claim, level=level, level_witness=level - level_t, level_threshold=level_t,
            lambda0=lam0, witness=wt, rkrdp=rkrdp_result, statistics=statistics, seed=seed,
            settings=settings_out, bootstrap=boot, sweep=sweep,
            seconds=time.perf_counter() - t0, auditor=self.name, warnings=tuple(notes))

    # ----------------------------------------------------------------- callable
    def audit_callable(self, fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any,
                       *, n: int, epsilon: float | None = None,
                       delta: float | None = None, seed: int | None = None,
                       claim: Any = None, **settings: Any) -> AuditReport:
        """Draw ``n`` outputs of ``fn(d0, rng)`` and of ``fn(d1, rng)`` and audit them.

        An exception raised by ``fn`` becomes a ``MechanismError`` naming it.
        """
        if settings:
            return self.configure(**settings).audit_callable(
                fn, d0, d1, n=n, epsilon=epsilon, delta=delta, seed=seed, claim=claim)
        if not callable(fn):
            raise TypeError(f"fn must be callable (dataset, rng) -> output vector, got "
                            f"{type(fn).__name__}")
        n = check_count("n", n, minimum=4)
        as_claim(claim, epsilon, delta)          # a bad claim fails before any draw
        seed = _seed(seed)
        sample_ss = np.random.SeedSequence(seed).spawn(4)[0]
        rng = np.random.default_rng(sample_ss)
        prog = _Progress(bool(self.progress))
        prog.stage(f"sampling {n} outputs on each dataset")
        tick = prog.loop("sampling")
        budget = check_positive("memory_budget", self.memory_budget)
        x = _draw(fn, d0, "d0", n, rng, tick, 0, 2 * n, budget)
        y = _draw(fn, d1, "d1", n, rng, tick, n, 2 * n, budget)
        if x.shape[1] != y.shape[1]:
            raise ValueError(f"fn returned outputs of length {x.shape[1]} on d0 but "
                             f"{y.shape[1]} on d1")
        return self.audit_samples(x, y, epsilon=epsilon, delta=delta, seed=seed, claim=claim)


    # --------------------------------------------------------------- sequential
    def audit_sequential(self, fn: Callable[[Any, np.random.Generator], Any] | None = None,
                         d0: Any = None, d1: Any = None, *, epsilon: float, delta: float,
                         max_n: int | None = None, samples: Any = None,
                         seed: int | None = None, **settings: Any) -> SequentialReport:
        """Anytime-valid sequential audit of the (``epsilon``, ``delta``) claim
        (``accounting_rkrd.sequential``): draw outputs of ``fn(d0, rng)`` and
        ``fn(d1, rng)`` in rounds, or read ``samples=(x, y)`` in order, and stop as soon
        as the e-process crosses 1/level (reject), the witnesses' detectable ε falls
        below the claim, or ``max_n`` pairs are used (default 20 000; with ``samples``
        at most min(n_x, n_y)). ``level`` is the auditor's unless given; the other
        settings are those of ``sequential_test`` (``batch``, ``warmup``, ``growth``,
        ``thresholds``, ``bet_fraction``, ``fit_window``, ``futility``,
        ``futility_after``, ``futility_level``); anything else is a TypeError."""
        unknown = sorted(set(settings) - set(SEQUENTIAL_SETTINGS) - {"level"})
        if unknown:
            raise TypeError(f"audit_sequential: unknown setting(s) {', '.join(unknown)}; "
                            f"known: level, {', '.join(SEQUENTIAL_SETTINGS)}")
        level = check_probability("level", settings.pop("level", self.level))
        seed = _seed(seed)
        budget = check_positive("memory_budget", self.memory_budget)
        if (fn is None) == (samples is None):
            raise TypeError("audit_sequential: give either fn, d0, d1 (a callable "
                            "(dataset, rng) -> output vector) or samples=(x, y)")
        if samples is not None:
            if not (isinstance(samples, (tuple, list)) and len(samples) == 2):
                raise TypeError("samples must be a pair (x, y) of arrays of outputs")
            draw, total = array_source(*samples)
            limit = total if max_n is None else min(check_count("max_n", max_n), total)
        else:
            if not callable(fn):
                raise TypeError(f"fn must be callable (dataset, rng) -> output vector, got "
                                f"{type(fn).__name__}")
            limit = DEFAULT_SEQUENTIAL_MAX if max_n is None else check_count("max_n", max_n)

            def draw(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
                return (_draw(fn, d0, "d0", k, rng, None, 0, k, budget),
                        _draw(fn, d1, "d1", k, rng, None, 0, k, budget))
        with thread_limit(self._threads()):
            return sequential_test(draw, epsilon=epsilon, delta=delta, level=level,
                                   max_n=limit, seed=seed, auditor=self.name, **settings)


def _seed(seed: int | None) -> int:
    if seed is None:
        entropy = np.random.SeedSequence().entropy
        assert isinstance(entropy, int)   # drawn fresh when none is given: one integer
        return entropy
    return check_count("seed", seed, minimum=0)


#: copies of the samples an audit holds at once (draws, split parts, centred parts)
_SAMPLE_COPIES = 4


def _draw(fn: Callable[..., Any], dataset: Any, name: str, n: int, rng: np.random.Generator,
          tick: Callable[[int, int], None] | None, done: int, total: int,
          budget: float) -> np.ndarray:
    rows: list[np.ndarray] = []
    for i in range(n):
        try:
            value = fn(dataset, rng)
        except (Exception, SystemExit) as exc:
            raise MechanismError(
                f"the audited mechanism fn raised {type(exc).__name__} on {name} (draw "
                f"{i + 1} of {n}): {exc}", exc) from exc
        try:
            out = np.asarray(real_array(f"fn({name}, rng)", value), dtype=float).ravel()
        except (TypeError, ValueError) as exc:
            raise TypeError(f"fn({name}, rng) must return a vector of real numbers "
                            f"({exc})") from None
        if out.size == 0:
            raise ValueError(f"fn({name}, rng) returned an empty output (draw {i + 1})")
        if not rows:
            # both datasets' outputs, held a few times over: refuse before drawing them
            check_memory(f"{n} outputs of length {out.size} on each dataset",
                         _SAMPLE_COPIES * 2 * 8 * n * out.size, budget, "lower n")
        if rows and out.shape != rows[0].shape:
            raise ValueError(f"fn({name}, rng) returned outputs of lengths {rows[0].size} "
                             f"and {out.size}; every output must have the same length")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"fn({name}, rng) returned a non-finite output (draw {i + 1})")
        rows.append(out)
        if tick is not None:
            tick(done + i + 1, total)
    return np.stack(rows)


#: the instance registered under "rkrd"
DEFAULT_AUDITOR = RKRDAuditor()


def audit_samples(x: Any, y: Any, *, epsilon: float | None = None,
                  delta: float | None = None, seed: int | None = None,
                  claim: Any = None, **settings: Any) -> AuditReport:
    """``RKRDAuditor().audit_samples``: see ``RKRDAuditor``."""
    return DEFAULT_AUDITOR.audit_samples(x, y, epsilon=epsilon, delta=delta, seed=seed,
                                         claim=claim, **settings)


def audit_callable(fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any, *,
                   n: int, epsilon: float | None = None, delta: float | None = None,
                   seed: int | None = None, claim: Any = None,
                   **settings: Any) -> AuditReport:
    """``RKRDAuditor().audit_callable``: see ``RKRDAuditor``."""
    return DEFAULT_AUDITOR.audit_callable(fn, d0, d1, n=n, epsilon=epsilon, delta=delta,
                                          seed=seed, claim=claim, **settings)
