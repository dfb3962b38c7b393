"""Regenerate the reference laws of ``tests/test_law_discretisation_reference.py``.

The arrays here (``laws.npz``, masses and hull vertices, each distinct array once)
and their metadata (``laws.json``: the commit, the library's and numpy's/scipy's
versions, the cases' parameters, every law's scalar fields, digests of the inputs of
the direct checks) were made by this script from the library itself, at the commit
recorded in ``laws.json`` — a commit at which the library's laws had been asserted bit
for bit equal to the old (pre-issue-11) discretisation, kept verbatim in the test file
until then. The cases (which mechanisms, options, rough profiles, hull inputs) are
those of the test module, imported from it.

To reproduce the stored files exactly, run it against the library code of that commit
(this script and the test module it imports came one commit later, so keep them)::

    git checkout <commit in laws.json> -- accounting plugins   # the library only
    python tests/data/law_reference/generate.py               # same numpy/scipy as recorded
    git diff --stat tests/data/law_reference   # only the JSON's commit and date lines
    git checkout HEAD -- accounting plugins

(``git checkout <commit>`` of the whole tree gives the library alone: there the old
test file, with the verbatim copy of the old algorithm, is what asserted it.)

Regenerating at a later commit re-pins the laws to whatever that commit computes:
do it only after an intended change of the laws, checked on its own, and say so.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import scipy

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent.parent
sys.path.insert(0, str(TESTS))

import accounting  # noqa: E402
import test_law_discretisation_reference as T  # noqa: E402
from accounting.numerics import discretise as D  # noqa: E402


def _commit():
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True,
                         text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "accounting", "plugins"],
                           cwd=TESTS.parent, capture_output=True, text=True).stdout.strip()
    return out + (" (library modified)" if dirty else "")


def main():
    arrays: dict[str, np.ndarray] = {}
    laws = {}
    for key, mech, options in T.law_cases():
        pld = T.build_pld(mech, options)
        laws[key] = dict(mechanism=repr(mech), options=options, pld={
            name: None if side is None else [T.law_record(law, arrays) for law in side]
            for name, side in (("upper", pld.upper), ("lower", pld.lower))})
    minorant = {}
    for noise in T.NOISES:
        for where, (lo, hi) in T.RANGES.items():
            idx, step, d, dt, near = T.rough_profile(noise, lo, hi)
            out = {}
            for use_near in (False, True):
                for passes in T.PASSES:
                    for floor in T.FLOORS:
                        law = D.convex_minorant(idx, step, d, dt, inf_floor=floor,
                                                near=near if use_near else None,
                                                max_passes=passes)
                        out[f"near={use_near} passes={passes} floor={floor!r}"] = \
                            T.law_record(law, arrays)
            minorant[f"{noise!r} {where}"] = dict(
                inputs=T.digest(idx, d, dt, *near[0], *near[1]), laws=out)
    hull = {}
    for seed in range(8):
        pts = T.hull_points(seed)
        v = D._hull_vertices(*pts)
        key = "v_" + T.digest(v)[:16]
        arrays[key] = v
        hull[str(seed)] = dict(inputs=T.digest(*pts), vertices=key)
    sup = {}
    for q, sigma in T.SUP_CASES:
        f, idx, step, d = T.sup_grid(q, sigma)
        sup[f"{q!r} {sigma!r}"] = D.profile_sup(f, idx, step, d)
    meta = dict(
        generated=datetime.date.today().isoformat(),
        commit=_commit(),
        library_version=accounting.__version__,
        numpy_version=np.__version__,
        scipy_version=scipy.__version__,
        python_version=sys.version.split()[0],
        parameters=dict(
            issue11=dict(q=0.01, sigmas="np.linspace(0.8, 2.0, 100)",
                         kept=list(T.SIGMAS_KEPT), options=T.WORKLOAD_OPTIONS),
            contract=dict(coarse=T.COARSE, fine=T.FINE, fine_kept=list(T.FINE_KEPT)),
            extra=dict(mechanisms=T.EXTRA, fine_kept=list(T.EXTRA_FINE)),
            minorant=dict(noises=T.NOISES, ranges=T.RANGES, passes=T.PASSES,
                          floors=T.FLOORS, n=600, eta="1e-3 * step"),
            hull=dict(seeds=list(range(8))),
            sup=dict(cases=T.SUP_CASES, step=1e-3)),
        laws=laws, minorant=minorant, hull=hull, sup=sup)
    np.savez_compressed(HERE / "laws.npz", **arrays)
    (HERE / "laws.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    size = sum(p.stat().st_size for p in (HERE / "laws.npz", HERE / "laws.json"))
    print(f"{len(laws)} PLDs, {len(arrays)} distinct arrays, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
