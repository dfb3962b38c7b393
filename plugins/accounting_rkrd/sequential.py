"""Anytime-valid sequential audit of an (ε, δ) claim: sample in rounds, stop when a
violation is certain (an e-process crosses 1/level) or when the witnesses cannot show
one (the detectable ε falls below the claim), or when the budget is spent.

**The null and its e-variables.** If M is (ε, δ)-DP then for every measurable
h: 𝒪 → [0, 1], E_P h − e^ε E_Q h ≤ δ and E_Q h − e^ε E_P h ≤ δ, P = M(D), Q = M(D′)
(h = ∫₀¹ 1{h > u} du and the set form P(S) ≤ e^ε Q(S) + δ; Dwork and Roth 2014,
Def. 2.4). For one draw x ~ P and one y ~ Q, each "asset"

    r_h(x, y) = 1 + (h(x) − e^ε h(y) − δ)/(e^ε + δ)     (and x, y swapped)

is ≥ 0 and has E r_h ≤ 1 under the claim. Any portfolio c (c₀ ≥ 0 on cash, c_k ≥ 0
on assets, Σ c = 1) chosen from past draws only gives a factor f_t = c₀ + Σ c_k r_k
with E[f_t | past] ≤ 1, so W_t = Π f_s is a nonnegative supermartingale with W_0 = 1
for every mechanism satisfying the claim, and by Ville's inequality (Ville 1939)
P(∃t: W_t ≥ 1/level) ≤ level. The test is valid under optional stopping and
continuation: stopping at the first crossing, or at any time the user likes, keeps the
level (testing by betting, Shafer 2021, "Testing by betting", JRSS A 184(2); the
capital process of Waudby-Smith and Ramdas, arXiv:2010.09686, §3; e-values for DP
auditing: González, Dulce-Rubio, Ramdas, Ribero, "Sequentially auditing differential
privacy", arXiv:2509.07055).

**The witnesses and the bet** (how power is gained; validity never depends on it).
Each round, from the draws so far (the last ``fit_window`` pairs): a score
s(z) = w·z with w the difference of the two sample means (any direction is valid);
K thresholds τ at pooled quantiles of the past scores; assets for the four families
h = 1{s > τ} and 1{s ≤ τ}, each in both directions (4K assets); the log-optimal
portfolio on the past draws, max_c Σ log(c·r_i), by Cover's multiplicative
(EM) update (Cover 1984, "An algorithm for maximizing expected log investment return",
IEEE Trans. IT 30(2)), then a fraction ``bet_fraction`` of it with the rest in cash
(fractional Kelly: the fit overbets on small samples). The next round's draws are then
scored with those fixed choices, one factor per pair.

**Futility.** After ``futility_after`` pairs, each round computes the detectable ε:
the largest log((P_U(S) − δ)/Q_L(S)) over the witness sets S of the round (both
directions), with Clopper–Pearson bounds on all pairs so far at level
``futility_level`` over the 4K sets. When it is below the claimed ε, even optimistic
rates of these witnesses cannot show a violation, and the audit stops "not rejected".
Stopping early without rejecting can only lower the rejection probability, so the
level holds whatever this rule does; it costs power only (measured below).

Measured (``benchmarks/audit_power.py``, claim (1, 1e-3), the one-dimensional noisy
sum with Δ = 1 and σ calibrated by the analytic Gaussian; tests/plugins/test_rkrd_sequential.py):
half the noise (true ε 2.30) is rejected in 30 of 30 seeds with a median of 770 pairs
drawn per side (90 %: 1463) where the fixed-n audit uses 8000; the honest mechanism,
exactly (1, 1e-3)-DP, in 0 of 30 at a budget of 5000 (the slow test asserts at most 18
of 200). A mechanism 8 times noisier than claimed stops for futility after about
5000 pairs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.validation import check_count, check_probability, check_real

from .kernel import check_samples
from .lower_bound import clopper_pearson_upper

__all__ = ["SequentialReport", "sequential_test", "array_source", "STOP_REASONS",
           "SEQUENTIAL_SETTINGS", "price_relatives", "log_optimal_portfolio", "fit_bet"]

#: the tuning settings of ``sequential_test`` an auditor passes through
SEQUENTIAL_SETTINGS = ("warmup", "batch", "growth", "thresholds", "bet_fraction",
                       "fit_window", "futility", "futility_after", "futility_level")

#: why a sequential audit stopped
STOP_REASONS = ("violation", "futility", "budget")

Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def price_relatives(sx: np.ndarray, sy: np.ndarray, taus: np.ndarray, epsilon: float,
                    delta: float) -> np.ndarray:
    """The 4K assets r = 1 + (h(a) − e^ε h(b) − δ)/(e^ε + δ) of the pairs (sx_i, sy_i),
    shape (n, 4K): h = 1{s > τ} with (a, b) = (x, y), h = 1{s ≤ τ} with (a, b) = (y, x),
    h = 1{s > τ} with (y, x), h = 1{s ≤ τ} with (x, y); each ≥ 0, mean ≤ 1 under the
    (ε, δ) claim (module doc)."""
    e = math.exp(epsilon)
    hx = (sx[:, None] > taus[None, :]).astype(float)
    hy = (sy[:, None] > taus[None, :]).astype(float)
    gap = np.concatenate([hx - e * hy, (1.0 - hy) - e * (1.0 - hx),
                          hy - e * hx, (1.0 - hx) - e * (1.0 - hy)], axis=1) - delta
    out: np.ndarray = np.maximum(1.0 + gap / (e + delta), 0.0)   # ≥ 0 up to roundoff
    return out


def log_optimal_portfolio(assets: np.ndarray, weights: np.ndarray | None = None,
                          start: np.ndarray | None = None,
                          iterations: int = 100) -> np.ndarray:
    """The portfolio (cash first, then the assets' columns) maximising Σ_i w_i log(c·r_i)
    (``weights`` w: counts of repeated rows, default 1), by Cover's multiplicative
    update c_k ← c_k · Σ_i w_i r_ik/(c·r_i) / Σ w, which increases the objective at every
    step (Cover 1984), from ``start`` (default uniform; a start with zeros keeps them).
    Returns weights ≥ 0 summing to 1."""
    n, k = assets.shape
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    w = w / w.sum()
    r = np.concatenate([np.ones((n, 1)), assets], axis=1)
    c = np.full(k + 1, 1.0 / (k + 1)) if start is None else np.asarray(start, float)
    for _ in range(iterations):
        c = c * ((w / (r @ c)) @ r)
        c /= c.sum()
    out: np.ndarray = c
    return out


def fit_bet(sx: np.ndarray, sy: np.ndarray, taus: np.ndarray, epsilon: float,
             delta: float, start: np.ndarray | None) -> np.ndarray:
    """The log-optimal portfolio on the pairs (sx_i, sy_i). The assets of a pair depend
    only on the bins of sx and sy between the thresholds, so the fit runs on the
    (K + 1)² bin pairs with their counts (the same objective, exactly). The fit starts
    from the last round's portfolio mixed 9:1 with the uniform one (the thresholds move
    a little from round to round; every weight stays revivable)."""
    k = taus.size
    code = np.searchsorted(taus, sx, side="left") * (k + 1) + np.searchsorted(taus, sy,
                                                                              side="left")
    cells, counts = np.unique(code, return_counts=True)
    # a representative score of bin b (exactly b thresholds below it): τ_b, or above all
    mids = np.append(taus, taus[-1] + 1.0)
    rep_x, rep_y = mids[cells // (k + 1)], mids[cells % (k + 1)]
    assets = price_relatives(rep_x, rep_y, taus, epsilon, delta)
    if start is not None:
        start = 0.9 * start + 0.1 / start.size
    return log_optimal_portfolio(assets, counts, start)


def _detectable(sx: np.ndarray, sy: np.ndarray, taus: np.ndarray, delta: float,
                level: float) -> float:
    """max over the 4K witness sets of log((P_U(S) − δ)/Q_L(S)) (Clopper–Pearson at
    level/(4K) per bound, the ``futility`` rule of the module doc); −inf if none."""
    n = sx.size
    each = level / (8.0 * taus.size)
    kx = (sx[:, None] > taus[None, :]).sum(axis=0).astype(float)
    ky = (sy[:, None] > taus[None, :]).sum(axis=0).astype(float)
    # (numerator side count, denominator side count) for the four families
    pairs = ((kx, ky), (n - ky, n - kx), (ky, kx), (n - kx, n - ky))
    best = -math.inf
    for num, den in pairs:
        upper = clopper_pearson_upper(num, n, each) - delta
        lower = 1.0 - clopper_pearson_upper(n - den, n, each)
        with np.errstate(divide="ignore", invalid="ignore"):
            e = np.where(upper > 0.0, np.log(np.where(upper > 0.0, upper, 1.0))
                         - np.log(lower), -np.inf)
        best = max(best, float(np.max(e)))
    return best


@attrs.frozen
class SequentialReport:
    """Result of a sequential audit of the claim (``epsilon``, ``delta``).

    ``rejected`` iff the e-process crossed 1/``level`` (``stopped == "violation"``):
    then, with the level's guarantee under optional stopping, the mechanism is not
    (ε, δ)-DP. ``n`` is the number of pairs (one output on each dataset) at the decision,
    ``n_drawn`` those drawn (the last round in full). ``path`` holds (pairs, log W) at
    the end of every round. ``detectable_epsilon`` is the last futility bound (module doc).
    """

    epsilon: float
    delta: float
    level: float
    stopped: str
    n: int
    n_drawn: int
    log_e_value: float
    path: tuple[tuple[int, float], ...]
    detectable_epsilon: float | None
    max_n: int
    seed: int
    settings: dict[str, Any] = attrs.field(factory=dict)
    seconds: float = 0.0
    auditor: str = "rkrd"

    @property
    def rejected(self) -> bool:
        return self.stopped == "violation"

    @property
    def e_value(self) -> float:
        return math.exp(min(self.log_e_value, 700.0))

    @property
    def decision(self) -> str:
        return "reject" if self.rejected else "not rejected"

    def verdict(self) -> str:
        """The verdict in words, with what it does and does not mean."""
        claim = f"({self.epsilon:g}, {self.delta:g})"
        if self.rejected:
            return (f"REJECTED at level {self.level:g} after {self.n} pairs: the e-process "
                    f"reached {self.e_value:.3g} ≥ 1/level, so the mechanism is not "
                    f"{claim}-DP (valid under optional stopping: Ville's inequality).")
        if self.stopped == "futility":
            why = (f"stopped for futility after {self.n} pairs: the detectable ε of these "
                   f"witnesses ({self.detectable_epsilon:.3g}) fell below the claim")
        else:
            why = f"the budget of {self.max_n} pairs was spent"
        return (f"Not rejected at level {self.level:g}: {why}; e-value {self.e_value:.3g}. "
                f"Not rejected is not a certificate of privacy.")

    def to_dict(self, exact: bool = False) -> dict[str, Any]:
        """The report as JSON-ready data, or with ``exact`` every field for ``from_dict``."""
        if exact:
            from accounting.serialization import encode
            doc: dict[str, Any] = encode(self, {"SequentialReport": SequentialReport},
                                         "report")
            return doc
        from .report import json_safe
        out: dict[str, Any] = json_safe({
            "auditor": self.auditor, "mode": "sequential",
            "method": "e-process (testing by betting on hockey-stick witnesses), "
                      "arXiv:2509.07055, arXiv:2010.09686",
            "claim": {"epsilon": self.epsilon, "delta": self.delta},
            "level": self.level, "decision": self.decision, "rejected": self.rejected,
            "stopped": self.stopped, "verdict": self.verdict(),
            "pairs": self.n, "pairs_drawn": self.n_drawn, "max_pairs": self.max_n,
            "e_value": self.e_value, "log_e_value": self.log_e_value,
            "detectable_epsilon": self.detectable_epsilon,
            "path": [list(p) for p in self.path], "settings": self.settings,
            "not_rejected_is_not_a_certificate": True, "seed": self.seed,
            "seconds": self.seconds,
        })
        return out

    @classmethod
    def from_dict(cls, data: Any) -> SequentialReport:
        """The report of ``to_dict(exact=True)``; nothing is executed or unpickled."""
        from accounting.serialization import decode_report
        return decode_report(data, {"SequentialReport": SequentialReport}, cls,
                             "a SequentialReport")

    def __str__(self) -> str:
        lines = [f"Sequential audit of (ε, δ) = ({self.epsilon:g}, {self.delta:g}): "
                 f"{self.decision.upper()} at level {self.level:g}",
                 "  " + self.verdict(),
                 f"  pairs used {self.n}, drawn {self.n_drawn} (budget {self.max_n}); "
                 f"log e-value {self.log_e_value:.4g} (threshold {math.log(1 / self.level):.4g})"]
        if self.detectable_epsilon is not None:
            lines.append(f"  detectable ε of the last witnesses: {self.detectable_epsilon:.4g}")
        shown = self.path if len(self.path) <= 12 else self.path[:6] + self.path[-6:]
        lines.append("  pairs → log W: " + ", ".join(f"{k} → {v:.3g}" for k, v in shown))
        lines.append(f"  seed {self.seed}; time {self.seconds:.2f} s")
        return "\n".join(lines)


def array_source(x: Any, y: Any) -> tuple[Draw, int]:
    """A ``draw`` that hands out the rows of x and y in order (outputs already drawn,
    independently), and the number of pairs available, min(n_x, n_y)."""
    x, y = check_samples(x, y)
    total = min(x.shape[0], y.shape[0])
    state = {"at": 0}

    def draw(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
        a = state["at"]
        state["at"] = a + k
        return x[a:a + k], y[a:a + k]
    return draw, total


def _check_draw(out: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError("draw(rng, k) must return a pair (x, y) of arrays of k outputs")
    x, y = (np.asarray(v, dtype=float) for v in out)
    x, y = (v.reshape(-1, 1) if v.ndim == 1 else v for v in (x, y))
    if x.ndim != 2 or x.shape != y.shape or x.shape[0] != k:
        raise ValueError(f"draw(rng, {k}) returned shapes {x.shape} and {y.shape}; "
                         f"expected ({k}, d) each")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("draw returned a non-finite output")
    return x, y


def sequential_test(draw: Draw, *, epsilon: float, delta: float, level: float = 0.05,
                    max_n: int = 20_000, warmup: int = 100, batch: int = 50,
                    growth: float = 0.1, thresholds: int = 32, bet_fraction: float = 0.7,
                    fit_window: int = 3000, futility: bool = True,
                    futility_after: int = 1000, futility_level: float = 0.05,
                    seed: int = 0, auditor: str = "rkrd") -> SequentialReport:
    """Run the sequential audit (module doc) with ``draw(rng, k) -> (x, y)``, k fresh
    outputs on each dataset (shape (k, d) or (k,)), until a decision or ``max_n`` pairs.

    Rounds: ``warmup`` pairs learn only (factor 1); then rounds of
    max(``batch``, ⌈``growth``·n⌉) pairs, each with the witnesses and bet fitted on the
    pairs before it. Each pair's factor is applied in order and the audit stops at the
    first pair where W ≥ 1/``level``.
    """
    t0 = time.perf_counter()
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_real("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    level = check_probability("level", level)
    max_n = check_count("max_n", max_n, minimum=2)
    warmup = check_count("warmup", warmup, minimum=2)
    batch = check_count("batch", batch)
    growth = check_real("growth", growth, lo=0.0, hi=1.0)
    k = check_count("thresholds", thresholds)
    bet_fraction = check_real("bet_fraction", bet_fraction, lo=0.0, hi=1.0, lo_open=True)
    fit_window = check_count("fit_window", fit_window, minimum=2)
    futility_after = check_count("futility_after", futility_after, minimum=2)
    futility_level = check_probability("futility_level", futility_level)
    if not isinstance(futility, bool):
        raise TypeError(f"futility must be True or False, got {futility!r}")
    # a seed drawn fresh by an auditor is 128 bits of entropy
    seed = check_count("seed", seed, minimum=0, maximum=2 ** 128)
    if not callable(draw):
        raise TypeError(f"draw must be callable (rng, k) -> (x, y), got {type(draw).__name__}")
    rng = np.random.default_rng(seed)
    threshold = math.log(1.0 / level)
    quantiles = np.linspace(0.5 / k, 1.0 - 0.5 / k, k)

    first = min(warmup, max_n)
    xs, ys = _check_draw(draw(rng, first), first)
    xs_all, ys_all = [xs], [ys]
    n = first
    log_w, path = 0.0, [(n, 0.0)]
    stopped, used, detect = "budget", n, None
    portfolio: np.ndarray | None = None
    while n < max_n:
        x_past = np.concatenate(xs_all)[-fit_window:]
        y_past = np.concatenate(ys_all)[-fit_window:]
        w = x_past.mean(axis=0) - y_past.mean(axis=0)
        norm = float(np.linalg.norm(w))
        w = w / norm if norm > 0.0 else np.eye(w.size)[0]
        sx, sy = x_past @ w, y_past @ w
        taus = np.quantile(np.concatenate([sx, sy]), quantiles)
        if futility and n >= futility_after:
            x_all, y_all = np.concatenate(xs_all), np.concatenate(ys_all)
            detect = _detectable(x_all @ w, y_all @ w, taus, delta, futility_level)
            if detect < epsilon:
                stopped, used = "futility", n
                break
        portfolio = fit_bet(sx, sy, taus, epsilon, delta, portfolio)
        bet = bet_fraction * portfolio
        bet[0] += 1.0 - bet_fraction
        size = min(max(batch, math.ceil(growth * n)), max_n - n)
        xb, yb = _check_draw(draw(rng, size), size)
        xs_all.append(xb)
        ys_all.append(yb)
        r = price_relatives(xb @ w, yb @ w, taus, epsilon, delta)
        factors = bet[0] + r @ bet[1:]
        steps = log_w + np.cumsum(np.log(np.maximum(factors, 1e-300)))
        hit = np.flatnonzero(steps >= threshold)
        if hit.size:
            used, log_w = n + int(hit[0]) + 1, float(steps[hit[0]])
            n += size
            stopped = "violation"
            path.append((used, log_w))
            break
        log_w = float(steps[-1])
        n += size
        used = n
        path.append((n, log_w))
    settings = {"warmup": warmup, "batch": batch, "growth": growth, "thresholds": k,
                "bet_fraction": bet_fraction, "fit_window": fit_window,
                "futility": futility, "futility_after": futility_after,
                "futility_level": futility_level,
                "dimension": int(xs.shape[1])}
    return SequentialReport(epsilon=epsilon, delta=delta, level=level, stopped=stopped,
                            n=used, n_drawn=n, log_e_value=log_w, path=tuple(path),
                            detectable_epsilon=detect, max_n=max_n, seed=seed,
                            settings=settings, seconds=time.perf_counter() - t0,
                            auditor=auditor)
