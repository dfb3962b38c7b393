"""DP-SGD on real data at ε = 3: the noise calibrated under PLD, RDP and zCDP.

The data are scikit-learn's bundled handwritten digits (1797 8×8 images, 10 classes;
shipped inside the package, nothing is downloaded), split 80/20. A small model is
trained with DP-SGD (Abadi et al. 2016, arXiv:1607.00133, Alg. 1: Poisson-sampled
batches, per-example gradients clipped to norm C, Gaussian noise of std σC on their
sum) for a fixed number of epochs at (ε, δ) = (3, 1e-5). The noise multiplier σ is
calibrated three times (``accounting.calibrate_dpsgd``), once per accountant:

* ``pld``: the composed privacy-loss distribution (tight, certified upper bound);
* ``rdp``: the composed Rényi curve converted to (ε, δ) (a looser upper bound);
* ``zcdp``: ρ* of the subsampled Gaussian, which is 1/(2σ²) whatever the sampling
  rate (the unifying-accounting paper, Prop. 4.2): zCDP cannot see the privacy
  amplification by subsampling, so it asks for far more noise.

Each σ meets the same guarantee, so the less noise, the better the model: the
experiment of the unifying-accounting paper (§5), in spirit. Every run is then
accounted again by the PLD accountant that watched the training (Opacus with
``accounting_bridges.opacus``, or the framework-free ``TrainingAccountant``), which
reports the ε actually spent.

Backends: ``opacus`` (torch + Opacus: a 64-32-10 MLP) when installed, else ``numpy``
(softmax regression, per-example gradients in closed form). Install the extra with
``pip install 'accounting-dp[examples]'``.

Run:  python examples/dpsgd_digits.py [--epochs 15] [--batch-size 64] [--backend auto]
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Optional

import numpy as np

import accounting
from accounting_bridges.training import GRID_STEP, TrainingAccountant

ACCOUNTANTS = ("pld", "rdp", "zcdp")
DELTA = 1e-5
CLIP = 1.0


def load_digits_split(seed: int = 0):
    """(x_train, y_train, x_test, y_test): features scaled to [0, 1], a stratified
    80/20 split fixed by ``seed``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x / 16.0, y, test_size=0.2, stratify=y,
                                              random_state=seed)
    return x_tr, y_tr, x_te, y_te


def schedule(n: int, batch_size: int, epochs: int) -> tuple[float, int]:
    """(sampling rate q, steps): Opacus' Poisson loader draws ⌈n/B⌉ batches an epoch,
    each record with probability q = 1/⌈n/B⌉."""
    batches = math.ceil(n / batch_size)
    return 1.0 / batches, epochs * batches


def calibrate_sigmas(q: float, steps: int, epsilon: float = 3.0, delta: float = DELTA,
                     grid_step: float = GRID_STEP) -> dict:
    """The noise multiplier meeting (ε, δ) under each accountant: {name: Calibration}."""
    return {name: accounting.calibrate_dpsgd(q, steps, epsilon=epsilon, delta=delta,
                                             accountant=name, step=grid_step, rtol=1e-4)
            for name in ACCOUNTANTS}


# ------------------------------------------------------------------ numpy backend
def train_numpy(x, y, sigma: float, q: float, steps: int, lr: float = 2.0,
                seed: int = 0):
    """Softmax regression by DP-SGD; returns (predict, accountant)."""
    rng = np.random.default_rng(seed)
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])          # bias as a constant feature
    w = np.zeros((d + 1, 10))
    onehot = np.eye(10)[y]
    accountant = TrainingAccountant()
    for _ in range(steps):
        batch = rng.random(n) < q                  # Poisson sampling
        xs, ys = xb[batch], onehot[batch]
        logits = xs @ w
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        # per-example gradient (p − y) ⊗ x; its Frobenius norm factorises
        r = p - ys
        norms = np.linalg.norm(r, axis=1) * np.linalg.norm(xs, axis=1)
        scale = np.minimum(1.0, CLIP / np.maximum(norms, 1e-12))
        total = (xs * scale[:, None]).T @ r
        noisy = total + rng.normal(0.0, sigma * CLIP, size=w.shape)
        w -= lr * noisy / (q * n)                   # mean over the expected batch size
        accountant.step(noise_multiplier=sigma, sample_rate=q)
    return (lambda xt: np.argmax(np.hstack([xt, np.ones((len(xt), 1))]) @ w, axis=1)), \
        accountant


# ----------------------------------------------------------------- opacus backend
def train_opacus(x, y, sigma: float, q: float, steps: int, lr: float = 0.5,
                 seed: int = 0, batch_size: int = 64):
    """A 64-32-10 MLP by DP-SGD through Opacus; returns (predict, accountant)."""
    import warnings

    import torch
    from opacus import PrivacyEngine

    import accounting_bridges.opacus  # noqa: F401  (registers "accounting_pld")

    torch.manual_seed(seed)
    torch.set_num_threads(1)   # a model this small runs fastest on one thread
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 10))
    data = torch.utils.data.TensorDataset(torch.tensor(x, dtype=torch.float32),
                                          torch.tensor(y, dtype=torch.long))
    loader = torch.utils.data.DataLoader(data, batch_size=batch_size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # Opacus' secure-RNG note
        engine = PrivacyEngine(accountant="accounting_pld")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=lr),
            data_loader=loader, noise_multiplier=sigma, max_grad_norm=CLIP)
    if abs(loader.sample_rate - q) > 1e-12:
        raise ValueError(f"Opacus samples at {loader.sample_rate}, calibrated for {q}")
    loss_fn = torch.nn.CrossEntropyLoss()
    done = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # Opacus' backward-hook note
        while done < steps:
            for xb, yb in loader:
                optimizer.zero_grad()
                if len(xb):
                    loss_fn(model(xb), yb).backward()
                optimizer.step()
                done += 1
                if done == steps:
                    break
    model.eval()

    def predict(xt):
        with torch.no_grad():
            return model(torch.tensor(xt, dtype=torch.float32)).argmax(dim=1).numpy()
    return predict, engine.accountant


def available_backend() -> str:
    try:
        import opacus  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return "numpy"
    return "opacus"


def run(epochs: int = 15, batch_size: int = 64, epsilon: float = 3.0,
        backend: str = "auto", seed: int = 0, log: Optional[callable] = print) -> list[dict]:
    """Calibrate, train and evaluate under each accountant; one row per accountant."""
    if backend == "auto":
        backend = available_backend()
    if backend not in ("numpy", "opacus"):
        raise ValueError(f"backend must be 'auto', 'numpy' or 'opacus', got {backend!r}")
    x_tr, y_tr, x_te, y_te = load_digits_split(seed)
    q, steps = schedule(len(x_tr), batch_size, epochs)
    sigmas = calibrate_sigmas(q, steps, epsilon)
    rows = []
    for name, cal in sigmas.items():
        start = time.perf_counter()
        if backend == "opacus":
            predict, acc = train_opacus(x_tr, y_tr, cal.value, q, steps, seed=seed,
                                        batch_size=batch_size)
        else:
            predict, acc = train_numpy(x_tr, y_tr, cal.value, q, steps, seed=seed)
        rows.append(dict(accountant=name, sigma=cal.value, steps=len(acc),
                         accuracy=float(np.mean(predict(x_te) == y_te)),
                         epsilon_spent=acc.get_epsilon(DELTA),
                         seconds=time.perf_counter() - start))
        if log is not None:
            r = rows[-1]
            log(f"{name:>4}: sigma = {r['sigma']:.4f}  test accuracy = {r['accuracy']:.3f}  "
                f"eps spent (PLD, certified) = {r['epsilon_spent']:.4f}  "
                f"[{r['steps']} steps, {r['seconds']:.1f} s]")
    return rows


def main(argv: Optional[list] = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=15, help="training epochs")
    parser.add_argument("--batch-size", type=int, default=64, help="expected batch size")
    parser.add_argument("--epsilon", type=float, default=3.0, help="target ε at δ = 1e-5")
    parser.add_argument("--backend", choices=["auto", "numpy", "opacus"], default="auto",
                        help="opacus (torch MLP) or numpy (softmax regression)")
    parser.add_argument("--seed", type=int, default=0, help="split, init and noise seed")
    args = parser.parse_args(argv)
    backend = available_backend() if args.backend == "auto" else args.backend
    print(f"DP-SGD on digits, backend {backend}, ε = {args.epsilon:g}, δ = {DELTA:g}, "
          f"{args.epochs} epochs, batch {args.batch_size}")
    return run(args.epochs, args.batch_size, args.epsilon, backend, args.seed)


if __name__ == "__main__":
    main()
