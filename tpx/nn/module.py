"""``Module``: the base class of layers and models, and ``Parameter``, a trainable leaf.

A module holds parameters, buffers and child modules in three ordered dicts, so that
``named_parameters()`` and ``state_dict()`` list them in definition order. Calling a module
runs ``forward`` inside ``tp.scope(<its path>)``: every graph node it records carries the
module's dotted path (``model.blocks.0.attn.q_proj``), which the inspector shows; the outermost
call names each parameter and buffer (``Tensor.name``) by that path plus its attribute.
Moving and saving the state: :mod:`tpx.nn._module_state`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import p10
import tpx as tp
from p10 import Handle
from tpx.nn._errors import LayerShapeError
from tpx.nn._module_state import ModuleState


def Parameter(data: Any, requires_grad: bool = True) -> tp.Tensor:
    """A leaf ``tp.Tensor`` that requires grad; assigned to a module attribute it is registered
    as a parameter (a plain function: ``tpx.Tensor`` is not subclassed).

    >>> import tpx as tp, tpx.nn as nn
    >>> class Scale(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.s = nn.Parameter(tp.ones(1))
    >>> [name for name, _ in Scale().named_parameters()]
    ['s']
    """
    raw = data.detach() if isinstance(data, tp.Tensor) else tp.asarray(data)
    t = tp.Tensor(raw)
    return t.requires_grad_(requires_grad)


class _CallState(threading.local):
    """The modules running in this thread, and the paths of the outermost one's submodules."""

    def __init__(self) -> None:
        self.stack: list[tuple[Module, str | None]] = []
        self.paths: dict[int, str] = {}


_calls = _CallState()


class Module(ModuleState):
    """Base class of every layer and model, as ``torch.nn.Module``.

    Subclasses assign parameters, buffers and submodules as attributes in ``__init__`` and
    define ``forward``. ``scope_name`` is the scope of the outermost module of a call.

    >>> import tpx as tp, tpx.nn as nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(3, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> net = Net()
    >>> y = net(tp.ones((4, 3)))
    >>> y.shape, y.grad_fn.scope, y.grad_fn.edges[0].scope
    ((4, 2), 'model', 'model.fc')
    >>> [n for n, _ in net.named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    scope_name: str = "model"
    # NOTE: state entries a load may lack (added after checkpoints were written); they keep
    # their current value, as PyTorch does for BatchNorm's num_batches_tracked.
    _optional_state: tuple[str, ...] = ()

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_forward_hooks", [])
        object.__setattr__(self, "training", True)

    # -- attribute registration ---------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__}: call super().__init__() before assigning attributes"
            )
        if isinstance(value, Module):
            self._put("_modules", name, value)
        elif _is_parameter(value) or (name in self._parameters and value is None):
            self._put("_parameters", name, value)
        elif name in self._parameters and isinstance(value, tp.Tensor):
            raise TypeError(
                f"{type(self).__name__}.{name} is a parameter; assign a leaf tensor that "
                "requires grad (nn.Parameter(...)) or None, or update it in place under "
                "tp.no_grad()"
            )
        elif name in self._buffers and (value is None or isinstance(value, tp.Tensor)):
            self._buffers[name] = value
        else:
            self._forget(name)
            object.__setattr__(self, name, value)

    def _put(self, table: str, name: str, value: Any) -> None:
        # NOTE: replacing an entry keeps its place, so state_dict order stays stable
        entries = getattr(self, table)
        if name not in entries:
            self._forget(name)
        entries[name] = value

    def _forget(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters or name in self._buffers or name in self._modules:
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def register_parameter(self, name: str, param: tp.Tensor | None) -> None:
        """Register ``param`` (a leaf that requires grad, or None) under ``name``."""
        if param is not None and not _is_parameter(param):
            raise TypeError(
                f"register_parameter({name!r}): expected a leaf tensor that requires grad "
                "(nn.Parameter(...)) or None"
            )
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: tp.Tensor | None, persistent: bool = True) -> None:
        """Register a non-trainable tensor (running statistics, masks); persistent buffers go
        into ``state_dict``.

        >>> import tpx as tp, tpx.nn as nn
        >>> m = nn.Module(); m.register_buffer("count", tp.zeros(1))
        >>> list(m.state_dict())
        ['count']
        """
        self._forget(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` as a child called ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module({name!r}): {type(module).__name__} is not a Module")
        self._forget(name)
        self._modules[name] = module

    # -- calling ------------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of this module; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name, path = self._scope_of_call()
        root = not _calls.stack
        if root:
            _calls.paths = _enter_root(self)
        _calls.stack.append((self, path))
        try:
            with tp.scope(name):
                out = self.forward(*args, **kwargs)
                for hook in tuple(self._forward_hooks):
                    result = hook(self, args, out)
                    out = out if result is None else result
                return out
        except p10.ShapeError as e:
            if isinstance(e, LayerShapeError):
                raise
            outer = tp.current_scope()
            where = f"{outer}.{name}" if outer else name
            raise LayerShapeError(f"in {where} ({self._describe()}): {e}") from e
        finally:
            _calls.stack.pop()
            if root:
                _calls.paths = {}

    def _scope_of_call(self) -> tuple[str, str | None]:
        """The scope name this call enters, relative to the calling module, and the path of
        this module below the outermost one (None when it is not one of its submodules)."""
        if not _calls.stack:
            return self.scope_name, ""
        parent_path = _calls.stack[-1][1]
        path = _calls.paths.get(id(self))
        if path is None or parent_path is None:
            return type(self).__name__, None
        if parent_path == "":
            return path, path
        if path.startswith(parent_path + "."):
            return path[len(parent_path) + 1 :], path
        return type(self).__name__, path

    def _describe(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"

    def check_shape(self, x: Any, expected: str, ok: bool) -> None:
        """Raise :class:`LayerShapeError` naming this layer's path when ``ok`` is false.

        ``expected`` says in words what the layer needs, e.g. ``"(N, 64) with 64 features"``.
        """
        if not ok:
            where = tp.current_scope() or type(self).__name__
            raise LayerShapeError(
                f"{where} ({self._describe()}): expected input of shape {expected}, "
                f"got {tuple(x.shape)}; fix the layer's size or the input"
            )

    def register_forward_hook(self, hook: Callable[[Module, tuple, Any], Any]) -> Handle:
        """``hook(module, args, output)`` runs after ``forward`` (it may return a new output);
        returns a handle whose ``remove()`` unregisters it.

        >>> import tpx as tp, tpx.nn as nn
        >>> seen = []
        >>> m = nn.ReLU(); h = m.register_forward_hook(lambda mod, a, o: seen.append(o.shape))
        >>> _ = m(tp.ones(3)); h.remove(); _ = m(tp.ones(2)); seen
        [(3,)]
        """
        hooks = self._forward_hooks
        hooks.append(hook)
        return Handle(lambda: hooks.remove(hook) if hook in hooks else None)

    # -- traversal ----------------------------------------------------------------------------
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every submodule once, depth first in definition order.

        >>> import tpx.nn as nn
        >>> [n for n, _ in nn.Sequential(nn.Linear(2, 2), nn.ReLU()).named_modules()]
        ['', '0', '1']
        """
        seen: set[int] = set()
        stack: list[tuple[str, Module]] = [(prefix, self)]
        while stack:
            path, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield path, module
            children = [(n, m) for n, m in module._modules.items() if m is not None]
            for name, child in reversed(children):
                stack.append((f"{path}.{name}" if path else name, child))

    def modules(self) -> Iterator[Module]:
        """This module and every submodule (see :meth:`named_modules`)."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct children with their attribute names."""
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator[Module]:
        """The direct children.

        >>> import tpx.nn as nn
        >>> len(list(nn.Sequential(nn.Linear(2, 2), nn.ReLU()).children()))
        2
        """
        for _, m in self.named_children():
            yield m

    def _named_members(self, table: str, prefix: str, recurse: bool) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for path, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{path}.{name}" if path else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Any]]:
        """``(dotted name, parameter)`` pairs, each shared parameter once.

        >>> import tpx.nn as nn
        >>> [(n, p.shape) for n, p in nn.Linear(3, 2).named_parameters()]
        [('weight', (2, 3)), ('bias', (2,))]
        """
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True) -> Iterator[tp.Tensor]:
        """The parameters (see :meth:`named_parameters`)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Any]]:
        """``(dotted name, buffer)`` pairs."""
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[tp.Tensor]:
        """The buffers (see :meth:`named_buffers`)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_parameters(self) -> int:
        """The number of trainable scalars.

        >>> import tpx.nn as nn
        >>> nn.Linear(3, 2).num_parameters()
        8
        """
        return sum(p.numel() for p in self.parameters())

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule, then on this one; returns self."""
        for m in reversed(list(self.modules())):
            fn(m)
        return self

    # -- modes and gradients ------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops, BatchNorm uses batch statistics); returns self.

        >>> import tpx.nn as nn
        >>> nn.Sequential(nn.Dropout(0.5)).eval()[0].training
        False
        """
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (False) or unfreeze every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the ``.grad`` of every parameter (to None, or to zeros)."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = tp.zeros_like(p.grad)

    def extra_repr(self) -> str:
        """The arguments shown in this module's repr (subclasses override it)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, child in self.named_children():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        if len(lines) == 1:
            return lines[0] + ")"
        return "\n".join(lines) + "\n)"


def _enter_root(root: Module) -> dict[int, str]:
    """The path of every submodule of ``root``; names their parameters and buffers on the way
    (``model.0.weight``: the root's scope name, then the dotted path of ``named_parameters()``).
    """
    paths: dict[int, str] = {}
    seen: set[int] = set()
    for path, module in root.named_modules():
        paths[id(module)] = path
        if module._parameters or module._buffers:
            base = f"{root.scope_name}.{path}" if path else root.scope_name
            _name_members(module._parameters, base, seen)
            _name_members(module._buffers, base, seen)
    return paths


def _name_members(table: dict[str, Any], base: str, seen: set[int]) -> None:
    # NOTE: a shared tensor keeps its first path, as in named_parameters(); a name is written
    # only when it is missing or changed, so a call of an unchanged model writes nothing.
    # _rare_attrs is read directly (Tensor.name's storage): this runs on every outermost call.
    for key, t in table.items():
        if t.__class__ is not tp.Tensor or id(t) in seen:
            continue
        seen.add(id(t))
        name = f"{base}.{key}"
        extra = t._rare_attrs
        if extra is None or extra.get("name") != name:
            t.name = name


def _is_parameter(value: Any) -> bool:
    return isinstance(value, tp.Tensor) and value.is_leaf and value.requires_grad
