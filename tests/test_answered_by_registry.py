"""``Curve.answered_by(query, registry=…)``: a curve's derived queries converted by a
private registry's converters, made once per registry and kept.

The test asks through a private registry while the process-wide one cannot be
consulted (it is replaced by a function that fails), and checks the numbers against
the default registry's conversion and the closed form of the Gaussian.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

import accounting
from accounting import PrivacyProfile, TradeOff, ZCDP, make_registry


def gaussian_delta(mu, eps):
    """δ(ε) of μ-GDP (Balle and Wang 2018, arXiv:1805.06530, Thm 8)."""
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def test_answered_by_uses_the_registry_it_is_given(monkeypatch):
    reg = make_registry(entry_points=False)
    prof = accounting.mechanism("gaussian", sigma=1.0).curve(PrivacyProfile)
    default = prof.answered_by("renyi")               # the process-wide registry's
    import accounting.curves.graph as graph

    def not_the_default():
        raise AssertionError("the process-wide registry was asked")
    monkeypatch.setattr(graph, "default_registry", not_the_default)
    with pytest.raises(AssertionError, match="process-wide"):
        prof.to(TradeOff)                                # the trap is live
    mine = prof.answered_by("renyi", registry=reg)
    assert mine is not default and mine is prof.answered_by("renyi", registry=reg)
    assert mine.provenance == default.provenance
    np.testing.assert_allclose(mine.renyi([2.0, 4.0]), default.renyi([2.0, 4.0]), rtol=1e-12)
    assert prof.explain("beta", registry=reg) == prof.answered_by("beta", registry=reg).provenance
    # a native query is the curve itself, whatever the registry
    assert prof.answered_by("delta", registry=reg) is prof
    # another registry gets its own conversion, never the one kept for the first
    other = make_registry(entry_points=False)
    assert prof.answered_by("renyi", registry=other) is not mine


def test_a_private_registry_converts_a_zcdp_curve_soundly():
    """ρ = 1/2 (the Gaussian of μ = 1): δ(ε) by the private registry's conversion lies
    on or above the Gaussian's closed form (a sound bound for every ρ-zCDP pair)."""
    reg = make_registry(entry_points=False)
    z = ZCDP.symmetric(0.5)                              # the Gaussian of μ = 1
    prof = z.answered_by("delta", registry=reg)
    eps = np.array([0.5, 1.0, 2.0])
    assert isinstance(prof, PrivacyProfile)
    assert np.all(prof.delta(eps) >= gaussian_delta(1.0, eps) - 1e-12)
    with pytest.raises(ValueError, match="query must be one of"):
        z.answered_by("gamma", registry=reg)
