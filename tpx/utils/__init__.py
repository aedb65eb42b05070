"""``tp.utils``: PyTorch's ``torch.utils`` path for the data helpers (``tp.utils.data``)."""

from tpx.utils import data

__all__ = ["data"]
