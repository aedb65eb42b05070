"""Embedding's padding_idx, BatchNorm's momentum=None (cumulative average) with
num_batches_tracked, and cross entropy with class-probability targets: values and gradients
against PyTorch in float64, plus the errors a wrong call gets."""

from __future__ import annotations

import numpy as np
import pytest

import p10
import tpx as tp
import tpx.nn as nn
import tpx.nn.functional as F
import tpx.optim as optim
from p10 import ShapeError
from tests.helpers.nn_check import check_module_grads, f64

RNG = np.random.default_rng(7)


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch


def close(ours: tp.Tensor, theirs, rtol: float = 1e-12, atol: float = 1e-12) -> None:
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs.detach().numpy(), rtol, atol)


# -- Embedding(padding_idx) ----------------------------------------------------------------------
@pytest.mark.parametrize("padding_idx", [0, 3, 4, -1, -5])
def test_embedding_padding_row_starts_zero_and_gets_no_grad_like_torch(torch, padding_idx):
    p10.manual_seed(0)
    ours = nn.Embedding(5, 3, padding_idx=padding_idx).double()
    ref = torch.nn.Embedding(5, 3, padding_idx=padding_idx).double()
    assert ours.padding_idx == ref.padding_idx
    assert repr(ours) == repr(ref)
    np.testing.assert_array_equal(ours.weight.numpy()[ours.padding_idx], 0.0)
    ref.load_state_dict({"weight": torch.tensor(ours.state_dict()["weight"])})
    idx = np.array([[0, 1, ref.padding_idx], [ref.padding_idx, 4, 2], [3, 3, 0]])
    out, ref_out = ours(tp.asarray(idx)), ref(torch.tensor(idx))
    close(out, ref_out)
    r = RNG.standard_normal(out.shape)
    (out * tp.asarray(r)).sum().backward()
    (ref_out * torch.tensor(r)).sum().backward()
    close(ours.weight.grad, ref.weight.grad)
    np.testing.assert_array_equal(ours.weight.grad.numpy()[ours.padding_idx], 0.0)


@pytest.mark.parametrize("padding_idx", [None, 1, -2])
def test_functional_embedding_keeps_a_nonzero_padding_row_but_blocks_its_grad(torch, padding_idx):
    weight = RNG.standard_normal((4, 2))  # the padding row is not zero: F does not zero it
    idx = np.array([1, 2, 1, 0, 3, 2])
    w = f64(weight)
    ref_w = torch.tensor(weight, requires_grad=True)
    out = F.embedding(tp.asarray(idx), w, padding_idx=padding_idx)
    ref_out = torch.nn.functional.embedding(torch.tensor(idx), ref_w, padding_idx=padding_idx)
    close(out, ref_out)
    r = RNG.standard_normal(out.shape)
    (out * tp.asarray(r)).sum().backward()
    (ref_out * torch.tensor(r)).sum().backward()
    close(w.grad, ref_w.grad)


def test_embedding_without_padding_idx_is_unchanged():
    m = nn.Embedding(4, 2).double()
    assert m.padding_idx is None and repr(m) == "Embedding(4, 2)"
    m(tp.asarray([1, 1, 3])).sum().backward()
    np.testing.assert_array_equal(m.weight.grad.numpy().sum(1), [0.0, 4.0, 0.0, 2.0])


def test_embedding_padding_row_stays_zero_through_training():
    p10.manual_seed(1)
    m = nn.Embedding(6, 4, padding_idx=2).double()
    opt = optim.SGD(m.parameters(), lr=0.5, momentum=0.9, weight_decay=0.1)
    for _ in range(3):
        opt.zero_grad()
        (m(tp.asarray([[2, 0], [2, 5]])) ** 2).sum().backward()
        opt.step()
    np.testing.assert_array_equal(m.weight.numpy()[2], 0.0)
    assert np.abs(m.weight.numpy()[0]).sum() > 0


def test_embedding_reset_parameters_zeros_the_padding_row_again():
    m = nn.Embedding(3, 2, padding_idx=-1)
    with tp.no_grad():
        m.weight.fill_(1.0)
    m.reset_parameters()
    np.testing.assert_array_equal(m.weight.numpy()[2], 0.0)
    assert (m.weight.numpy()[:2] != 0).all()


@pytest.mark.parametrize("padding_idx", [5, -6, 100])
def test_embedding_rejects_out_of_range_padding_idx(padding_idx):
    with pytest.raises(ValueError, match=rf"Embedding: padding_idx={padding_idx} is out of range "
                       r"for num_embeddings=5; use a value in \[-5, 4\]"):  # fmt: skip
        nn.Embedding(5, 3, padding_idx=padding_idx)
    with pytest.raises(ValueError, match=rf"embedding: padding_idx={padding_idx} .* \[-5, 4\]"):
        F.embedding(tp.asarray([0]), tp.ones((5, 3)), padding_idx=padding_idx)


@pytest.mark.parametrize("padding_idx", [1.0, True, "0"])
def test_embedding_rejects_non_integer_padding_idx(padding_idx):
    with pytest.raises(TypeError, match="Embedding: padding_idx must be an int or None"):
        nn.Embedding(5, 3, padding_idx=padding_idx)


def test_functional_embedding_rejects_bad_weight_and_indices():
    with pytest.raises(ShapeError, match=r"embedding: weight must be \(num_embeddings, "):
        F.embedding(tp.asarray([0]), tp.ones(5))
    with pytest.raises(TypeError, match=r"embedding: indices must be integers, got float.*long"):
        F.embedding(tp.asarray([0.0]), tp.ones((5, 2)), padding_idx=0)


# -- BatchNorm(momentum=None) and num_batches_tracked ------------------------------------------
BN_CASES = [
    ("BatchNorm1d", [(4, 3), (7, 3), (2, 3), (5, 3)]),
    ("BatchNorm1d", [(3, 3, 4), (2, 3, 1), (5, 3, 2)]),
    ("BatchNorm2d", [(2, 3, 2, 2), (4, 3, 3, 1), (1, 3, 2, 3)]),
]


def _bn_pair(torch, kind: str, momentum):
    p10.manual_seed(0)
    ours = getattr(nn, kind)(3, momentum=momentum).double()
    with tp.no_grad():
        ours.weight.copy_(tp.asarray(RNG.uniform(0.5, 2.0, 3)))
        ours.bias.copy_(tp.asarray(RNG.standard_normal(3)))
    ref = getattr(torch.nn, kind)(3, momentum=momentum).double()
    ref.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    return ours, ref


@pytest.mark.parametrize("momentum", [None, 0.3])
@pytest.mark.parametrize(("kind", "shapes"), BN_CASES)
def test_batch_norm_running_stats_match_torch(torch, kind, shapes, momentum):
    ours, ref = _bn_pair(torch, kind, momentum)
    for shape in shapes:
        x = RNG.standard_normal(shape) * 2 + 1
        xt, rt = f64(x), torch.tensor(x, requires_grad=True)
        out, ref_out = ours(xt), ref(rt)
        close(out, ref_out, rtol=1e-10)
        r = RNG.standard_normal(shape)
        (out * tp.asarray(r)).sum().backward()
        (ref_out * torch.tensor(r)).sum().backward()
        close(xt.grad, rt.grad, rtol=1e-9, atol=1e-12)
        for name in ("running_mean", "running_var"):
            close(getattr(ours, name), getattr(ref, name))
        assert int(ours.num_batches_tracked) == int(ref.num_batches_tracked)
    for (_, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        close(p.grad, q.grad, rtol=1e-9, atol=1e-12)
    ours.eval(), ref.eval()
    x = RNG.standard_normal(shapes[0])
    close(ours(tp.asarray(x)), ref(torch.tensor(x)), rtol=1e-10)
    assert int(ours.num_batches_tracked) == len(shapes)  # eval does not count


def test_batch_norm_momentum_none_is_the_plain_average_of_batch_statistics():
    m = nn.BatchNorm1d(2, momentum=None).double()
    batches = [RNG.standard_normal((n, 2)) for n in (3, 5, 4)]
    for x in batches:
        m(tp.asarray(x))
    np.testing.assert_allclose(m.running_mean.numpy(), np.mean([b.mean(0) for b in batches], 0))
    expected_var = np.mean([b.var(0, ddof=1) for b in batches], 0)
    np.testing.assert_allclose(m.running_var.numpy(), expected_var, rtol=1e-12)


def test_batch_norm_state_dict_matches_torch_keys_and_dtypes(torch):
    for kind in ("BatchNorm1d", "BatchNorm2d"):
        ours, ref = getattr(nn, kind)(4).double(), getattr(torch.nn, kind)(4).double()
        sd = ours.state_dict()
        assert list(sd) == list(ref.state_dict())
        assert sd["num_batches_tracked"].shape == () and sd["num_batches_tracked"].dtype == np.int64
        off = getattr(nn, kind)(4, track_running_stats=False)
        assert list(off.state_dict()) == list(getattr(torch.nn, kind)(4, track_running_stats=False)
                                              .state_dict())  # fmt: skip
        assert off.num_batches_tracked is None


def test_batch_norm_state_round_trips_with_torch_and_npz(torch, tmp_path):
    ref = torch.nn.BatchNorm1d(2, momentum=None).double()
    for _ in range(3):
        ref(torch.randn(4, 2, dtype=torch.float64))
    ours = nn.BatchNorm1d(2, momentum=None).double()
    ours.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    assert int(ours.num_batches_tracked) == 3
    x = RNG.standard_normal((5, 2))
    ours(tp.asarray(x)), ref(torch.tensor(x))  # the 4th batch weighs 1/4 in both
    close(ours.running_mean, ref.running_mean)
    nn.save(ours.state_dict(), tmp_path / "bn.npz")
    again = nn.BatchNorm1d(2, momentum=None).double()
    again.load_state_dict(nn.load(tmp_path / "bn.npz"))
    assert int(again.num_batches_tracked) == 4
    close(again.running_var, ref.running_var)


def test_batch_norm_loads_state_dicts_written_before_num_batches_tracked(torch):
    old = {k: v for k, v in nn.BatchNorm1d(3).state_dict().items() if k != "num_batches_tracked"}
    model = nn.Sequential(nn.BatchNorm1d(3))
    result = model.load_state_dict({f"0.{k}": v for k, v in old.items()})
    assert result.missing_keys == [] and int(model[0].num_batches_tracked) == 0
    ref = torch.nn.Sequential(torch.nn.BatchNorm1d(3))  # PyTorch accepts the same dict
    ref.load_state_dict({f"0.{k}": torch.tensor(v) for k, v in old.items()})
    with pytest.raises(nn.StateDictError, match="running_var"):  # the others stay required
        model.load_state_dict({"0.weight": old["weight"], "0.bias": old["bias"]})


def test_batch_norm_double_keeps_the_counter_an_integer():
    m = nn.BatchNorm2d(2, momentum=None).double()
    assert m.num_batches_tracked.dtype == tp.int64 and m.running_mean.dtype == tp.float64
    assert "momentum=None" in repr(m)


def test_batch_norm_momentum_none_without_running_stats_uses_batch_statistics(torch):
    x = RNG.standard_normal((4, 2))
    ours = nn.BatchNorm1d(2, momentum=None, track_running_stats=False, affine=False).eval()
    ref = torch.nn.BatchNorm1d(2, momentum=None, track_running_stats=False, affine=False).eval()
    close(ours(tp.asarray(x)), ref(torch.tensor(x)), rtol=1e-10)


def test_batch_norm_single_value_per_channel_still_raises():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(2, momentum=None)(tp.ones((1, 2)))


# -- cross entropy with class-probability targets -----------------------------------------------
def soft_target(shape: tuple[int, ...], class_dim: int) -> np.ndarray:
    logits = RNG.standard_normal(shape)
    e = np.exp(logits - logits.max(class_dim, keepdims=True))
    return e / e.sum(class_dim, keepdims=True)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(("weighted", "smoothing"), [(False, 0.0), (True, 0.0), (False, 0.2),
                                                     (True, 0.35), (True, 1.0)])  # fmt: skip
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5), (2, 4, 2, 3), (4,)])
def test_soft_cross_entropy_values_and_grads_match_torch(torch, shape, weighted, smoothing,
                                                         reduction):  # fmt: skip
    class_dim = 0 if len(shape) == 1 else 1
    logits, target = RNG.standard_normal(shape) * 3, soft_target(shape, class_dim)
    weight = RNG.uniform(0.2, 3.0, shape[class_dim]) if weighted else None
    x, t = f64(logits), f64(target)
    xr = torch.tensor(logits, requires_grad=True)
    tr = torch.tensor(target, requires_grad=True)
    kwargs = {"reduction": reduction, "label_smoothing": smoothing}
    got = F.cross_entropy(x, t, weight=weight, **kwargs)
    ref = torch.nn.functional.cross_entropy(
        xr, tr, weight=None if weight is None else torch.tensor(weight), **kwargs
    )
    assert got.shape == tuple(ref.shape)
    close(got, ref)
    r = RNG.standard_normal(got.shape)
    (got * tp.asarray(r)).sum().backward()
    (ref * torch.tensor(r)).sum().backward()
    close(x.grad, xr.grad)
    close(t.grad, tr.grad)


def test_soft_cross_entropy_mean_divides_by_batch_elements_not_weights():
    logits, target = RNG.standard_normal((5, 3, 2)), soft_target((5, 3, 2), 1)
    weight = np.array([0.5, 2.0, 4.0])
    total = F.cross_entropy(f64(logits), f64(target), weight=weight, reduction="sum")
    mean = F.cross_entropy(f64(logits), f64(target), weight=weight)
    np.testing.assert_allclose(mean.item(), total.item() / 10, rtol=1e-13)


def test_cross_entropy_loss_module_takes_soft_targets(torch):
    logits, target = RNG.standard_normal((4, 3)), soft_target((4, 3), 1)
    weight = RNG.uniform(0.5, 2.0, 3)
    ours = nn.CrossEntropyLoss(weight=tp.asarray(weight), label_smoothing=0.1)
    ref = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight), label_smoothing=0.1)
    close(ours(f64(logits), f64(target)), ref(torch.tensor(logits), torch.tensor(target)))


def test_soft_cross_entropy_with_one_hot_target_equals_class_index_target():
    logits, idx = RNG.standard_normal((6, 4)), RNG.integers(0, 4, 6)
    weight = RNG.uniform(0.5, 2.0, 4)
    soft = F.cross_entropy(f64(logits), f64(np.eye(4)[idx]), weight=weight, reduction="none")
    hard = F.cross_entropy(f64(logits), tp.asarray(idx), weight=weight, reduction="none")
    np.testing.assert_allclose(soft.numpy(), hard.numpy(), rtol=1e-13)


def test_soft_cross_entropy_of_an_empty_batch_is_nan_for_mean(torch):
    empty = np.zeros((0, 3))
    assert np.isnan(F.cross_entropy(f64(empty), f64(empty)).item())
    assert np.isnan(
        torch.nn.functional.cross_entropy(torch.tensor(empty), torch.tensor(empty)).item()
    )
    assert F.cross_entropy(f64(empty), f64(empty), reduction="sum").item() == 0.0


def test_soft_cross_entropy_promotes_a_float32_target_like_torch(torch):
    logits, target = RNG.standard_normal((3, 4)), soft_target((3, 4), 1).astype(np.float32)
    got = F.cross_entropy(f64(logits), tp.asarray(target))
    ref = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(target))
    assert got.dtype == tp.float64 and ref.dtype == torch.float64
    close(got, ref)


def test_soft_cross_entropy_passes_finite_differences():
    x, t = f64(RNG.standard_normal((3, 4, 2))), f64(soft_target((3, 4, 2), 1))
    weight = RNG.uniform(0.5, 2.0, 4)

    def loss(x, t):
        return F.cross_entropy(x, t, weight=weight, label_smoothing=0.1, reduction="none")

    check_module_grads(loss, [x, t], params=[])


@pytest.mark.parametrize("ignore_index", [0, 3])
def test_soft_cross_entropy_rejects_a_non_negative_ignore_index(torch, ignore_index):
    logits, target = RNG.standard_normal((2, 4)), soft_target((2, 4), 1)
    with pytest.raises(ValueError, match=rf"cross_entropy: ignore_index={ignore_index} is not "
                       "supported with class-probability"):  # fmt: skip
        F.cross_entropy(f64(logits), f64(target), ignore_index=ignore_index)
    with pytest.raises(RuntimeError, match="ignore_index is not supported"):
        torch.nn.functional.cross_entropy(
            torch.tensor(logits), torch.tensor(target), ignore_index=ignore_index
        )
    ok = F.cross_entropy(f64(logits), f64(target), ignore_index=-1)  # negative: unused
    np.testing.assert_allclose(ok.item(), F.cross_entropy(f64(logits), f64(target)).item())


def test_soft_cross_entropy_rejects_bad_inputs():
    logits = f64(RNG.standard_normal((2, 4)))
    with pytest.raises(TypeError, match=r"cross_entropy: a target of the input's shape \(2, 4\) "
                       r"holds class probabilities and must be floating point, got int64; for "
                       r"class indices pass a target of shape \(2,\)"):  # fmt: skip
        F.cross_entropy(logits, tp.asarray(np.zeros((2, 4), dtype=np.int64)))
    with pytest.raises(TypeError, match=r"must be floating point, got int64; for class indices "
                       r"pass a target of shape \(\)"):  # fmt: skip
        F.cross_entropy(f64([1.0, 2.0]), tp.asarray([0, 1]))
    target = f64(soft_target((2, 4), 1))
    with pytest.raises(ShapeError, match=r"cross_entropy: weight must have shape \(4,\), one "):
        F.cross_entropy(logits, target, weight=np.ones(3))
    with pytest.raises(ValueError, match="cross_entropy: reduction must be one of"):
        F.cross_entropy(logits, target, reduction="avg")
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\], got 1.5"):
        F.cross_entropy(logits, target, label_smoothing=1.5)
    with pytest.raises(ShapeError, match=r"integer target of shape \(2,\) or a float target of "
                       r"the same shape \(class probabilities\), got \(2, 3\)"):  # fmt: skip
        F.cross_entropy(logits, f64(np.ones((2, 3))))
    with pytest.raises(ShapeError, match="cross_entropy: input must be"):
        F.cross_entropy(f64(1.0), f64(1.0))
