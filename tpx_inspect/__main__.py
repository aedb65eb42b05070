"""``python -m tpx_inspect``: the ``tpx-inspect`` command line (see :mod:`tpx_inspect.cli`)."""

from tpx_inspect._entry import main

if __name__ == "__main__":
    main()
