"""Multi-head self-attention with an optional causal mask, and a pre-norm transformer block."""

from __future__ import annotations

from typing import Any

import p10.random
import tpx as tp
from tpx.nn import functional as F
from tpx.nn.containers import Sequential
from tpx.nn.layers import GELU, Dropout, Linear
from tpx.nn.module import Module
from tpx.nn.normalization import LayerNorm


class MultiheadSelfAttention(Module):
    """Self-attention over ``(N, L, embed_dim)`` input with ``num_heads`` heads; projections
    ``q_proj``, ``k_proj``, ``v_proj`` and ``out_proj`` are :class:`Linear` layers.
    ``causal=True`` lets position i attend to positions <= i only.

    >>> import tpx as tp, tpx.nn as nn
    >>> attn = nn.MultiheadSelfAttention(8, num_heads=2, causal=True)
    >>> attn(tp.ones((3, 5, 8))).shape
    (3, 5, 8)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        causal: bool = False,
        dropout: float = 0.0,
        bias: bool = True,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(
                f"MultiheadSelfAttention: embed_dim={embed_dim} is not divisible by "
                f"num_heads={num_heads}"
            )
        self.embed_dim, self.num_heads, self.causal = embed_dim, num_heads, causal
        self.dropout = dropout
        self.generator = None if seed is None else p10.random.Generator(seed)
        self.q_proj = Linear(embed_dim, embed_dim, bias)
        self.k_proj = Linear(embed_dim, embed_dim, bias)
        self.v_proj = Linear(embed_dim, embed_dim, bias)
        self.out_proj = Linear(embed_dim, embed_dim, bias)

    def _heads(self, x: tp.Tensor) -> tp.Tensor:
        n, length, _ = x.shape
        x = x.reshape(n, length, self.num_heads, self.embed_dim // self.num_heads)
        return tp.permute_dims(x, (0, 2, 1, 3))

    def forward(self, x: tp.Tensor, attn_mask: Any = None) -> tp.Tensor:
        ok = x.ndim == 3 and x.shape[-1] == self.embed_dim
        self.check_shape(x, f"(N, L, {self.embed_dim})", ok)
        q, k, v = (self._heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        p = self.dropout if self.training else 0.0
        heads = F.scaled_dot_product_attention(
            q, k, v, attn_mask, p, self.causal, generator=self.generator
        )
        n, _, length, _ = heads.shape
        merged = tp.permute_dims(heads, (0, 2, 1, 3)).reshape(n, length, self.embed_dim)
        return self.out_proj(merged)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, causal={self.causal}"


class TransformerBlock(Module):
    """Pre-norm transformer block: ``x + attn(ln1(x))``, then ``x + mlp(ln2(x))`` with a
    GELU MLP of width ``mlp_ratio * embed_dim`` (``gelu_approximate="tanh"`` for GPT-2's GELU).

    >>> import tpx as tp, tpx.nn as nn
    >>> block = nn.TransformerBlock(8, 2, causal=True)
    >>> y = block(tp.ones((1, 4, 8))); y.shape
    (1, 4, 8)
    >>> sorted({n.split(".")[0] for n, _ in block.named_parameters()})
    ['attn', 'ln1', 'ln2', 'mlp']
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        causal: bool = False,
        mlp_ratio: int = 4,
        dropout: float = 0.0,
        seed: int | None = None,
        gelu_approximate: str = "none",
    ) -> None:
        super().__init__()
        self.ln1 = LayerNorm(embed_dim)
        self.attn = MultiheadSelfAttention(embed_dim, num_heads, causal, dropout, seed=seed)
        self.ln2 = LayerNorm(embed_dim)
        hidden = mlp_ratio * embed_dim
        self.mlp = Sequential(
            Linear(embed_dim, hidden),
            GELU(gelu_approximate),
            Linear(hidden, embed_dim),
            Dropout(dropout, seed),
        )

    def forward(self, x: tp.Tensor) -> tp.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))
