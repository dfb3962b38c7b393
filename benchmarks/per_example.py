"""Per-example accounting at scale: 10⁶ examples × 10³ steps, streamed from a .npy
memmap, serial against a Dask LocalCluster of 2 workers.

Writes a (steps, examples) float32 array of synthetic gradient norms (4 GB at full
size: a third of the examples always clipped, the others a per-example scale with
per-step noise and a slow decay), then times

1. counting: the norms streamed into per-example level counts
   (``per_example.counts_from_npy``, one task per block of examples), serial and on
   Dask — examples per second;
2. the Rényi bound and the fully adaptive odometer of every example from the counts
   (``account_individuals``: each distinct history once, one matrix product);
3. the certified PLD brackets of the distinct histories of the first
   ``--pld-examples`` examples, on the PLD's coarse grid and coarsened (one task per
   distinct history), serial and on Dask — histories and examples per second.

Memory: the counts (examples × 33 levels, uint32) and one block's chunk of norms.

Run: ``python benchmarks/per_example.py [--examples 1000000] [--steps 1000]
[--pld-examples 20000] [--dir /tmp]`` (full size: a few minutes, 4 GB of disk).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from accounting.parallel import Engine
from accounting_mechanisms.per_example import (
    Segment,
    SensitivityGrid,
    account_individuals,
    counts_from_npy,
)

Q, SIGMA, CLIP, DELTA = 1e-3, 1.0, 1.0, 1e-6


def write_norms(path: str, examples: int, steps: int, seed: int = 0) -> float:
    """Synthetic norms of shape (steps, examples) to ``path``; seconds taken."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    scale = rng.lognormal(-1.0, 0.6, size=examples).astype(np.float32)
    scale[rng.random(examples) < 1 / 3] = 10.0                    # always clipped
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                    shape=(steps, examples))
    rows = max(1, (1 << 24) // examples)
    for t in range(0, steps, rows):
        k = min(rows, steps - t)
        decay = (1.0 / (1.0 + np.arange(t, t + k) / steps)).astype(np.float32)[:, None]
        noise = rng.gamma(8.0, 1 / 8.0, size=(k, examples)).astype(np.float32)
        out[t:t + k] = scale[None, :] * decay * noise
    out.flush()
    del out
    return time.perf_counter() - t0


def timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--pld-examples", type=int, default=20_000)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    n, steps = args.examples, args.steps
    path = os.path.join(args.dir, f"per_example_norms_{steps}x{n}.npy")
    grid = SensitivityGrid.uniform()
    print(f"{n} examples × {steps} steps (q = {Q:g}, σ = {SIGMA:g}, δ = {DELTA:g}), "
          f"{n * steps * 4 / 1e9:.1f} GB of float32 norms at {path}")
    # a shared machine's other work slows both engines and hides Dask's gain: say so
    print(f"  {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    try:
        print(f"  written in {write_norms(path, n, steps):.1f} s")
        from dask.distributed import Client, LocalCluster

        serial, t_serial = timed(counts_from_npy, path, CLIP, grid)
        print(f"counting, serial:           {t_serial:7.1f} s  {n / t_serial:12,.0f} examples/s")
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            engine = Engine(client=client)
            dask, t_dask = timed(counts_from_npy, path, CLIP, grid, engine=engine)
            print(f"counting, Dask LocalCluster(2): {t_dask:5.1f} s  "
                  f"{n / t_dask:12,.0f} examples/s  (×{t_serial / t_dask:.2f})")
            assert np.array_equal(serial, dask)

            report, t_rdp = timed(account_individuals, Segment(Q, SIGMA, grid, serial),
                                  delta=DELTA)
            eps, odo = report.epsilon(), report.odometer_epsilon()
            print(f"Rényi bound + odometer:     {t_rdp:7.1f} s  {n / t_rdp:12,.0f} examples/s "
                  f"({report.distinct:,} distinct histories)")
            print(f"  Rényi ε: median {np.median(eps):.3f}, 90% {np.quantile(eps, .9):.3f}, "
                  f"worst case {report.worst_rdp:.3f}; odometer median {np.median(odo):.3f}, "
                  f"worst {report.worst_odometer:.3f}")

            m = min(args.pld_examples, n)
            sub = Segment(Q, SIGMA, grid, serial[:m])
            options = dict(delta=DELTA, pld=True, pld_grid=SensitivityGrid.uniform(4),
                           coarsen=max(1, steps // 10))
            pld_s, t_ps = timed(account_individuals, sub, **options)
            pld_d, t_pd = timed(account_individuals, sub, engine=engine, **options)
            assert np.array_equal(pld_s.epsilon(), pld_d.epsilon())
            h = pld_s.pld_distinct + 1
            print(f"PLD brackets of {m:,} examples ({h - 1} distinct on the PLD grid, + the "
                  f"worst case):")
            print(f"  serial {t_ps:7.1f} s  {h / t_ps:6.2f} histories/s  "
                  f"{m / t_ps:10,.0f} examples/s")
            print(f"  Dask   {t_pd:7.1f} s  {h / t_pd:6.2f} histories/s  "
                  f"{m / t_pd:10,.0f} examples/s  (×{t_ps / t_pd:.2f})")
            e = pld_s.epsilon()
            print(f"  ε: median {np.median(e):.3f}, 90% {np.quantile(e, .9):.3f}, worst "
                  f"case {pld_s.worst_epsilon():.3f} (PLD bracket {pld_s.worst_pld})")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        if os.path.exists(path):
            os.remove(path)


if __name__ == "__main__":
    main()
