"""``tpx.nn``: modules, layers, initialisers and losses for TPX, shaped like ``torch.nn``.

>>> import tpx as tp, tpx.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> loss = nn.functional.cross_entropy(model(tp.ones((2, 4))), tp.asarray([0, 2]))
>>> loss.backward()
>>> [p.grad.shape for p in model.parameters()]
[(8, 4), (8,), (3, 8), (3,)]
"""

from tpx.nn import functional, init
from tpx.nn._errors import LayerShapeError, NNError, StateDictError
from tpx.nn.attention import MultiheadSelfAttention, TransformerBlock
from tpx.nn.containers import ModuleDict, ModuleList, Sequential
from tpx.nn.layers import (
    GELU,
    AvgPool2d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    Linear,
    MaxPool2d,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from tpx.nn.losses import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from tpx.nn.module import Module, Parameter
from tpx.nn.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from tpx.nn.serialization import load, save

__all__ = [
    "GELU", "AvgPool2d", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d",
    "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "Identity", "LayerNorm",
    "LayerShapeError", "Linear", "MSELoss", "MaxPool2d", "Module", "ModuleDict", "ModuleList",
    "MultiheadSelfAttention", "NLLLoss", "NNError", "Parameter", "ReLU", "Sequential", "Sigmoid",
    "Softmax", "StateDictError", "Tanh", "TransformerBlock", "functional", "init", "load", "save",
]  # fmt: skip
