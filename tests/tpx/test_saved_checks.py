"""Saved values protected beyond the version counter: read-only exports, and checksums under
``tp.set_saved_tensor_checks`` / ``tp.detect_anomaly`` that catch writes made by other
libraries through shared memory (the four patterns PyTorch users hit), naming the node."""

from __future__ import annotations

import contextlib
import threading
import warnings

import numpy as np
import pytest

import tpx as tp
from tests.helpers.scripts import Square


def _torch():
    return pytest.importorskip("torch", reason="the foreign writer of this case is PyTorch")


def _through_from_dlpack(y):
    _torch().from_dlpack(y).add_(10.0)


def _through_as_tensor(y):
    _torch().as_tensor(y).add_(10.0)


def _through_from_numpy(y):
    _torch().from_numpy(y.numpy()).add_(10.0)


def _through_writeable_flag(y):
    a = y.numpy()
    a.flags.writeable = True
    a += 10.0


WRITERS = {
    "torch.from_dlpack": _through_from_dlpack,
    "torch.as_tensor": _through_as_tensor,
    "torch.from_numpy(t.numpy())": _through_from_numpy,
    "numpy flags.writeable=True": _through_writeable_flag,
}


@contextlib.contextmanager
def _explicit_call():
    handle = tp.set_saved_tensor_checks(True)  # a plain call, undone by restore()
    try:
        yield
    finally:
        handle.restore()


MODES = {
    "set_saved_tensor_checks": lambda: tp.set_saved_tensor_checks(True),
    "detect_anomaly": tp.detect_anomaly,
    "explicit call + restore": _explicit_call,
}


def _graph_saving_y():
    x = tp.asarray([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    z = (y * y).sum()  # MulBackward saves y (both inputs)
    return x, y, z


@pytest.mark.parametrize("backward_inside", [False, True], ids=["bwd-after", "bwd-inside"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_foreign_write_to_a_saved_value_raises_or_is_refused(writer, mode, backward_inside):
    with MODES[mode]():
        x, y, z = _graph_saving_y()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch: "non-writable array"
            try:
                WRITERS[writer](y)
            except ValueError as e:  # refused: the export cannot be made writable
                assert "WRITEABLE" in str(e)
                np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])
                return
        if backward_inside:
            with pytest.raises(tp.SavedValueError) as info:
                z.backward()
    if not backward_inside:  # the checksums were taken at record time; backward checks them
        with pytest.raises(tp.SavedValueError) as info:
            z.backward()
    text = str(info.value)
    assert "MulBackward" in text and "(3,)" in text and "float32" in text
    assert "test_saved_checks.py" in text  # where the value was saved
    assert isinstance(info.value, tp.InplaceError) and isinstance(info.value, RuntimeError)
    assert x.grad is None  # no gradient computed from the changed value
    assert not tp.saved_tensor_checks_enabled()


def test_the_writeable_flag_of_an_export_cannot_be_turned_back_on_even_without_checks():
    y = tp.ones(3, requires_grad=True) * 2.0
    for a in (y.numpy(), np.asarray(y), y.detach().numpy()):
        assert not a.flags.writeable
        with pytest.raises(ValueError, match="WRITEABLE"):
            a.flags.writeable = True
    assert np.array(y).flags.writeable  # an explicit copy is the caller's own


def test_dlpack_1_export_carries_the_read_only_flag():
    y = tp.ones(3, requires_grad=True) * 2.0
    a = np.from_dlpack(y)  # NumPy honours DLPack 1.0's read-only flag
    assert not a.flags.writeable
    assert np.shares_memory(a, y.numpy())
    with pytest.raises(ValueError, match="WRITEABLE"):
        a.flags.writeable = True


def test_a_foreign_write_to_a_value_saved_by_a_function_is_caught():
    torch = _torch()

    x = tp.asarray([1.0, 2.0], requires_grad=True)
    with tp.set_saved_tensor_checks(True):
        y = x * 1.0
        z = Square.apply(y).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        torch.as_tensor(y).mul_(3.0)
    with pytest.raises(tp.SavedValueError, match=r"SquareBackward|Square"):
        z.backward()


def test_checks_give_the_same_gradients_as_without_when_nothing_is_written():
    def step():
        w = tp.asarray([[0.5, -1.0], [1.5, 0.25]], requires_grad=True)
        h = (tp.asarray([[1.0, 2.0], [3.0, -1.0]]) @ w).tanh()
        (h * h.exp()).mean().backward()
        return w.grad.numpy()

    plain = step()
    with tp.set_saved_tensor_checks(True):
        checked = step()
    with tp.detect_anomaly():
        anomaly = step()
    np.testing.assert_array_equal(plain, checked)
    np.testing.assert_array_equal(plain, anomaly)


def test_the_setting_is_per_thread_and_restored_after_an_error():
    seen = []
    with pytest.raises(KeyError), tp.set_saved_tensor_checks(True):
        worker = threading.Thread(target=lambda: seen.append(tp.saved_tensor_checks_enabled()))
        worker.start()
        worker.join()
        assert tp.saved_tensor_checks_enabled()
        raise KeyError("boom")
    assert seen == [False]
    assert not tp.saved_tensor_checks_enabled()
    with tp.detect_anomaly(), tp.set_saved_tensor_checks(False):
        assert not tp.saved_tensor_checks_enabled()
        with pytest.raises(tp.AnomalyError), np.errstate(divide="ignore"):  # NaN checks stay on
            tp.zeros(1, requires_grad=True).log()
    assert not tp.saved_tensor_checks_enabled()


def test_without_checks_no_checksum_is_recorded():
    _, _, z = _graph_saving_y()
    assert z.grad_fn.next_functions[0][0].checksums is None
