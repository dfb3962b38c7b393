"""What an auditor is: the typed ``Protocol`` every registered auditor satisfies.

An auditor tests an (ε, δ)-DP claim about a black-box mechanism from its outputs on
two neighbouring datasets D, D′. It offers one or both of two entry points:

* ``audit_samples(x, y, *, epsilon, delta, seed=None, **settings)``: x ~ M(D) and
  y ~ M(D′) as arrays of shape (n, d) (a 1-d array is n outputs of dimension 1);
* ``audit_callable(fn, d0, d1, *, n, epsilon, delta, seed=None, **settings)``: draws
  n outputs ``fn(d0, rng)`` and n outputs ``fn(d1, rng)`` (a numpy Generator ``rng``
  seeded from ``seed``) and audits them.

Both return an ``AuditReport``: ``rejected`` (bool: the claim is refuted at the
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

__all__ = ["AuditReport", "SampleAuditor", "CallableAuditor", "Auditor", "auditor_problems",
           "AUDITOR_METHODS"]


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
class Auditor(SampleAuditor, CallableAuditor, Protocol):
    """An auditor with both entry points (the built-in one has both)."""


#: the entry points, in the order they are described
AUDITOR_METHODS = ("audit_samples", "audit_callable")
_PROTOCOLS = {"audit_samples": SampleAuditor, "audit_callable": CallableAuditor}


def auditor_problems(auditor: Any) -> str:
    """What keeps ``auditor`` from being an auditor ("" if nothing): it must satisfy
    ``SampleAuditor`` or ``CallableAuditor`` (or both), with callable entry points."""
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
