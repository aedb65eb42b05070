"""PyTorch specifics of the generic Array API backend: conversions, devices, native kernels.

The generic kernels already run on PyTorch through ``array_api_compat.torch``; this table
replaces the ones PyTorch has natively (``conv2d``, ``fold``, pooling, ``erf``, scatter-add
through ``index_add_``) and the hottest elementwise ones, whose compat wrappers cost more than
the op on small tensors. Each kernel promotes mixed dtypes by NumPy's table first, as the spec.

>>> import p10, pytest; _ = pytest.importorskip("torch")
>>> x = p10.asarray([[1.0, -2.0]], backend="torch")
>>> type(x._data).__name__, x.relu().tolist()
('Tensor', [[1.0, 0.0]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from p10._indexing import fill_key
from p10._ops import Op
from p10.backends import array_api_nn
from p10.backends.array_api_index import Indexer

Kernel = Callable[..., Any]


def configure(lib: Any) -> None:
    """Set the conversions and device of a PyTorch :class:`~p10.backends.array_api_backend.Lib`."""
    import torch

    dev = torch.device(str(lib.device))
    lib.device = dev
    lib.cpu = dev.type == "cpu"

    def from_numpy(arr: np.ndarray) -> Any:
        if not arr.flags.writeable or any(s < 0 for s in arr.strides):
            arr = np.array(arr)  # torch.from_numpy shares memory, so needs a plain writable one
        t = torch.from_numpy(arr)
        return t if dev.type == "cpu" else t.to(dev)

    def to_numpy(a: Any) -> np.ndarray:
        return a.detach().cpu().numpy()

    lib.from_numpy = from_numpy
    lib.to_numpy = to_numpy
    lib.may_share = _same_storage


def _same_storage(a: Any, b: Any) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _not_native(key: tuple, index: tuple) -> bool:
    """Keys PyTorch reads differently from NumPy; they take the generic flat-index path."""
    # NOTE: PyTorch slicing has no negative steps, and it applies an int before the index
    # tensors, where NumPy broadcasts the int with them (moving their axes first when a slice
    # separates them).
    if any(type(k) is slice and k.step is not None and k.step < 0 for k in key):
        return True
    return bool(index) and any(type(k) is int for k in key)


def _promoted(lib: Any, fn: Kernel) -> Kernel:
    def kernel(a, b):
        if a.dtype != b.dtype:
            a, b = lib.promote(a, b)
        return fn(a, b)

    return kernel


def _elementwise(lib: Any) -> dict[Op, Kernel]:
    import torch

    def gelu(x, *, approximate="none"):
        return torch.nn.functional.gelu(x, approximate=approximate)

    binary = {
        Op.ADD: torch.add, Op.SUB: torch.sub, Op.MUL: torch.mul, Op.MATMUL: torch.matmul,
        Op.MAXIMUM: torch.maximum, Op.MINIMUM: torch.minimum, Op.EQ: torch.eq, Op.NE: torch.ne,
        Op.LT: torch.lt, Op.LE: torch.le, Op.GT: torch.gt, Op.GE: torch.ge,
    }  # fmt: skip
    table: dict[Op, Kernel] = {op: _promoted(lib, fn) for op, fn in binary.items()}
    floating = {Op.DIV: torch.true_divide}
    table.update({op: _promoted(lib, fn) for op, fn in floating.items()})
    unary = {
        Op.NEG: torch.neg, Op.EXP: torch.exp, Op.LOG: torch.log, Op.TANH: torch.tanh,
        Op.SQRT: torch.sqrt, Op.SIGMOID: torch.sigmoid, Op.RELU: torch.relu,
        Op.ERF: torch.special.erf, Op.GELU: gelu, Op.COPY: torch.clone,
    }  # fmt: skip
    table.update(unary)
    table[Op.EINSUM] = lambda *ops, subscripts: torch.einsum(subscripts, *lib.promote(*ops))
    return table


def _nn(lib: Any) -> dict[Op, Kernel]:
    import torch.nn.functional as F

    def conv2d(x, weight, *, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
        x, weight = lib.promote(x, weight)
        return F.conv2d(x, weight, stride=stride, padding=padding, dilation=dilation, groups=groups)

    def unfold(x, *, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        return F.unfold(x, kernel_size, dilation=dilation, padding=padding, stride=stride)

    def fold(cols, *, output_size, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        return F.fold(cols, output_size, kernel_size, dilation, padding, stride)

    def pool(native: Kernel, generic: Kernel) -> Kernel:
        def kernel(x, *, kernel_size, stride, padding=(0, 0)):
            # NOTE: PyTorch refuses padding over half the window; the generic kernel takes it.
            if all(2 * p <= k for p, k in zip(padding, kernel_size)):
                return native(x, kernel_size, stride, padding)
            return generic(lib, x, kernel_size, stride, padding)

        return kernel

    return {
        Op.CONV2D: conv2d,
        Op.UNFOLD: unfold,
        Op.FOLD: fold,
        Op.MAX_POOL2D: pool(F.max_pool2d, array_api_nn.max_pool2d),
        Op.AVG_POOL2D: pool(F.avg_pool2d, array_api_nn.avg_pool2d),
    }


def _indexing(lib: Any) -> dict[Op, Kernel]:
    import torch

    generic = Indexer(lib)

    def getitem(x, *index, key):
        if _not_native(key, index):
            return generic.getitem_flat(x, *index, key=key)
        return x[_fill(key, index)]

    def index_put(base, values, *index, key):
        if _not_native(key, index):
            return generic.index_put(base, values, *index, key=key)
        out = base.clone()
        out[_fill(key, index)] = values.to(base.dtype)
        return out

    def index_add(base, values, *index, key):
        if _not_native(key, index):
            return generic.index_add(base, values, *index, key=key)
        lin = torch.arange(base.numel(), device=base.device).reshape(base.shape)[_fill(key, index)]
        vals = values.to(base.dtype).broadcast_to(lin.shape).reshape(-1)
        out = base.clone()
        out.view(-1).index_add_(0, lin.reshape(-1), vals)
        return out

    return {Op.GETITEM: getitem, Op.INDEX_PUT: index_put, Op.INDEX_ADD: index_add}


def _fill(key: tuple, index: tuple) -> tuple:
    return fill_key(key, index)


def kernels(lib: Any) -> dict[Op, Kernel]:
    """The PyTorch-native kernels that replace generic ones for ``lib``."""
    table = _elementwise(lib)
    table.update(_nn(lib))
    table.update(_indexing(lib))
    return table
