"""Module: registration, traversal, modes, state dicts (.npz, strict), scopes, shape errors."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

import p10
import tpx as tp
import tpx.nn as nn


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadSelfAttention(dim, 2, causal=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.attn(x))


class Net(nn.Module):
    def __init__(self, dim: int = 4, depth: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(7, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 3))
        self.register_buffer("steps", tp.zeros(1))
        self.register_buffer("scratch", tp.zeros(2), persistent=False)

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def scopes_of(out: tp.Tensor) -> set[str]:
    """The scopes of every node in the graph of ``out`` (iterative walk)."""
    seen, stack, scopes = set(), [out.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or not hasattr(node, "scope"):
            continue
        seen.add(id(node))
        scopes.add(node.scope)
        stack.extend(node.edges)
    return scopes


# -- registration and traversal -------------------------------------------------------------
def test_named_parameters_in_definition_order():
    names = [n for n, _ in Net().named_parameters()]
    assert names[:3] == ["embed.weight", "blocks.0.attn.q_proj.weight", "blocks.0.attn.q_proj.bias"]
    assert names[-4:] == ["head.0.weight", "head.0.bias", "head.2.weight", "head.2.bias"]
    assert len(names) == len(set(names)) == 1 + 2 * (8 + 2) + 4


def test_shared_modules_and_parameters_are_listed_once():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    assert len(list(seq.children())) == 3


def test_containers():
    d = nn.ModuleDict({"a": nn.Linear(2, 3)})
    d["b"] = nn.ReLU()
    assert list(d) == ["a", "b"] and "b" in d and len(d) == 2
    lst = nn.ModuleList([nn.ReLU()]).extend([nn.Tanh()]).append(nn.Sigmoid())
    assert [type(m).__name__ for m in lst] == ["ReLU", "Tanh", "Sigmoid"]
    assert isinstance(nn.Sequential(nn.ReLU(), nn.Tanh())[-1], nn.Tanh)


def test_assigning_non_leaf_to_a_parameter_name_is_refused():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="weight is a parameter"):
        m.weight = m.weight * 2
    m.weight = nn.Parameter(tp.zeros((2, 2)))
    assert m.weight.requires_grad and next(n for n, _ in m.named_parameters()) == "weight"


def test_super_init_is_required():
    class Bad(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super"):
        Bad()


def test_train_eval_zero_grad_and_to():
    net = Net()
    assert all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    net(tp.asarray([[1, 2]])).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.double()
    assert {p.dtype for p in net.parameters()} == {np.dtype("float64")}
    assert net.steps.dtype == np.float64
    assert net.num_parameters() == sum(p.numel() for p in net.parameters())


def test_repr_shows_the_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert "(0): Linear(in_features=2, out_features=3, bias=True)" in text
    assert "(1): ReLU()" in text


def test_forward_hook_can_replace_output_and_be_removed():
    m = nn.Linear(2, 2)
    h = m.register_forward_hook(lambda mod, args, out: out * 0)
    assert np.all(m(tp.ones((1, 2))).numpy() == 0)
    h.remove()
    assert not np.all(m(tp.ones((1, 2))).numpy() == 0)


# -- state dicts ----------------------------------------------------------------------------------
def test_state_dict_has_parameters_and_persistent_buffers():
    sd = Net().state_dict()
    assert "steps" in sd and "scratch" not in sd
    assert all(isinstance(v, np.ndarray) for v in sd.values())
    bn = nn.BatchNorm1d(3).state_dict()
    assert list(bn) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]


def test_state_dict_round_trip_through_npz_without_pickle(tmp_path):
    p10.manual_seed(1)
    a = Net()
    with tp.no_grad():
        a.steps.fill_(5.0)
    path = tmp_path / "net.npz"
    nn.save(a, path)
    with zipfile.ZipFile(path) as z:
        assert all(name.endswith(".npy") for name in z.namelist())
    loaded = nn.load(path)
    assert all(v.dtype != object for v in loaded.values())
    p10.manual_seed(2)
    b = Net()
    assert not np.allclose(a.head[0].weight.numpy(), b.head[0].weight.numpy())
    assert b.load_state_dict(loaded) == ([], [])
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(x, y, err_msg=name)
    idx = tp.asarray([[1, 2, 3]])
    np.testing.assert_array_equal(a(idx).numpy(), b(idx).numpy())


def test_load_state_dict_writes_in_place():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    weight = b.weight
    b.load_state_dict(a.state_dict())
    assert b.weight is weight and np.array_equal(weight.numpy(), a.weight.numpy())


def test_strict_load_lists_missing_unexpected_and_misshaped_keys():
    sd = Net().state_dict()
    del sd["head.2.bias"]
    sd["extra.weight"] = np.zeros(3)
    sd["head.0.weight"] = np.zeros((5, 4))
    with pytest.raises(nn.StateDictError) as info:
        Net().load_state_dict(sd)
    text = str(info.value)
    assert "missing keys: head.2.bias" in text
    assert "unexpected keys: extra.weight" in text
    assert "head.0.weight: expected (4, 4), got (5, 4)" in text
    assert isinstance(info.value, RuntimeError)


def test_non_strict_load_returns_keys_but_shapes_must_match():
    sd = {"head.0.weight": np.zeros((4, 4)), "other": np.zeros(1)}
    net = Net()
    result = net.load_state_dict(sd, strict=False)
    assert result.unexpected_keys == ["other"] and "embed.weight" in result.missing_keys
    assert np.all(net.head[0].weight.numpy() == 0)
    with pytest.raises(nn.StateDictError, match="mis-shaped"):
        net.load_state_dict({"head.0.weight": np.zeros((1, 4))}, strict=False)


# -- scopes and error messages --------------------------------------------------------------------
def test_every_node_gets_the_module_path_as_scope():
    out = Net()(tp.asarray([[1, 2, 3]]))
    scopes = scopes_of(out)
    assert "model.blocks.0.attn.q_proj" in scopes
    assert "model.blocks.1.norm" in scopes
    assert "model.head.2" in scopes and "model.embed" in scopes
    assert out.grad_fn.scope == "model.head.2"
    assert tp.current_scope() == ""


def test_scopes_nest_under_the_callers_scope_and_root_name():
    net = nn.Sequential(nn.Linear(2, 2))
    net.scope_name = "encoder"
    with tp.scope("step"):
        out = net(tp.ones((1, 2)))
    assert out.grad_fn.scope == "step.encoder.0"


def test_module_called_outside_its_parent_uses_its_class_name():
    helper = nn.Linear(2, 2)

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return helper(self.fc(x))

    assert Outer()(tp.ones((1, 2))).grad_fn.scope == "model.Linear"


def test_a_call_names_parameters_and_buffers_with_their_paths():
    net = Net()
    assert all(p.name is None for p in net.parameters())
    net(tp.asarray([[1, 2, 3]]))
    for path, p in net.named_parameters():
        assert p.name == f"model.{path}"
    assert net.blocks[1].attn.q_proj.weight.name == "model.blocks.1.attn.q_proj.weight"
    assert net.head[2].bias.name == "model.head.2.bias"
    assert [b.name for b in net.buffers()] == ["model.steps", "model.scratch"]


def test_names_follow_the_outermost_module_and_shared_parameters_keep_their_first_path():
    inner = nn.Linear(2, 2)
    net = nn.Sequential(inner, nn.ReLU(), nn.Linear(2, 2))
    net[2].weight = inner.weight  # tied: named_parameters() lists it once, as "0.weight"
    net.scope_name = "encoder"
    net(tp.ones((1, 2)))
    assert inner.weight.name == "encoder.0.weight" and net[2].bias.name == "encoder.2.bias"
    inner.weight.name = "renamed"
    inner(tp.ones((1, 2)))  # called on its own, it is the outermost module
    assert inner.weight.name == "model.weight"
    net(tp.ones((1, 2)))
    assert inner.weight.name == "encoder.0.weight"


def test_a_helper_called_outside_its_parent_keeps_its_parameters_names():
    helper = nn.Linear(2, 2)

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return helper(self.fc(x))

    Outer()(tp.ones((1, 2)))
    assert helper.weight.name is None, "not a submodule: no path to name it by"


def test_shape_mismatch_names_the_layer_path_and_shapes():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(6, 2)))
    with pytest.raises(nn.LayerShapeError) as info:
        model(tp.ones((3, 4)))
    text = str(info.value)
    assert "model.2.0" in text and "(..., 6)" in text and "(3, 8)" in text
    assert isinstance(info.value, ValueError) and isinstance(info.value, p10.ShapeError)
    assert tp.current_scope() == ""


def test_shape_error_raised_inside_p10_is_annotated_with_the_path():
    class Mul(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(tp.ones((3,)))

        def forward(self, x):
            return x * self.w

    model = nn.Sequential(nn.Identity(), Mul())
    with pytest.raises(nn.LayerShapeError, match=r"in model\.1 \(Mul\(\)\): .*\(2, 4\)"):
        model(tp.ones((2, 4)))


def test_conv_channel_mismatch_names_the_layer():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.Conv2d(3, 2, 3))
    with pytest.raises(nn.LayerShapeError, match=r"model\.1 .*\(N, 3, H, W\).*\(1, 4, 6, 6\)"):
        model(tp.ones((1, 1, 8, 8)))


def test_shape_error_in_the_outermost_module_names_its_scope():
    class Mul(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(tp.ones((3,)))

        def forward(self, x):
            return x * self.w

    with pytest.raises(nn.LayerShapeError, match=r"^in model \(Mul\(\)\): "):
        Mul()(tp.ones((2, 4)))


def test_parameter_helpers():
    t = tp.ones(2, requires_grad=True)
    p = nn.Parameter(t * 2)
    assert p.is_leaf and p.requires_grad and p.tolist() == [2.0, 2.0]
    m = nn.Module()
    with pytest.raises(TypeError, match="leaf tensor that requires grad"):
        m.register_parameter("w", tp.ones(2))
    m.register_parameter("w", p)
    m.register_parameter("unused", None)
    assert [n for n, _ in m.named_parameters()] == ["w"] and m.unused is None
    m.requires_grad_(False)
    assert not m.w.requires_grad
    visited = []
    nn.Sequential(nn.ReLU(), nn.Tanh()).apply(lambda mod: visited.append(type(mod).__name__))
    assert visited == ["Tanh", "ReLU", "Sequential"]
    with pytest.raises(TypeError, match="is not a Module"):
        m.add_module("x", 3)  # type: ignore[arg-type]
