"""Bad input to the RKRD auditor: clear errors, the user's exceptions named as theirs,
memory refused before it is allocated."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

import accounting
from accounting_rkrd import MechanismError, audit_callable, audit_samples
from accounting_rkrd.resources import (DEFAULT_MEMORY_BUDGET, MemoryBudgetError,
                                       check_memory, kernel_bytes, thread_limit)

GOOD = np.random.default_rng(0).normal(size=(40, 2))


@pytest.mark.parametrize("x,y,exc,match", [
    (np.empty((0, 2)), GOOD, ValueError, r"x is empty \(shape \(0, 2\)\)"),
    (np.array([]), GOOD, ValueError, "x is empty"),
    (GOOD, np.empty((5, 0)), ValueError, "y is empty"),
    (GOOD[:1], GOOD, ValueError, r"x must hold n >= 2 samples .* n = 1"),
    (GOOD[:3], GOOD, ValueError, r"n >= 4 samples for the split"),
    (np.full((40, 2), np.nan), GOOD, ValueError, "x must not contain NaN"),
    (GOOD, np.full((40, 2), np.inf), ValueError, "y must be finite"),
    (GOOD, np.zeros((40, 3)), ValueError, "same dimension d"),
    (np.zeros((4, 2, 2)), GOOD, ValueError, r"shape \(n, d\)"),
    (GOOD + 1j, GOOD, TypeError, "x must be real-valued, got a complex array"),
    (GOOD, GOOD.astype(object), TypeError, "y must be .* got an object array"),
    (GOOD > 0, GOOD, TypeError, "got a boolean array"),
    (np.array([["a", "b"]] * 5), GOOD, TypeError, "got a string array"),
    ([[1.0, 2.0], [3.0]], GOOD, TypeError, "x must be an array of real numbers"),
])
def test_bad_samples(x, y, exc, match):
    with pytest.raises(exc, match=match):
        audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=0)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(witnesses=("threshold", "oracle")), ValueError, "'oracle'"),
    (dict(witnesses=()), ValueError, "non-empty selection"),
    (dict(witnesses=3), TypeError, "sequence of family names"),
    (dict(rkrdp="yes"), TypeError, "rkrdp must be None, True or False"),
    (dict(sweep=1), TypeError, "sweep must be None, True or False"),
    (dict(threads=0), ValueError, "threads must be an integer >= 1"),
    (dict(memory_budget=-1.0), ValueError, r"memory_budget must be in \(0"),
    (dict(kernel_points=2), ValueError, "kernel_points must be an integer >= 4"),
    (dict(n_thresholds=0), ValueError, "n_thresholds must be an integer >= 1"),
    (dict(level=1.5), ValueError, r"level must be in \(0, 1\)"),
])
def test_bad_settings(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        audit_samples(GOOD, GOOD + 1.0, epsilon=1.0, delta=1e-3, seed=0, **kwargs)


def test_claim_forms_are_exclusive():
    with pytest.raises(TypeError, match="give the claim as epsilon= and delta="):
        audit_samples(GOOD, GOOD, seed=0)
    with pytest.raises(TypeError, match="give the claim as epsilon= and delta="):
        audit_samples(GOOD, GOOD, epsilon=1.0, seed=0)
    g = accounting.mechanism("gaussian", sigma=1.0)
    with pytest.raises(TypeError, match="not both"):
        audit_samples(GOOD, GOOD, epsilon=1.0, delta=1e-3, claim=g, seed=0)
    with pytest.raises(TypeError, match="claim must be a registered mechanism"):
        audit_samples(GOOD, GOOD, claim=3.0, seed=0)


class Boom(Exception):
    """The user's own exception type."""


def test_a_raising_mechanism_is_reported_as_the_users_error():
    def mechanism(data, rng):
        if rng.random() < 0.5:
            raise Boom("my release step failed")
        return [data]

    with pytest.raises(MechanismError) as info:
        audit_callable(mechanism, 0.0, 1.0, n=20, epsilon=1.0, delta=1e-3, seed=0)
    err = info.value
    assert isinstance(err, ValueError)
    assert isinstance(err.original, Boom) and err.__cause__ is err.original
    assert "raised Boom on d0" in str(err) and "my release step failed" in str(err)
    assert "draw " in str(err)


def test_system_exit_in_the_mechanism_does_not_end_the_audit_silently():
    def mechanism(data, rng):
        raise SystemExit(0)

    with pytest.raises(MechanismError, match="raised SystemExit"):
        audit_callable(mechanism, 0.0, 1.0, n=10, epsilon=1.0, delta=1e-3, seed=0)


@pytest.mark.parametrize("output,exc,match", [
    (lambda d, r: [1.0 + 2.0j], TypeError, "complex"),
    (lambda d, r: None, TypeError, "vector of real numbers"),
    (lambda d, r: [], ValueError, "empty output"),
    (lambda d, r: [np.inf], ValueError, "non-finite output"),
    (lambda d, r: np.array([object()]), TypeError, "object array"),
])
def test_bad_mechanism_outputs(output, exc, match):
    with pytest.raises(exc, match=match):
        audit_callable(output, 0.0, 1.0, n=10, epsilon=1.0, delta=1e-3, seed=0)


def test_a_bad_claim_fails_before_any_draw():
    calls = []

    def mechanism(data, rng):
        calls.append(1)
        return [data]

    with pytest.raises(TypeError, match="give the claim"):
        audit_callable(mechanism, 0.0, 1.0, n=10, epsilon=1.0, seed=0)
    assert calls == []


def test_memory_estimate_and_refusal_before_allocation():
    assert kernel_bytes(1000, 1000) == 8 * 9 * 10 ** 6
    assert DEFAULT_MEMORY_BUDGET == 2 * 2 ** 30
    # n = 40 000 per side: the n × n statistics would need about 107 GiB
    with pytest.raises(MemoryBudgetError, match=r"needs about 107 GiB .* sweep=False"):
        check_memory("the sweep", kernel_bytes(40000, 40000), DEFAULT_MEMORY_BUDGET,
                     "pass sweep=False")
    x = np.random.default_rng(1).normal(size=(600, 2))
    tracemalloc.start()
    try:
        with pytest.raises(MemoryBudgetError, match=r"sweep .* needs about 24.7 MiB .*"
                           r"above memory_budget = 9.54 MiB; pass sweep=False.*"
                           r"or raise memory_budget"):
            audit_samples(x, x + 1.0, epsilon=1.0, delta=1e-3, seed=0, sweep=True,
                          memory_budget=1e7)
        assert tracemalloc.get_traced_memory()[1] < 5e6   # refused before the Grams
    finally:
        tracemalloc.stop()
    with pytest.raises(MemoryBudgetError, match="rkrdp=False"):
        audit_samples(x, x + 1.0, epsilon=0.0, delta=0.5, seed=0, alphas=(2.0,),
                      memory_budget=1e6, kernel_points=50, sweep=False)
    with pytest.raises(MemoryBudgetError, match="lower kernel_points"):
        audit_samples(x, x + 1.0, epsilon=1.0, delta=1e-3, seed=0, memory_budget=1e5,
                      sweep=False)


def test_large_n_needs_no_gram_matrix():
    """n = 20 000 per side in one dimension: an n × n Gram matrix alone would be 3.2 GB;
    the audit stays linear in n and takes seconds."""
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=20000) + 1.0, rng.normal(size=20000)
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        rep = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=3)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 400 * 2 ** 20
    assert rep.sweep is None and rep.statistics is None and rep.rkrdp.held_out_statistics is None
    assert rep.rejected                       # N(1, 1) against N(0, 1) is far from ε = 1
    assert seconds < 120                      # generous: the machine is shared


def test_thread_limit_caps_blas_when_threadpoolctl_is_installed():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    np.linalg.eigh(np.eye(3))          # make sure a BLAS is loaded
    with thread_limit(1):
        infos = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert infos and all(i["num_threads"] == 1 for i in infos)
    with thread_limit(None):
        pass


def test_a_huge_epsilon_is_a_claim_no_audit_can_reject_not_an_error():
    x = np.random.default_rng(3).normal(size=(60, 1))
    rep = audit_samples(x, x + 100.0, epsilon=800.0, delta=1e-3, seed=0)
    assert not rep.rejected and rep.threshold_vacuous
    assert "underflows" in rep.rkrdp.status
    assert rep.detectable_epsilon < 800.0 and "use more samples" in rep.verdict()
    # the claimed trade-off of (800, δ) is 0 at every a > 0 and 1 − δ at a = 0
    from accounting_rkrd import EpsDeltaClaim
    np.testing.assert_array_equal(EpsDeltaClaim(800.0, 1e-3).beta(np.array([0.0, 1e-300, 0.5])),
                                  [1 - 1e-3, 0.0, 0.0])


def test_a_huge_n_is_refused_after_the_first_output():
    calls = []

    def mechanism(data, rng):
        calls.append(1)
        return np.zeros(1000)

    with pytest.raises(MemoryBudgetError, match=r"10000000 outputs of length 1000 .* lower n"):
        audit_callable(mechanism, 0, 1, n=10 ** 7, epsilon=1.0, delta=1e-3, seed=0)
    assert len(calls) == 1


def test_coincident_and_discrete_outputs_do_not_break_the_audit():
    """Most pairs coincide: the kernel families get no scale, the others still run."""
    from accounting_rkrd.kernel import KernelWarning
    zeros = np.zeros((50, 2))
    with pytest.warns(KernelWarning):
        rep = audit_samples(zeros, zeros, epsilon=1.0, delta=1e-3, seed=1)
    assert not rep.rejected and rep.witness.family == "threshold"
    rng = np.random.default_rng(4)
    x = (rng.random(2000) < 0.95).astype(float)   # P(0) = 0.05 against Q(0) = 0.01:
    y = (rng.random(2000) < 0.99).astype(float)   # ε = log 5 at δ = 0
    rep = audit_samples(x, y, epsilon=0.1, delta=1e-6, seed=1)
    assert rep.rejected and 0.1 < rep.epsilon_lower_bound <= np.log(5.0)


def test_coincident_samples_warn_and_a_collapsed_bandwidth_is_refused():
    """All samples at one point: a KernelWarning, kept in the report (and its saved
    form); a bandwidth beyond the data's usable range is a ValueError naming it, in
    the auditor and in the estimator (before: ZeroDivisionError at h = 1e-300)."""
    from accounting_rkrd import AuditReport
    from accounting_rkrd.estimator import rkrd
    from accounting_rkrd.kernel import KernelWarning, usable_bandwidths
    zeros = np.zeros((50, 2))
    with pytest.warns(KernelWarning, match="all distances 0"):
        rep = audit_samples(zeros, zeros, epsilon=1.0, delta=1e-3, seed=1)
    assert not rep.rejected and len(rep.warnings) == 1 and "collapses" in rep.warnings[0]
    assert AuditReport.from_dict(rep.to_dict(exact=True)).warnings == rep.warnings
    lo, hi = usable_bandwidths(1.0)
    assert lo == 1.0 / np.sqrt(708.0) and hi == 2.0 ** 26
    # at the ends the kernel exp(−d²/h²) of the typical pair is a normal float below 1
    assert np.finfo(float).tiny < np.exp(-(1.0 / lo) ** 2) and np.exp(-(1.0 / hi) ** 2) < 1.0
    assert usable_bandwidths(1e-200)[0] > usable_bandwidths(1e-200)[1]   # beyond float64
    x = np.random.default_rng(3).normal(size=(60, 2))
    for h in (1e-300, 1e-3, 1e300):
        with pytest.raises(ValueError, match=r"bandwidth \(--bandwidth\) = .*usable range"):
            audit_samples(x, x + 1.0, epsilon=1.0, delta=1e-3, seed=1, bandwidth=h)
        with pytest.raises(ValueError, match=r"bandwidth \(--bandwidth\) = .*usable range"):
            rkrd(x, x + 1.0, 2.0, 1e-2, bandwidth=h)
    # distances whose squares overflow: no bandwidth (the median heuristic's included)
    with pytest.raises(ValueError, match="beyond what an RBF kernel can resolve"):
        audit_samples(x * 1e160, (x + 1.0) * 1e160, epsilon=1.0, delta=1e-3, seed=1)
