"""The RKRD auditor: audit an (ε, δ) claim from samples, or from a black-box mechanism.

This is the object the plugin registers under the name "rkrd"; it implements the
auditor interface of ``accounting.hookspecs.accounting_register_auditors``:

* ``audit_samples(x, y, *, epsilon, delta, seed=None, **settings)`` with x ~ M(D),
  y ~ M(D′) of shape (n, d);
* ``audit_callable(fn, d0, d1, *, n, epsilon, delta, seed=None, **settings)`` with
  ``fn(dataset, rng)`` returning one output vector; n outputs are drawn on each dataset.

Both return an ``AuditReport``. The decision combines two tests, each valid for every
(ε, δ)-DP mechanism: the certified lower bound (``lower_bound``) and the finite-sample
(α, λ₀, ε)-RKRDP test at λ₀ = δe^{−ε} (``threshold``, Bonferroni over α). The RKRDP
test runs on the held-out parts of the split with the bandwidth chosen on the other
parts, so its kernel does not depend on the samples it tests. Whether its threshold
is finite depends only on (n, λ₀, α, level), never on the data, so when it is vacuous
the whole level goes to the lower bound; otherwise the level is split in halves.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, Optional

import attrs
import numpy as np

from accounting.validation import (check_count, check_positive, check_probability,
                                   check_real)

from .bootstrap import bootstrap_test
from .estimator import check_alphas, check_lambdas, rkrd_sweep
from .experiments import PAPER_ALPHAS, PAPER_LAMBDAS
from .kernel import check_samples
from .lower_bound import lower_bound_from_split, split_samples, witness_bandwidth
from .report import AuditReport
from .threshold import dp_lambda, rkrdp_threshold

__all__ = ["RKRDAuditor", "audit_samples", "audit_callable"]


def _progress(enabled: bool, stage: str) -> Optional[Callable[[int, int], None]]:
    """A callback printing ``rkrd: stage k/total`` to stderr about every tenth of the way."""
    if not enabled:
        return None

    def report(k: int, total: int) -> None:
        step = max(total // 10, 1)
        if k == total or k % step == 0:
            print(f"rkrd: {stage} {k}/{total}", file=sys.stderr, flush=True)
    return report


@attrs.frozen
class RKRDAuditor:
    """Settings of the RKRD audit; each can be overridden per call as a keyword.

    * ``alphas``: Rényi orders of the statistics and of the RKRDP test (α >= 2 tested);
    * ``level``: probability of rejecting a true claim (split as described above);
    * ``bandwidth``: RBF bandwidth h, or None for the median heuristic;
    * ``n_thresholds``, ``train_fraction``: T and the first-part fraction of the lower bound;
    * ``lambdas``: λ grid of the reported sweep (λ₀ is added); ``sweep=False`` skips it;
    * ``reference``, ``shift``, ``n_boot``: a claimed registered mechanism, the query
      difference f(D) − f(D′) and the replicate count of the parametric bootstrap;
    * ``progress``: print progress to stderr.
    """

    name = "rkrd"

    alphas: tuple = PAPER_ALPHAS
    level: float = 0.05
    bandwidth: Optional[float] = None
    n_thresholds: int = 3
    train_fraction: float = 1.0 / 3.0
    lambdas: tuple = PAPER_LAMBDAS
    sweep: bool = True
    reference: Any = None
    shift: Any = None
    n_boot: int = 99
    progress: bool = False

    def configure(self, **settings: Any) -> "RKRDAuditor":
        """A copy with some settings changed; an unknown name is a TypeError."""
        known = {a.name for a in attrs.fields(type(self))}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(f"unknown audit setting(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(known))}")
        return attrs.evolve(self, **settings)

    # ------------------------------------------------------------------ samples
    def audit_samples(self, x: Any, y: Any, *, epsilon: float, delta: float,
                      seed: Optional[int] = None, **settings: Any) -> AuditReport:
        """Audit the claim that M is (ε, δ)-DP from x ~ M(D) and y ~ M(D′), shape (n, d)."""
        if settings:
            return self.configure(**settings).audit_samples(x, y, epsilon=epsilon,
                                                            delta=delta, seed=seed)
        t0 = time.perf_counter()
        x, y = check_samples(x, y)
        epsilon = check_real("epsilon", epsilon, lo=0.0)
        delta = check_probability("delta", delta)
        level = check_probability("level", self.level)
        alphas = check_alphas(self.alphas)
        lambdas = check_lambdas(self.lambdas)
        bandwidth = None if self.bandwidth is None else check_positive("bandwidth",
                                                                       self.bandwidth)
        seed = _seed(seed)
        _, split_ss, boot_ss = np.random.SeedSequence(seed).spawn(3)
        lam0 = dp_lambda(epsilon, delta)

        grid = np.unique(np.append(lambdas if self.sweep else [], lam0))
        sweep = rkrd_sweep(x, y, alphas, grid, bandwidth=bandwidth)
        statistics = tuple(sweep.at(a, lam0) for a in alphas)

        split_seed = int(split_ss.generate_state(1)[0])
        xa, xb, ya, yb = split_samples(x, y, train_fraction=self.train_fraction,
                                       seed=split_seed)
        h_w = witness_bandwidth(xa, ya) if bandwidth is None else bandwidth
        tested = alphas >= 2.0
        k = int(np.count_nonzero(tested))
        thresholds = tuple(
            rkrdp_threshold(epsilon, a, lam0, xb.shape[0], yb.shape[0],
                            level / (2.0 * k)).value if ok else math.inf
            for a, ok in zip(alphas, tested))
        vacuous = all(math.isinf(t) for t in thresholds)
        level_t = 0.0 if vacuous else level / 2.0
        held_out = rkrd_sweep(xb, yb, alphas, [lam0], bandwidth=h_w).values[:, 0]

        lb = lower_bound_from_split(xa, ya, xb, yb, delta=delta, level=level - level_t,
                                    n_thresholds=self.n_thresholds, bandwidth=h_w)
        boot = None
        if self.reference is not None:
            if self.shift is None:
                raise ValueError("shift: give f(D) − f(D′), a vector of length d, with "
                                 "reference")
            boot = bootstrap_test(x, y, mechanism=self.reference, shift=self.shift,
                                  alpha=float(alphas.max()), lam=lam0,
                                  n_boot=self.n_boot, bandwidth=bandwidth,
                                  rng=np.random.default_rng(boot_ss),
                                  progress=_progress(self.progress, "bootstrap"))
        settings_out = {
            "n_p": x.shape[0], "n_q": y.shape[0], "d": x.shape[1],
            "bandwidth": sweep.bandwidth,
            "bandwidth_rule": "given" if bandwidth is not None
            else "median of the cross distances",
            "witness_bandwidth": h_w, "alphas": alphas.tolist(),
            "lambdas": grid.tolist() if self.sweep else [], "level": level,
            "n_thresholds": self.n_thresholds, "train_fraction": self.train_fraction,
            "held_out": [int(xb.shape[0]), int(yb.shape[0])],
        }
        if self.reference is not None:
            settings_out.update(reference=str(self.reference), n_boot=self.n_boot,
                                shift=np.atleast_1d(np.asarray(self.shift, float)).tolist())
        return AuditReport(
            epsilon=epsilon, delta=delta, lambda0=lam0, level=level,
            level_lower_bound=level - level_t, level_threshold=level_t,
            alphas=tuple(alphas.tolist()), statistics=statistics,
            held_out_statistics=tuple(float(v) for v in held_out), thresholds=thresholds,
            lower_bound=lb, seed=seed, settings=settings_out, bootstrap=boot,
            sweep=sweep if self.sweep else None, seconds=time.perf_counter() - t0,
            auditor=self.name)

    # ----------------------------------------------------------------- callable
    def audit_callable(self, fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any,
                       *, n: int, epsilon: float, delta: float, seed: Optional[int] = None,
                       **settings: Any) -> AuditReport:
        """Draw ``n`` outputs of ``fn(d0, rng)`` and of ``fn(d1, rng)`` and audit them."""
        if settings:
            return self.configure(**settings).audit_callable(
                fn, d0, d1, n=n, epsilon=epsilon, delta=delta, seed=seed)
        if not callable(fn):
            raise TypeError(f"fn must be callable (dataset, rng) -> output vector, got "
                            f"{type(fn).__name__}")
        n = check_count("n", n, minimum=4)
        seed = _seed(seed)
        sample_ss = np.random.SeedSequence(seed).spawn(3)[0]
        rng = np.random.default_rng(sample_ss)
        tick = _progress(self.progress, "sampling")
        x = _draw(fn, d0, "d0", n, rng, tick, 0, 2 * n)
        y = _draw(fn, d1, "d1", n, rng, tick, n, 2 * n)
        if x.shape[1] != y.shape[1]:
            raise ValueError(f"fn returned outputs of length {x.shape[1]} on d0 but "
                             f"{y.shape[1]} on d1")
        return self.audit_samples(x, y, epsilon=epsilon, delta=delta, seed=seed)


def _seed(seed: Optional[int]) -> int:
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    return check_count("seed", seed, minimum=0)


def _draw(fn: Callable, dataset: Any, name: str, n: int, rng: np.random.Generator,
          tick: Optional[Callable[[int, int], None]], done: int, total: int) -> np.ndarray:
    rows = []
    for i in range(n):
        value = fn(dataset, rng)
        try:
            out = np.asarray(value, dtype=float).ravel()
        except (TypeError, ValueError) as exc:
            raise TypeError(f"fn({name}, rng) must return a vector of real numbers "
                            f"({type(exc).__name__}: {exc})") from None
        if rows and out.shape != rows[0].shape:
            raise ValueError(f"fn({name}, rng) returned outputs of lengths {rows[0].size} "
                             f"and {out.size}; every output must have the same length")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"fn({name}, rng) returned a non-finite output (draw {i})")
        rows.append(out)
        if tick is not None:
            tick(done + i + 1, total)
    return np.stack(rows)


#: the instance registered under "rkrd"
DEFAULT_AUDITOR = RKRDAuditor()


def audit_samples(x: Any, y: Any, *, epsilon: float, delta: float,
                  seed: Optional[int] = None, **settings: Any) -> AuditReport:
    """``RKRDAuditor().audit_samples``: see ``RKRDAuditor``."""
    return DEFAULT_AUDITOR.audit_samples(x, y, epsilon=epsilon, delta=delta, seed=seed,
                                         **settings)


def audit_callable(fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any, *,
                   n: int, epsilon: float, delta: float, seed: Optional[int] = None,
                   **settings: Any) -> AuditReport:
    """``RKRDAuditor().audit_callable``: see ``RKRDAuditor``."""
    return DEFAULT_AUDITOR.audit_callable(fn, d0, d1, n=n, epsilon=epsilon, delta=delta,
                                          seed=seed, **settings)
