"""Train a small CNN on the 8x8 handwritten digits that scikit-learn ships (no download).

    python examples/train_cnn.py            # full run
    python examples/train_cnn.py --quick    # a short run for CI

Conv(1->16, 3x3) - BatchNorm - MaxPool - ReLU - Conv(16->32, 3x3) - MaxPool - ReLU - Linear.
Pooling before ReLU computes the same function as after it (both are monotone), costs less,
and keeps exact ties (the zeros ReLU makes) out of the max-pool windows, where gradients are
not unique and finite-difference checks would disagree with any choice.
The inspect layer imports ``build_model`` / ``main`` from here.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import p10
import tpx as tp
import tpx.nn as nn
import tpx.nn.functional as F
import tpx.optim as optim
from tpx.data import DataLoader, TensorDataset, load_digits


def build_model(seed: int = 0) -> nn.Module:
    """The CNN, with PyTorch's default initialisation drawn after ``p10.manual_seed(seed)``."""
    p10.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.MaxPool2d(2),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.MaxPool2d(2),
        nn.ReLU(),
        nn.Flatten(),
        nn.Dropout(0.1, seed=seed),
        nn.Linear(32 * 2 * 2, 10),
    )


def images(x: np.ndarray) -> np.ndarray:
    """Flat (N, 64) digits as NCHW images (N, 1, 8, 8)."""
    return x.reshape(-1, 1, 8, 8)


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """The fraction of images ``x`` that ``model`` classifies as ``y`` (eval mode, no graph)."""
    model.eval()
    with tp.no_grad():
        pred = np.asarray(model(tp.asarray(x)).argmax(axis=-1).numpy())
    model.train()
    return float((pred == y).mean())


def train(epochs: int, lr: float = 3e-3, batch_size: int = 64, seed: int = 0) -> dict[str, Any]:
    """Train with AdamW and a step schedule; returns accuracy, loss and wall time."""
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_digits(seed=seed)
    x_train, x_test = images(x_train), images(x_test)
    model = build_model(seed)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = optim.StepLR(opt, step_size=max(1, epochs // 2), gamma=0.3)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size, shuffle=True, seed=seed)
    for epoch in range(epochs):
        total = 0.0
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
        sched.step()
        epoch_loss = total / len(x_train)
        print(f"epoch {epoch + 1:2d}  train loss {epoch_loss:.4f}")
    return {
        "train_loss": epoch_loss,
        "test_accuracy": accuracy(model, x_test, y_test),
        "seconds": time.perf_counter() - start,
        "model": model,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, train, print the figures and return them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 epoch (for CI)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = train(1 if args.quick else args.epochs, seed=args.seed)
    print(
        f"test accuracy {result['test_accuracy']:.2%}  final train loss "
        f"{result['train_loss']:.4f}  wall time {result['seconds']:.1f} s"
    )
    return result


if __name__ == "__main__":
    main()
