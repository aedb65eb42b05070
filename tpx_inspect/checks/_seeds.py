"""The draws of ``np.random.default_rng([seed, i])`` for many ``i`` at once.

Each node of a check draws from its own generator, seeded by ``[seed, node id]``, so that its
numbers do not depend on which other nodes are checked with it. Building one such generator
costs 15-70 us (``SeedSequence`` and ``PCG64`` set themselves up in Python-level steps), more
than checking a small node. Here the seeding arithmetic of NumPy's ``SeedSequence`` (O'Neill's
``seed_seq_fe``: a hash of the entropy words into a pool of four, then the state words) runs
vectorized over all ids, and one ``PCG64`` is set to each node's seeded state in turn. The
numbers are the same as ``default_rng([seed, i])``'s (a test compares them, and
:func:`normals` compares its first row at run time and falls back when they ever differ).
"""

from __future__ import annotations

import numpy as np

_MASK32 = 0xFFFFFFFF
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
_MASK128 = (1 << 128) - 1


def _words(n: int) -> list[int]:
    """The uint32 words of a non-negative int, least significant first (0 -> [0])."""
    out = [n & _MASK32]
    n >>= 32
    while n:
        out.append(n & _MASK32)
        n >>= 32
    return out


class _Hash:
    """``hashmix`` with its running constant (the same sequence for every id)."""

    def __init__(self, init: int, mult: int) -> None:
        self.const, self.mult = init, mult

    def __call__(self, value: np.ndarray) -> np.ndarray:
        value = value ^ np.uint32(self.const)
        self.const = (self.const * self.mult) & _MASK32
        value = value * np.uint32(self.const)
        return value ^ (value >> np.uint32(16))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
    return r ^ (r >> np.uint32(16))


def _pool(entropy: np.ndarray) -> list[np.ndarray]:
    """``SeedSequence.mix_entropy`` of ``entropy`` (words x ids, uint32) into four words."""
    h = _Hash(_INIT_A, _MULT_A)
    zero = np.zeros(entropy.shape[1], np.uint32)
    pool = [h(entropy[i] if i < len(entropy) else zero) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = _mix(pool[dst], h(pool[src]))
    for src in range(_POOL, len(entropy)):
        for dst in range(_POOL):
            pool[dst] = _mix(pool[dst], h(entropy[src]))
    return pool


def _state_words(pool: list[np.ndarray]) -> np.ndarray:
    """``generate_state(4, np.uint64)``: ids x 4 uint64 words."""
    const = _INIT_B
    out = []
    for k in range(8):
        v = pool[k % _POOL] ^ np.uint32(const)
        const = (const * _MULT_B) & _MASK32
        v = v * np.uint32(const)
        out.append(v ^ (v >> np.uint32(16)))
    words = np.stack(out, axis=1).astype("<u4")
    return words.view("<u8").astype(np.uint64)


def _pcg_state(w: list[int]) -> dict:
    """PCG64's state after seeding with state words ``w`` (``pcg_setseq_128_srandom_r``)."""
    initstate, initseq = (w[0] << 64) | w[1], (w[2] << 64) | w[3]
    inc = ((initseq << 1) | 1) & _MASK128
    state = inc  # one step from state 0
    state = (state + initstate) & _MASK128
    state = (state * _PCG_MULT + inc) & _MASK128
    return {
        "bit_generator": "PCG64",
        "state": {"state": state, "inc": inc},
        "has_uint32": 0,
        "uinteger": 0,
    }


def seeded_states(seed: int, ids: list[int]) -> list[dict]:
    """The ``PCG64`` state of ``default_rng([seed, i])`` for each ``i`` (non-negative ints).

    >>> s = seeded_states(7, [3])[0]
    >>> s == np.random.default_rng([7, 3]).bit_generator.state
    True
    """
    out: list[dict | None] = [None] * len(ids)
    head = _words(seed)
    groups: dict[int, list[int]] = {}
    for k, i in enumerate(ids):
        groups.setdefault(len(_words(i)), []).append(k)
    for ks in groups.values():
        entropy = np.array([head + _words(ids[k]) for k in ks], np.uint32).T
        with np.errstate(over="ignore"):
            words = _state_words(_pool(entropy)).tolist()
        for k, w in zip(ks, words):
            out[k] = _pcg_state(w)
    return out  # type: ignore[return-value]


def normals(seed: int, ids: list[int], total: int) -> np.ndarray:
    """``np.stack([default_rng([seed, i]).standard_normal(total) for i in ids])``, faster.

    >>> a = normals(0, [5, 9], 3)
    >>> bool((a[1] == np.random.default_rng([0, 9]).standard_normal(3)).all())
    True
    """
    if not ids:
        return np.zeros((0, total))
    bits = np.random.PCG64()
    gen = np.random.Generator(bits)
    out = np.empty((len(ids), total))
    for k, state in enumerate(seeded_states(seed, ids)):
        bits.state = state
        gen.standard_normal(out=out[k])  # NOTE: the same numbers as standard_normal(total)
    # NOTE: a NumPy that seeded differently would give other numbers: checked on one id
    if total and out[0, 0] != np.random.default_rng([seed, ids[0]]).standard_normal(1)[0]:
        return np.stack([np.random.default_rng([seed, i]).standard_normal(total) for i in ids])
    return out
