"""The tpx-inspect HTTP API: a FastAPI app factory over saved (and live) traces."""
