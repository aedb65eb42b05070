"""Train an MLP on the 8x8 handwritten digits that scikit-learn ships (no download).

    python examples/train_mlp.py            # full run: >= 95% test accuracy in a few seconds
    python examples/train_mlp.py --quick    # a short run for CI

The inspect layer imports ``build_model`` / ``batches`` / ``main`` from here.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

import p10
import tpx as tp
import tpx.nn as nn
import tpx.nn.functional as F
import tpx.optim as optim
from tpx.data import DataLoader, TensorDataset, load_digits


def build_model(hidden: int = 128, seed: int = 0) -> nn.Module:
    """A 64 -> hidden -> hidden -> 10 ReLU MLP with PyTorch's default initialisation."""
    p10.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(64, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 10),
    )


def batches(batch_size: int = 64, seed: int = 0) -> Iterator[tuple[tp.Tensor, tp.Tensor]]:
    """Shuffled training batches ``(x (B, 64), y (B,))`` of the digits, forever."""
    x_train, y_train, _, _ = load_digits(seed=seed)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size, shuffle=True, seed=seed)
    while True:
        yield from loader


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """The fraction of ``x`` that ``model`` classifies as ``y`` (eval mode, no graph)."""
    model.eval()
    with tp.no_grad():
        pred = np.asarray(model(tp.asarray(x)).argmax(axis=-1).numpy())
    model.train()
    return float((pred == y).mean())


def train(
    epochs: int, lr: float = 2e-3, batch_size: int = 64, seed: int = 0, compile: bool = False
) -> dict[str, Any]:
    """Train with Adam and a cosine schedule; returns accuracy, loss and wall time.
    ``compile``: the step runs through ``tp.compile`` (the same losses, bit for bit)."""
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_digits(seed=seed)
    model = build_model(seed=seed)
    opt = optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size, shuffle=True, seed=seed)
    sched = optim.CosineAnnealingLR(opt, T_max=epochs * len(loader))

    def train_step(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss

    run_step = tp.compile(train_step) if compile else train_step
    for epoch in range(epochs):
        total = 0.0
        for x, y in loader:
            loss = run_step(x, y)
            total += loss.item() * len(y)
        epoch_loss = total / len(x_train)
        print(f"epoch {epoch + 1:2d}  train loss {epoch_loss:.4f}")
    return {
        "train_loss": epoch_loss,
        "test_accuracy": accuracy(model, x_test, y_test),
        "train_accuracy": accuracy(model, x_train, y_train),
        "seconds": time.perf_counter() - start,
        "model": model,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, train, print the figures and return them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 epochs (for CI)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compile", action="store_true", help="replay the step (tp.compile)")
    args = parser.parse_args(argv)
    result = train(2 if args.quick else args.epochs, seed=args.seed, compile=args.compile)
    print(
        f"test accuracy {result['test_accuracy']:.2%}  train accuracy "
        f"{result['train_accuracy']:.2%}  final train loss {result['train_loss']:.4f}  "
        f"wall time {result['seconds']:.1f} s"
    )
    return result


if __name__ == "__main__":
    main()
