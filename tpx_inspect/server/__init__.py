"""The tpx-inspect HTTP API: a FastAPI app factory over saved (and live) traces.

``create_app(run_dirs)`` serves the run folders (``<dir>/trace.json`` + ``trace.npz``) found in
``run_dirs``; ``tpx-inspect serve`` and ``tpx-inspect run --serve`` run it with uvicorn on
127.0.0.1. Every answer is JSON described by a pydantic model (OpenAPI at ``/docs``); 4xx
bodies are ``{"detail": "..."}``; non-finite floats are the strings ``"nan"``, ``"inf"``,
``"-inf"``. All under ``/api``:

=============================================  ==================================================
``GET /runs``                                  every run: status, graphs, steps, error
``GET /runs/{run}``                            one run
``GET /runs/{run}/graphs``                     graphs of a run (``offset``, ``limit``)
``GET /runs/{run}/feed``                       long polling: graphs after ``since`` (``wait``)
``GET /runs/{run}/events``                     the same as server-sent events
``GET /runs/{run}/graphs/{g}``                 one graph's summary
``GET /runs/{run}/graphs/{g}/tree``            the view model's groups (scopes, repeats, loops)
``POST /runs/{run}/graphs/{g}/layout``         the layout of an expansion state (in the body),
                                               a region of it (``viewport``, ``min_size``)
``GET /runs/{run}/graphs/{g}/locate``          where a node or box is drawn in a state
``GET /runs/{run}/graphs/{g}/search``          nodes matching a query, hits per visible box
``GET /runs/{run}/graphs/{g}/nodes``           nodes, filtered by op/scope/source/kind, paged
``GET /runs/{run}/graphs/{g}/nodes/{n}``       one node: params, values, gradients, saved, times
``GET /runs/{run}/graphs/{g}/backward``        nodes in backward execution order, paged
``GET /runs/{run}/graphs/{g}/checks``          graph checks on the saved values (no user code)
``GET /runs/{run}/graphs/{g}/export``          dot, svg, png, pdf, json, model-explorer, html
``GET /diff``                                  graph ``run_a/graph_a`` vs ``run_b/graph_b``
``POST /jobs/checks|diff|export``              the same three as background jobs (202)
``GET /jobs/{job}``, ``.../result``            a job's progress, its result; ``DELETE`` cancels
=============================================  ==================================================

Checks, diffs and exports run on a bounded pool of worker threads (``Settings.job_workers``),
one run per distinct request, results kept. Every endpoint answers ``HEAD``; a URL past 64 KiB
gets 414, a body past 1 MiB 413. ``tpx-inspect serve`` checks the ``Host`` header against the
address it binds (a DNS-rebinding page gets 403; ``--allow-host NAME`` adds a name) and
refuses runs that resolve outside the served folders.

The viewer (``web/``) is served at ``/``.

>>> from tpx_inspect.server import create_app
>>> create_app([]).title
'tpx-inspect'
"""

from tpx_inspect.server.app import create_app
from tpx_inspect.server.deps import Settings
from tpx_inspect.server.store import RunStore

__all__ = ["RunStore", "Settings", "create_app"]
