"""A layered (Sugiyama-style) layout in pure Python: ranks by longest path, order by
barycentre sweeps, rows centred. Iterative, deterministic, O(n + e) per sweep; cycles (possible
once groups are folded) are broken by taking the lowest unplaced index.

>>> centres, w, h = layered([(54.0, 28.0)] * 3, [(0, 2), (1, 2)])
>>> [round(x) for x, _ in centres], [round(y) for _, y in centres]
([27, 99, 63], [14, 14, 78])
"""

from __future__ import annotations

__all__ = ["NODE_GAP", "RANK_GAP", "layered"]

RANK_GAP = 36.0
NODE_GAP = 18.0


def layered(
    sizes: list[tuple[float, float]], pairs: list[tuple[int, int]]
) -> tuple[list[tuple[float, float]], float, float]:
    """Centres ``(x, y)`` of boxes of ``sizes`` (top-down, top-left origin) joined by
    ``pairs`` (index pairs ``src -> dst``), and the bounding ``width, height``."""
    rank = ranks(len(sizes), pairs)
    layers = order_layers(rank, pairs)
    return coordinates(layers, sizes)


def ranks(n: int, pairs: list[tuple[int, int]]) -> list[int]:
    """Longest-path rank of each of ``n`` boxes (0 at the top)."""
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for s, d in pairs:
        if s != d:
            succ[s].append(d)
            indeg[d] += 1
    rank = [0] * n
    done = [False] * n
    ready = [i for i in range(n) if indeg[i] == 0]
    remaining = n
    cursor = 0  # NOTE: cycle breaking scans forward only, so the whole pass stays O(n + e)
    while remaining:
        if not ready:
            while done[cursor]:
                cursor += 1
            ready.append(cursor)
            indeg[cursor] = 0
        i = ready.pop()
        if done[i]:
            continue
        done[i] = True
        remaining -= 1
        for d in succ[i]:
            if not done[d]:
                rank[d] = max(rank[d], rank[i] + 1)
                indeg[d] -= 1
                if indeg[d] == 0:
                    ready.append(d)
    return rank


def order_layers(rank: list[int], pairs: list[tuple[int, int]]) -> list[list[int]]:
    """Boxes per rank, ordered by four barycentre sweeps (down, up, down, up)."""
    layers: list[list[int]] = [[] for _ in range(max(rank, default=-1) + 1)]
    for i, r in enumerate(rank):
        layers[r].append(i)
    preds: list[list[int]] = [[] for _ in rank]
    succs: list[list[int]] = [[] for _ in rank]
    for s, d in pairs:
        preds[d].append(s)
        succs[s].append(d)
    pos = [0.0] * len(rank)
    for layer in layers:
        for j, i in enumerate(layer):
            pos[i] = float(j)
    wide = [layer for layer in layers if len(layer) > 1]  # NOTE: a chain has none to sort
    for sweep in range(4):
        neighbours = preds if sweep % 2 == 0 else succs
        seq = wide if sweep % 2 == 0 else wide[::-1]
        for layer in seq:
            layer.sort(key=lambda i: _barycentre(i, neighbours[i], pos))
            for j, i in enumerate(layer):
                pos[i] = float(j)
    return layers


def _barycentre(i: int, neighbours: list[int], pos: list[float]) -> tuple[float, int]:
    if not neighbours:
        return pos[i], i
    return sum(pos[k] for k in neighbours) / len(neighbours), i


def coordinates(
    layers: list[list[int]], sizes: list[tuple[float, float]]
) -> tuple[list[tuple[float, float]], float, float]:
    """Centres of the boxes, rows stacked top-down and centred horizontally."""
    widths = [sum(sizes[i][0] for i in layer) + NODE_GAP * (len(layer) - 1) for layer in layers]
    total_w = max(widths, default=0.0)
    centres: list[tuple[float, float]] = [(0.0, 0.0)] * len(sizes)
    y = 0.0
    for layer, layer_w in zip(layers, widths):
        row_h = max((sizes[i][1] for i in layer), default=0.0)
        x = (total_w - layer_w) / 2
        for i in layer:
            w, _ = sizes[i]
            centres[i] = (x + w / 2, y + row_h / 2)
            x += w + NODE_GAP
        y += row_h + RANK_GAP
    return centres, total_w, max(y - RANK_GAP, 0.0)
