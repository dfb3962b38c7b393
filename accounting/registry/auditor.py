"""What an auditor is: the typed ``Protocol`` every registered auditor satisfies.

An auditor tests a privacy claim: of a black-box mechanism from its outputs on two
neighbouring datasets D, D′, or of one training run from its canaries' scores. It
offers one or more of four entry points (``offered_methods`` lists them;
``primary_methods`` those it is the natural choice for):

* ``audit_samples(x, y, *, epsilon, delta, seed=None, **settings)``: x ~ M(D) and
  y ~ M(D′) as arrays of shape (n, d) (a 1-d array is n outputs of dimension 1);
* ``audit_callable(fn, d0, d1, *, n, epsilon, delta, seed=None, **settings)``: draws
  n outputs ``fn(d0, rng)`` and n outputs ``fn(d1, rng)`` (a numpy Generator ``rng``
  seeded from ``seed``) and audits them;
* ``audit_scores(scores, inclusion, *, abstain=None, epsilon=None, delta=None,
  level=None, analysis=None, seed=None, **settings)``: the one-run canary audit: per
  canary a score and its 0/1 inclusion bit (each drawn with probability 1/2 before
  the one training run), optionally the number of canaries not guessed; the report
  also carries ``epsilon_lower_bound`` (certified at ``level``) and
  ``max_provable_epsilon`` (what perfect guesses could certify);
* ``audit_sequential(fn=None, d0=None, d1=None, *, epsilon, delta, max_n=None,
  samples=None, seed=None, **settings)``: an anytime-valid sequential audit that
  draws outputs of ``fn`` on d0 and d1 in rounds (or reads ``samples=(x, y)`` in
  order) and stops as soon as the claim is refuted at ``level`` (valid under
  optional stopping), or when it gives up; the report also carries the pairs used.

Each returns an ``AuditReport``: ``rejected`` (bool: the claim is refuted at the
auditor's level), ``to_dict()`` (JSON-serialisable) and ``__str__`` (a table). Bad
input raises ValueError/TypeError naming the parameter; an unsupported setting raises
TypeError. The same ``seed`` gives the same report. ``accounting audit`` passes these
settings only when given on its command line: ``alphas`` (tuple of floats), ``level``,
``bandwidth``, ``progress`` (bool, report progress on stderr), ``reference`` (a
mechanism instance for a parametric bootstrap; it must provide ``sample_noise``),
``shift`` (f(D) − f(D′), list of floats) and ``n_boot``.

The registry checks the shape at registration (``auditor_problems``); the contract
suite ``accounting.testing.AuditorContract`` checks the behaviour (reports,
determinism under a seed, refusal of bad input, power against a non-private pair and
level against an identical one, with samples from ``Mechanism.sample``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["AuditReport", "SampleAuditor", "CallableAuditor", "ScoreAuditor",
           "SequentialAuditor", "Auditor",
           "auditor_problems", "offered_methods", "primary_methods", "AUDITOR_METHODS"]


@runtime_checkable
class AuditReport(Protocol):
    """The result of an audit."""

    rejected: bool

    def to_dict(self) -> dict[str, Any]: ...

    def __str__(self) -> str: ...


@runtime_checkable
class SampleAuditor(Protocol):
    """An auditor of two samples of outputs."""

    def audit_samples(self, x: Any, y: Any, *, epsilon: float, delta: float,
                      seed: int | None = None, **settings: Any) -> AuditReport: ...


@runtime_checkable
class CallableAuditor(Protocol):
    """An auditor that draws the outputs itself from a randomised function."""

    def audit_callable(self, fn: Callable[[Any, np.random.Generator], Any], d0: Any, d1: Any,
                       *, n: int, epsilon: float, delta: float, seed: int | None = None,
                       **settings: Any) -> AuditReport: ...


@runtime_checkable
class ScoreAuditor(Protocol):
    """An auditor of one training run from per-canary scores and inclusion bits."""

    def audit_scores(self, scores: Any, inclusion: Any, *, abstain: int | None = None,
                     epsilon: float | None = None, delta: float | None = None,
                     level: float | None = None, analysis: str | None = None,
                     seed: int | None = None, **settings: Any) -> AuditReport: ...


@runtime_checkable
class SequentialAuditor(Protocol):
    """An auditor that samples in rounds and stops as soon as it can decide."""

    def audit_sequential(self, fn: Callable[[Any, np.random.Generator], Any] | None = None,
                         d0: Any = None, d1: Any = None, *, epsilon: float, delta: float,
                         max_n: int | None = None, samples: Any = None,
                         seed: int | None = None, **settings: Any) -> AuditReport: ...


@runtime_checkable
class Auditor(SampleAuditor, CallableAuditor, Protocol):
    """An auditor with both sampling entry points (the rkrd one has both)."""


#: the entry points, in the order they are described
AUDITOR_METHODS = ("audit_samples", "audit_callable", "audit_scores", "audit_sequential")
_PROTOCOLS: dict[str, type] = {"audit_samples": SampleAuditor,
                               "audit_callable": CallableAuditor,
                               "audit_scores": ScoreAuditor,
                               "audit_sequential": SequentialAuditor}


def offered_methods(auditor: Any) -> tuple[str, ...]:
    """The entry points of ``AUDITOR_METHODS`` that ``auditor`` has, callable, in order."""
    out = []
    for method, protocol in _PROTOCOLS.items():
        try:
            if isinstance(auditor, protocol) and callable(auditor.__getattribute__(method)):
                out.append(method)
        except Exception:  # a hostile attribute: treat as absent
            continue
    return tuple(out)


def primary_methods(auditor: Any) -> tuple[str, ...]:
    """The entry points ``auditor`` is the natural choice for: its ``primary_methods``
    attribute (a tuple of method names) where it declares one, else all it offers;
    always a subset of ``offered_methods``. The command line prefers such an auditor
    when several offer the method."""
    offered = offered_methods(auditor)
    try:
        declared = auditor.__getattribute__("primary_methods")
    except Exception:
        return offered
    if not isinstance(declared, (tuple, list)):
        return offered
    return tuple(m for m in offered if m in declared)


def auditor_problems(auditor: Any) -> str:
    """What keeps ``auditor`` from being an auditor ("" if nothing): it must satisfy
    ``SampleAuditor``, ``CallableAuditor``, ``ScoreAuditor`` or ``SequentialAuditor``
    (or several), with
    callable entry points."""
    present, broken = [], []
    for method, protocol in _PROTOCOLS.items():
        try:
            if not isinstance(auditor, protocol):
                continue
            bound = auditor.__getattribute__(method)
        except Exception:  # a hostile attribute: treat as absent
            continue
        present.append(method)
        if bound is None or not callable(bound):
            broken.append(method)
    if broken:
        return f"has {', '.join(broken)} not callable"
    if not present:
        return f"has neither {' nor '.join(AUDITOR_METHODS)}"
    return ""
