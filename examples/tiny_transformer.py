"""Train a character-level transformer language model on a small text kept in the repository.

    python examples/tiny_transformer.py            # full run
    python examples/tiny_transformer.py --quick    # a short run for CI

The text, examples/data/tiny_corpus.txt, was written for this repository and is dedicated to
the public domain. The script prints the unigram entropy of the text (the loss of the best
model that ignores context) next to the model's training and held-out losses, all in nats per
character. Modules are named as in GPT-style code, so graph nodes get scopes such as
``model.blocks.0.attn.q_proj``. The inspect layer imports ``build_model`` / ``main``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

import p10
import tpx as tp
import tpx.nn as nn
import tpx.nn.functional as F
import tpx.optim as optim

TEXT = Path(__file__).resolve().parent / "data" / "tiny_corpus.txt"


class CharTransformer(nn.Module):
    """Token and position embeddings, pre-norm causal transformer blocks, a linear head."""

    def __init__(
        self, vocab: int, context: int, dim: int, heads: int, layers: int, gelu: str = "tanh"
    ) -> None:
        super().__init__()
        self.context = context
        self.tok_emb = nn.Embedding(vocab, dim)
        self.pos_emb = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(
            [
                nn.TransformerBlock(dim, heads, causal=True, gelu_approximate=gelu)
                for _ in range(layers)
            ]
        )
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        # NOTE: made once here, not per call: tp.compile replays no tensor made inside a step
        self.register_buffer("positions", tp.arange(context), persistent=False)

    def forward(self, idx: tp.Tensor) -> tp.Tensor:
        length = idx.shape[1]
        self.check_shape(idx, f"(N, L) with L <= {self.context}", length <= self.context)
        x = self.tok_emb(idx) + self.pos_emb(self.positions[:length])
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def load_text(path: Path = TEXT) -> tuple[np.ndarray, list[str]]:
    """The text as an int64 array of character ids, and the sorted vocabulary."""
    text = path.read_text(encoding="utf-8")
    vocab = sorted(set(text))
    lookup = {c: i for i, c in enumerate(vocab)}
    return np.array([lookup[c] for c in text], dtype=np.int64), vocab


def unigram_entropy(ids: np.ndarray) -> float:
    """``-sum p log p`` of the character frequencies, in nats."""
    p = np.bincount(ids) / len(ids)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def build_model(
    vocab: int,
    context: int = 32,
    dim: int = 64,
    heads: int = 4,
    layers: int = 2,
    seed: int = 0,
    gelu: str = "tanh",
) -> CharTransformer:
    """The model, initialised after ``p10.manual_seed(seed)``; ``gelu`` is the GELU of the
    MLPs: ``"tanh"`` (GPT-2's approximation) or ``"none"`` (the exact erf form)."""
    p10.manual_seed(seed)
    return CharTransformer(vocab, context, dim, heads, layers, gelu)


def sample_batch(
    ids: np.ndarray, batch: int, context: int, rng: np.random.Generator
) -> tuple[tp.Tensor, tp.Tensor]:
    """Random windows ``x`` of ``context`` characters and ``y``, the same shifted by one."""
    starts = rng.integers(0, len(ids) - context - 1, batch)
    windows = np.stack([ids[s : s + context + 1] for s in starts])
    return tp.asarray(windows[:, :-1]), tp.asarray(windows[:, 1:])


def mean_loss(model: CharTransformer, ids: np.ndarray, context: int) -> float:
    """Cross entropy (nats per character) over consecutive windows of ``ids``, no graph."""
    n = (len(ids) - 1) // context
    x = ids[: n * context].reshape(n, context)
    y = ids[1 : n * context + 1].reshape(n, context)
    model.eval()
    with tp.no_grad():
        logits = model(tp.asarray(x))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tp.asarray(y.reshape(-1)))
    model.train()
    return loss.item()


def generate(model: CharTransformer, vocab: list[str], prompt: str, n: int, seed: int = 0) -> str:
    """Sample ``n`` characters after ``prompt`` (characters must be in the vocabulary)."""
    rng = np.random.default_rng(seed)
    ids = [vocab.index(c) for c in prompt]
    model.eval()
    with tp.no_grad():
        for _ in range(n):
            logits = model(tp.asarray([ids[-model.context :]]))
            p = np.asarray(F.softmax(logits[0, -1], dim=-1).numpy(), dtype=np.float64)
            ids.append(int(rng.choice(len(vocab), p=p / p.sum())))
    model.train()
    return "".join(vocab[i] for i in ids)


def train(
    steps: int,
    batch: int = 32,
    context: int = 32,
    seed: int = 0,
    gelu: str = "tanh",
    compile: bool = False,
) -> dict[str, Any]:
    """Train with AdamW, cosine schedule and gradient clipping; returns losses and timing.
    ``compile``: the step runs through ``tp.compile`` (the same losses, bit for bit)."""
    start = time.perf_counter()
    ids, vocab = load_text()
    split = int(len(ids) * 0.9)
    train_ids, held_out = ids[:split], ids[split:]
    model = build_model(len(vocab), context, seed=seed, gelu=gelu)
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = optim.CosineAnnealingLR(opt, T_max=steps, eta_min=3e-4)
    rng = np.random.default_rng(seed)

    def train_step(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1))
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return loss

    run_step = tp.compile(train_step) if compile else train_step
    for step in range(steps):
        x, y = sample_batch(train_ids, batch, context, rng)
        loss = run_step(x, y)
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step:4d}  batch loss {loss.item():.3f}")
    return {
        "unigram_entropy": unigram_entropy(train_ids),
        "train_loss": mean_loss(model, train_ids, context),
        "held_out_loss": mean_loss(model, held_out, context),
        "seconds": time.perf_counter() - start,
        "model": model,
        "vocab": vocab,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, train, print the losses next to the unigram entropy and return them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 steps (for CI)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gelu", choices=("tanh", "none"), default="tanh", help="GELU form")
    parser.add_argument("--compile", action="store_true", help="replay the step (tp.compile)")
    args = parser.parse_args(argv)
    r = train(
        40 if args.quick else args.steps, seed=args.seed, gelu=args.gelu, compile=args.compile
    )
    bits = 1 / math.log(2)
    print(
        f"unigram entropy {r['unigram_entropy']:.3f} nats/char ({r['unigram_entropy'] * bits:.2f}"
        f" bits)  train loss {r['train_loss']:.3f}  held-out loss {r['held_out_loss']:.3f} "
        f"nats/char  wall time {r['seconds']:.1f} s"
    )
    print("sample:", repr(generate(r["model"], r["vocab"], "The ", 80, seed=args.seed)))
    return r


if __name__ == "__main__":
    main()
