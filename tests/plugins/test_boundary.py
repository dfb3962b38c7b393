"""The plugin boundary: specialisations through the registry (import order never
changes a result), declared primitives (no probing), names of parameters."""

from __future__ import annotations

import json
import math
import pathlib
import re
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest
from scipy.optimize import brentq

import accounting
from accounting import PluginError, hookimpl, make_registry
from accounting.pairs.pair import OPTIONAL_PRIMITIVES, Pair, discrete_pair
from accounting.registry.registry import specialisation_name

ROOT = pathlib.Path(__file__).resolve().parents[2]

# ------------------------------------------------------------ import order
_PROGRAM = r"""
import importlib, json, sys
import numpy as np
for module in sys.argv[1:]:
    importlib.import_module(module)
from accounting.registry.registry import default_registry
from accounting.curves.rdp import RDP
reg = default_registry()
g = reg.mechanism("gaussian")(sigma=1.0)
pair = reg.mechanism("poisson_subsampled")(base=g, q=0.01).pair()
rdp = pair.curve(RDP)
print(json.dumps({"class": type(pair).__name__,
                  "rdp": [float(v).hex() for v in rdp.rdp(np.array([2.0, 8.0]))],
                  "delta": float(pair.profile(1.0)).hex()}))
"""

_MODULES = ["accounting_mechanisms.subsampling", "accounting_mechanisms.subsampled_gaussian",
            "accounting_mechanisms.gaussian", "accounting_mechanisms.laplace"]
_ORDERS = {
    "none imported": [],
    "generic wrapper first": ["accounting_mechanisms.subsampling"],
    "specialisation first": list(reversed(_MODULES)),
}


def test_import_order_never_changes_a_result():
    """The same pair class and the same numbers, to the last bit, whichever plugin
    modules were imported before, and in whatever order (fresh interpreters)."""
    procs = {name: subprocess.Popen([sys.executable, "-c", _PROGRAM, *mods], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, mods in _ORDERS.items()}
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{name}: {err[-2000:]}"
        results[name] = json.loads(out.strip().splitlines()[-1])
    first = results["none imported"]
    assert first["class"] == "SubsampledGaussianPair"
    for name, res in results.items():
        assert res == first, f"{name}: {res} != {first}"
    # and in this process, through the registry
    pair = accounting.mechanism("poisson_subsampled", base=accounting.mechanism(
        "gaussian", sigma=1.0), q=0.01).pair()
    assert type(pair).__name__ == first["class"]


# -------------------------------------------------------- specialisations
def _wrapper_classes():
    from accounting_mechanisms.gaussian import GaussianPair
    from accounting_mechanisms.subsampled_gaussian import SubsampledGaussianPair
    from accounting_mechanisms.subsampling import PoissonSubsampledPair
    return PoissonSubsampledPair, GaussianPair, SubsampledGaussianPair


def test_the_builtin_specialisation_is_registered_and_resolved():
    wrapper, base, special = _wrapper_classes()
    reg = accounting.default_registry()
    name = specialisation_name(wrapper, base)
    assert dict(reg.listing()["specialisations"])[name] == "subsampled_gaussian"
    assert reg.specialisation(wrapper, base(1.0)) is special
    # an exact type match: a subclass of the base pair is not specialised
    sub = type("MyGaussianPair", (base,), {})
    assert reg.specialisation(wrapper, sub(1.0)) is wrapper
    # a registry without plugins specialises nothing
    core = make_registry(entry_points=False)
    assert core.specialisation(wrapper, base(1.0)) is wrapper


def _plugin(register_fn):
    return types.SimpleNamespace(accounting_register_specialisations=hookimpl(register_fn))


def test_a_third_party_cannot_take_a_builtin_specialisation():
    wrapper, base, special = _wrapper_classes()
    other = type("OtherSpecial", (wrapper,), {})
    reg = make_registry()
    with pytest.raises(PluginError, match=r"specialisation name .*GaussianPair\].* already "
                                          r"registered by plugin 'subsampled_gaussian'"):
        reg.register_plugin(_plugin(lambda register: register(wrapper, base, other)),
                            "intruder")
    assert reg.specialisation(wrapper, base(1.0)) is special


def test_two_third_party_claims_on_one_key_are_both_refused():
    wrapper = _wrapper_classes()[0]
    reg = make_registry(entry_points=False)
    a = type("A", (wrapper,), {})
    b = type("B", (wrapper,), {})
    both = _plugin(lambda register: (register(wrapper, Pair, a), register(wrapper, Pair, b))
                   and None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reg.register_plugin(both, "greedy", strict=False)
    assert any("claimed by this plugin more than once" in str(e) for e in reg.errors)
    assert reg.specialisations == {}


@pytest.mark.parametrize("args,message", [
    (("PoissonSubsampledPair", "GaussianPair", "GaussianPair"), "proper subclass"),
    ((int, "GaussianPair", "SubsampledGaussianPair"), "wrapper must be a Pair subclass"),
    (("PoissonSubsampledPair", 3, "SubsampledGaussianPair"), "base must be a Pair subclass"),
])
def test_invalid_specialisations_are_refused(args, message):
    classes = dict(zip(("PoissonSubsampledPair", "GaussianPair", "SubsampledGaussianPair"),
                       _wrapper_classes()))
    real = [classes.get(a, a) if isinstance(a, str) else a for a in args]
    reg = make_registry(entry_points=False)
    with pytest.raises(PluginError, match=message):
        reg.register_plugin(_plugin(lambda register: register(*real)), "bad")


# ------------------------------------------------------ declared primitives
_CORE = ROOT / "accounting"


def test_no_probing_for_primitives_in_the_pairs():
    for name in ("derive.py", "primitives.py", "pair.py", "additive.py"):
        text = (_CORE / "pairs" / name).read_text()
        assert "getattr(" not in text and "hasattr(" not in text, name


def test_no_module_calls_the_private_law():
    """``LawPair.law`` is public; nothing calls a ``_law`` of another object."""
    other = re.compile(r"(?<!self)\._law\(")
    offenders = [str(p.relative_to(ROOT)) for base in (ROOT / "accounting", ROOT / "plugins")
                 for p in base.rglob("*.py") if other.search(p.read_text())]
    assert offenders == []


def test_plugins_do_not_keep_import_time_tables():
    text = (ROOT / "plugins" / "accounting_mechanisms" / "subsampling.py").read_text()
    assert "SPECIALISATIONS" not in text
    boot = (ROOT / "plugins" / "accounting_rkrd" / "bootstrap.py").read_text()
    assert not re.search(r"\bm\.(sigma|b|a|scale|nu|beta)\b", boot)


def test_optional_primitives_default_to_a_clear_error():
    class Bare(Pair):
        def _profile(self, eps, direction):
            return np.zeros_like(eps)

    bare = Bare()
    for name, method in OPTIONAL_PRIMITIVES.items():
        assert not bare.provides(name)
        args = {"cgf": (np.array([1.0]), None), "cgf_lower": (np.array([1.0]), None),
                "cgf_analytic": (np.array([1j]), None), "beta": (np.array([0.5]), None), "noise_density": (),
                "sample": (np.random.default_rng(0), 3), "loss_atoms": (None,)}[name]
        with pytest.raises(NotImplementedError, match=f"does not provide the primitive "
                                                      f"'{name}'"):
            getattr(bare, method)(*args)
    with pytest.raises(ValueError, match="unknown primitive 'cfg'"):
        bare.provides("cfg")


def test_builtin_pairs_declare_what_they_provide():
    m = accounting.mechanism
    gauss = m("gaussian", sigma=1.0).pair()
    assert all(gauss.provides(p) for p in ("cgf", "beta", "noise_density", "sample"))
    assert not gauss.provides("cgf_lower")
    sub = m("subsampled_gaussian", q=0.1, sigma=1.0).pair()
    assert sub.provides("cgf") and sub.provides("cgf_lower") and sub.provides("sample")
    assert not sub.provides("beta") and not sub.provides("noise_density")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        big = m("discrete_laplace", scale=1 / 0.3, sensitivity=5000).pair()
    assert big.provides("cgf") and not big.provides("beta")
    wor = m("sampled_without_replacement", base=m("laplace", b=1.0, neighbouring="replace_one"),
            batch_size=2, dataset_size=10).pair()
    assert wor.provides("cgf") and not wor.provides("sample")
    law = discrete_pair(np.array([0.6, 0.4]), np.array([0.4, 0.6]))
    assert law.provides("cgf") and law.provides("cgf_lower") and law.provides("sample")


# ------------------------------------------------------------------ sampling
_SAMPLED = {
    "gaussian": dict(sigma=1.5),
    "laplace": dict(b=1.5),
    "discrete_gaussian": dict(sigma=2.0),
    "discrete_laplace": dict(scale=2.0),
    "student_t": dict(nu=4.0, scale=1.0),
    "generalised_gaussian": dict(beta=1.5, scale=1.5),
    "gaussian_mixture": dict(weights=(0.3, 0.7), means=(-1.0, 0.5), scales=(1.0, 0.8)),
    "randomized_response": dict(p=0.7),
    "subsampled_gaussian": dict(q=0.2, sigma=0.8),
    "subsampled_laplace": dict(q=0.2, b=0.8),
}


def _optimal_delta(x_loss, y_loss, eps):
    """P̂(L > ε) − e^ε Q̂(L > ε) and its standard error."""
    p, q = np.mean(x_loss > eps), np.mean(y_loss > eps)
    n = x_loss.size
    return p - math.exp(eps) * q, math.sqrt((p * (1 - p) + math.exp(2 * eps) * q * (1 - q)) / n)


@pytest.mark.parametrize("name", sorted(_SAMPLED))
def test_every_builtin_mechanism_samples_its_dominating_pair(name):
    """Mechanism samples and pair samples: the likelihood-ratio test set {L > ε} of the
    dominating pair reproduces δ(ε) within 6 standard errors (n = 200 000)."""
    mech = accounting.mechanism(name, **_SAMPLED[name])
    assert mech.provides("sample")
    pair = mech.pair()
    n = 200_000
    for source in (mech, pair):
        if not source.provides("sample"):
            continue
        x, y = source.sample(np.random.default_rng(5), (n,))
        assert x.shape == y.shape == (n,)
        if source is mech:
            loss = _loss(mech)
        else:
            loss = _pair_loss(pair)
        lx, ly = loss(x), loss(y)
        for eps in (0.0, 0.4, 1.0):
            est, se = _optimal_delta(lx, ly, eps)
            up = float(pair.profile(eps, "forward"))
            lo = float(pair.profile(eps, "forward", bound="lower"))
            assert lo - 6 * se - 1e-9 <= est <= up + 6 * se + 1e-9, (name, source, eps, est, se)


def _loss(mech):
    """L(x) = log dP/dQ of the mechanism's outputs (its own units)."""
    if isinstance(mech, accounting.AdditiveNoise):
        d = mech.sensitivity
        return lambda x: mech.log_density(x - d) - mech.log_density(x)
    if mech.name == "randomized_response":
        e0 = math.log(mech.p / (1 - mech.p))
        return lambda x: np.where(x == 1, e0, -e0)
    sigma = getattr(mech, "sigma", None)
    noise = (lambda x: -0.5 * (x / sigma) ** 2) if sigma is not None \
        else (lambda x: -np.abs(x) / mech.b)
    d, q = mech.sensitivity, mech.q
    return lambda x: np.log1p(q * np.expm1(noise(x - d) - noise(x)))


def _pair_loss(pair):
    from accounting.pairs.pair import FinitePair
    if isinstance(pair, FinitePair):
        with np.errstate(divide="ignore"):
            ratio = np.log(pair.p) - np.log(pair.q)
        return lambda x: ratio[x.astype(int)]
    if type(pair).__name__ == "_RRPair":
        e0 = math.log(pair.p / (1 - pair.p))
        return lambda x: (2 * x - pair.count) * e0
    if type(pair).__name__ == "DiscreteGaussianPair":
        d, s2 = pair.sensitivity, pair.sigma ** 2
        return lambda x: (2 * x * d - d * d) / (2 * s2)
    if type(pair).__name__ == "DiscreteLaplacePair":
        return lambda x: pair.a * (np.abs(x) - np.abs(x - pair.sensitivity))
    if pair.provides("noise_density"):
        logf, d, _, _ = pair.noise_density()
        return lambda x: logf(x - d) - logf(x)
    base = pair.base
    logf, d, _, _ = base.noise_density()
    return lambda x: np.log1p(pair.q * np.expm1(logf(x - d) - logf(x)))


# ---------------------------------------------------------------- names
def test_discrete_laplace_scale_grows_with_the_noise_and_a_is_deprecated():
    dl = accounting.default_registry().mechanism("discrete_laplace")
    assert "scale" in dl.parameters() and "a" not in dl.parameters()
    assert dl.deprecated() == {"a": "scale"}
    eps = [float(dl(scale=s).curve(accounting.PLD).epsilon(1e-6)) for s in (0.5, 1.0, 2.0)]
    assert eps[0] > eps[1] > eps[2]                      # more noise, less ε
    for a in (0.3, 1.0 / 3.0, math.log(3.0)):
        with pytest.warns(DeprecationWarning, match="give scale = 1/a"):
            old = accounting.mechanism("discrete_laplace", a=a, sensitivity=2)
        assert old.a == a and old.scale == 1.0 / a      # the rate is kept exactly
        # the same numbers as before the rename: the pair is built from a itself
        assert old.pair() == accounting.default_registry().mechanism("discrete_laplace")(
            scale=1.0 / a, sensitivity=2).pair() or old.pair().a == a
    with pytest.raises(TypeError, match="not both"):
        with pytest.warns(DeprecationWarning):
            dl(scale=1.0, a=1.0)
    with pytest.raises(TypeError, match="missing the parameter scale"):
        dl()


def test_calibrating_the_discrete_laplace_scale():
    """The smallest scale meeting (1, 1e-6) for Δ = 1: at rate a = 1/scale the profile
    is δ(ε) = (1 − e^{ε − a})/(1 + e^{−a}) for ε < a, so a solves δ(1) = 1e-6."""
    cal = accounting.calibrate("discrete_laplace", "scale", epsilon=1.0, delta=1e-6)
    a = brentq(lambda a: -math.expm1(1.0 - a) / (1.0 + math.exp(-a)) - 1e-6, 1.0, 1.1,
               xtol=1e-15)
    assert cal.value == pytest.approx(1.0 / a, rel=2e-6)
    assert cal.value >= 1.0 / a * (1 - 1e-12)           # never below the exact answer


def test_sensitivity_is_called_sensitivity():
    """No parameter, attribute or pair field names the sensitivity ``delta``."""
    pattern = re.compile(r"\bdelta\s*(:\s*int|=\s*attrs\.field|:\s*float\s*=\s*attrs)")
    for path in list((ROOT / "accounting" / "pairs").glob("*.py")) + \
            list((ROOT / "plugins" / "accounting_mechanisms").glob("*.py")):
        assert not pattern.search(path.read_text()), path.name
    from accounting_mechanisms.discrete import DiscreteGaussianPair, DiscreteLaplacePair
    for cls in (DiscreteGaussianPair, DiscreteLaplacePair):
        assert "sensitivity" in {f.name for f in cls.__attrs_attrs__}


# ------------------------------------------------------------ curve kinds
def test_curve_kinds_come_from_the_core_table_and_the_registry():
    from accounting.pairs.derive import CURVE_KINDS, builders
    reg = accounting.default_registry()
    assert reg.listing()["curve kinds"] == [] and reg.curve_kinds == {}   # none from plugins
    assert builders(reg) == CURVE_KINDS and len(CURVE_KINDS) == 6
    core = make_registry(entry_points=False)
    assert builders(core) == builders(reg)
    with pytest.raises(ValueError, match="unknown curve kind .*expected one of PrivacyProfile"):
        accounting.mechanism("gaussian", sigma=1.0).curve(int)


def test_a_plugin_curve_kind_is_built_and_a_builtin_kind_cannot_be_taken():
    from accounting.curves.curve import Curve
    from accounting.pairs.derive import curve_builder

    class Marker(Curve):            # a curve kind of a plugin's own (frozen, as curves are)
        def __init__(self, pair):
            object.__setattr__(self, "pair", pair)

    reg = accounting.default_registry()
    plugin = types.SimpleNamespace(accounting_register_curve_kinds=hookimpl(
        lambda register: register(Marker, lambda pair, **options: Marker(pair))))
    mine = make_registry(entry_points=False)
    mine.register_plugin(plugin, "marker")
    assert mine.curve_builder(Marker)("p").pair == "p"
    assert curve_builder(Marker, mine)("p").pair == "p"
    taken = types.SimpleNamespace(accounting_register_curve_kinds=hookimpl(
        lambda register: register(accounting.PLD, lambda pair, **o: None)))
    thief = make_registry(entry_points=False)
    with pytest.raises(PluginError, match="curve kind name .*PLD.* already registered by "
                                          "plugin 'core.pairs'"):
        thief.register_plugin(taken, "thief")   # refused at registration (core names reserved)
    assert curve_builder(accounting.PLD, thief).__name__ == "_pld"
    assert [e.plugin for e in thief.errors] == ["thief"] and thief.curve_kinds == {}
    assert curve_builder(accounting.PLD, reg).__name__ == "_pld"
