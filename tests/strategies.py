"""Hypothesis strategies shared by the tests.

``finite_pairs`` draws two probability vectors. ``mechanisms(name)`` draws an instance
of a registered mechanism with every numeric parameter taken from the range the class
declares (``Mechanism.ranges()``), log-uniformly for scales; the structural
constraints the ranges cannot express are handled here by name: the mixture's
weights sum to 1 (one draw of the component count for all three tuples), a wrapper's
``base`` is a Gaussian or Laplace under the wrapper's relation, and a batch is at most
its dataset.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
from hypothesis import strategies as st

import accounting
from accounting.pairs.mechanism import Mechanism, Neighbouring, Range
from accounting.validation import MAX_COUNT

#: component counts of drawn mixtures
MAX_COMPONENTS = 3
#: the per-field ``per`` unit is drawn before the fields that refer to it
_FIRST = ("sensitivity",)


@st.composite
def finite_pairs(draw):
    n = draw(st.integers(2, 5))
    p = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n)))
    q = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n)))
    return p / p.sum(), q / q.sum()


def registered() -> dict[str, type]:
    """Every mechanism class of the default registry, by name."""
    return dict(accounting.default_registry().mechanisms)


def _inside(x: float, lo: float, hi: float, rng: Range) -> float:
    """``x`` moved inside the range where rounding put it on an open end or past one."""
    if rng.lo_open and x <= lo:
        x = math.nextafter(lo, math.inf)
    if rng.hi_open and x >= hi:
        x = math.nextafter(hi, -math.inf)
    return min(max(x, lo), hi)


#: ``wide`` draws: a non-scale range is also drawn log-uniformly above this (or its lower end)
WIDE_FLOOR = 1e-6


@st.composite
def in_range(draw, rng: Range, unit: float = 1.0, wide: bool = False):
    """One value of ``rng`` with its ``per`` field equal to ``unit``: log-uniform for
    scales (then snapped inside the ends), uniform otherwise; integers for counts.

    ``wide``: a range spanning many decades that is not declared a scale (ε in
    [0, 1e8]) is drawn log-uniformly half the time, so that its moderate values are
    reached as often as its huge ones."""
    lo, hi = rng.lo * unit ** rng.per_power, rng.hi * unit ** rng.per_power
    if wide and not rng.log and not rng.integer and hi > 1e3 * max(lo, 1.0) \
            and draw(st.booleans()):
        rng = attrs.evolve(rng, lo=max(lo, WIDE_FLOOR), hi=hi, per=None, log=True)
        lo = rng.lo
    if rng.integer:
        lo_i, hi_i = math.ceil(lo), min(math.floor(hi), MAX_COUNT)
        if rng.log:
            e = draw(st.floats(0.0, math.log2(hi_i / lo_i)))
            return min(max(int(lo_i * 2.0 ** e), lo_i), hi_i)
        return draw(st.integers(lo_i, hi_i))
    if rng.log and lo > 0:
        e = draw(st.floats(math.log10(lo), math.log10(hi)))
        return _inside(10.0 ** e, lo, hi, rng)
    return _inside(draw(st.floats(lo, hi, exclude_min=rng.lo_open, exclude_max=rng.hi_open)),
                   lo, hi, rng)


@st.composite
def _mixture(draw, ranges: dict, unit: float):
    k = draw(st.integers(1, MAX_COMPONENTS))
    raw = [draw(in_range(ranges["weights"])) for _ in range(k)]
    weights = tuple(w / math.fsum(raw) for w in raw)
    means = tuple(draw(in_range(ranges["means"], unit)) for _ in range(k))
    scales = tuple(draw(in_range(ranges["scales"], unit)) for _ in range(k))
    return dict(weights=weights, means=means, scales=scales)


#: the bases a wrapper draws by default
BASES = ("gaussian", "laplace")


@st.composite
def bases(draw, relation: Neighbouring, names: "tuple[str, ...]" = BASES, wide: bool = False):
    """A base for a subsampling wrapper under ``relation``: one of ``names`` (by default
    Gaussian or Laplace)."""
    name = draw(st.sampled_from(sorted(names)))
    return draw(mechanisms(name, neighbouring=relation, scale_lo=0.3, wide=wide))


@st.composite
def mechanisms(draw, name: str, neighbouring: "Neighbouring | None" = None,
               scale_lo: "float | None" = None, base_names: "dict | None" = None,
               wide: bool = False):
    """An instance of the registered mechanism ``name`` drawn from its declared ranges.

    ``scale_lo`` (optional) raises the lower end of every range relative to the
    sensitivity, for bases whose wrapper must stay cheap. ``base_names`` (optional)
    maps a wrapper's name to the names its bases are drawn from (``BASES`` when not
    listed); a base is drawn under the wrapper's relation (``neighbouring`` when
    given). ``wide``: see ``in_range``.
    """
    cls = registered()[name]
    ranges = cls.ranges()
    params: dict = {}
    if neighbouring is not None:
        params["neighbouring"] = neighbouring
    if "sensitivity" in ranges:
        params["sensitivity"] = draw(in_range(ranges["sensitivity"]))
    unit = float(params.get("sensitivity", 1.0))
    fields = cls.parameters()
    if "weights" in fields:
        params.update(draw(_mixture(ranges, unit)))
    if "sampling_probs" in fields:     # a sensitivity mixture: probabilities summing to 1
        k = draw(st.integers(1, MAX_COMPONENTS))
        raw = [draw(in_range(ranges["sampling_probs"])) for _ in range(k)]
        params["sampling_probs"] = tuple(w / math.fsum(raw) for w in raw)
        params["sensitivities"] = tuple(draw(in_range(ranges["sensitivities"])) for _ in range(k))
    if "mechanisms" in fields:         # a mixture of mechanisms: branches and their weights
        k = draw(st.integers(1, MAX_COMPONENTS))
        relation = neighbouring or fields["neighbouring"].default
        pool = (base_names or {}).get(name, BASES)
        params["mechanisms"] = tuple(draw(bases(relation, pool, wide)) for _ in range(k))
        raw = [draw(st.floats(0.01, 1.0)) for _ in range(k)]
        params["probs"] = tuple(w / math.fsum(raw) for w in raw)
    if "base" in fields:
        # a wrapper may take its base under another relation than its own (Poisson
        # subsampling under replace-one: the base's add/remove bound on one record)
        relation = getattr(cls, "base_neighbouring", neighbouring or fields["neighbouring"].default)
        params["base"] = draw(bases(relation, (base_names or {}).get(name, BASES), wide))
    if "dataset_size" in fields and "batch_size" in fields:
        params["dataset_size"] = draw(in_range(ranges["dataset_size"]))
        params["batch_size"] = draw(in_range(Range(1, params["dataset_size"], integer=True,
                                                   log=True)))
    for field, rng in ranges.items():
        if field in params or field in _FIRST:
            continue
        if scale_lo is not None and rng.per == "sensitivity" and rng.log:
            rng = Range(max(rng.lo, scale_lo), rng.hi, rng.lo_open, rng.hi_open, rng.per,
                        rng.per_power, rng.integer, rng.log)
        params[field] = draw(in_range(rng, unit if rng.per else 1.0, wide))
    return cls(**params)

