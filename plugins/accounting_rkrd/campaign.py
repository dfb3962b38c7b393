"""Audit campaigns on the parallel layer of ``accounting`` (``accounting.parallel``).

``audit_callable`` calls the black-box mechanism 2n times; with a real mechanism (one
training run per output) those calls are the cost, and bootstrap replicates and
grids of audits multiply them. This module spreads them over an
``accounting.parallel.Engine`` — serially, over local processes or a Dask cluster:

* ``distributed_samples`` / ``audit_distributed``: the 2n calls of one audit, then
  the audit of the samples here;
* ``bootstrap_distributed``: the replicates of the parametric bootstrap
  (``bootstrap.bootstrap_test``), each on a worker;
* ``audit_campaign``: a grid of audit settings (claims (ε, δ) — hence λ₀ = δe^{−ε} —
  Rényi orders α, levels, sizes, …) × replicates, one whole audit per task.

Determinism. Every random draw comes from a ``SeedSequence`` child fixed by the
seed and the draw's number, never by the worker that runs it: draw i of an audit
seeded s uses ``SeedSequence(s, spawn_key=(0, i))`` (child 0 of the audit's seed, the
one ``RKRDAuditor.audit_callable`` samples from, here split per draw so that draws
can run anywhere), bootstrap replicate b uses ``SeedSequence(s, spawn_key=(2, b))``
(child 2 is the auditor's bootstrap stream) and task k of a campaign is an audit
seeded from ``SeedSequence(s, spawn_key=(k,))``. Results are therefore bit-identical
with 1, 2 or 50 workers, but not equal to a serial ``audit_callable`` with the same
seed, which draws from one stream in sequence.

The mechanism ``fn`` and the datasets are sent to the workers with each chunk of
draws: they must be picklable (a module-level function; Dask also accepts closures).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from accounting.parallel.executor import Engine, TaskError, map_tasks
from accounting.parallel.seeds import resolve_seed
from accounting.validation import check_array, check_count

from .auditor import DEFAULT_AUDITOR, MechanismError, RKRDAuditor
from .bootstrap import BootstrapResult, noise_sampler
from .claims import as_claim
from .estimator import check_alphas, check_lambdas, rkrd_sweep
from .kernel import check_samples, real_array
from .report import AuditReport, json_safe

__all__ = ["distributed_samples", "audit_distributed", "bootstrap_distributed",
           "audit_campaign", "CampaignResult"]

#: children of an audit's SeedSequence: 0 samples, 2 the bootstrap (as in the auditor)
_SAMPLING, _BOOTSTRAP = 0, 2
_DATASETS = ("d0", "d1")


class _Draw:
    """Task: one output ``fn(dataset, rng)`` with the rng of its draw number."""

    def __init__(self, fn: Callable[..., Any], d0: Any, d1: Any, seed: int) -> None:
        self.fn, self.datasets, self.seed = fn, (d0, d1), seed

    def __call__(self, task: Mapping[str, Any], _: Any = None) -> np.ndarray:
        rng = np.random.default_rng(np.random.SeedSequence(
            self.seed, spawn_key=(_SAMPLING, task["draw"])))
        value = self.fn(self.datasets[_DATASETS.index(task["dataset"])], rng)
        return np.asarray(real_array(f"fn({task['dataset']}, rng)", value), dtype=float).ravel()


def distributed_samples(fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any, *,
                        n: int, seed: int | None = None, engine: Engine | None = None,
                        progress: Any = False) -> tuple[np.ndarray, np.ndarray]:
    """(x, y): ``n`` outputs of ``fn(d0, rng)`` and of ``fn(d1, rng)``, shape (n, d),
    the 2n calls run on ``engine``. A call that raises is a ``MechanismError`` naming
    the dataset and the draw."""
    if not callable(fn):
        raise TypeError(f"fn must be callable (dataset, rng) -> output vector, got "
                        f"{type(fn).__name__}")
    n = check_count("n", n, minimum=1)
    seed = resolve_seed(seed)
    tasks = [{"dataset": name, "draw": k * n + i}
             for k, name in enumerate(_DATASETS) for i in range(n)]
    try:
        outputs = map_tasks(_Draw(fn, d0, d1, seed), tasks, engine=engine, seed=seed,
                            progress=progress, label="sampling")
    except TaskError as exc:
        where = exc.config
        raise MechanismError(
            f"the audited mechanism fn raised {exc.error} on {where['dataset']} (draw "
            f"{where['draw'] % n + 1} of {n}): {exc.reason}", exc) from None
    sizes = {out.size for out in outputs}
    if len(sizes) != 1 or 0 in sizes:
        raise ValueError(f"fn returned outputs of lengths {sorted(sizes)}; every output "
                         f"must have the same, non-zero length")
    x, y = np.stack(outputs[:n]), np.stack(outputs[n:])
    for name, arr in zip(_DATASETS, (x, y)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"fn({name}, rng) returned a non-finite output")
    return x, y


def _auditor(auditor: RKRDAuditor | None, settings: Mapping[str, Any]) -> RKRDAuditor:
    auditor = DEFAULT_AUDITOR if auditor is None else auditor
    if not isinstance(auditor, RKRDAuditor):
        raise TypeError(f"auditor must be an RKRDAuditor, got {type(auditor).__name__}")
    return auditor.configure(**settings) if settings else auditor


def audit_distributed(fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any, *,
                      n: int, epsilon: float | None = None, delta: float | None = None,
                      claim: Any = None, seed: int | None = None,
                      engine: Engine | None = None, auditor: RKRDAuditor | None = None,
                      progress: Any = False, **settings: Any) -> AuditReport:
    """``audit_callable`` with the 2n calls of ``fn`` run on ``engine``; the audit of
    the samples runs here. ``settings`` override the auditor's (see ``RKRDAuditor``)."""
    auditor = _auditor(auditor, settings)
    n = check_count("n", n, minimum=4)
    as_claim(claim, epsilon, delta)          # a bad claim fails before any call
    seed = resolve_seed(seed)
    x, y = distributed_samples(fn, d0, d1, n=n, seed=seed, engine=engine, progress=progress)
    return auditor.audit_samples(x, y, epsilon=epsilon, delta=delta, seed=seed, claim=claim)


class _Replicate:
    """Task: D̂ of one bootstrap replicate drawn under the claimed mechanism."""

    def __init__(self, mechanism: Any, shift: np.ndarray, shapes: tuple[int, int], alpha: float,
                 lam: float, bandwidth: float | None, seed: int) -> None:
        self.mechanism, self.shift, self.shapes = mechanism, shift, shapes
        self.alpha, self.lam, self.bandwidth, self.seed = alpha, lam, bandwidth, seed

    def __call__(self, task: Mapping[str, Any], _: Any = None) -> float:
        rng = np.random.default_rng(np.random.SeedSequence(
            self.seed, spawn_key=(_BOOTSTRAP, task["replicate"])))
        draw = noise_sampler(self.mechanism)
        xb = self.shift + draw(rng, self.shapes[0])
        yb = draw(rng, self.shapes[1])
        return float(rkrd_sweep(xb, yb, [self.alpha], [self.lam],
                                bandwidth=self.bandwidth).values[0, 0])


def bootstrap_distributed(x: Any, y: Any, *, mechanism: Any, shift: Any, alpha: float = 2.0,
                          lam: float = 1e-2, n_boot: int = 99,
                          bandwidth: float | None = None, seed: int | None = None,
                          engine: Engine | None = None,
                          progress: Any = False) -> BootstrapResult:
    """``bootstrap_test`` with its ``n_boot`` replicates run on ``engine``: the same
    statistic and p = (1 + #{b : D̂_b ≥ D̂_obs})/(B + 1) (arXiv:2205.13941), with
    replicate b drawn from its own seed (see the module docstring)."""
    x, y = check_samples(x, y)
    shift_v = np.atleast_1d(check_array("shift", shift))
    if shift_v.shape != (x.shape[1],):
        raise ValueError(f"shift must be a vector of length d = {x.shape[1]}, got shape "
                         f"{shift_v.shape}")
    a, la = float(check_alphas(alpha)[0]), float(check_lambdas(lam)[0])
    n_boot = check_count("n_boot", n_boot)
    noise_sampler(mechanism)                 # an unsupported mechanism fails here
    seed = resolve_seed(seed)
    observed = float(rkrd_sweep(x, y, [a], [la], bandwidth=bandwidth).values[0, 0])
    task = _Replicate(mechanism, shift_v, (x.shape, y.shape), a, la, bandwidth, seed)
    reps = np.asarray(map_tasks(task, [{"replicate": b} for b in range(n_boot)],
                                engine=engine, seed=seed, progress=progress,
                                label="bootstrap"), dtype=float)
    p = (1.0 + np.count_nonzero(reps >= observed)) / (n_boot + 1.0)
    return BootstrapResult(observed, float(p), reps, a, la, str(mechanism))


class _Audit:
    """Task: one whole audit of ``fn`` (its 2n calls included) at one setting."""

    def __init__(self, fn: Callable[..., Any], d0: Any, d1: Any, auditor: RKRDAuditor) -> None:
        self.fn, self.d0, self.d1, self.auditor = fn, d0, d1, auditor

    def __call__(self, task: Mapping[str, Any], seed: np.random.SeedSequence) -> dict[str, Any]:
        t0 = time.perf_counter()
        settings = dict(task["settings"])
        n = settings.pop("n")
        keys = ("epsilon", "delta", "claim")
        claim = {k: settings.pop(k) for k in keys if k in settings}
        # the auditor takes seeds below 2^53 (exact in float64, as printed in reports)
        audit_seed = int(seed.generate_state(1, np.uint64)[0]) >> 11
        report = self.auditor.audit_callable(self.fn, self.d0, self.d1, n=n, seed=audit_seed,
                                             **claim, **settings)
        return {"decision": report.decision, "rejected": report.rejected,
                "epsilon_lower_bound": report.epsilon_lower_bound,
                "detectable_epsilon": report.detectable_epsilon, "seed": audit_seed,
                "seconds": time.perf_counter() - t0,
                "report": json_safe({k: v for k, v in report.to_dict().items()
                                     if k != "seconds"})}


@attrs.frozen
class CampaignResult:
    """One row per (setting, replicate), in that order: ``point``, ``replicate``, the
    setting, then ``decision``, ``rejected``, ``epsilon_lower_bound``,
    ``detectable_epsilon``, the audit's ``seed``, ``seconds`` and the ``report`` dict."""

    rows: tuple[Any, ...] = attrs.field(repr=False)
    seed: int
    seconds: float

    def rejection_rate(self, point: int) -> float:
        """The fraction of replicates of setting ``point`` that rejected the claim."""
        hits = [r["rejected"] for r in self.rows if r["point"] == point]
        if not hits:
            raise ValueError(f"point must be a setting of the campaign, got {point!r}")
        return float(np.mean(hits))

    def to_frame(self) -> Any:
        """The rows without the reports, as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame([{k: v for k, v in r.items() if k != "report"}
                             for r in self.rows])


def audit_campaign(fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any, *,
                   grid: Sequence[Mapping[str, Any]], n: int | None = None,
                   replicates: int = 1, seed: int | None = None,
                   engine: Engine | None = None, auditor: RKRDAuditor | None = None,
                   progress: Any = False) -> CampaignResult:
    """Audit ``fn`` at every setting of ``grid`` (dicts of ``audit_callable`` keywords:
    ``epsilon`` and ``delta`` or ``claim``, ``n``, and any auditor setting such as
    ``alphas``, ``level``, ``bandwidth``), ``replicates`` times each, one audit per
    task on ``engine``. ``n``: the default sample size per dataset. Every setting is
    checked before any task runs; an audit that fails is a ``TaskError`` naming its
    setting."""
    auditor = _auditor(auditor, {})
    replicates = check_count("replicates", replicates)
    if isinstance(grid, Mapping) or not isinstance(grid, Sequence) or not grid:
        raise ValueError("grid must be a non-empty list of settings (dicts of audit "
                         "keywords)")
    settings = []
    for k, point in enumerate(grid):
        if not isinstance(point, Mapping):
            raise TypeError(f"grid[{k}] must be a dict of audit keywords, got "
                            f"{type(point).__name__}")
        point = dict(point)
        point.setdefault("n", n)
        if point["n"] is None:
            raise ValueError(f"grid[{k}]: give n (samples per dataset), here or as n=")
        point["n"] = check_count(f"grid[{k}]: n", point["n"], minimum=4)
        try:
            as_claim(point.get("claim"), point.get("epsilon"), point.get("delta"))
            auditor.configure(**{key: v for key, v in point.items()
                                 if key not in ("n", "epsilon", "delta", "claim")})
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"grid[{k}]: {exc}") from None
        settings.append(point)
    seed = resolve_seed(seed)
    t0 = time.perf_counter()
    # a task: the grid point's index, the replicate and the point's audit keywords
    tasks: list[dict[str, Any]] = [{"point": p, "replicate": r, "settings": s}
                                   for p, s in enumerate(settings) for r in range(replicates)]
    results = map_tasks(_Audit(fn, d0, d1, auditor), tasks, engine=engine, seed=seed,
                        progress=progress, label="audits")
    rows = tuple({"point": t["point"], "replicate": t["replicate"],
                  **{k: v for k, v in t["settings"].items() if k != "claim"}, **res}
                 for t, res in zip(tasks, results))
    return CampaignResult(rows, seed, time.perf_counter() - t0)
