"""The contract test suite of auditor plugins (``accounting.testing.AuditorContract``).

Subclass it in a pytest module with a ``Test…`` name:

    from accounting.testing import AuditorContract

    class TestMyAuditor(AuditorContract):
        auditor = MyAuditor()
        settings = {"n_boot": 19}     # passed to every audit call (optional)
        n = 2000                      # outputs per dataset (optional)

The checks (each skipped for an entry point the auditor does not have):

* the auditor satisfies the ``Auditor`` Protocol's shape
  (``accounting.registry.auditor.auditor_problems`` finds nothing);
* a report has a bool ``rejected``, a JSON-serialisable ``to_dict()`` and a
  non-empty ``str``; the same seed gives the same report (wall-clock entries,
  keys ``seconds`` or ``*_seconds``, aside);
* bad input is refused with ValueError/TypeError: ε < 0, δ outside [0, 1], NaN
  samples, an unknown setting (TypeError);
* power: outputs of two well-separated Gaussians, N(6, 1) against N(0, 1)
  (δ(0.5) ≈ 0.98), refute the claim (ε, δ) = (0.5, 1e-6);
* level: two samples of one law never refute (ε, δ) = (1, 1e-5) at the fixed seeds;
* the entry points it offers (``offered_methods``) are not empty and its primary ones
  are among them.

For a score auditor (``audit_scores``, the one-run canary audit) the same checks run on
n canaries, each included with probability 1/2: a report and its determinism; refusal
of NaN scores, inclusion bits other than 0/1, m = 0, mismatched lengths, ε < 0, δ
outside [0, 1) and an unknown setting; power: scores 6·b + N(0, 1) refute ε = 0.5 at
δ = 1e-6; level: scores independent of the inclusion bits never refute ε = 1 at
δ = 1e-5; and the certified bound never exceeds the largest provable ε.

The samples are drawn with numpy here, so the suite needs no mechanism plugin.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np

from accounting.registry.auditor import (
    AuditReport,
    auditor_problems,
    offered_methods,
    primary_methods,
)
from accounting.vocabulary import AnyArray

__all__ = ["AuditorContract"]

#: seeds of the level check (each must not refute)
LEVEL_SEEDS = (1, 2, 3)


def _separated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return 6.0 + rng.standard_normal((n, 1)), rng.standard_normal((n, 1))


def _same(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 1)), rng.standard_normal((n, 1))


def _canaries(m: int, seed: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """m canary scores shift·b + N(0, 1) with inclusion bits b ~ Bernoulli(1/2)."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, size=m)
    return shift * bits + rng.standard_normal(m), bits


def _without_timings(value: Any) -> Any:
    """A report's dict without wall-clock entries (keys ``seconds`` or ``*_seconds``)."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items()
                if not (k == "seconds" or str(k).endswith("_seconds"))}
    if isinstance(value, (list, tuple)):
        return [_without_timings(v) for v in value]
    return value


def _shifted_output(dataset: float, rng: np.random.Generator) -> np.ndarray:
    return np.array([float(dataset) + rng.standard_normal()])


class AuditorContract:
    """Base class of an auditor's contract tests; subclass it with ``Test…``."""

    auditor: ClassVar[Any] = None
    settings: ClassVar[dict[str, Any]] = {}
    n: ClassVar[int] = 1000

    # ------------------------------------------------------------ helpers
    def _has(self, method: str) -> bool:
        import pytest

        if method not in offered_methods(type(self).auditor):
            pytest.skip(f"the auditor has no {method}")
        return True

    def _samples(self, x: AnyArray, y: AnyArray, epsilon: float, delta: float, seed: int = 0,
                 **extra: Any) -> Any:
        self._has("audit_samples")
        return type(self).auditor.audit_samples(x, y, epsilon=epsilon, delta=delta, seed=seed,
                                                **{**type(self).settings, **extra})

    def _scores(self, scores: AnyArray, inclusion: AnyArray, seed: int = 0,
                **extra: Any) -> Any:
        self._has("audit_scores")
        return type(self).auditor.audit_scores(scores, inclusion, seed=seed,
                                               **{**type(self).settings, **extra})

    # -------------------------------------------------------------- shape
    def test_is_an_auditor(self) -> None:
        problems = auditor_problems(type(self).auditor)
        assert not problems, f"{type(self).auditor!r} {problems}"

    def test_offered_methods(self) -> None:
        offered = offered_methods(type(self).auditor)
        assert offered, "the auditor offers no entry point"
        assert set(primary_methods(type(self).auditor)) <= set(offered)

    def test_report(self) -> None:
        report = self._samples(*_separated(type(self).n, 0), 0.5, 1e-6)
        assert isinstance(report, AuditReport), f"{type(report).__name__} is no AuditReport"
        assert isinstance(report.rejected, (bool, np.bool_)), (
            f"rejected is {type(report.rejected).__name__}, not bool")
        json.dumps(report.to_dict())
        assert str(report).strip(), "the report prints as an empty string"

    def test_same_seed_same_report(self) -> None:
        x, y = _same(type(self).n, 0)
        one = _without_timings(self._samples(x, y, 1.0, 1e-5, seed=7).to_dict())
        two = _without_timings(self._samples(x, y, 1.0, 1e-5, seed=7).to_dict())
        assert json.dumps(one, sort_keys=True, default=str) == \
            json.dumps(two, sort_keys=True, default=str)

    # ---------------------------------------------------------- bad input
    def test_bad_input_is_refused(self) -> None:
        import pytest

        x, y = _same(type(self).n, 0)
        with pytest.raises(ValueError, match="epsilon"):
            self._samples(x, y, -1.0, 1e-5)
        with pytest.raises(ValueError, match="delta"):
            self._samples(x, y, 1.0, 1.5)
        bad = x.copy()
        bad[0, 0] = np.nan
        with pytest.raises(ValueError):
            self._samples(bad, y, 1.0, 1e-5)
        with pytest.raises(TypeError):
            self._samples(x, y, 1.0, 1e-5, no_such_setting=1)

    # ------------------------------------------------------ power and level
    def test_refutes_a_false_claim(self) -> None:
        report = self._samples(*_separated(type(self).n, 0), 0.5, 1e-6)
        assert report.rejected, "outputs N(6, 1) vs N(0, 1) did not refute (0.5, 1e-6)-DP"

    def test_does_not_refute_identical_laws(self) -> None:
        for seed in LEVEL_SEEDS:
            report = self._samples(*_same(type(self).n, seed), 1.0, 1e-5, seed=seed)
            assert not report.rejected, f"two samples of one law refuted (1, 1e-5)-DP " \
                                        f"(seed {seed})"

    def test_audit_callable(self) -> None:
        self._has("audit_callable")
        aud = type(self).auditor
        settings = type(self).settings
        far = aud.audit_callable(_shifted_output, 0.0, 6.0, n=type(self).n, epsilon=0.5,
                                 delta=1e-6, seed=0, **settings)
        assert far.rejected, "fn(d) = d + N(0, 1) at d = 0, 6 did not refute (0.5, 1e-6)-DP"
        same = aud.audit_callable(_shifted_output, 0.0, 0.0, n=type(self).n, epsilon=1.0,
                                  delta=1e-5, seed=0, **settings)
        assert not same.rejected, "one dataset twice refuted (1, 1e-5)-DP"

    # ------------------------------------------------------ score auditors
    def test_scores_report(self) -> None:
        report = self._scores(*_canaries(type(self).n, 0, 6.0), epsilon=0.5, delta=1e-6)
        assert isinstance(report, AuditReport), f"{type(report).__name__} is no AuditReport"
        assert isinstance(report.rejected, (bool, np.bool_))
        json.dumps(report.to_dict())
        assert str(report).strip(), "the report prints as an empty string"
        numbers: Any = report         # a score report also carries the two bounds
        lower, top = numbers.epsilon_lower_bound, numbers.max_provable_epsilon
        assert 0.0 <= lower <= top, f"certified {lower} above the provable {top}"

    def test_scores_same_seed_same_report(self) -> None:
        s, b = _canaries(type(self).n, 0, 1.0)
        one = _without_timings(self._scores(s, b, seed=7, epsilon=1.0, delta=1e-5).to_dict())
        two = _without_timings(self._scores(s, b, seed=7, epsilon=1.0, delta=1e-5).to_dict())
        assert json.dumps(one, sort_keys=True, default=str) == \
            json.dumps(two, sort_keys=True, default=str)

    def test_scores_bad_input_is_refused(self) -> None:
        import pytest

        s, b = _canaries(type(self).n, 0, 1.0)
        nan = s.copy()
        nan[3] = np.nan
        not_bits = b.copy()
        not_bits[2] = 2
        for args, what in (((nan, b), "scores"), ((s, not_bits), "inclusion"),
                           ((s[:0], b[:0]), "m = 0"), ((s, b[:-1]), "length")):
            with pytest.raises(ValueError, match=what):
                self._scores(*args, epsilon=1.0, delta=1e-5)
        with pytest.raises(ValueError, match="epsilon"):
            self._scores(s, b, epsilon=-1.0, delta=1e-5)
        with pytest.raises(ValueError, match="delta"):
            self._scores(s, b, epsilon=1.0, delta=1.5)
        with pytest.raises(TypeError):
            self._scores(s, b, epsilon=1.0, delta=1e-5, no_such_setting=1)

    def test_scores_refute_a_false_claim(self) -> None:
        report = self._scores(*_canaries(type(self).n, 0, 6.0), epsilon=0.5, delta=1e-6)
        assert report.rejected, "canary scores 6·b + N(0, 1) did not refute ε = 0.5"

    def test_scores_do_not_refute_without_signal(self) -> None:
        for seed in LEVEL_SEEDS:
            report = self._scores(*_canaries(type(self).n, seed, 0.0), seed=seed,
                                  epsilon=1.0, delta=1e-5)
            assert not report.rejected, f"scores independent of inclusion refuted ε = 1 " \
                                        f"(seed {seed})"
