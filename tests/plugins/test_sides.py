"""One way to say "which side": every public ``bound=``/``direction=`` goes through
``accounting.vocabulary.as_bound``/``as_direction``, which take the enum or its exact
string and refuse anything else.

For every built-in mechanism (the instances of ``test_contract``'s contract classes,
whose curves are cached there) every public query given ``Bound.UPPER`` equals the
same query given ``"upper"`` (and ``LOWER``/``"lower"``, ``Direction.X``/its string),
and typos, other cases and non-strings are refused.
"""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest
from hypothesis import given, strategies as st

import accounting
import test_contract as contract   # same directory (pytest's rootdir-relative import)
from accounting import PLD, RDP, ZCDP, PrivacyProfile, TradeOff
from accounting.vocabulary import Bound, Direction, as_bound, as_direction
from accounting.testing import MechanismContract

EPS = np.array([-0.5, 0.0, 0.3, 1.0, 2.5])
DELTAS = np.array([1e-2, 1e-4])
ALPHAS = np.array([1.5, 2.0, 8.0])
TYPE_I = np.array([0.0, 1e-3, 0.2, 0.7])
BAD_WORDS = ["uper", "UPPER", "Upper", " upper", "lower ", "LOWER"]
BAD_TYPES = [1, 0, True, None, 1.0, b"upper", ("upper",)]


def _builtin_cases() -> list:
    """(name, contract class) for every mechanism of this distribution's entry points."""
    dist = importlib.metadata.packages_distributions()["accounting"][0]
    ours = {ep.module.partition(".")[0] for ep in importlib.metadata.distribution(dist).entry_points
            if ep.group == accounting.registry.registry.ENTRY_POINT_GROUP}
    builtin = sorted(name for name, cls in accounting.default_registry().mechanisms.items()
                     if cls.__module__.partition(".")[0] in ours)
    by_name = {}
    for cls in vars(contract).values():
        if (isinstance(cls, type) and issubclass(cls, MechanismContract)
                and cls is not MechanismContract and cls.mechanism is not None):
            by_name.setdefault(cls.mechanism.name, cls)
    missing = [n for n in builtin if n not in by_name]
    assert not missing, f"no contract instance for {missing}"
    return [(n, by_name[n]) for n in builtin]


CASES = _builtin_cases()


def _outcome(fn):
    """fn()'s value as an array, or the type and message of the error it raised."""
    try:
        return ("value", np.asarray(fn(), dtype=float))
    except (ValueError, TypeError) as err:
        return ("error", type(err), str(err))


def _same(fn, a, b):
    """fn(a) and fn(b) give the same array, or the same error."""
    x, y = _outcome(lambda: fn(a)), _outcome(lambda: fn(b))
    assert x[0] == y[0], f"{a!r} gave {x}, {b!r} gave {y}"
    if x[0] == "value":
        np.testing.assert_array_equal(x[1], y[1])
    else:
        assert x[1:] == y[1:]
    return x


def _queries(case, pair):
    """(label, fn(bound, direction)) for every public query that takes a side."""
    pld, prof = case._curve(PLD), case._curve(PrivacyProfile)
    rdp, z, to = case._curve(RDP), case._curve(ZCDP), case._curve(TradeOff)
    pld_rdp = pld.to(RDP)
    return [
        ("pair.profile", lambda b, d: pair.profile(EPS, d, bound=b)),
        ("pld.delta", lambda b, d: pld.delta(EPS, d, b)),
        ("pld.epsilon", lambda b, d: pld.epsilon(DELTAS, d, bound=b)),
        ("pld.law", lambda b, d: pld.law(d if d != "max" and d is not Direction.MAX
                                         else "forward", b).delta(EPS)),
        ("profile.delta", lambda b, d: prof.delta(EPS, d, b)),
        ("profile.epsilon", lambda b, d: prof.epsilon(DELTAS, d, bound=b)),
        ("tradeoff.beta", lambda b, d: to.beta(TYPE_I, d, bound=b)),
        ("rdp.rdp", lambda b, d: rdp.rdp(ALPHAS, d, bound=b)),
        ("rdp.cgf", lambda b, d: rdp.cgf(ALPHAS - 1.0, d, b)),
        ("pld→rdp.rdp", lambda b, d: pld_rdp.rdp(ALPHAS, d, bound=b)),
        ("zcdp.rho", lambda b, d: z.rho(d, bound=b)),
    ]


@pytest.mark.parametrize("name,cls", CASES, ids=[n for n, _ in CASES])
def test_enum_and_string_give_the_same_answer(name, cls):
    case = cls()
    pair = case._mech().pair()
    for label, query in _queries(case, pair):
        for d_enum, d_word in ((Direction.MAX, "max"), (Direction.FORWARD, "forward"),
                               (Direction.BACKWARD, "backward")):
            up = _same(lambda b: query(b, d_word), Bound.UPPER, "upper")
            _same(lambda b: query(b, d_word), Bound.LOWER, "lower")
            _same(lambda d: query(Bound.UPPER, d), d_enum, d_word)
            # the default is the upper side
            if label in ("pair.profile", "pld.delta", "profile.delta", "tradeoff.beta",
                         "rdp.rdp", "zcdp.rho"):
                default = _outcome(lambda: {
                    "pair.profile": lambda: pair.profile(EPS, d_word),
                    "pld.delta": lambda: case._curve(PLD).delta(EPS, d_word),
                    "profile.delta": lambda: case._curve(PrivacyProfile).delta(EPS, d_word),
                    "tradeoff.beta": lambda: case._curve(TradeOff).beta(TYPE_I, d_word),
                    "rdp.rdp": lambda: case._curve(RDP).rdp(ALPHAS, d_word),
                    "zcdp.rho": lambda: case._curve(ZCDP).rho(d_word)}[label]())
                assert default[0] == up[0]
                if up[0] == "value":
                    np.testing.assert_array_equal(default[1], up[1])


@pytest.mark.parametrize("name,cls", CASES, ids=[n for n, _ in CASES])
def test_interval_functions_use_the_two_sides(name, cls):
    case = cls()
    for curve in (case._curve(PLD), case._curve(PrivacyProfile)):
        lo, up = curve.epsilon_interval(DELTAS)
        np.testing.assert_array_equal(lo, curve.epsilon(DELTAS, "max", Bound.LOWER))
        np.testing.assert_array_equal(up, curve.epsilon(DELTAS, "max", "upper"))
        lo, up = curve.delta_interval(EPS, Direction.FORWARD)
        np.testing.assert_array_equal(lo, curve.delta(EPS, "forward", "lower"))
        np.testing.assert_array_equal(up, curve.delta(EPS, "forward", Bound.UPPER))
        assert np.all(lo <= up + 1e-12)


@pytest.mark.parametrize("name,cls", CASES, ids=[n for n, _ in CASES])
def test_typos_other_cases_and_non_strings_are_refused(name, cls):
    case = cls()
    pair = case._mech().pair()
    for label, query in _queries(case, pair):
        for bad in BAD_WORDS:
            with pytest.raises(ValueError, match="bound|side"):
                query(bad, "max")
        for bad in BAD_TYPES:
            with pytest.raises(TypeError, match="bound|side"):
                query(bad, "max")
        for bad in ("Max", "FORWARD", "fwd", "sideways"):
            with pytest.raises(ValueError, match="direction"):
                query("upper", bad)
        for bad in (0, True, None, Bound.UPPER):
            with pytest.raises(TypeError, match="direction"):
                query("upper", bad)


def test_student_t_upper_side_is_the_upper_value():
    # the case: Bound.UPPER used to compare unequal to "upper" and pick the
    # optimistic side (0.24800618 at ε = 0)
    pair = accounting.mechanism("student_t", nu=3.0, scale=1.0).pair()
    eps = np.array([0.0, 0.5, 1.0])
    up, lo = pair.profile(eps, bound=Bound.UPPER), pair.profile(eps, bound=Bound.LOWER)
    assert np.all(up > lo)                     # a real bracket: the sides differ
    np.testing.assert_array_equal(up, pair.profile(eps, bound="upper"))
    np.testing.assert_array_equal(up, pair.profile(eps))
    np.testing.assert_array_equal(lo, pair.profile(eps, bound="lower"))


def test_parsers():
    assert as_bound("upper") is Bound.UPPER and as_bound(Bound.LOWER) is Bound.LOWER
    assert as_direction("backward") is Direction.BACKWARD
    assert as_direction(Direction.MAX) is Direction.MAX
    assert as_bound(np.str_("lower")) is Bound.LOWER   # a str subclass with the exact value
    with pytest.raises(ValueError, match=r"bound must be 'upper' or 'lower' .*got 'uper'"):
        as_bound("uper")
    with pytest.raises(ValueError, match=r"side must be 'upper' or 'lower'"):
        as_bound("Lower", "side")
    with pytest.raises(TypeError, match=r"bound must be a Bound .* got int \(1\)"):
        as_bound(1)
    with pytest.raises(TypeError, match="direction must be a Direction"):
        as_direction(Bound.UPPER)
    with pytest.raises(ValueError, match="direction must be one of 'forward', 'backward', 'max'"):
        as_direction("MAX")


_WORDS = ["upper", "lower", "forward", "backward", "max"]


@given(st.one_of(st.text(max_size=12), st.sampled_from(_WORDS),
                 st.sampled_from(_WORDS).map(str.upper), st.sampled_from(_WORDS).map(str.title),
                 st.tuples(st.sampled_from(_WORDS), st.sampled_from([" ", "\n", "_", "s"]))
                 .map("".join)))
def test_only_the_exact_words_parse(text):
    if text in ("upper", "lower"):
        assert as_bound(text).value == text
    else:
        with pytest.raises(ValueError, match="bound"):
            as_bound(text)
    if text in ("forward", "backward", "max"):
        assert as_direction(text).value == text
    else:
        with pytest.raises(ValueError, match="direction"):
            as_direction(text)
