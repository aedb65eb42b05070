"""The tpx-inspect HTTP API: a FastAPI app factory over saved (and live) traces.

>>> from tpx_inspect.server import create_app
>>> create_app([]).title
'tpx-inspect'
"""

from tpx_inspect.server.app import create_app
from tpx_inspect.server.deps import Settings
from tpx_inspect.server.store import RunStore

__all__ = ["RunStore", "Settings", "create_app"]
