"""Traces for the viewer and export benchmarks (and their tests), shared by ``bench_viewer``
and ``bench_export``: a transformer-like model of repeated scoped blocks at any size, and an
unscoped scalar MLP (micrograd's moons MLP written with TPX scalars).

    from benchmarks.viewer_traces import transformer_trace, scalar_mlp_trace
    n = transformer_trace(Path("runs"), nodes=20_000)   # writes runs/transformer-20000/trace.json

Each function captures one backward with ``tpx_inspect.capture`` (statistics only, no values
unless asked), writes ``<folder>/<name>/trace.json`` as ``tpx-inspect run`` writes a run (the
trace, then its view model kept beside it: :data:`WRITTEN_BY`) and returns ``(run folder,
node count)``.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

__all__ = ["WRITTEN_BY", "scalar_mlp_trace", "transformer_trace"]


WRITTEN_BY = "tpx-inspect run's save (trace, then its view model kept beside it)"
"""How these traces are written: by the function ``tpx-inspect run`` saves a run with, so a
cold open here is a user's first open of a run written by ``tpx-inspect run``."""


def _save(cap, folder: Path, name: str) -> tuple[Path, int]:
    from tpx_inspect._cli_run import _save_run

    run = folder / name
    run.mkdir(parents=True, exist_ok=True)
    if not _save_run(cap, cap.trace, (run / "trace.json").resolve()):
        raise OSError(f"could not save {run / 'trace.json'}")
    return run, len(cap.trace.graphs[0].nodes)


def _blocks_for(nodes: int, per_block: int, extra: int) -> int:
    return max(1, round((nodes - extra) / per_block))


def transformer_model(layers: int, dim: int = 16, heads: int = 2, vocab: int = 11):
    """A GPT-like stack: embeddings, ``layers`` transformer blocks, a final norm and a head."""
    import tpx as tp
    import tpx.nn as nn

    class Tiny(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList([nn.TransformerBlock(dim, heads) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab)

        def forward(self, idx: tp.Tensor) -> tp.Tensor:
            x = self.tok_emb(idx)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return Tiny()


def _transformer_capture(layers: int, values: str):
    import tpx as tp
    import tpx.nn.functional as F
    import tpx_inspect

    tp.manual_seed(0)
    model = transformer_model(layers)
    idx = tp.asarray([[1, 2, 3, 4], [5, 6, 7, 8]])
    target = tp.asarray([2, 3, 4, 5, 6, 7, 8, 9])
    with tpx_inspect.capture(name="transformer", values=values) as cap:
        logits = model(idx)
        F.cross_entropy(logits.reshape((8, 11)), target).backward()
    return cap


def transformer_trace(
    folder: Path, nodes: int = 20_000, *, values: str = "none", name: str | None = None
) -> tuple[Path, int]:
    """A transformer-like trace of about ``nodes`` nodes (repeated ``model.blocks.K``)."""
    probe = len(_transformer_capture(2, "none").trace.graphs[0].nodes)
    one = len(_transformer_capture(1, "none").trace.graphs[0].nodes)
    per_block, extra = probe - one, 2 * one - probe
    cap = _transformer_capture(_blocks_for(nodes, per_block, extra), values)
    return _save(cap, Path(folder), name or f"transformer-{nodes}")


def _moons(n: int, rng: random.Random) -> list[tuple[float, float, int]]:
    out = []
    for k in range(n):
        t = math.pi * rng.random()
        if k % 2:
            out.append((math.cos(t) + rng.gauss(0, 0.1), math.sin(t) + rng.gauss(0, 0.1), 1))
        else:
            out.append(
                (1 - math.cos(t) + rng.gauss(0, 0.1), 0.5 - math.sin(t) + rng.gauss(0, 0.1), -1)
            )
    return out


class _Neuron:
    def __init__(self, nin: int, rng: random.Random, relu: bool) -> None:
        import tpx as tp

        self.w = [tp.asarray(rng.uniform(-1, 1), requires_grad=True) for _ in range(nin)]
        self.b = tp.asarray(0.0, requires_grad=True)
        self.relu = relu

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.relu() if self.relu else act


def _mlp(rng: random.Random, sizes=(2, 16, 16, 1)):
    layers = []
    for k in range(len(sizes) - 1):
        last = k == len(sizes) - 2
        layers.append([_Neuron(sizes[k], rng, not last) for _ in range(sizes[k + 1])])
    return layers


def _forward(layers, x):
    for layer in layers:
        x = [neuron(x) for neuron in layer]
    return x[0]


def scalar_mlp_trace(
    folder: Path, nodes: int = 14_000, *, values: str = "none", name: str | None = None
) -> tuple[Path, int]:
    """micrograd's moons MLP (2-16-16-1, ReLU, max-margin loss) on scalar tensors, with no
    ``tp.scope``: a batch sized to give about ``nodes`` nodes."""
    import tpx as tp
    import tpx_inspect

    rng = random.Random(0)
    layers = _mlp(rng)
    per_sample = 2 * (2 * 16 + 16 * 16 + 16) + 16 + 16 + 6  # muls+adds, relus, loss terms
    batch = max(1, round(nodes / per_sample))
    data = _moons(batch, rng)
    with tpx_inspect.capture(name="scalar-mlp", values=values) as cap:
        losses = []
        for x0, x1, y in data:
            score = _forward(layers, [tp.asarray(x0), tp.asarray(x1)])
            losses.append((1 + -y * score).relu())
        loss = sum(losses) * (1.0 / len(losses))
        params = [p for layer in layers for n in layer for p in (*n.w, n.b)]
        reg = 1e-4 * sum(p * p for p in params)
        (loss + reg).backward()
    return _save(cap, Path(folder), name or f"scalar-mlp-{nodes}")
