"""A DP-SGD accountant for any training loop (JAX, numpy, …), backed by our PLD.

``TrainingAccountant`` has the methods of an Opacus accountant (``step``,
``get_epsilon``, ``state_dict``/``load_state_dict``, ``len``, ``history``,
``mechanism``) and no framework dependency; ``accounting_bridges.opacus`` makes the
same class an Opacus ``IAccountant``. Call ``step(noise_multiplier=z, sample_rate=q)``
once per optimiser step and ``get_epsilon(delta)`` when you want the spend.

Each step is one use of the Poisson-subsampled Gaussian mechanism (Abadi et al. 2016,
arXiv:1607.00133, §3.1). Under add/remove neighbouring (the default, Opacus' own):
``subsampled_gaussian(q, σ = z)`` for 0 < q < 1 and ``gaussian(σ = z)`` for q = 1.
Under replace-one (``neighbouring="replace_one"``: one record changed, so two
clipped records differ by up to 2C): ``poisson_replace_one_gaussian(q, σ = z)``, the
pair (1 − q)N(0) + qN(C) against (1 − q)N(0) + qN(−C) (its proof in
``accounting_mechanisms.poisson_replace_one``). q = 0 costs nothing and z = 0 is
non-private (ε = ∞). ``assumptions()`` states the relation and the sampler in one
line, and ``get_privacy_spent(delta=…)`` prints it with ε. ``history`` keeps runs of equal steps as
``(noise_multiplier, sample_rate, steps)`` triples, the layout of Opacus' own
accountants, so a state dict moves between them.

Sampler. By default (``sampler="poisson"``) each step is assumed to sample its batch by
Poisson subsampling at rate q, which is what the ε above bounds. Training that shuffles
the data each epoch and cuts it into batches is a different mechanism, and Poisson
accounting can understate its ε several times (arXiv:2403.17673, §4);
``TrainingAccountant(sampler="shuffle")`` accounts it instead
(``accounting_mechanisms.shuffling``): a run of steps at rate q = 1/S (S steps per
epoch, an integer) is ⌈steps/S⌉ epochs, each certified by one use of the Gaussian
(upper end), and each complete epoch also carries the certified lower bound of the
worst-case datasets (lower end of ``get_epsilon_interval``). Epochs are assumed to
start with the accountant and again whenever the sample rate changes. ``describe()``
says which sampler is assumed, in one line.

Per-example accounting (``accounting_mechanisms.per_example``): ``track_examples(n,
max_grad_norm=C)`` starts counting every example's per-step sensitivity (steps before
it, and steps whose norms are not given, count at the clip norm, the worst case);
``step(..., per_sample_norms=g, indices=idx)`` or, after a step taken by a hook (as
Opacus' optimizer does), ``record_norms(g, indices=idx)`` give the norms of that step
(for all examples, or for ``idx`` only); ``get_individual_epsilons(delta)`` returns the
``IndividualReport`` (per-example ε, its guarantee in ``per_example.GUARANTEES``). The
per-example counts live in memory only: ``state_dict`` keeps Opacus' plain history.

``get_epsilon(delta)`` is the certified upper bound of the composed PLD (the upper end
of ``get_epsilon_interval``: never below the true ε, whatever the grid);
``accountant="rdp"`` or ``"zcdp"`` give those accountants' bounds instead.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import MutableMapping
from typing import Any

from accounting.accountant import Accountant
from accounting.curves.pld import DEFAULT_STEP, check_step
from accounting.pairs.mechanism import Mechanism, Neighbouring, as_neighbouring
from accounting.validation import check_count, check_options, check_positive, check_real
from accounting_mechanisms.per_example import (
    HistoryCounter,
    IndividualReport,
    SensitivityGrid,
    account_individuals,
)

__all__ = ["TrainingAccountant", "PrivacySpent", "dpsgd_mechanism", "MECHANISM", "GRID_STEP",
           "SAMPLERS"]

#: the batch samplers a training accountant can assume
SAMPLERS = ("poisson", "shuffle")

#: the name this accountant goes by (Opacus' accountant registry, state dicts)
MECHANISM = "accounting_pld"
#: the PLD grid step of a training accountant: the core's ``DEFAULT_STEP``, so that one
#: run has one ε whichever entry point reports it (core, command line, this and the
#: Opacus bridge). ``benchmarks/pld.py`` (bridge timing) prints what it costs.
GRID_STEP = DEFAULT_STEP


def dpsgd_mechanism(noise_multiplier: float, sample_rate: float,
                    neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE
                    ) -> Mechanism | None:
    """The mechanism of one DP-SGD step: the Poisson-subsampled Gaussian with noise
    multiplier ``noise_multiplier`` (σ/clipping norm) at rate ``sample_rate`` under
    ``neighbouring`` (see the module docstring); None when the step costs nothing
    (q = 0: no record is used, whatever the noise, even none). At q > 0 a zero noise
    multiplier (non-private) is refused here: the caller reports ε = ∞ for it."""
    import accounting

    relation = as_neighbouring(neighbouring)
    q = check_real("sample_rate", sample_rate, lo=0.0, hi=1.0)
    if q == 0.0:
        check_real("noise_multiplier", noise_multiplier, lo=0.0)
        return None
    z = check_real("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    mechanism: Mechanism
    if relation is Neighbouring.REPLACE_ONE:
        mechanism = accounting.mechanism("poisson_replace_one_gaussian", q=q, sigma=z)
    else:
        mechanism = (accounting.mechanism("gaussian", sigma=z) if q == 1.0 else
                     accounting.mechanism("subsampled_gaussian", q=q, sigma=z))
    return mechanism


def steps_per_epoch(sample_rate: float) -> int:
    """S = 1/q for a shuffled run (Opacus: q = 1/len(data_loader)); a rate whose inverse
    is not an integer (within 1e-9 relative) is a ValueError: the epochs are unknown."""
    q = check_real("sample_rate", sample_rate, lo=0.0, hi=1.0, lo_open=True)
    s = round(1.0 / q)
    if s < 1 or abs(s * q - 1.0) > 1e-9:
        raise ValueError(f"sampler='shuffle' needs sample_rate = 1/(steps per epoch), an "
                         f"integer's inverse; got {sample_rate!r} (1/q = {1.0 / q:.10g})")
    return int(s)


def _compose_shuffled(acc: Accountant, z: float, q: float, steps: int) -> None:
    """``steps`` shuffled steps at rate q = 1/S with noise multiplier z onto ``acc``: the
    complete epochs as ``Shuffled`` epochs (upper: the Gaussian; lower: the worst-case
    pair), a last partial epoch with the Gaussian above and nothing claimed below."""
    import accounting
    from accounting_mechanisms.shuffling import ShuffledPair

    if q == 0.0:
        return
    s = steps_per_epoch(q)
    full, part = divmod(steps, s)
    base = accounting.mechanism("gaussian", sigma=z)
    if full:
        epoch = accounting.mechanism("shuffled", base=base, batch_size=1, dataset_size=s)
        acc.compose(epoch, count=full)
    if part:
        from accounting.pairs.pair import identical_pair
        acc.compose(ShuffledPair(base.pair(), identical_pair("a partial epoch: no lower bound"),
                                 s), count=1)


def assumptions(neighbouring: Neighbouring, sampler: str = "poisson") -> str:
    """The one line that says what a training accountant's ε assumes."""
    relation = ("add/remove neighbouring (one record added or removed)"
                if neighbouring is Neighbouring.ADD_REMOVE else
                "replace-one neighbouring (one record changed)")
    sampling = ("Poisson sampling (each record in each batch independently with "
                "probability sample_rate)" if sampler == "poisson" else
                "shuffled batches (each epoch a fresh permutation, 1/sample_rate steps an "
                "epoch)")
    return f"{relation}; {sampling}; noise_multiplier = noise std / clipping norm"


class PrivacySpent(tuple[float, float]):
    """``(epsilon, delta)`` spent, as ``get_privacy_spent`` returns it (unpacks like
    Opacus' RDP accountant's pair); also ``epsilon_lower`` (the certified bracket's
    lower end), ``steps``, ``assumptions``, and ``str()`` one line with all of them."""

    epsilon: float
    delta: float
    epsilon_lower: float
    steps: int
    assumptions: str

    def __new__(cls, epsilon: float, delta: float, epsilon_lower: float, steps: int,
                assumptions: str) -> PrivacySpent:
        self = super().__new__(cls, (epsilon, delta))
        self.epsilon, self.delta, self.epsilon_lower = epsilon, delta, epsilon_lower
        self.steps, self.assumptions = steps, assumptions
        return self

    def __str__(self) -> str:
        return (f"ε ≤ {self.epsilon:.6g} at δ = {self.delta:g} after {self.steps} steps "
                f"(certified PLD bound, ε ≥ {self.epsilon_lower:.6g}); assumes "
                f"{self.assumptions}")


def _check_history_entry(i: int, entry: Any) -> tuple[float, float, int]:
    where = f"history[{i}]"
    if not isinstance(entry, (tuple, list)) or len(entry) != 3:
        raise ValueError(f"{where} must be a (noise_multiplier, sample_rate, steps) triple, "
                         f"got {entry!r}")
    z, q, n = entry
    z = check_real(f"{where} noise_multiplier", z, lo=0.0)
    q = check_real(f"{where} sample_rate", q, lo=0.0, hi=1.0)
    n = check_count(f"{where} steps", n)
    return z, q, n


class TrainingAccountant:
    """DP-SGD privacy accountant over our PLD (see the module docstring).

    ``grid_step``: the PLD grid step (default ``GRID_STEP``, the core's default step);
    a finer grid gives a slightly tighter certified bound at more cost, a coarser one
    a slightly looser bound for less (``get_epsilon_interval`` shows how much is left
    to gain). ``neighbouring``: ``"add_remove"`` (default) or ``"replace_one"``.
    """

    #: the name this class is registered under (``mechanism()``, state dicts)
    registered_name = MECHANISM

    def __init__(self, grid_step: float = GRID_STEP,
                 neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE, *,
                 sampler: str = "poisson") -> None:
        self.grid_step = check_step(grid_step)
        self.neighbouring = as_neighbouring(neighbouring)
        if not isinstance(sampler, str) or sampler.lower() not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
        if sampler.lower() == "shuffle" and self.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ValueError("sampler='shuffle' is accounted under add/remove neighbouring "
                             "only; got neighbouring='replace_one'")
        #: the batch sampler assumed ("poisson" or "shuffle"; the module docstring)
        self.sampler = sampler.lower()
        #: runs of equal steps: (noise_multiplier, sample_rate, steps)
        self.history: list[tuple[float, float, int]] = []
        self._cache: dict[tuple[tuple[float, float, int], ...], Accountant] = {}
        self._examples: int | None = None
        self._clip = 1.0
        self._grid: SensitivityGrid | None = None
        #: per (noise_multiplier, sample_rate): the per-example level counts
        self._counters: dict[tuple[float, float], HistoryCounter] = {}
        self._last: tuple[float, float] | None = None

    @classmethod
    def mechanism(cls) -> str:
        """The name this accountant is registered under (``"accounting_pld"``, or a
        variant's from ``accounting_bridges.opacus.accountant_name``)."""
        return cls.registered_name

    def assumptions(self) -> str:
        """What ε assumes, in one line: the neighbouring relation and the sampler."""
        return assumptions(self.neighbouring, self.sampler)

    def describe(self) -> str:
        """One line: the sampler this accountant assumes, and how it accounts it."""
        if self.sampler == "shuffle":
            return (f"{MECHANISM}: assumes shuffled batches (each epoch a fresh permutation, "
                    f"1/sample_rate steps per epoch); ε certified by one Gaussian use per "
                    f"epoch, lower end from the worst-case datasets of arXiv:2403.17673 §4")
        return (f"{MECHANISM}: assumes Poisson subsampling at each step's sample_rate "
                f"({self.neighbouring.value}); for a shuffling data loader use "
                f"sampler='shuffle', Poisson accounting can understate its ε "
                f"(arXiv:2403.17673 §4)")

    def step(self, *, noise_multiplier: float, sample_rate: float,
             per_sample_norms: Any = None, indices: Any = None) -> None:
        """Record one optimiser step with noise multiplier z = σ/C at sampling rate q;
        ``per_sample_norms`` (with ``indices``: of those examples only) are the
        gradient norms of the step, for per-example accounting (``track_examples``)."""
        z = check_real("noise_multiplier", noise_multiplier, lo=0.0)
        q = check_real("sample_rate", sample_rate, lo=0.0, hi=1.0)
        if (per_sample_norms is not None or indices is not None) and self._examples is None:
            raise ValueError("per_sample_norms need track_examples(examples, "
                             "max_grad_norm=…) first")
        if self.history and self.history[-1][:2] == (z, q):
            self.history[-1] = (z, q, self.history[-1][2] + 1)
        else:
            self.history.append((z, q, 1))
        if self._examples is not None:
            self._count_worst(z, q, 1)
            if per_sample_norms is not None:
                self.record_norms(per_sample_norms, indices=indices)

    def track_examples(self, examples: int, *, max_grad_norm: float,
                       grid: SensitivityGrid | None = None) -> None:
        """Start per-example accounting of ``examples`` examples clipped to
        ``max_grad_norm`` (levels ``grid``, default ``per_example``'s); the steps so far
        count at the clip norm for every example."""
        if self._examples is not None:
            raise ValueError("per-example accounting is already on")
        self._examples = check_count("examples", examples, maximum=1 << 40)
        self._clip = check_positive("max_grad_norm", max_grad_norm)
        self._grid = grid
        for z, q, n in self._checked_history():
            self._count_worst(z, q, n)
        self._last = None

    def _count_worst(self, z: float, q: float, n: int) -> None:
        assert self._examples is not None
        self._last = None
        if q == 0.0:
            return                       # no record is used: nothing to count
        counter = self._counters.get((z, q))
        if counter is None:
            counter = self._counters[(z, q)] = HistoryCounter(self._examples, self._clip,
                                                             self._grid)
        counter.add_worst(n)
        self._last = (z, q)

    def record_norms(self, per_sample_norms: Any, *, indices: Any = None) -> None:
        """The per-sample gradient norms of the last step (all examples, or those of
        ``indices``): their sensitivities min(norm, C)/C replace the worst case counted
        for it. Once per step."""
        if self._examples is None:
            raise ValueError("record_norms needs track_examples(examples, "
                             "max_grad_norm=…) first")
        if self._last is None:
            raise ValueError("no step to record norms for: call step() first (norms are "
                             "recorded once per step; a step at sample_rate 0 uses none)")
        self._counters[self._last].refine(per_sample_norms, indices=indices)
        self._last = None

    def get_individual_epsilons(self, delta: float, **options: Any) -> IndividualReport:
        """Every example's ε at ``delta`` (``per_example.account_individuals``; options
        as there, e.g. ``pld=True`` for the certified PLD brackets)."""
        if self._examples is None:
            raise ValueError("per-example accounting is off: call track_examples first")
        if self.non_private():
            raise ValueError("a step with noise_multiplier = 0 is non-private: ε = ∞ for "
                             "every example")
        counted = sum(c.steps for c in self._counters.values())
        used = sum(n for _, q, n in self._checked_history() if q > 0)
        if counted != used:
            raise ValueError(f"the history was changed outside step() ({used} steps, "
                             f"{counted} counted per example)")
        if not self._counters:
            raise ValueError("no step that uses the data yet")
        segments = [c.segment(q, z) for (z, q), c in self._counters.items()]
        return account_individuals(segments, delta=delta, **options)

    def __len__(self) -> int:
        """The number of steps taken so far."""
        return sum(n for _, _, n in self._checked_history())

    def _checked_history(self) -> list[tuple[float, float, int]]:
        # Opacus' get_noise_multiplier writes ``history`` directly, so read it afresh
        return [_check_history_entry(i, e) for i, e in enumerate(self.history)]

    def non_private(self) -> bool:
        """True when some step had no noise (and a positive rate): ε = ∞."""
        return any(z == 0 and q > 0 for z, q, _ in self._checked_history())

    def accountant(self) -> Accountant:
        """The core ``Accountant`` of the steps so far (cached for the same history).
        A non-private history is a ValueError (there is no finite composition)."""
        history = tuple(self._checked_history())
        if any(z == 0 and q > 0 for z, q, _ in history):
            raise ValueError("a step with noise_multiplier = 0 is non-private: ε = ∞")
        cached = self._cache.get(history)
        if cached is None:
            cached = Accountant(step=self.grid_step)
            for z, q, n in history:
                if self.sampler == "shuffle":
                    _compose_shuffled(cached, z, q, n)
                    continue
                mechanism = dpsgd_mechanism(z, q, self.neighbouring)
                if mechanism is not None:
                    cached.compose(mechanism, count=n)
            self._cache = {history: cached}  # one history at a time: no growth
        return cached

    def get_epsilon(self, delta: float, *, accountant: str = "pld", **options: Any) -> float:
        """ε(δ) spent so far: the certified upper bound of the PLD (``accountant="pld"``)
        or the RDP / zCDP accountant's bound; 0 before any step, ∞ if non-private."""
        check_options("get_epsilon()", options, ["accountant"])
        delta = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        if self.non_private():
            return math.inf
        acc = self.accountant()
        if acc.count == 0:
            return 0.0
        return float(acc.under(accountant).epsilon(delta))

    def get_epsilon_interval(self, delta: float) -> tuple[float, float]:
        """The certified (lower, upper) bracket of ε(δ) from the PLD."""
        delta = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        if self.non_private():
            return math.inf, math.inf
        acc = self.accountant()
        if acc.count == 0:
            return 0.0, 0.0
        lo, hi = acc.epsilon_interval(delta)
        return float(lo), float(hi)

    def get_privacy_spent(self, *, delta: float) -> PrivacySpent:
        """``(epsilon, delta)`` spent so far, with the certified bracket's lower end and
        the one-line ``assumptions`` (``str()`` of the result prints them together)."""
        lo, hi = self.get_epsilon_interval(delta)
        return PrivacySpent(hi, float(delta), lo, len(self), self.assumptions())

    def get_delta(self, epsilon: float, *, accountant: str = "pld") -> float:
        """δ(ε) spent so far (an upper bound); 0 before any step, 1 if non-private."""
        epsilon = check_real("epsilon", epsilon, lo=0.0)
        if self.non_private():
            return 1.0
        acc = self.accountant()
        if acc.count == 0:
            return 0.0
        return float(acc.under(accountant).delta(epsilon))

    def state_dict(self, destination: MutableMapping[str, Any] | None = None
                   ) -> MutableMapping[str, Any]:
        """The history, the mechanism name, the grid step and the relation: plain numbers
        and strings only (what Opacus checkpoints hold; ``load_state_dict`` reads it)."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = [tuple(e) for e in self._checked_history()]
        destination["mechanism"] = self.mechanism()
        destination["grid_step"] = self.grid_step
        if self.sampler != "poisson":
            destination["sampler"] = self.sampler
        destination["neighbouring"] = self.neighbouring.value
        return destination

    def load_state_dict(self, state_dict: Any) -> None:
        """Restore from ``state_dict``; a missing key, another accountant's state, an
        unknown key or a malformed history entry is a ValueError naming it."""
        if not isinstance(state_dict, dict) or not state_dict:
            raise ValueError("state_dict must be a non-empty mapping with 'history' and "
                             "'mechanism'")
        for key in ("history", "mechanism"):
            if key not in state_dict:
                raise ValueError(f"state_dict has no {key!r}: cannot be loaded into "
                                 f"{type(self).__name__}")
        keys = {"history", "mechanism", "grid_step", "sampler", "neighbouring"}
        unknown = sorted(set(state_dict) - keys)
        if unknown:
            raise ValueError(f"state_dict has unknown keys {unknown}; allowed: history, "
                             f"mechanism, grid_step, sampler, neighbouring")
        sampler = state_dict.get("sampler", "poisson")
        if sampler not in SAMPLERS:
            raise ValueError(f"state_dict sampler must be one of {', '.join(SAMPLERS)}, "
                             f"got {sampler!r}")
        # any of this family (a variant's name carries its options, which the state
        # holds too): the state's options are restored
        name = state_dict["mechanism"]
        if not (isinstance(name, str) and name.startswith(MECHANISM)):
            raise ValueError(f"state_dict of accountant {name!r} cannot be "
                             f"loaded into the {self.mechanism()!r} accountant")
        history = state_dict["history"]
        if not isinstance(history, (list, tuple)):
            raise ValueError(f"history must be a list of triples, got {type(history).__name__}")
        checked = [_check_history_entry(i, e) for i, e in enumerate(history)]
        grid_step = check_step(state_dict.get("grid_step", self.grid_step))
        relation = as_neighbouring(state_dict.get("neighbouring", Neighbouring.ADD_REMOVE))
        self.history, self.grid_step, self._cache = checked, grid_step, {}
        self.sampler = sampler
        self.neighbouring = relation

    def __repr__(self) -> str:
        sampler = "" if self.sampler == "poisson" else f", sampler={self.sampler!r}"
        return (f"{type(self).__name__}(steps={len(self)}, grid_step={self.grid_step:g}, "
                f"neighbouring={self.neighbouring.value!r}{sampler})")
