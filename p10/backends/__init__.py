"""Kernel tables. ``numpy_backend`` is the default backend and the executable spec of every op."""
