"""PyTorch names on tpx: aliases, devices, size(), dim=/keepdim=, split/chunk, .data, format,
NumPy interop, and the new ops (topk, roll, tril/triu, masked_fill, multinomial, randperm)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tpx as tp
from tpx import InplaceError


def _x(values, requires_grad: bool = False) -> tp.Tensor:
    return tp.asarray(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# -- names users hit first ------------------------------------------------------------------
def test_dtype_aliases_are_pytorchs() -> None:
    assert (tp.float, tp.double, tp.long, tp.int, tp.short) == (
        tp.float32, tp.float64, tp.int64, tp.int32, tp.int16
    )  # fmt: skip
    assert tp.ones(2, dtype=tp.long).dtype == np.int64
    assert tp.ones(2).int().dtype == np.int32 and tp.ones(2).bool().dtype == np.bool_


def test_import_loads_the_submodules() -> None:
    import tpx

    assert tpx.nn.functional.relu is not None and tpx.optim.SGD is not None
    assert tpx.autograd.Function is tp.Function and tpx.utils.data.DataLoader is tp.data.DataLoader


def test_devices() -> None:
    x = tp.ones(2)
    assert x.device == tp.device("cpu") == "cpu" and str(x.device) == "cpu"
    assert x.to("cpu") is x and x.cpu() is x and x.to(tp.device("cpu")) is x
    assert tp.device("cuda:1").index == 1 and not x.is_cuda
    assert not tp.cuda.is_available() and tp.cuda.device_count() == 0
    with pytest.raises(tp.DeviceError, match=r"cuda.*is_available"):
        x.to("cuda")
    with pytest.raises(tp.DeviceError, match="cuda"):
        tp.zeros(2, device="cuda")
    with pytest.raises(ValueError, match="unknown device type"):
        tp.device("gpu")
    assert tp.zeros(2, device=tp.device("cpu")).shape == (2,)


def test_to_takes_dtype_device_and_tensor() -> None:
    x = tp.ones(2, requires_grad=True)
    y = x.to(tp.float64)
    assert y.dtype == np.float64 and y.grad_fn is not None  # the cast is recorded
    assert x.to("cpu", tp.float64).dtype == np.float64
    assert x.to(tp.zeros(1, dtype=tp.int64)).dtype == np.int64
    assert x.to(dtype=tp.float64, device="cpu").dtype == np.float64


def test_size_numel_dim() -> None:
    x = tp.zeros(2, 3, 4)
    assert x.size() == (2, 3, 4) and isinstance(x.size(), tp.Size) and x.size(-1) == 4
    assert x.numel() == 24 and x.dim() == 3 and x.size()[1:] == tp.Size((3, 4))
    assert repr(x.size()) == "tpx.Size([2, 3, 4])"
    assert x.size == 24 and isinstance(x.size, int)  # not called: the Array API's attribute


def test_positional_shapes() -> None:
    assert tp.zeros(2, 3).shape == tp.ones((2, 3)).shape == tp.empty([2, 3]).shape == (2, 3)
    assert tp.randn(2, 3).shape == tp.rand(4).shape[:0] + (2, 3)
    assert tp.zeros(size=(1, 2)).shape == (1, 2)
    x = tp.arange(6)
    assert x.view(2, 3).shape == x.reshape(3, 2)[None].shape[1:][::-1] == (2, 3)
    assert x.view(-1, 2).shape == (3, 2) and x.view_as(tp.zeros(3, 2)).shape == (3, 2)
    g = tp.Generator().manual_seed(3)
    assert (
        tp.randn(2, 2, generator=g).tolist()
        == tp.randn(2, 2, generator=tp.Generator().manual_seed(3)).tolist()
    )


def test_dim_and_keepdim_everywhere() -> None:
    x = _x([[1.0, 5.0, 2.0], [7.0, 2.0, 3.0]])
    assert x.sum(dim=1, keepdim=True).shape == (2, 1) and x.sum(dim=[0, 1]).item() == 20.0
    assert tp.sum(x, 0).tolist() == [8.0, 7.0, 5.0] and x.mean(dim=0).shape == (3,)
    assert tp.mean(x, dim=1, keepdim=True).shape == (2, 1)
    values, indices = x.max(dim=1)
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert x.max(1, keepdim=True).values.shape == (2, 1) and x.max().item() == 7.0
    assert x.min(0).indices.tolist() == [0, 1, 0] and tp.max(x, _x(4.0)).min().item() == 4.0
    assert x.max(axis=1).tolist() == [5.0, 7.0]  # the Array API keyword keeps P10's meaning
    assert x.argmax(dim=1).tolist() == [1, 0] and tp.argmin(x, dim=0, keepdim=True).shape == (1, 3)
    assert x.softmax(dim=0).sum(0).tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert tp.log_softmax(x, dim=1).shape == (2, 3) and x.cumsum(dim=1)[:, -1].tolist() == [8, 12]
    assert x.prod(dim=1).tolist() == [10.0, 42.0] and x.logsumexp(dim=1).shape == (2,)
    assert (x > 1).all(dim=1).tolist() == [False, True] and (x > 6).any(dim=0).shape == (3,)
    assert x.squeeze(dim=0).shape == (2, 3) and x.unsqueeze(dim=1).shape == (2, 1, 3)


def test_var_std_are_unbiased_by_default() -> None:
    x = _x([1.0, 2.0, 3.0, 4.0])
    assert x.var().item() == pytest.approx(5 / 3) and x.std(
        unbiased=False
    ).item() ** 2 == pytest.approx(1.25)
    assert x.var(axis=0).item() == 1.25  # Array API call: correction 0
    assert tp.var(x, 0, correction=0).item() == 1.25 and np.var(x).item() == 1.25


def test_cat_stack_split_chunk_follow_pytorch() -> None:
    x = tp.arange(10)
    assert [t.tolist() for t in tp.split(x, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [t.shape for t in x.split([3, 7])] == [(3,), (7,)]
    assert [t.shape for t in tp.chunk(tp.zeros(2, 5), 2, dim=1)] == [(2, 3), (2, 2)]
    assert tp.cat([tp.zeros(2, 1), tp.ones(2, 2)], dim=1).shape == (2, 3)
    assert tp.stack([tp.zeros(3), tp.ones(3)], dim=1).shape == (3, 2)
    with pytest.raises(ValueError, match="sum to 4"):
        tp.split(x, [1, 3])
    w = _x([1.0, 2.0, 3.0], requires_grad=True)
    a, b = tp.split(w, 2)
    (a.sum() * 2 + b.sum() * 3).backward()
    assert w.grad.tolist() == [2.0, 2.0, 3.0]


def test_repeat_is_tile_and_flip_takes_dims() -> None:
    assert tp.asarray([1, 2]).repeat(2, 2).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    assert tp.asarray([1, 2]).repeat_interleave(2).tolist() == [1, 1, 2, 2]
    assert tp.arange(4).reshape(2, 2).flip(0, 1).tolist() == [[3, 2], [1, 0]]
    assert tp.flip(tp.arange(3), [0]).tolist() == [2, 1, 0] and tp.zeros(2, 3).t().shape == (3, 2)


# -- .data, format, scalar products ----------------------------------------------------------
def test_data_is_a_detached_settable_view() -> None:
    p = _x([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    p.data -= 0.25 * p.grad
    assert p.tolist() == [0.5, 1.0] and p.requires_grad and p.is_leaf
    assert not p.data.requires_grad and p.data.grad_fn is None
    p.data = tp.zeros(3, dtype=tp.float64)
    assert p.shape == (3,) and p.requires_grad
    with pytest.raises(tp.RequiresGradError):
        p.data = tp.zeros(3, dtype=tp.int64)


def test_format_of_zero_d_tensors() -> None:
    loss = _x([0.123456, 1.0]).sum()
    assert f"{loss:.3f}" == "1.123" and f"{tp.asarray(3):>3d}" == "  3"
    assert f"{_x([1.0])}" == str(_x([1.0]))
    with pytest.raises(TypeError, match="0-d tensor"):
        f"{_x([1.0, 2.0]):.2f}"


def test_scalar_product_saves_only_what_its_rule_reads() -> None:
    x = _x([1.0, 2.0], requires_grad=True)
    d = x * 1.0
    d += d * 2  # the product saves the scalar, not d: backward runs, as in PyTorch
    d.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    y = x * 1.0
    z = y * x  # both require grad: both saved, so writing y later is caught
    y += 1
    with pytest.raises(InplaceError):
        z.sum().backward()


# -- NumPy interop ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "expr",
    [
        lambda t: np.float64(2) * t,
        lambda t: np.int64(2) * t,
        lambda t: np.ones(2) + t,
        lambda t: np.exp(t),
        lambda t: np.sum(t),
        lambda t: np.mean(t, axis=0),
        lambda t: np.max(t),
    ],
    ids=["f64-scalar", "i64-scalar", "ndarray", "ufunc", "sum", "mean", "max"],
)
def test_numpy_keeps_the_graph(expr) -> None:
    t = _x([1.0, 2.0], requires_grad=True)
    out = expr(t)
    assert isinstance(out, tp.Tensor) and out.requires_grad
    out.sum().backward()
    assert t.grad is not None


def test_numpy_refuses_to_drop_the_graph() -> None:
    t = _x([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"numpy\.concatenate.*drop the graph"):
        np.concatenate([t, t])
    with pytest.raises(TypeError, match=r"numpy\.arctan"):
        np.arctan(t)
    assert np.concatenate([t.detach(), t.detach()]).tolist() == [1.0, 2.0, 1.0, 2.0]
    with tp.no_grad():
        assert isinstance(np.arctan(t), np.ndarray)
    assert np.allclose(t.detach(), [1.0, 2.0]) and np.allclose(t, [1.0, 2.0])
    assert np.argsort(t).tolist() == [0, 1] and np.array_equal(t, [1.0, 2.0])


# -- new ops ---------------------------------------------------------------------------------
def test_topk_values_indices_and_gradient() -> None:
    x = _x([[1.0, 4.0, 2.0, 3.0], [5.0, 0.0, 6.0, 1.0]], requires_grad=True)
    v, i = x.topk(2, dim=1)
    assert v.tolist() == [[4.0, 3.0], [6.0, 5.0]] and i.tolist() == [[1, 3], [2, 0]]
    assert tp.topk(x, 1, dim=0, largest=False).indices.tolist() == [[0, 1, 0, 1]]
    v.sum().backward()
    assert x.grad.tolist() == [[0, 1, 0, 1], [1, 0, 1, 0]]
    with pytest.raises(ValueError, match="k=5"):
        x.topk(5)


def test_roll_tril_triu_masked_fill() -> None:
    x = tp.arange(6).reshape(2, 3)
    assert x.roll(1, 1).tolist() == [[2, 0, 1], [5, 3, 4]]
    assert tp.roll(x, 1).tolist() == [[5, 0, 1], [2, 3, 4]]
    assert tp.roll(x, (1, 1), (0, 1)).tolist() == [[5, 3, 4], [2, 0, 1]]
    assert x.tril().tolist() == [[0, 0, 0], [3, 4, 0]] and x.triu(1).tolist() == [
        [0, 1, 2],
        [0, 0, 5],
    ]
    w = _x([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    mask = tp.ones(2, 2).tril() == 0
    out = w.masked_fill(mask, float("-inf")).softmax(dim=-1)
    assert out[0].tolist() == [1.0, 0.0]
    out[1, 0].backward()
    assert w.grad[0].tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="bool tensor"):
        w.masked_fill(tp.zeros(2, 2), 0.0)


def test_multinomial_randperm_randint() -> None:
    g = tp.Generator().manual_seed(0)
    s = tp.multinomial(_x([[0.0, 1.0, 3.0], [1.0, 0.0, 0.0]]), 5, replacement=True, generator=g)
    assert s.shape == (2, 5) and s.dtype == np.int64 and set(s[1].tolist()) == {0}
    assert 0 not in s[0].tolist()
    again = tp.multinomial(_x([[0.0, 1.0, 3.0], [1.0, 0.0, 0.0]]), 5, replacement=True,
                           generator=tp.Generator().manual_seed(0))  # fmt: skip
    assert again.tolist() == s.tolist()
    assert sorted(tp.multinomial(_x([1.0, 1.0, 1.0]), 3).tolist()) == [0, 1, 2]
    with pytest.raises(ValueError, match="without replacement"):
        tp.multinomial(_x([1.0, 0.0]), 2)
    assert sorted(tp.randperm(6, generator=g).tolist()) == list(range(6))
    assert tp.randint(5, (3,)).shape == (3,) and tp.randint(2, 4, (2, 2)).min().item() >= 2


def test_autograd_namespace_and_inference_mode() -> None:
    x = _x([1.0, 2.0], requires_grad=True)
    tp.autograd.backward((x * 3).sum())
    assert x.grad.tolist() == [3.0, 3.0]
    (g,) = tp.autograd.grad((x * x).sum(), x)
    assert g.tolist() == [2.0, 4.0]
    with tp.inference_mode():
        assert not (x * 2).requires_grad

    @tp.inference_mode()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and (x * 2).requires_grad


def test_nn_save_load_use_the_exact_path(tmp_path) -> None:
    m = tp.nn.Linear(2, 1)
    path = os.path.join(tmp_path, "model.pt")
    tp.save(m.state_dict(), path)
    assert os.listdir(tmp_path) == ["model.pt"]
    m2 = tp.nn.Linear(2, 1)
    m2.load_state_dict(tp.nn.load(path))
    assert m2.weight.tolist() == m.weight.tolist()


def test_sort_argsort_gather_index_select_norm() -> None:
    x = _x([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], requires_grad=True)
    v, i = x.sort(dim=1, descending=True)
    assert v.tolist() == [[3.0, 2.0, 1.0], [5.0, 4.0, 0.0]] and i.tolist() == [[0, 2, 1], [1, 2, 0]]
    assert tp.argsort(x, dim=0).tolist() == [[1, 0, 0], [0, 1, 1]]
    assert x.gather(1, tp.asarray([[2], [0]])).tolist() == [[2.0], [0.0]]
    assert x.index_select(1, tp.asarray([2, 2])).shape == (2, 2)
    (v[:, 0] * tp.asarray([1.0, 10.0], dtype=tp.double)).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 10.0, 0.0]]
    assert tp.norm(_x([3.0, 4.0])).item() == 5.0 and _x([[3.0, -4.0]]).norm(1, dim=1).tolist() == [
        7.0
    ]
    with pytest.raises(ValueError, match="p=3"):
        tp.norm(x, p=3)


def test_equal_allclose_contiguous_type_and_likes() -> None:
    a = _x([1.0, 2.0])
    assert tp.equal(a, a.clone()) is True and tp.equal(a, tp.ones(3)) is False
    assert tp.allclose(a, a + 1e-9) and not tp.allclose(a, a + 1e-3)
    assert tp.isclose(a, _x([1.0, 2.5])).tolist() == [True, False]
    x = tp.zeros(2, 3).permute(1, 0).contiguous()
    assert x.is_contiguous() and x.view(-1).shape == (6,)
    assert a.type(tp.float32).dtype == np.float32 and a.type() == "float64"
    assert tp.rand_like(a).dtype == np.float64 and tp.randn_like(a).shape == (2,)


def test_in_place_methods_record_and_check() -> None:
    w = _x([-1.0, 0.5, 2.0], requires_grad=True)
    y = w * 1.0
    y.clamp_(min=0.0).exp_()
    y.sum().backward()
    assert w.grad.tolist() == pytest.approx([0.0, np.exp(0.5), np.exp(2.0)])
    with pytest.raises(InplaceError, match="leaf"):
        w.uniform_(-1, 1)
    with tp.no_grad():
        w.uniform_(-1, 1, generator=tp.Generator().manual_seed(0)).normal_(0.0, 0.1)
    assert w.requires_grad and w.is_leaf and float(w.abs().max()) < 1.0
    m = _x([1.0, 2.0]).masked_fill_(_x([1.0, 2.0]) > 1.5, 0.0)
    assert m.tolist() == [1.0, 0.0]
    assert tp.nn.ReLU(inplace=True)(_x([-1.0, 1.0])).tolist() == [0.0, 1.0]
    assert tp.nn.functional.relu(_x([-1.0]), inplace=True).tolist() == [0.0]


def test_module_to_keeps_parameters_and_takes_devices() -> None:
    m = tp.nn.Linear(2, 1)
    w = m.weight
    opt = tp.optim.SGD(m.parameters(), lr=0.1)
    assert m.to("cpu") is m and m.to(tp.device("cpu"), tp.float64) is m and m.weight is w
    assert w.dtype == np.float64 and m.cpu() is m
    m(tp.ones(3, 2, dtype=tp.float64)).sum().backward()
    opt.step()  # the optimizer built before .to() still updates the same parameters
    assert w.grad.dtype == np.float64
    with pytest.raises(tp.DeviceError):
        m.to("cuda")
