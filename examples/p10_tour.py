"""A short tour of P10, the tensor layer: values, promotion, views and versions, backends, errors.

python examples/p10_tour.py
"""

from __future__ import annotations

import numpy as np

import p10


def section(title: str) -> None:
    print(f"\n== {title}")


def rounded(t: p10.Tensor) -> list:
    return np.round(t.numpy().astype(np.float64), 3).tolist()


def values_and_ops() -> None:
    section("tensors and operators (Array API names, PyTorch-style methods)")
    x = p10.asarray([[1.0, -2.0], [3.0, 4.0]])
    w = p10.eye(2) * 0.5
    print("x =", x)
    print(
        "x.matmul(w).relu().sum(axis=0, keepdims=True) =",
        x.matmul(w).relu().sum(axis=0, keepdims=True),
    )
    print("softmax over rows:", rounded(p10.softmax(x, axis=-1)))
    print("boolean mask x[x > 0]:", x[x > 0])


def promotion() -> None:
    section("dtype promotion")
    f32, i64 = p10.ones(3), p10.arange(3)
    print("float32 tensor * 2.5       ->", (f32 * 2.5).dtype, "(Python scalars are weak, NEP 50)")
    print("int64 tensor * 2.5         ->", (i64 * 2.5).dtype, "(the default float dtype)")
    print(
        "int64 tensor + float32 one ->",
        (i64 + f32).dtype,
        "(the float operand's dtype, as in PyTorch)",
    )
    print(
        "int8 + uint8               ->",
        (p10.ones(1, dtype="int8") + p10.ones(1, dtype="uint8")).dtype,
    )
    with p10.default_dtype("float64"):
        print("with default_dtype(float64): p10.asarray([0.5]) ->", p10.asarray([0.5]).dtype)


def views_and_versions() -> None:
    section("in-place writes bump a version counter shared by views")
    x = p10.zeros((2, 3))
    row, flat = x[0], x.reshape(6)
    row += 1.0
    x[1, 2] = 7.0
    print("x =", x.tolist())
    print("versions: x", x.version, "row", row.version, "flat", flat.version)
    print(".numpy() is a read-only view:", not x.numpy().flags.writeable)


def backends() -> None:
    section("backends are kernel tables keyed by the Op enum")
    print("registered:", p10.list_backends(), "; kernels in numpy:", len(p10.get_backend().kernels))
    x = p10.asarray([1.0, 2.0])
    with p10.register_kernel(p10.Op.EXP, "numpy", lambda a: np.full_like(a, 42.0)):
        print("with a replaced EXP kernel: x.exp() =", x.exp().tolist())
    print("after handle.remove():      x.exp() =", rounded(x.exp()))


def errors() -> None:
    section("errors name the op, the shapes and the fix")
    for bad in (
        lambda: p10.ones((2, 3)) + p10.ones((4,)),
        lambda: p10.ones((2, 3)) @ p10.ones((2, 3)),
        lambda: p10.ones((2, 3)).sum(axis=2),
    ):
        try:
            bad()
        except p10.P10Error as e:
            print(f"{type(e).__name__} (also {type(e).__mro__[2].__name__}): {e}")


def random_and_nn() -> None:
    section("seeded random numbers and NN kernels")
    p10.manual_seed(0)
    images = p10.randn((1, 2, 5, 5))
    kernels = p10.randn((4, 2, 3, 3))
    out = p10.max_pool2d(p10.conv2d(images, kernels, padding=1).relu(), 2)
    print("conv2d -> relu -> max_pool2d:", images.shape, "->", out.shape, out.dtype)
    p10.manual_seed(0)
    print("same seed, same numbers:", bool((p10.randn((1, 2, 5, 5)) == images).all()))


def main() -> None:
    values_and_ops()
    promotion()
    views_and_versions()
    backends()
    errors()
    random_and_nn()


if __name__ == "__main__":
    main()
