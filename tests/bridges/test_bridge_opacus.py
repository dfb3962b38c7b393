"""The Opacus bridge with real Opacus and torch: a small model trained a few steps.

Data: 300 images of scikit-learn's bundled digits (no download) or, without
scikit-learn, a fixed synthetic two-class problem; a linear model on CPU.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")
from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import IAccountant, create_accountant  # noqa: E402

import accounting  # noqa: E402
from accounting_bridges.opacus import (MECHANISM, OpacusAccountant, accountant_name,  # noqa: E402
                                      register)
from accounting_bridges.training import GRID_STEP, TrainingAccountant  # noqa: E402

DELTA = 1e-5
N, BATCH = 300, 30            # sample rate 0.1, 10 steps an epoch


@functools.lru_cache(maxsize=1)
def data():
    try:
        from sklearn.datasets import load_digits
        x, y = load_digits(return_X_y=True)
        x, y = x[:N] / 16.0, y[:N]
    except ImportError:
        rng = np.random.default_rng(0)
        y = rng.integers(0, 2, N)
        x = rng.normal(size=(N, 64)) + y[:, None]
    return torch.utils.data.TensorDataset(torch.tensor(x, dtype=torch.float32),
                                          torch.tensor(y, dtype=torch.long))


def setup(engine, **private):
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(data(), batch_size=BATCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' notes on secure RNG and hooks
        if "target_epsilon" in private:
            return engine.make_private_with_epsilon(module=model, optimizer=optimizer,
                                                    data_loader=loader, max_grad_norm=1.0,
                                                    **private)
        return engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                   max_grad_norm=1.0, **private)


def train(model, optimizer, loader, epochs: int) -> int:
    steps = 0
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            if len(x):
                loss_fn(model(x), y).backward()
            optimizer.step()
            steps += 1
    return steps


def test_registered_as_one_of_opacus_own():
    register()  # again: harmless
    acc = create_accountant(MECHANISM)
    assert isinstance(acc, OpacusAccountant) and isinstance(acc, IAccountant)
    assert isinstance(PrivacyEngine(accountant=MECHANISM).accountant, OpacusAccountant)
    # the twin offers every method of Opacus' interface
    for name in IAccountant.__abstractmethods__ | {"state_dict", "load_state_dict"}:
        assert callable(getattr(TrainingAccountant, name)), name


def test_training_steps_are_accounted_by_our_pld():
    engine = PrivacyEngine(accountant=MECHANISM)
    model, optimizer, loader = setup(engine, noise_multiplier=1.0)
    steps = train(model, optimizer, loader, epochs=2)
    acc = engine.accountant
    assert len(acc) == steps == 20
    assert acc.history == [(1.0, BATCH / N, 20)]
    core = accounting.Accountant(step=GRID_STEP).compose(
        accounting.mechanism("subsampled_gaussian", q=BATCH / N, sigma=1.0), count=20)
    eps = engine.get_epsilon(DELTA)
    assert eps == core.epsilon(DELTA)
    lo, hi = acc.get_epsilon_interval(DELTA)
    assert lo <= eps == hi
    # Opacus' own accountants on the same history: RDP is looser than our certified
    # bound; PRV's upper estimate (eps_error 0.01) cannot lie below our lower end
    rdp = create_accountant("rdp")
    rdp.history = list(acc.history)
    assert rdp.get_epsilon(DELTA) >= eps
    prv = create_accountant("prv")
    prv.history = list(acc.history)
    assert prv.get_epsilon(DELTA) >= lo - 1e-9
    assert prv.get_epsilon(DELTA) == pytest.approx(eps, abs=0.02)


def test_make_private_with_epsilon_hits_the_target():
    engine = PrivacyEngine(accountant=MECHANISM)
    model, optimizer, loader = setup(engine, target_epsilon=3.0, target_delta=DELTA, epochs=2)
    train(model, optimizer, loader, epochs=2)
    eps = engine.get_epsilon(DELTA)
    # Opacus' bisection stops within 0.01 below the target (our bound is certified)
    assert 3.0 - 0.01 <= eps <= 3.0
    assert len(engine.accountant) == 20
    # and it needs less noise than Opacus' RDP calibration of the same budget
    rdp_engine = PrivacyEngine(accountant="rdp")
    _, rdp_optimizer, _ = setup(rdp_engine, target_epsilon=3.0, target_delta=DELTA, epochs=2)
    assert optimizer.noise_multiplier < rdp_optimizer.noise_multiplier


def test_state_dict_round_trip_through_a_torch_checkpoint(tmp_path):
    engine = PrivacyEngine(accountant=MECHANISM)
    model, optimizer, loader = setup(engine, noise_multiplier=1.3)
    train(model, optimizer, loader, epochs=1)
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=optimizer)
    # plain numbers only: loads with torch's safe (weights-only) unpickler
    checkpoint = torch.load(path, weights_only=True)
    state = checkpoint["privacy_accountant_state_dict"]
    assert state["mechanism"] == MECHANISM and state["history"] == [(1.3, BATCH / N, 10)]
    again = PrivacyEngine(accountant=MECHANISM)
    again.accountant.load_state_dict(state)
    assert len(again.accountant) == 10
    assert again.get_epsilon(DELTA) == engine.get_epsilon(DELTA)
    # another accountant's state is refused, naming it
    with pytest.raises(ValueError, match="'rdp'"):
        again.accountant.load_state_dict(PrivacyEngine(accountant="rdp").accountant.state_dict())


def test_non_private_training_is_infinite():
    engine = PrivacyEngine(accountant=MECHANISM)
    engine.accountant.step(noise_multiplier=0.0, sample_rate=0.1)
    assert engine.get_epsilon(DELTA) == math.inf


def test_options_through_privacy_engine_names():
    assert accountant_name() == MECHANISM
    name = accountant_name(grid_step=1e-3, neighbouring="replace_one")
    assert name == "accounting_pld[grid_step=0.001,neighbouring=replace_one]"
    assert accountant_name(grid_step=1e-3, neighbouring="replace_one") == name  # again
    engine = PrivacyEngine(accountant=name)
    acc = engine.accountant
    assert isinstance(acc, OpacusAccountant) and acc.mechanism() == name
    assert acc.grid_step == 1e-3 and acc.neighbouring is accounting.Neighbouring.REPLACE_ONE
    model, optimizer, loader = setup(engine, noise_multiplier=1.0)
    train(model, optimizer, loader, epochs=1)
    core = accounting.Accountant(step=1e-3).compose(
        accounting.mechanism("poisson_replace_one_gaussian", q=BATCH / N, sigma=1.0), count=10)
    assert engine.get_epsilon(DELTA) == core.epsilon(DELTA)
    # the state names the variant and restores into a default accountant
    state = acc.state_dict()
    plain = PrivacyEngine(accountant=MECHANISM)
    plain.accountant.load_state_dict(state)
    assert plain.get_epsilon(DELTA) == engine.get_epsilon(DELTA)
    with pytest.raises(ValueError, match="neighbouring"):
        accountant_name(neighbouring="swap")


def test_calibration_uses_the_variant_options():
    name = accountant_name(neighbouring="replace_one")
    engine = PrivacyEngine(accountant=name)
    model, optimizer, loader = setup(engine, target_epsilon=3.0, target_delta=DELTA, epochs=2)
    train(model, optimizer, loader, epochs=2)
    assert 3.0 - 0.01 <= engine.get_epsilon(DELTA) <= 3.0
    # replace-one asks for more noise than add/remove at the same budget
    plain = PrivacyEngine(accountant=MECHANISM)
    _, plain_optimizer, _ = setup(plain, target_epsilon=3.0, target_delta=DELTA, epochs=2)
    assert optimizer.noise_multiplier > plain_optimizer.noise_multiplier


def test_get_privacy_spent_through_the_engine():
    engine = PrivacyEngine(accountant=MECHANISM)
    model, optimizer, loader = setup(engine, noise_multiplier=1.0)
    train(model, optimizer, loader, epochs=1)
    eps, delta = engine.accountant.get_privacy_spent(delta=DELTA)
    assert eps == engine.get_epsilon(DELTA) and delta == DELTA
    line = str(engine.accountant.get_privacy_spent(delta=DELTA))
    assert "add/remove neighbouring" in line and "Poisson sampling" in line
