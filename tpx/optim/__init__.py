"""``tpx.optim``: optimizers, learning-rate schedules and gradient clipping for TPX.

>>> import tpx as tp, tpx.nn as nn, tpx.optim as optim
>>> _ = tp.manual_seed(0)
>>> model = nn.Linear(2, 1)
>>> opt = optim.Adam(model.parameters(), lr=0.1)
>>> x, y = tp.ones((4, 2)), tp.zeros((4, 1))
>>> first = nn.functional.mse_loss(model(x), y).item()
>>> for _ in range(20):
...     opt.zero_grad()
...     loss = nn.functional.mse_loss(model(x), y)
...     loss.backward()
...     opt.step()
>>> loss.item() < first
True
"""

from tpx.optim import lr_scheduler
from tpx.optim.adaptive import Adadelta, Adagrad, RMSprop
from tpx.optim.clip_grad import clip_grad_norm_, clip_grad_value_
from tpx.optim.lr_scheduler import CosineAnnealingLR, LRScheduler, StepLR
from tpx.optim.optimizer import SGD, Adam, AdamW, Optimizer

__all__ = [
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "CosineAnnealingLR",
    "LRScheduler",
    "Optimizer",
    "RMSprop",
    "StepLR",
    "clip_grad_norm_",
    "clip_grad_value_",
    "lr_scheduler",
]
