"""Find the function to check and its inputs from a ``TARGET`` string.

``TARGET`` is ``path/to/file.py::function`` or ``package.module:function``. The inputs come
from a companion function in the same module, named ``<function>_inputs``:

- ``def loss_inputs():`` returns the inputs (a tuple, a list or one tensor), or
- ``def loss_inputs(generator):`` receives a ``p10.random.Generator`` seeded with ``seed`` and
  returns them built from it (reproducible random inputs).

Floating ``tpx.Tensor`` inputs are differentiated; when none of them requires grad, all
floating tensors are made to require grad.

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "m.py").write_text(
...     "import tpx as tp\\n"
...     "def f(x):\\n    return (x * x).sum()\\n"
...     "def f_inputs(generator):\\n    return (tp.asarray(generator.randn(3)),)\\n"
... )
>>> fn, inputs = load_target(f"{d}/m.py::f")
>>> fn.__name__, inputs[0].shape, inputs[0].requires_grad
('f', (3,), True)
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import p10
import tpx


class TargetError(ValueError):
    """A ``TARGET`` that cannot be loaded; the message says what to write instead.

    >>> load_target("no_colon_here")
    Traceback (most recent call last):
    ...
    tpx_inspect.checks.targets.TargetError: bad target 'no_colon_here': write ...
    """


def _module_from_file(path: str) -> ModuleType:
    file = Path(path)
    if not file.is_file():
        raise TargetError(f"target file not found: {path}")
    name = f"_tpx_inspect_target_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(file.resolve().parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(file.resolve().parent))
    return module


def split_target(spec: str) -> tuple[ModuleType, str]:
    """The module and the function name of ``file.py::name`` or ``package.module:name``.

    >>> split_target("json:dumps")[1]
    'dumps'
    """
    if "::" in spec:
        path, _, name = spec.rpartition("::")
        return _module_from_file(path), name
    if ":" in spec:
        modname, _, name = spec.rpartition(":")
        try:
            return importlib.import_module(modname), name
        except ImportError as e:
            raise TargetError(f"cannot import module {modname!r}: {e}") from None
    raise TargetError(
        f"bad target {spec!r}: write path/to/file.py::function or package.module:function"
    )


def _inputs(module: ModuleType, name: str, seed: int) -> tuple[Any, ...]:
    companion = getattr(module, f"{name}_inputs", None)
    if companion is None:
        raise TargetError(
            f"no inputs for {name}: define {name}_inputs() (returning the inputs) or "
            f"{name}_inputs(generator) (building them from a seeded p10.random.Generator) "
            "beside it"
        )
    takes_generator = bool(inspect.signature(companion).parameters)
    out = companion(p10.random.Generator(seed)) if takes_generator else companion()
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _require_grad(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    tensors = [x for x in inputs if isinstance(x, tpx.Tensor) and x.dtype.kind == "f"]
    if tensors and not any(x.requires_grad for x in tensors):
        for x in tensors:
            if x.is_leaf:
                x.requires_grad_(True)
    return inputs


def load_target(spec: str, seed: int = 0) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The function named by ``spec`` and its inputs (see the module docstring).

    >>> load_target("json:dumps")
    Traceback (most recent call last):
    ...
    tpx_inspect.checks.targets.TargetError: no inputs for dumps: define dumps_inputs() ...
    """
    module, name = split_target(spec)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise TargetError(f"{spec}: module {module.__name__!r} has no function {name!r}")
    return fn, _require_grad(_inputs(module, name, seed))
