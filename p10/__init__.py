"""P10: tensor values and operators with backend kernels, following the Array API standard.

>>> import p10
>>> x = p10.asarray([[1.0, 2.0], [3.0, 4.0]])
>>> x.matmul(x).relu().sum(axis=0, keepdims=True)
tensor([[22., 32.]], dtype=float32)
"""

import types as _types

from p10 import _methods
from p10._backend import (
    Backend,
    CustomOp,
    Handle,
    define_op,
    get_backend,
    list_backends,
    op_from_name,
    register_backend,
    register_kernel,
    use_backend,
)
from p10._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from p10._dtypes import (
    bool_,
    can_cast,
    default_dtype,
    finfo,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    set_default_dtype,
    uint8,
)
from p10._errors import (
    ArgumentError,
    AxisError,
    BackendError,
    DTypeError,
    IndexOutOfRangeError,
    MissingKernelError,
    P10Error,
    ShapeError,
)
from p10._functions import FUNCTIONS as _FUNCTIONS
from p10._functions import astype, clip, gelu, positive, where
from p10._index_ops import getitem, index_add, index_put, nonzero, take, take_along_axis
from p10._indexing import IndexSlot
from p10._lazy import fetch, materialize
from p10._nn import avg_pool2d, conv2d, fold, log_softmax, max_pool2d, softmax, unfold
from p10._ops import OP_INFO, Op
from p10._overrides import (
    KernelOverrideError,
    add_kernel_override_listener,
    kernel_overrides,
    override_kernel,
)
from p10._reductions import (
    all,
    any,
    argmax,
    argmin,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from p10._shape import (
    broadcast_shapes,
    broadcast_to,
    concat,
    einsum,
    expand,
    expand_dims,
    flatten,
    flip,
    matmul,
    matrix_transpose,
    outer,
    pad,
    permute_dims,
    repeat,
    reshape,
    split,
    squeeze,
    stack,
    swapaxes,
    tensordot,
    tile,
    unsqueeze,
    vecdot,
)
from p10._tensor import Tensor, apply, execute
from p10.backends import numpy_backend as _numpy_backend
from p10.random import Generator, manual_seed, normal, rand, randint, randn, uniform

__array_api_version__ = "2024.12"
__version__ = "0.1.0"

register_backend(_numpy_backend.make_backend())
_methods.bind_functions()

bool = bool_
e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

globals().update(_FUNCTIONS)  # the op-spec table's functions (p10._opspec)

from p10._dtypes import FInfo, uint16, uint32, uint64  # noqa: E402
from p10._info import ArrayNamespaceInfo, __array_namespace_info__  # noqa: E402
from p10._manipulation import (  # noqa: E402  Array API compositions (issue 18)
    broadcast_arrays,
    count_nonzero,
    cumulative_sum,
    diff,
    meshgrid,
    moveaxis,
    unstack,
)

__all__ = sorted(
    [n for n, v in globals().items() if n[0] != "_" and not isinstance(v, _types.ModuleType)]
    + ["__array_namespace_info__"]
)
"""Every public name: the imports above and the generated functions, listed once."""
