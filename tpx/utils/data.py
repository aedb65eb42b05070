"""``tp.utils.data``: the same objects as :mod:`tpx.data`, under PyTorch's import path.

>>> from tpx.utils.data import DataLoader
>>> import tpx.data
>>> DataLoader is tpx.data.DataLoader
True
"""

from tpx.data import *  # noqa: F403
from tpx.data import __all__  # noqa: F401
