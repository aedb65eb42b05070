"""TPX: reverse-mode automatic differentiation that composes P10.

>>> import tpx as tp
>>> x = tp.ones((2, 2), requires_grad=True)
>>> w = tp.asarray([[1.0, -1.0], [2.0, 0.5]], requires_grad=True)
>>> y = x.matmul(w).relu()
>>> y.sum().backward()
>>> x.grad.tolist(), w.grad.tolist()
([[1.0, 2.0], [1.0, 2.0]], [[2.0, 0.0], [2.0, 0.0]])
"""

import importlib as _importlib
import types as _types
from typing import TYPE_CHECKING

from p10 import (  # Array API (issue 18); tpx's torch-style sort/argsort/roll/tril/triu stay
    __array_namespace_info__,
    apply,
    astype,
    avg_pool2d,
    bool,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    can_cast,
    clip,
    complex64,
    complex128,
    conj,
    conv2d,
    count_nonzero,
    cumulative_prod,
    cumulative_sum,
    default_dtype,
    diff,
    einsum,
    expand,
    expand_dims,
    fft,
    finfo,
    flatten,
    float32,
    float64,
    fold,
    gelu,
    get_default_dtype,
    getitem,
    iinfo,
    imag,
    index_add,
    index_put,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    linalg,
    manual_seed,
    matmul,
    matrix_transpose,
    max_pool2d,
    meshgrid,
    moveaxis,
    nonzero,
    outer,
    pad,
    permute_dims,
    positive,
    real,
    repeat,
    reshape,
    result_type,
    searchsorted,
    set_default_dtype,
    swapaxes,
    take,
    take_along_axis,
    tensordot,
    tile,
    uint8,
    uint16,
    uint32,
    uint64,
    unfold,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
    unstack,
    vecdot,
    where,
)
from p10._functions import FUNCTIONS as _OP_FUNCTIONS
from p10.random import Generator
from tpx import _op_methods, _recording, _shortcuts, cuda, rules
from tpx._compile import CompiledFunction, CompileStats, CompileWarning, compile, eager_island
from tpx._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    is_tensor,
    linspace,
    multinomial,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    uniform,
    zeros,
    zeros_like,
)
from tpx._device import device
from tpx._engine import backward, grad, reachable
from tpx._errors import (
    AnomalyError,
    BackwardError,
    DefinitionError,
    DeviceError,
    GradAssignmentError,
    InplaceError,
    MissingRuleError,
    RequiresGradError,
    RuleError,
    SavedValueError,
    TPXError,
)
from tpx._function import Function, FunctionCtx, register_rule
from tpx._graph import AccumulateGrad, GradFn, Node, Rule, RuleContext
from tpx._materialize import materialize
from tpx._mode import (
    current_scope,
    detect_anomaly,
    enable_grad,
    is_grad_enabled,
    no_grad,
    saved_tensor_checks_enabled,
    scope,
    set_grad_enabled,
    set_saved_tensor_checks,
)
from tpx._observers import BackwardInfo, add_observer
from tpx._overrides import RuleOverrideError, override_rule
from tpx._tensor import Tensor
from tpx._torch import (
    Size,
    all,
    any,
    argmax,
    argmin,
    cumsum,
    inference_mode,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    prod,
    softmax,
    std,
    sum,
    var,
)
from tpx._torch_ops import (
    allclose,
    argsort,
    bmm,
    cat,
    chunk,
    clamp,
    concat,
    eq,
    equal,
    flip,
    gather,
    ge,
    gt,
    index_select,
    isclose,
    le,
    lt,
    masked_fill,
    mm,
    ne,
    norm,
    numel,
    permute,
    roll,
    sort,
    split,
    squeeze,
    stack,
    t,
    topk,
    transpose,
    tril,
    triu,
    unsqueeze,
)

# PyTorch's dtype names (docs/porting-from-pytorch.md); `float` and `int` stay out of __all__,
# so that `from tpx import *` does not shadow the builtins
float = float32
double = float64
short = int16
int = int32
long = int64

__version__ = "0.1.0"

from tpx import autograd, observe  # noqa: E402

# NOTE: nn, optim, data and utils are built on tpx (they `import tpx as tp`), so tpx imports
# them when first used (PEP 562), not while it initializes itself: no import cycle between the
# package and its subpackages (tools/import_cycles.py), whichever is imported first
_ON_FIRST_USE = {
    "data": ("tpx.data", None),
    "nn": ("tpx.nn", None),
    "optim": ("tpx.optim", None),
    "utils": ("tpx.utils", None),
    "load": ("tpx.nn", "load"),
    "save": ("tpx.nn", "save"),
}

if TYPE_CHECKING:  # what __getattr__ loads, as type checkers should see it
    from tpx import data, nn, optim, utils
    from tpx.nn import load, save


def __getattr__(name: str) -> object:
    """``tpx.nn``, ``tpx.optim``, ``tpx.data``, ``tpx.utils``, ``tpx.load``/``tpx.save``.

    >>> import tpx as tp
    >>> tp.nn.Linear(2, 1).weight.shape
    (1, 2)
    """
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module 'tpx' has no attribute {name!r}")
    module_name, attr = _ON_FIRST_USE[name]
    value = _importlib.import_module(module_name)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


# the op-spec table's functions (p10._opspec), where tpx defines no PyTorch-style one itself
globals().update({n: f for n, f in _OP_FUNCTIONS.items() if n not in globals()})
# -- generated by tools/typing_stubs.py (names made at import time); do not edit --
if TYPE_CHECKING:
    from p10._functions import abs as abs
    from p10._functions import acos as acos
    from p10._functions import acosh as acosh
    from p10._functions import add as add
    from p10._functions import asin as asin
    from p10._functions import asinh as asinh
    from p10._functions import atan as atan
    from p10._functions import atan2 as atan2
    from p10._functions import atanh as atanh
    from p10._functions import bitwise_and as bitwise_and
    from p10._functions import bitwise_invert as bitwise_invert
    from p10._functions import bitwise_left_shift as bitwise_left_shift
    from p10._functions import bitwise_or as bitwise_or
    from p10._functions import bitwise_right_shift as bitwise_right_shift
    from p10._functions import bitwise_xor as bitwise_xor
    from p10._functions import ceil as ceil
    from p10._functions import copysign as copysign
    from p10._functions import cos as cos
    from p10._functions import cosh as cosh
    from p10._functions import divide as divide
    from p10._functions import erf as erf
    from p10._functions import exp as exp
    from p10._functions import expm1 as expm1
    from p10._functions import floor as floor
    from p10._functions import floor_divide as floor_divide
    from p10._functions import greater as greater
    from p10._functions import greater_equal as greater_equal
    from p10._functions import hypot as hypot
    from p10._functions import isfinite as isfinite
    from p10._functions import isinf as isinf
    from p10._functions import isnan as isnan
    from p10._functions import less as less
    from p10._functions import less_equal as less_equal
    from p10._functions import log as log
    from p10._functions import log1p as log1p
    from p10._functions import log2 as log2
    from p10._functions import log10 as log10
    from p10._functions import logaddexp as logaddexp
    from p10._functions import logical_and as logical_and
    from p10._functions import logical_not as logical_not
    from p10._functions import logical_or as logical_or
    from p10._functions import logical_xor as logical_xor
    from p10._functions import maximum as maximum
    from p10._functions import minimum as minimum
    from p10._functions import multiply as multiply
    from p10._functions import negative as negative
    from p10._functions import nextafter as nextafter
    from p10._functions import not_equal as not_equal
    from p10._functions import pow as pow
    from p10._functions import reciprocal as reciprocal
    from p10._functions import relu as relu
    from p10._functions import remainder as remainder
    from p10._functions import round as round
    from p10._functions import sigmoid as sigmoid
    from p10._functions import sign as sign
    from p10._functions import signbit as signbit
    from p10._functions import sin as sin
    from p10._functions import sinh as sinh
    from p10._functions import sqrt as sqrt
    from p10._functions import square as square
    from p10._functions import subtract as subtract
    from p10._functions import tan as tan
    from p10._functions import tanh as tanh
    from p10._functions import trunc as trunc
# -- end of generated names --

__all__ = sorted(
    {
        n
        for n, v in globals().items()
        if (
            n[0] != "_"
            and n not in ("float", "int")  # PyTorch's dtype names, not to shadow the builtins
            and not (isinstance(v, _types.ModuleType) and not v.__name__.startswith("tpx."))
        )
        or n in ("fft", "linalg")  # the Array API extensions, p10's modules
    }
    | set(_ON_FIRST_USE)
)
"""Every public name: the imports above and the generated functions, listed once."""
