"""Shared fixtures: cached curves (module work is expensive), hypothesis settings.

Reference values come from ``closed_forms`` (closed forms and quadratures that never
call the library); this directory is put on ``sys.path`` so that every test module,
including those under ``tests/plugins``, can import it.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

import accounting  # noqa: E402
from cli_cases import alarm  # noqa: E402,F401 (a fixture of the command-line suites)
from accounting import PLD, discrete_pair  # noqa: E402

# Under CI the examples are drawn from a fixed seed (a submission must not pass or
# fail by the luck of the draw); a developer's runs keep exploring new ones.
settings.register_profile("accounting", max_examples=25, deadline=None,
                          derandomize=bool(os.environ.get("CI")),
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("accounting")

#: grid step used for PLD constructions throughout the suite (the default is finer)
STEP = 1e-3

#: two different 5-point distributions: an asymmetric finite pair
P5 = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
Q5 = np.array([0.3, 0.25, 0.2, 0.15, 0.1])


@pytest.fixture(scope="session")
def step() -> float:
    return STEP


@pytest.fixture(scope="session")
def gaussian1():
    """The Gaussian mechanism with σ = 1, Δ = 1 (μ = 1)."""
    return accounting.mechanism("gaussian", sigma=1.0)


@pytest.fixture(scope="session")
def gaussian1_pld(gaussian1):
    return gaussian1.curve(PLD, step=STEP)


@pytest.fixture(scope="session")
def subsampled():
    """The Poisson-subsampled Gaussian with q = 0.1, σ = 1: an asymmetric pair."""
    return accounting.mechanism("subsampled_gaussian", q=0.1, sigma=1.0)


@pytest.fixture(scope="session")
def subsampled_pld(subsampled):
    return subsampled.curve(PLD, step=STEP)


@pytest.fixture(scope="session")
def five_point_pair():
    return discrete_pair(P5, Q5)


@pytest.fixture(scope="session")
def five_point_pld(five_point_pair):
    return five_point_pair.curve(PLD, step=STEP)
