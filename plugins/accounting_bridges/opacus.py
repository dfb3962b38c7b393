"""An Opacus accountant backed by our PLD, with its certified upper bound.

Importing this module registers ``OpacusAccountant`` in Opacus' accountant registry
under the name ``"accounting_pld"``, so Opacus builds it like one of its own:

    import accounting_bridges.opacus  # registers "accounting_pld"
    from opacus import PrivacyEngine

    engine = PrivacyEngine(accountant="accounting_pld")
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=optimizer, data_loader=loader,
        target_epsilon=3.0, target_delta=1e-5, epochs=10, max_grad_norm=1.0)
    ...
    engine.get_epsilon(1e-5)   # certified: never below the true ε

(Opacus has no entry point for accountants, hence registration on import.)

Sampler. The accountant assumes Poisson subsampling (Opacus' ``poisson_sampling=True``,
its default; ``describe()`` says so in one line). With ``poisson_sampling=False`` the
loader shuffles, and Poisson accounting can understate ε (arXiv:2403.17673, §4): build
the accountant with ``OpacusAccountant(sampler="shuffle")`` (sample rate
1/len(data_loader), one epoch per len(data_loader) steps) and give it to Opacus'
``PrivacyEngine`` (its ``accountant`` attribute) instead of the name.

Per-sample norms (per-example accounting, ``accounting_mechanisms.per_example``): call
``engine.accountant.track_examples(len(dataset), max_grad_norm=C)`` once, and after each
``optimizer.step()`` (whose hook records the step) ``engine.accountant.record_norms(
norms, indices=batch_indices)`` with the batch's per-sample gradient norms (from
``p.grad_sample``); every other example counts at the clip norm for that step.
``engine.accountant.get_individual_epsilons(1e-5)`` then gives every example's ε.

Options through ``PrivacyEngine(accountant=…)``: Opacus builds an accountant from its
name alone, so ``accountant_name(grid_step=…, neighbouring=…)`` registers a variant
with those options under a name that spells them and returns it:

    from accounting_bridges.opacus import accountant_name

    engine = PrivacyEngine(accountant=accountant_name(grid_step=1e-3,
                                                      neighbouring="replace_one"))
    # name: "accounting_pld[grid_step=0.001,neighbouring=replace_one]"

The variant's ``mechanism()`` is that name, so ``make_private_with_epsilon``
calibrates with the same options. ``get_privacy_spent(delta=…)`` returns (ε, δ) with
the relation and sampler assumed (``str()`` prints them in one line).
``make_private_with_epsilon`` calibrates the noise multiplier with Opacus' own
bisection (``opacus.accountants.utils.get_noise_multiplier``, tolerance 0.01 in ε)
over this accountant's ``get_epsilon``, so the ε reached after the stated epochs is
at most the target and within that tolerance of it.

The class is ``accounting_bridges.training.TrainingAccountant`` (history, step,
``get_epsilon``, ``get_epsilon_interval``, ``state_dict``/``load_state_dict``, ``len``)
made an ``opacus.accountants.accountant.IAccountant``, which adds the optimizer hook
Opacus attaches; checkpoints (``PrivacyEngine.save_checkpoint``) hold its state dict
of plain numbers. Needs the ``opacus`` extra (``pip install 'accounting-dp[opacus]'``).
"""

from __future__ import annotations

from opacus.accountants import register_accountant
from opacus.accountants.accountant import IAccountant
from opacus.accountants.registry import _ACCOUNTANTS

from accounting.curves.pld import check_step
from accounting.pairs.mechanism import Neighbouring, as_neighbouring

from .training import GRID_STEP, MECHANISM, TrainingAccountant

__all__ = ["OpacusAccountant", "MECHANISM", "register", "accountant_name"]


class OpacusAccountant(TrainingAccountant, IAccountant):
    """Opacus' ``IAccountant`` over our PLD (see ``TrainingAccountant``)."""

    def __init__(self, grid_step: float = GRID_STEP,
                 neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE, *,
                 sampler: str = "poisson") -> None:
        TrainingAccountant.__init__(self, grid_step, neighbouring, sampler=sampler)


def accountant_name(*, grid_step: float = GRID_STEP,
                    neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE) -> str:
    """The Opacus accountant name of ``OpacusAccountant(grid_step, neighbouring)``,
    registered in Opacus' registry (again harmlessly): ``"accounting_pld"`` for the
    defaults, else ``"accounting_pld[grid_step=…,neighbouring=…]"``. Pass it to
    ``PrivacyEngine(accountant=…)``."""
    step = check_step(grid_step)
    relation = as_neighbouring(neighbouring)
    if step == GRID_STEP and relation is Neighbouring.ADD_REMOVE:
        register()
        return MECHANISM
    name = f"{MECHANISM}[grid_step={step!r},neighbouring={relation.value}]"
    current = _ACCOUNTANTS.get(name)
    if current is not None and getattr(current, "registered_name", None) == name:
        return name
    if current is not None and current.__qualname__ != OpacusAccountant.__qualname__:
        raise ValueError(f"Opacus already has an accountant {name!r}: "
                         f"{current.__module__}.{current.__qualname__}")

    def init(self: OpacusAccountant, grid_step: float = step,
             neighbouring: Neighbouring | str = relation) -> None:
        OpacusAccountant.__init__(self, grid_step, neighbouring)

    variant = type("OpacusAccountant", (OpacusAccountant,),
                   {"__init__": init, "registered_name": name,
                    "__doc__": f"``OpacusAccountant(grid_step={step!r}, "
                               f"neighbouring={relation.value!r})`` registered as {name!r}."})
    register_accountant(name, variant, force=current is not None)
    return name


def register() -> None:
    """Register ``OpacusAccountant`` as ``"accounting_pld"`` in Opacus' registry. Done on
    import; calling it again is harmless. A different class already registered under
    that name is a ValueError (nothing is overwritten silently)."""
    current = _ACCOUNTANTS.get(MECHANISM)
    if current is OpacusAccountant:
        return
    if current is not None and current.__qualname__ != OpacusAccountant.__qualname__:
        raise ValueError(f"Opacus already has an accountant {MECHANISM!r}: "
                         f"{current.__module__}.{current.__qualname__}")
    # the same class from a reloaded module replaces its stale self
    register_accountant(MECHANISM, OpacusAccountant, force=current is not None)


register()
