"""Every built-in mechanism, and a third-party-style one, against ``accounting.testing``."""

from __future__ import annotations

import importlib.metadata
import types

import attrs
import numpy as np
import pytest

import accounting
from accounting import PLD, AdditiveNoise, hookimpl, make_registry
from accounting.pairs.mechanism import positive
from accounting.testing import MechanismContract

NAN = float("nan")


def _make(name: str, **params):
    return accounting.default_registry().mechanism(name)(**params)


class TestGaussianContract(MechanismContract):
    mechanism = _make("gaussian", sigma=2.0)
    bad_parameters = [dict(sigma=-1.0), dict(sigma=NAN), dict(sigma=-0.0 - 1e-300),
                      dict(sigma="2")]


class TestLaplaceContract(MechanismContract):
    mechanism = _make("laplace", b=2.0)
    bad_parameters = [dict(b=-1.0), dict(b=NAN), dict(b=1e-300)]


class TestRandomizedResponseContract(MechanismContract):
    mechanism = _make("randomized_response", p=0.75)
    bad_parameters = [dict(p=1.5), dict(p=NAN), dict(p=-0.1), dict(p=1.0)]


class TestSubsampledGaussianContract(MechanismContract):
    mechanism = _make("subsampled_gaussian", q=0.1, sigma=1.5)
    bad_parameters = [dict(q=1.5), dict(q=NAN), dict(sigma=-1.0), dict(sigma=NAN)]


class TestSubsampledLaplaceContract(MechanismContract):
    mechanism = _make("subsampled_laplace", q=0.1, b=2.0)
    bad_parameters = [dict(q=-0.1), dict(q=NAN), dict(b=1e-3), dict(b=NAN)]


class TestDiscreteGaussianContract(MechanismContract):
    mechanism = _make("discrete_gaussian", sigma=3.0)
    bad_parameters = [dict(sigma=-3.0), dict(sigma=NAN), dict(sensitivity=0.5)]


class TestDiscreteLaplaceContract(MechanismContract):
    mechanism = _make("discrete_laplace", scale=2.0)
    bad_parameters = [dict(scale=-0.5), dict(scale=NAN), dict(sensitivity=1.5),
                      dict(scale=1e-9)]


class TestGeneralisedGaussianContract(MechanismContract):
    mechanism = _make("generalised_gaussian", beta=1.5, scale=2.0)
    bad_parameters = [dict(beta=-1.0), dict(beta=NAN), dict(scale=1e-5), dict(scale=NAN)]


class TestStudentTContract(MechanismContract):
    mechanism = _make("student_t", nu=10.0, scale=2.0)
    bad_parameters = [dict(nu=-1.0), dict(nu=NAN), dict(scale=-2.0)]


class TestGaussianMixtureContract(MechanismContract):
    mechanism = _make("gaussian_mixture", weights=(0.5, 0.5), means=(0.0, 0.5),
                      scales=(1.5, 1.5))
    bad_parameters = [dict(weights=(0.5, -0.5)), dict(means=(0.0, NAN)),
                      dict(scales=(1.5, 0.0)), dict(weights="ab")]


class TestPoissonSubsampledContract(MechanismContract):
    # a base with a CGF but no density or law: the labelled binomial/Taylor RDP bounds
    mechanism = _make("poisson_subsampled", base=_make("discrete_gaussian", sigma=2.0), q=0.1)
    bad_parameters = [dict(q=-1e-3), dict(q=NAN), dict(base="gaussian"),
                      dict(base=_make("gaussian", sigma=1.0, neighbouring="replace_one"))]


class TestSampledWithoutReplacementContract(MechanismContract):
    mechanism = _make("sampled_without_replacement",
                      base=_make("laplace", b=2.0, neighbouring="replace_one"),
                      batch_size=10, dataset_size=100)
    bad_parameters = [dict(batch_size=-1), dict(batch_size=101), dict(dataset_size=NAN),
                      dict(base=_make("laplace", b=2.0))]


class TestShuffledContract(MechanismContract):
    # a non-exact pair: the base's curves above, the max-statistic lower pair below
    mechanism = _make("shuffled", base=_make("gaussian", sigma=1.0), batch_size=10,
                      dataset_size=100)
    bad_parameters = [dict(batch_size=0), dict(batch_size=101), dict(dataset_size=NAN),
                      dict(drop_last="yes"), dict(base="gaussian"),
                      dict(base=_make("gaussian", sigma=1.0, neighbouring="replace_one"))]


class TestRandomAllocationContract(MechanismContract):
    mechanism = _make("random_allocation", base=_make("gaussian", sigma=1.0), steps=4)
    bad_parameters = [dict(steps=0), dict(steps=2.5), dict(selected=5), dict(base="gaussian"),
                      dict(base=_make("gaussian", sigma=1.0, neighbouring="replace_one")),
                      dict(resolution=0.0)]


def test_every_builtin_mechanism_has_a_contract_class():
    covered = {cls.mechanism.name for cls in globals().values()
               if isinstance(cls, type) and issubclass(cls, MechanismContract)
               and cls is not MechanismContract and cls.mechanism is not None}
    # Only this distribution's own entry points: a third-party plugin installed beside
    # us is not ours to cover.
    dist = importlib.metadata.packages_distributions()["accounting"][0]
    ours = {ep.module.partition(".")[0] for ep in importlib.metadata.distribution(dist).entry_points
            if ep.group == accounting.registry.registry.ENTRY_POINT_GROUP}
    builtin = {name for name, cls in accounting.default_registry().mechanisms.items()
               if cls.__module__.partition(".")[0] in ours}
    assert builtin, "no built-in mechanism found among this distribution's entry points"
    assert builtin <= covered, sorted(builtin - covered)


# ------------------------------------------------------- third-party style
@attrs.frozen
class LogisticNoise(AdditiveNoise):
    """Logistic noise of scale s: log-density −x/s − 2 log(1 + e^{−x/s})."""

    name = "logistic_contract"
    s: float = attrs.field(validator=positive)

    def log_density(self, x):
        z = np.asarray(x, dtype=float) / self.s
        return -np.abs(z) - 2.0 * np.log1p(np.exp(-np.abs(z)))

    def noise_width(self) -> float:
        return self.s


_REGISTRY = make_registry(entry_points=False)
_REGISTRY.register_plugin(types.SimpleNamespace(
    accounting_register_mechanisms=hookimpl(lambda register: register(LogisticNoise))),
    "third-party-logistic")


class TestThirdPartyLogisticContract(MechanismContract):
    mechanism = _REGISTRY.mechanism("logistic_contract")(s=2.0)
    bad_parameters = [dict(s=-1.0), dict(s=NAN), dict(sensitivity=-1.0)]


def test_third_party_mechanism_is_registered_and_bracketed():
    assert _REGISTRY.mechanism_sources["logistic_contract"] == "third-party-logistic"
    # logistic loss is bounded by Δ/s: the profile vanishes beyond ε = 0.5
    pld = TestThirdPartyLogisticContract.mechanism.curve(PLD, step=1e-3)
    assert float(pld.delta(0.51, "max")) <= 1e-9
    assert float(pld.delta(0.4, "max", "lower")) > 0.0


def test_contract_detects_unvalidated_parameters():
    @attrs.frozen
    class Unchecked(AdditiveNoise):
        name = "unchecked_contract"
        s: float = 1.0

        def log_density(self, x):
            return -np.abs(np.asarray(x, dtype=float)) / self.s

    case = type("Case", (MechanismContract,), dict(mechanism=Unchecked(s=1.0),
                                                   bad_parameters=[dict(s=-1.0)]))()
    with pytest.raises(pytest.fail.Exception):
        case.test_parameters_validated()


# ------------------------------------------- issue 15 mechanisms (their own test modules)
# Their contract classes live beside their specific tests; bound here under private
# names (pytest does not collect them twice) so the coverage checks above see them.
from test_approx_dp import (TestApproxDPCompositionContract as _ApproxDPComposition,  # noqa: E402
                            TestApproxDPContract as _ApproxDP,
                            TestZCDPGuaranteeContract as _ZCDPGuarantee)
from test_kary_randomized_response import TestKaryRRContract as _KaryRR  # noqa: E402
from test_truncated_discrete_gaussian import (  # noqa: E402
    TestTruncatedDiscreteGaussianContract as _TruncatedDiscreteGaussian)
from test_mixture_of_gaussians import TestMixtureOfGaussiansContract as _MixtureOfGaussians  # noqa: E402,E501
from test_mechanism_mixture import TestMechanismMixtureContract as _MechanismMixture  # noqa: E402
from test_poisson_replace_one import (  # noqa: E402
    TestPoissonReplaceOneContract as _PoissonReplaceOne,
    TestPoissonReplaceOneLaplaceContract as _PoissonReplaceOneLaplace,
    TestTruncatedPoissonContract as _TruncatedPoisson)
from test_tree_aggregation import (  # noqa: E402
    TestTreeAggregationContract as _TreeAggregation,
    TestTreeAggregationMultiEpochContract as _TreeAggregationMultiEpoch)
from test_bounded_range import (  # noqa: E402
    TestBoundedRangeContract as _BoundedRange,
    TestExponentialMechanismContract as _ExponentialMechanism,
    TestPermuteAndFlipContract as _PermuteAndFlip)
from test_repeat_and_select import TestRepeatAndSelectContract as _RepeatAndSelect  # noqa: E402,F401
