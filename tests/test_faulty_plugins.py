"""Faulty and hostile third-party plugins, installed as real distributions.

Each test writes plugin modules and a ``*.dist-info`` directory (METADATA and
``entry_points.txt`` with the group ``accounting``) into a temporary directory put
on ``sys.path``, so ``importlib.metadata`` finds them exactly as it finds a
pip-installed package, and the registry loads them through its real entry-point
path. Command-line checks run ``python -m accounting.cli`` in a subprocess with that
directory on ``PYTHONPATH``.

Whatever a plugin does, the library must name it, keep every built-in answer
unchanged and keep every other plugin working.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

import accounting
from accounting import (PLD, RDP, Accountant, Exactness, PluginError, PrivacyProfile,
                        hookimpl, make_registry)
from accounting.curves.graph import check_curve, edges
from accounting.registry.registry import builtin_distributions
from accounting.pairs.primitives import PrimitiveError, check_primitive_output, culprit

from closed_forms import gaussian_delta

# ------------------------------------------------------------------ installing
_HEADER = """\
import attrs
import numpy as np
from accounting import AdditiveNoise, Exactness, Mechanism, PLD, RDP, PrivacyProfile, hookimpl
from accounting.pairs.mechanism import positive
from accounting.pairs.pair import Pair, discrete_pair
from accounting.curves.profile import FunctionSide
"""


class Site:
    """A directory on sys.path holding installed test distributions."""

    def __init__(self, root: Path):
        self.root = root

    def install(self, dist: str, plugins: dict[str, str]) -> None:
        """Install distribution ``dist`` with one entry point per item of ``plugins``
        (entry-point name → module source); module ``<dist>_<entry point>``."""
        module_prefix = dist.replace("-", "_")
        lines = ["[accounting]"]
        for ep, source in plugins.items():
            module = f"{module_prefix}_{ep}"
            (self.root / f"{module}.py").write_text(_HEADER + textwrap.dedent(source))
            lines.append(f"{ep} = {module}")
        info = self.root / f"{module_prefix}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root), *sys.path])
        env.pop("ACCOUNTING_DEBUG", None)
        return subprocess.run([sys.executable, "-m", "accounting", *args], env=env,
                              capture_output=True, text=True, timeout=300,
                              cwd=self.root)


@pytest.fixture
def site(tmp_path, monkeypatch):
    accounting.default_registry()   # built (and cached) before, so no test plugin leaks into it
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)
    yield Site(root)
    for name in set(sys.modules) - before:   # forget the test plugins' modules
        if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(root)):
            del sys.modules[name]


def _registry():
    """make_registry() with the plugins' warnings collected (not failing the test)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = make_registry()
    return reg, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def _errors_of(reg, plugin: str) -> list[str]:
    return [str(e) for e in reg.errors if e.plugin == plugin]


@pytest.fixture(scope="module")
def clean():
    """The registry of the built-ins alone (no test distribution installed)."""
    reg = make_registry()
    assert not reg.errors, reg.errors
    return reg


def _builtin_names(reg, kind: str) -> set[str]:
    sources = reg.mechanism_sources if kind == "mechanisms" else reg.auditor_sources
    return {n for n, p in sources.items() if p in reg.builtin_plugins}


def _exact_gaussian_epsilon(mu: float, delta: float) -> float:
    """Balle–Wang: the ε at which the μ-GDP profile equals delta (arXiv:1805.06530)."""
    return brentq(lambda e: float(gaussian_delta(mu, e)) - delta, 0.0, 100.0, xtol=1e-13)


EXACT_G10 = _exact_gaussian_epsilon(np.sqrt(10.0), 1e-5)      # σ = 1 composed 10 times


def _assert_builtins_intact(reg, clean) -> None:
    """Every built-in mechanism, auditor and converter is the built-in one, and the
    Gaussian answers correctly."""
    for name in _builtin_names(clean, "mechanisms"):
        assert reg.mechanisms[name] is clean.mechanisms[name], name
        assert reg.mechanism_sources[name] == clean.mechanism_sources[name]
    for name in _builtin_names(clean, "auditors"):
        assert reg.auditors[name] is clean.auditors[name], name
    core = {c.name: c for c in edges(reg) if c.builtin}
    assert {c.name: (c.plugin, c.exactness) for c in edges(clean)} == \
        {n: (c.plugin, c.exactness) for n, c in core.items()}
    gauss = reg.mechanism("gaussian")(sigma=1.0)
    lo, hi = Accountant(step=1e-3).compose(gauss, count=10).epsilon_interval(1e-5)
    assert float(lo) <= EXACT_G10 <= float(hi)
    assert float(hi) - float(lo) < 0.05
    assert float(hi) == pytest.approx(17.8566, abs=0.03)


# ------------------------------------------------------------------ the plugins
IMPOSTOR = """
@attrs.frozen
class FakeGaussian(Mechanism):
    '''Claims the built-in name; its answers (ε ≈ 0.99) would be wrong for a Gaussian.'''
    name = "gaussian"
    sigma: float = attrs.field(default=1.0, validator=positive)

    def pair(self):
        return discrete_pair(np.array([0.6, 0.4]), np.array([0.4, 0.6]), "fake")


@attrs.frozen
class Honest(Mechanism):
    name = "impostor_ok"

    def pair(self):
        return discrete_pair(np.array([0.6, 0.4]), np.array([0.4, 0.6]), "honest")


class FakeAuditor:
    def audit_samples(self, x, y, *, epsilon, delta, seed=None, **settings):
        raise AssertionError("the impostor auditor was called")

    def audit_callable(self, fn, d0, d1, *, n, epsilon, delta, seed=None, **settings):
        raise AssertionError("the impostor auditor was called")


@hookimpl
def accounting_register_mechanisms(register):
    register(FakeGaussian)
    register(Honest)


@hookimpl
def accounting_register_auditors(register):
    register("rkrd", FakeAuditor())


@hookimpl
def accounting_register_converters(register):
    register(PLD, RDP, lambda c, **_: c, Exactness.EXACT, "pld→rdp")
"""


def _one_mechanism(name: str) -> str:
    return f"""
@attrs.frozen
class M(Mechanism):
    name = "{name}"

    def pair(self):
        return discrete_pair(np.array([0.7, 0.3]), np.array([0.3, 0.7]), "{name}")


@hookimpl
def accounting_register_mechanisms(register):
    register(M)
"""


EXITS = """
import sys
sys.exit(3)
"""

INTERRUPTS = """
raise KeyboardInterrupt
"""

INTERRUPTING_HOOK = """
@hookimpl
def accounting_register_mechanisms(register):
    raise KeyboardInterrupt
"""

PRINTS = """
print("hello from a chatty plugin at import")


@attrs.frozen
class Chatty(Mechanism):
    name = "chatty"

    def pair(self):
        return discrete_pair(np.array([0.7, 0.3]), np.array([0.3, 0.7]), "chatty")


@hookimpl
def accounting_register_mechanisms(register):
    print("hello from a chatty plugin's hook")
    register(Chatty)
"""

RAISES = """
raise RuntimeError("this plugin is broken at import")
"""

BAD_SIGNATURE = """
@hookimpl
def accounting_register_mechanisms(reg):
    reg(None)
"""

UNKNOWN_HOOK = """
@hookimpl
def accounting_register_mechanism(register):   # a typo: no such hook
    pass
"""

RAISING_HOOK = """
@hookimpl
def accounting_register_mechanisms(register):
    raise ValueError("kaput in the hook")
"""

GARBAGE = """
@attrs.frozen
class NoName(Mechanism):
    def pair(self):
        return discrete_pair(np.array([0.5, 0.5]), np.array([0.5, 0.5]))


@attrs.frozen
class BadName(NoName):
    name = "Bad Name"


class Abstract(Mechanism):
    name = "abstract_one"


@attrs.frozen
class Fine(NoName):
    name = "garbage_survivor"


class Auditor:
    def audit_samples(self, x, y, **kw):
        pass

    def audit_callable(self, fn, d0, d1, **kw):
        pass


@hookimpl
def accounting_register_mechanisms(register):
    register(42)
    register(NoName)
    register(BadName)
    register(Abstract)
    try:                                      # a refusal cannot be swallowed
        register("not a class")
    except Exception:
        pass
    register(Fine)


@hookimpl
def accounting_register_converters(register):
    register(PLD, RDP)                                             # wrong arity
    register(PLD, RDP, lambda: None, Exactness.EXACT, "no-arg func")
    register(int, RDP, lambda c: c, Exactness.EXACT, "not a curve kind")
    register(PLD, RDP, lambda c: c, "exact", "label as a string")


@hookimpl
def accounting_register_auditors(register):
    return Auditor()                          # returned instead of register("name", ...)
"""

NAN_CONVERTER = """
def nan_profile(rdp, **_):
    return PrivacyProfile(FunctionSide(lambda e, d: np.full(np.shape(e), np.nan)))


@hookimpl
def accounting_register_converters(register):
    register(RDP, PrivacyProfile, nan_profile, Exactness.EXACT, "rdp→profile (nan)")
"""

NAN_MECHANISMS = """
@attrs.frozen
class NanNoise(AdditiveNoise):
    '''A log-density that is NaN in the far tails (beyond any cheap probe).'''
    name = "nan_noise"

    def log_density(self, x):
        x = np.asarray(x, dtype=float)
        return np.where(np.abs(x) > 30, np.nan, -x ** 2 / 2)


@attrs.frozen(eq=False)
class NanPair(Pair):
    exact = True

    def _profile(self, eps, direction):
        return np.where(np.asarray(eps) > 0.5, np.nan, 0.5)

    _profile_lower = _profile


@attrs.frozen
class NanProfile(Mechanism):
    name = "nan_profile"

    def pair(self):
        return NanPair()


@hookimpl
def accounting_register_mechanisms(register):
    register(NanNoise)
    register(NanProfile)
"""

NAN_DENSITIES = """
@attrs.frozen
class NanAtZero(AdditiveNoise):
    '''A Gaussian log-density that is NaN at the single point x = 0.'''
    name = "nan_at_zero"

    def log_density(self, x):
        x = np.asarray(x, dtype=float)
        return np.where(x == 0.0, np.nan, -x ** 2 / 2)


@attrs.frozen
class NanInteger(AdditiveNoise):
    '''Integer noise whose log-pmf is NaN everywhere (its peak is NaN).'''
    name = "nan_integer"
    domain = "integer"

    def log_density(self, x):
        return np.full(np.shape(x), np.nan)


@attrs.frozen
class NoMass(AdditiveNoise):
    '''A log-density that is -inf everywhere: no distribution at all.'''
    name = "no_mass"

    def log_density(self, x):
        return np.full(np.shape(x), -np.inf)


@hookimpl
def accounting_register_mechanisms(register):
    register(NanAtZero)
    register(NanInteger)
    register(NoMass)
"""

NEGATIVE_CGF = """
from accounting.vocabulary import Bound


@attrs.frozen(eq=False)
class SignPair(Pair):
    '''An exact pair whose CGF the test chooses: "negative" K(t) = −t (impossible:
    K(t) ≥ 0 for t ≥ 0), "rounding" K(t) = −1e-13 (within rounding of 0), "lower" the
    Gaussian K(t) = t(t+1)/2 above and −t below, "limit" a declared D_1 of −0.5.'''
    kind: str = "negative"
    exact = True

    def _profile(self, eps, direction):
        return np.clip(0.5 - np.asarray(eps, dtype=float), 0.0, 1.0)

    def _cgf(self, t, direction):
        t = np.asarray(t, dtype=float)
        if self.kind == "negative":
            return -t
        if self.kind == "rounding":
            return np.full(t.shape, -1e-13)
        return t * (t + 1.0) / 2.0

    def cgf_lower(self, t, direction):
        return -np.asarray(t, dtype=float) if self.kind == "lower" else self._cgf(t, direction)

    def _renyi_limit(self, order, direction, side=Bound.UPPER):
        return -0.5 if self.kind == "limit" else None

    def describe(self):
        return f"sign_pair_{self.kind}"


def _mechanism(kind):
    @attrs.frozen
    class M(Mechanism):
        name = f"{kind}_cgf"

        def pair(self):
            return SignPair(kind)
    M.__name__ = M.__qualname__ = f"{kind.title()}Cgf"
    return M


KINDS = ("negative", "rounding", "lower", "limit")
MECHANISMS = {kind: _mechanism(kind) for kind in KINDS}


@hookimpl
def accounting_register_mechanisms(register):
    for cls in MECHANISMS.values():
        register(cls)
"""

#: every faulty plugin: distribution → {entry point: source}
ALL = {
    "aaa-impostor": {"aaa_impostor": IMPOSTOR},
    "twin-one": {"twin_one": _one_mechanism("twin")},
    "twin-two": {"twin_two": _one_mechanism("twin")},
    "dup-a": {"dup_ep": _one_mechanism("dup_a_mech")},
    "dup-b": {"dup_ep": _one_mechanism("dup_b_mech")},
    "shadow": {"gaussian": _one_mechanism("shadow_gaussian")},
    "exits": {"exits_at_import": EXITS},
    "chatty": {"chatty": PRINTS},
    "raises": {"raises_at_import": RAISES},
    "badsig": {"bad_signature": BAD_SIGNATURE},
    "typo": {"unknown_hook": UNKNOWN_HOOK},
    "raising-hook": {"raising_hook": RAISING_HOOK},
    "garbage": {"garbage": GARBAGE},
    "nanconv": {"nan_converter": NAN_CONVERTER},
    "nanmech": {"nan_mechanisms": NAN_MECHANISMS},
}

#: plugin (entry point) → a fragment its error message must contain
EXPECTED_ERRORS = {
    "aaa_impostor": "'gaussian' is already registered by plugin 'gaussian' (built-in)",
    "twin_one": "'twin' is claimed by plugins 'twin_one', 'twin_two'",
    "twin_two": "'twin' is claimed by plugins 'twin_one', 'twin_two'",
    "dup_ep": "used by more than one third-party entry point",
    "gaussian": "the plugin name 'gaussian' is taken by a built-in plugin",
    "exits_at_import": "failed to load (SystemExit: 3)",
    "raises_at_import": "failed to load (RuntimeError: this plugin is broken at import)",
    "bad_signature": "hooks do not match the hook specifications",
    "unknown_hook": "unknown hook(s) accounting_register_mechanism",
    "raising_hook": "raised in accounting_register_mechanisms (ValueError: kaput in the hook)",
    "garbage": "needs a Mechanism subclass, got 42",
}


# ------------------------------------------------------------------ the built-ins
def test_this_distribution_is_found_without_its_name(clean):
    own = builtin_distributions()
    assert own, "the accounting package is not installed as a distribution"
    assert {"gaussian", "laplace", "randomized_response", "subsampled_gaussian"} <= \
        _builtin_names(clean, "mechanisms")
    assert "rkrd" in _builtin_names(clean, "auditors")
    assert {"core", "gaussian", "rkrd"} <= clean.builtin_plugins


# ------------------------------------------------------------------ 1. built-ins win
def test_an_impostor_sorting_first_cannot_take_builtin_names(site, clean):
    site.install("aaa-impostor", {"aaa_impostor": IMPOSTOR})
    reg, warned = _registry()
    with warnings.catch_warnings(record=True) as caught:   # its converter 'pld→rdp' is
        warnings.simplefilter("always")                     # refused where the core's
        edges(reg)                                          # table meets the registry's
    warned += [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    _assert_builtins_intact(reg, clean)
    assert reg.mechanism("gaussian").__module__ == "accounting_mechanisms.gaussian"
    assert type(reg.auditors["rkrd"]).__module__.startswith("accounting_rkrd")
    errors = _errors_of(reg, "aaa_impostor")
    assert len(errors) == 3 and len(reg.errors) == 3
    assert any("mechanism name 'gaussian' is already registered by plugin 'gaussian' "
               "(built-in)" in e for e in errors)
    assert any("auditor name 'rkrd' is already registered by plugin 'rkrd' (built-in)" in e
               for e in errors)
    assert any("converter name 'pld→rdp' is already registered by plugin 'core'" in e
               for e in errors)
    assert all("[distribution aaa-impostor]" in e for e in errors)
    assert all("aaa_impostor" in w for w in warned) and len(warned) == 3
    # its other registration is kept, and named as its own
    assert reg.mechanism_sources["impostor_ok"] == "aaa_impostor"


def test_an_impostor_cannot_change_the_command_line_answer(site):
    site.install("aaa-impostor", {"aaa_impostor": IMPOSTOR})
    run = site.cli("epsilon", "gaussian", "--sigma", "1", "--compose", "10", "--delta", "1e-5",
                   "--accountant", "pld", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    text = json.dumps(data)
    numbers = [float(x) for x in _numbers(data)]
    assert any(abs(x - 17.8566) < 0.03 for x in numbers), text
    assert not any(abs(x - 0.98996) < 1e-3 for x in numbers), text
    assert "aaa_impostor" in run.stderr and "'gaussian'" in run.stderr
    assert "plugin 'gaussian':" not in run.stderr          # the built-in is not blamed


def _numbers(data):
    if isinstance(data, dict):
        for v in data.values():
            yield from _numbers(v)
    elif isinstance(data, list):
        for v in data:
            yield from _numbers(v)
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield data


def test_two_third_parties_claiming_one_name_are_both_refused(site, clean):
    site.install("twin-one", {"twin_one": _one_mechanism("twin")})
    site.install("twin-two", {"twin_two": _one_mechanism("twin")})
    reg, _ = _registry()
    assert "twin" not in reg.mechanisms
    for plugin in ("twin_one", "twin_two"):
        [err] = _errors_of(reg, plugin)
        assert "mechanism name 'twin' is claimed by plugins 'twin_one', 'twin_two'" in err
    _assert_builtins_intact(reg, clean)


def test_two_third_party_entry_points_of_one_name_are_both_refused(site):
    site.install("dup-a", {"dup_ep": _one_mechanism("dup_a_mech")})
    site.install("dup-b", {"dup_ep": _one_mechanism("dup_b_mech")})
    reg, _ = _registry()
    assert not {"dup_a_mech", "dup_b_mech"} & set(reg.mechanisms)
    [err] = _errors_of(reg, "dup_ep")
    assert "dup-a" in err and "dup-b" in err and "none of them is loaded" in err


def test_a_third_party_entry_point_named_like_a_builtin_is_not_even_imported(site):
    marker = site.root / "imported.txt"
    site.install("shadow", {"gaussian": f"open({str(marker)!r}, 'w').close()\n"
                                        + _one_mechanism("shadow_gaussian")})
    reg, _ = _registry()
    assert not marker.exists()
    assert "shadow_gaussian" not in reg.mechanisms
    [err] = _errors_of(reg, "gaussian")
    assert "the plugin name 'gaussian' is taken by a built-in plugin" in err
    assert "[distribution shadow]" in err


def test_run_time_registration_cannot_take_a_name_either():
    reg = make_registry()
    class Auditor:
        def audit_samples(self, x, y, **settings):
            raise AssertionError("the thief's auditor was called")

        audit_callable = audit_samples

    plugin = types.SimpleNamespace(accounting_register_auditors=hookimpl(
        lambda register: register("rkrd", Auditor())))
    with pytest.warns(RuntimeWarning, match="'thief'"):
        with pytest.raises(PluginError, match="'thief'.*auditor name 'rkrd'"):
            reg.register_plugin(plugin, "thief")
    assert type(reg.auditors["rkrd"]).__module__.startswith("accounting_rkrd")


# ------------------------------------------------------------------ 2. converters
def test_a_nan_converter_labelled_exact_never_reaches_an_answer(site, clean, monkeypatch):
    site.install("nanconv", {"nan_converter": NAN_CONVERTER})
    reg, _ = _registry()
    assert not reg.errors                       # registering it is fine
    [edge] = [c for c in reg.converters if c.name == "rdp→profile (nan)"]
    assert edge.plugin == "nan_converter" and not edge.builtin
    rdp = reg.mechanism("gaussian")(sigma=1.0).curve(RDP).self_compose(10)
    # by default the built-in (improved) conversion is used: the plugin edge is not
    default = rdp.to(PrivacyProfile, registry=reg)
    assert default.provenance.path[-1] == "rdp→profile (improved conversion)"
    assert not reg.errors
    # asked for by name: it fails its check, is recorded against its plugin, and the
    # built-in route answers instead
    with pytest.warns(RuntimeWarning, match="nan_converter.*rdp→profile \\(nan\\).*NaN|nan"):
        out = rdp.to(PrivacyProfile, registry=reg, via="rdp→profile (nan)")
    assert out.provenance == default.provenance
    assert float(out.epsilon(1e-5)) == float(default.epsilon(1e-5))
    [err] = _errors_of(reg, "nan_converter")
    assert "labelled exact returned a PrivacyProfile with δ(ε)" in err and "nan" in err
    # the RDP accountant's answer with this registry as the process's: an upper bound,
    # not NaN, above the exact value
    monkeypatch.setattr(accounting.registry.registry, "default_registry", lambda: reg)
    eps = float(Accountant(step=1e-3).compose(reg.mechanism("gaussian")(sigma=1.0), count=10)
                .under("rdp").epsilon(1e-5))
    assert np.isfinite(eps) and EXACT_G10 <= eps < EXACT_G10 + 1.5
    assert len(reg.errors) == 1                 # the plugin edge was not even tried


def test_a_nan_converter_does_not_change_the_command_line_answer(site):
    site.install("nanconv", {"nan_converter": NAN_CONVERTER})
    run = site.cli("epsilon", "gaussian", "--sigma", "1", "--compose", "10", "--delta", "1e-5",
                   "--accountant", "rdp", "--json")
    assert run.returncode == 0, run.stderr
    numbers = list(_numbers(json.loads(run.stdout)))
    assert numbers and not any(np.isnan(x) for x in numbers)
    assert any(EXACT_G10 <= x < EXACT_G10 + 1.5 for x in numbers), run.stdout


def test_a_plugin_edge_is_used_where_no_builtin_path_exists():
    """A third-party curve kind is reached through its plugin's edge; a built-in edge
    wins every tie against a third-party one."""
    reg = make_registry(entry_points=False)

    class Eps0(PrivacyProfile):
        """A profile kind of its own (as a plugin may define)."""

    def to_eps0(profile, **_):
        return Eps0(profile.upper, profile.lower)

    def to_eps0_rival(profile, **_):
        return Eps0(profile.upper, profile.lower)

    reg.register_plugin(types.SimpleNamespace(accounting_register_converters=hookimpl(
        lambda register: register(PrivacyProfile, Eps0, to_eps0, Exactness.EXACT,
                                  "profile→eps0"))), "eps0")
    pld = accounting.mechanism("laplace", b=1.0).curve(PLD, step=1e-3)
    out = pld.to(Eps0, registry=reg)
    assert out.provenance.path[1:] == ("pld→profile", "profile→eps0")
    np.testing.assert_allclose(out.delta([0.0, 0.5, 1.0]), pld.delta([0.0, 0.5, 1.0]))
    # a third-party shortcut PLD → PrivacyProfile, as good as the built-in edge: the
    # built-in edge is still the one taken
    reg.register_plugin(types.SimpleNamespace(accounting_register_converters=hookimpl(
        lambda register: register(PLD, PrivacyProfile, lambda c, **_: c.to(PrivacyProfile),
                                  Exactness.EXACT, "pld→profile (rival)"))), "rival")
    assert pld.to(Eps0, registry=reg).provenance.path[1:] == ("pld→profile", "profile→eps0")
    assert pld.to(PrivacyProfile, registry=reg).provenance.path[1:] == ("pld→profile",)


def test_check_curve_reports_what_is_wrong():
    pld = accounting.mechanism("gaussian", sigma=1.0).curve(PLD, step=1e-2)
    prof = pld.to(PrivacyProfile)
    assert check_curve(prof, PrivacyProfile) is None
    assert check_curve(pld, PLD) is None
    assert check_curve(pld.to(RDP), RDP) is None
    assert check_curve(prof, RDP) == "PrivacyProfile, not RDP"
    from accounting.curves.profile import FunctionSide
    rising = PrivacyProfile(FunctionSide(lambda e, d: np.clip(np.asarray(e) / 20 + 0.5, 0, 1)))
    assert "increases" in check_curve(rising, PrivacyProfile)
    above = PrivacyProfile(FunctionSide(lambda e, d: np.full(np.shape(e), 1.5)))
    assert "not in [0, 1]" in check_curve(above, PrivacyProfile)
    boom = PrivacyProfile(FunctionSide(lambda e, d: 1 / 0))
    assert "fails when queried (ZeroDivisionError" in check_curve(boom, PrivacyProfile)
    from accounting.curves.rdp import CGF
    falling = RDP(CGF.of(lambda t, d: np.sqrt(np.asarray(t))))     # D_α = 1/√(α−1)
    assert "decreases" in check_curve(falling, RDP)


@pytest.mark.parametrize("content", [b"[accounting]\nthis is not valid\n= nothing\n",
                                     b"\xff\xfe garbage [accounting\n"])
def test_unreadable_entry_points_name_their_distribution(site, clean, content):
    site.install("good", {"good": _one_mechanism("good_one")})
    info = site.root / "broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_bytes(content)
    reg, _ = _registry()
    [err] = reg.errors
    assert "broken-0.1.dist-info" in str(err) and "entry points cannot be read" in str(err)
    assert reg.mechanism_sources["good_one"] == "good"
    _assert_builtins_intact(reg, clean)


# ------------------------------------------------------------------ 3. signatures
def test_a_hook_with_the_wrong_signature_is_a_plugin_error(site, clean):
    site.install("badsig", {"bad_signature": BAD_SIGNATURE})
    reg, _ = _registry()
    [err] = _errors_of(reg, "bad_signature")
    assert "hooks do not match the hook specifications" in err and "reg" in err
    _assert_builtins_intact(reg, clean)
    # at run time: the documented PluginError, not pluggy's PluginValidationError
    plugin = types.SimpleNamespace(accounting_register_mechanisms=hookimpl(lambda reg: None))
    with pytest.warns(RuntimeWarning):
        with pytest.raises(PluginError, match="'wrong-args'.*hook specifications") as info:
            reg.register_plugin(plugin, "wrong-args")
    assert info.value.plugin == "wrong-args"


def test_a_misspelt_hook_and_a_raising_hook_are_named(site):
    site.install("typo", {"unknown_hook": UNKNOWN_HOOK})
    site.install("raising-hook", {"raising_hook": RAISING_HOOK})
    reg, _ = _registry()
    [typo] = _errors_of(reg, "unknown_hook")
    assert "unknown hook(s) accounting_register_mechanism;" in typo
    [raised] = _errors_of(reg, "raising_hook")
    assert "raised in accounting_register_mechanisms (ValueError: kaput in the hook)" in raised


def test_mechanisms_works_with_a_bad_signature_plugin(site):
    site.install("badsig", {"bad_signature": BAD_SIGNATURE})
    run = site.cli("mechanisms", "--json")
    assert run.returncode == 0, run.stderr
    errors = json.loads(run.stdout)["errors"]
    assert len(errors) == 1 and "bad_signature" in errors[0]


# ------------------------------------------------------------------ 4. import-time
def test_sys_exit_at_import_is_recorded(site, clean):
    site.install("exits", {"exits_at_import": EXITS})
    reg, _ = _registry()
    [err] = _errors_of(reg, "exits_at_import")
    assert "failed to load (SystemExit: 3)" in err
    _assert_builtins_intact(reg, clean)


def test_sys_exit_at_import_does_not_end_the_command_line(site):
    site.install("exits", {"exits_at_import": EXITS})
    run = site.cli("epsilon", "gaussian", "--sigma", "1", "--compose", "10", "--delta", "1e-5",
                   "--accountant", "pld")
    assert run.returncode == 0, run.stderr
    assert "17.85" in run.stdout
    assert "exits_at_import" in run.stderr and "SystemExit" in run.stderr


def test_keyboard_interrupt_at_import_is_a_plugin_error(site, clean):
    """Raised by the plugin's own code while it is imported (or in a hook), a
    KeyboardInterrupt is that plugin's fault: recorded, the rest still loads."""
    site.install("interrupts", {"interrupts": INTERRUPTS,
                                "interrupting_hook": INTERRUPTING_HOOK})
    site.install("good", {"good": _one_mechanism("good_one")})
    reg, warned = _registry()
    [err] = _errors_of(reg, "interrupts")
    assert "failed to load (KeyboardInterrupt)" in err
    [hook] = _errors_of(reg, "interrupting_hook")
    assert "raised in accounting_register_mechanisms (KeyboardInterrupt)" in hook
    assert reg.mechanism_sources["good_one"] == "good"
    assert len(reg.errors) == 2 and any("'interrupts'" in w for w in warned)
    _assert_builtins_intact(reg, clean)


def test_keyboard_interrupt_at_import_does_not_end_the_command_line(site):
    site.install("interrupts", {"interrupts": INTERRUPTS})
    run = site.cli("epsilon", "gaussian", "--sigma", "1", "--compose", "10", "--delta", "1e-5",
                   "--accountant", "pld")
    assert run.returncode == 0, run.stderr
    assert "17.85" in run.stdout
    assert "'interrupts'" in run.stderr and "KeyboardInterrupt" in run.stderr
    run = site.cli("mechanisms", "--json")
    assert run.returncode == 0, run.stderr
    [err] = json.loads(run.stdout)["errors"]
    assert "plugin 'interrupts': failed to load (KeyboardInterrupt)" in err


def test_a_plugin_that_prints_does_not_corrupt_json(site, capsys):
    site.install("chatty", {"chatty": PRINTS})
    reg, _ = _registry()
    out, err = capsys.readouterr()
    assert "hello" not in out
    assert "at import" in err and "hook" in err
    assert reg.mechanism_sources["chatty"] == "chatty" and not reg.errors
    run = site.cli("mechanisms", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)                       # stdout is JSON and nothing else
    assert "chatty" in {m["name"] for m in data["mechanisms"]}
    assert "hello from a chatty plugin" in run.stderr


# ------------------------------------------------------------------ 5. garbage
def test_garbage_from_hooks_is_refused_item_by_item(site, clean):
    site.install("garbage", {"garbage": GARBAGE})
    reg, _ = _registry()
    errors = _errors_of(reg, "garbage")
    expected = [
        "register() needs a Mechanism subclass, got 42",
        "mechanism class NoName has no name",
        "name 'Bad Name' is not a lower-case identifier",
        "mechanism 'abstract_one' (Abstract) is abstract: it does not implement pair",
        "register() needs a Mechanism subclass, got 'not a class'",
        "converter registration refused: register(source, target, func, exactness, name) "
        "expected",
        "converter 'no-arg func': func must accept the curve as its one positional argument",
        "converter 'not a curve kind': source must be a curve class",
        "converter 'label as a string': exactness must be an Exactness, got 'exact'",
        "accounting_register_auditors returned Auditor instead of calling register(...)",
    ]
    for fragment in expected:
        assert sum(fragment in e for e in errors) == 1, (fragment, errors)
    assert len(errors) == len(expected)
    assert reg.mechanism_sources["garbage_survivor"] == "garbage"   # the valid one is kept
    assert not [c for c in reg.converters if c.plugin == "garbage"]
    assert not [a for a, p in reg.auditor_sources.items() if p == "garbage"]
    _assert_builtins_intact(reg, clean)


# ------------------------------------------------------------------ NaN primitives
def test_check_primitive_output_names_the_mechanism_and_plugin():
    reg = make_registry()
    gauss = reg.mechanism("gaussian")
    x = np.array([0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(check_primitive_output(x / 4, "δ", gauss(sigma=1.0),
                                                         registry=reg), x / 4)
    with pytest.raises(PrimitiveError, match=r"plugin 'gaussian': mechanism 'gaussian': "
                                             r"_profile returned NaN at 2\.0, at 1 of 4 points"):
        check_primitive_output([0.1, 0.2, np.nan, 0.0], "_profile", gauss(sigma=1.0), at=x,
                               registry=reg)
    with pytest.raises(PrimitiveError, match=r"returned 1\.5 .*must be in \[0\.0, 1\.0\]"):
        check_primitive_output([0.1, 1.5], "δ", gauss, lo=0.0, hi=1.0, registry=reg)
    with pytest.raises(PrimitiveError, match="returned str, not an array of floats"):
        check_primitive_output("nope", "log_density", "gaussian", registry=reg)
    # -inf (zero density) and +inf are values, not faults, unless a bound excludes them
    check_primitive_output([-np.inf, np.inf], "log_density", "laplace", registry=reg)
    # a pair's label, or the module of an unregistered class
    assert culprit("laplace", reg) == ("laplace", "laplace")
    assert culprit(gauss(sigma=1.0).pair(), reg)[1] == "gaussian"
    assert culprit(object(), reg) == ("object", "module builtins")


def test_nan_from_a_primitive_is_an_error_naming_the_plugin(site, clean):
    site.install("nanmech", {"nan_mechanisms": NAN_MECHANISMS})
    reg, _ = _registry()
    assert not reg.errors
    for name in ("nan_noise", "nan_profile"):
        mech = reg.mechanism(name)()
        for kind in (PrivacyProfile, PLD, RDP):
            with pytest.raises(PrimitiveError, match=f"plugin 'nan_mechanisms': mechanism"):
                curve = mech.curve(kind)
                # a query that would silently answer (ε = 0 on a NaN profile) must not
                (curve.rdp(2.0) if kind is RDP else curve.epsilon(1e-5))
    _assert_builtins_intact(reg, clean)


def test_a_nan_log_density_is_a_plugin_error_naming_x(site):
    """NaN from ``log_density`` at the probe, in the integer peak or its support
    search, is a PrimitiveError (a PluginError: exit 2) naming the plugin, the
    mechanism and the x, not a ValueError mentioning NaN (reported as internal)."""
    site.install("nandens", {"nan_densities": NAN_DENSITIES})
    reg, _ = _registry()
    assert not reg.errors
    cases = [("nan_at_zero", "log_density returned NaN at x = 0.0, at 1 of 2001 points"),
             ("nan_integer", "log_density returned NaN at x = -1000.0, at 2001 of 2001 "
                             "points"),
             ("no_mass", "log_density is -inf at every x in [-10, 10]")]
    for name, message in cases:
        for kind in (PLD, RDP, PrivacyProfile):
            with pytest.raises(PrimitiveError) as info:
                reg.mechanism(name)().curve(kind)
            assert info.value.plugin == "nan_densities" and info.value.mechanism == name
            assert f"plugin 'nan_densities': mechanism {name!r}: {message}" in str(info.value)
    for name, message in cases[:2]:
        run = site.cli("epsilon", name, "--delta", "1e-5", "--accountant", "rdp")
        assert run.returncode == 2, run.stderr
        assert run.stderr.strip() == (f"accounting: error: plugin 'nan_densities': mechanism "
                                      f"{name!r}: {message}")


def test_a_negative_cgf_is_a_plugin_error_naming_the_order(site, monkeypatch):
    """K(t) = −t would give ε = 0 labelled an upper bound; it is refused, naming the
    plugin, the order and the value (K(t) ≥ 0 for t ≥ 0); −1e-13 is rounding (set to
    0); a negative lower CGF is set to 0 (still a lower bound); a declared D_1 < 0 is
    refused like the CGF."""
    import re
    site.install("signs", {"negative_cgf": NEGATIVE_CGF})
    reg, _ = _registry()
    assert not reg.errors
    monkeypatch.setattr(accounting.registry.registry, "default_registry", lambda: reg)
    rdp = reg.mechanism("negative_cgf")().curve(RDP)
    with pytest.raises(PrimitiveError) as info:
        rdp.rdp(3.0)
    assert info.value.plugin == "negative_cgf"
    assert ("_cgf returned K(t) = -2.0 at t = 2.0 (order α = 3.0, forward), below 0"
            in str(info.value))
    negative = re.compile(r"plugin 'negative_cgf': mechanism '[^']+': _cgf returned K\(t\) = "
                          r"(\S+) at t = (\S+) \(order α = \S+, \w+\), below 0")
    with pytest.raises(PrimitiveError) as info:
        Accountant().compose(reg.mechanism("negative_cgf")(), count=3).under(
            "rdp").epsilon(1e-5)
    found = negative.search(str(info.value))
    assert found is not None and float(found.group(1)) == -float(found.group(2)) < 0
    # within the rounding bound: 0, on both sides, so D_α = 0 exactly
    rounding = reg.mechanism("rounding_cgf")().curve(RDP)
    assert rounding.rdp(np.array([1.5, 2.0, 64.0])).tolist() == [0.0, 0.0, 0.0]
    assert rounding.rdp(2.0, bound="lower") == 0.0
    # a negative lower side is clipped to 0; the upper side is the Gaussian's α/2
    lower = reg.mechanism("lower_cgf")().curve(RDP)
    assert float(lower.rdp(4.0)) == 2.0 and float(lower.rdp(4.0, bound="lower")) == 0.0
    with pytest.raises(PrimitiveError, match=r"_renyi_limit returned D_α = -0\.5 at order "
                                             r"α = 1\.0 \(forward\), below 0"):
        reg.mechanism("limit_cgf")().curve(RDP).renyi(1.0)
    run = site.cli("epsilon", "negative_cgf", "--delta", "1e-5", "--accountant", "rdp")
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("accounting: error: plugin 'negative_cgf'"), run.stderr
    found = negative.search(run.stderr)
    assert found is not None, run.stderr
    assert float(found.group(1)) == -float(found.group(2)) < 0   # K(t) = −t, as returned
    assert "upper bound" not in run.stdout


# ------------------------------------------------------------------ 6. all at once
def test_every_faulty_plugin_at_once(site, clean):
    for dist, plugins in ALL.items():
        site.install(dist, plugins)
    reg, warned = _registry()
    _assert_builtins_intact(reg, clean)
    for plugin, fragment in EXPECTED_ERRORS.items():
        errors = _errors_of(reg, plugin)
        assert any(fragment in e for e in errors), (plugin, errors)
    assert {e.plugin for e in reg.errors} == set(EXPECTED_ERRORS)
    assert all(any(f"plugin {e.plugin!r}" in w for w in warned) for e in reg.errors)
    # the well-behaved registrations of the faulty plugins still work
    # (pairs (a, 1 − a) against (1 − a, a): ε(δ) = log((a − δ)/(1 − a)) for small δ)
    for name, plugin, a in [("impostor_ok", "aaa_impostor", 0.6), ("chatty", "chatty", 0.7),
                            ("garbage_survivor", "garbage", 0.5)]:
        assert reg.mechanism_sources[name] == plugin
        eps = float(reg.mechanism(name)().curve(PrivacyProfile).epsilon(1e-3))
        assert eps == pytest.approx(max(np.log((a - 1e-3) / (1 - a)), 0.0), abs=1e-9)
    # every built-in mechanism still answers, as in a clean registry
    for name in ("laplace", "randomized_response", "subsampled_gaussian"):
        cls = reg.mechanism(name)
        assert cls is clean.mechanism(name)
    lap = reg.mechanism("laplace")(b=1.0).curve(PrivacyProfile)
    # Laplace b = Δ = 1: δ(ε) = 1 − e^{(ε−1)/2} on [0, 1], so ε(δ) = 1 + 2·log(1 − δ)
    assert float(lap.epsilon(1e-9)) == pytest.approx(1 + 2 * np.log1p(-1e-9), abs=1e-12)


def test_every_faulty_plugin_at_once_on_the_command_line(site):
    for dist, plugins in ALL.items():
        site.install(dist, plugins)
    run = site.cli("mechanisms", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    for plugin in EXPECTED_ERRORS:
        assert any(f"plugin {plugin!r}" in e for e in data["errors"]), plugin
    names = {m["name"]: m["plugin"] for m in data["mechanisms"]}
    assert names["gaussian"] == "gaussian" and "twin" not in names
    run = site.cli("mechanisms")
    assert run.returncode == 0 and f"plugin errors ({len(data['errors'])}):" in run.stdout
    for accountant in ("pld", "rdp"):
        run = site.cli("epsilon", "gaussian", "--sigma", "1", "--compose", "10", "--delta",
                       "1e-5", "--accountant", accountant, "--json")
        assert run.returncode == 0, run.stderr
        numbers = list(_numbers(json.loads(run.stdout)))
        assert any(EXACT_G10 <= x < EXACT_G10 + (0.03 if accountant == "pld" else 1.5)
                   for x in numbers), run.stdout
