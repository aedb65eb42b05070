"""Scripts of tools/ and examples/ imported as modules: the one place tests load a file by path.

tools/ and examples/ are folders of scripts, not packages, so a test cannot import them by
name without putting them on ``sys.path``; these two functions load them from their file.

>>> load_tool("import_cycles") is load_tool("import_cycles")
True
>>> load_example("custom_rule").__name__
'examples.custom_rule'
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_tool(name: str) -> ModuleType:
    """``tools/<name>.py`` as the module ``tools.<name>``, loaded once (later calls, and a
    ``python -m tools.<name>`` import in the same process, get the same module)."""
    module = sys.modules.get(f"tools.{name}")
    return module if module is not None else _load(f"tools.{name}", ROOT / "tools")


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` as the module ``examples.<name>``, run afresh at each call (an
    example's module-level state starts clean for every test)."""
    return _load(f"examples.{name}", ROOT / "examples")


def _load(module_name: str, folder: Path) -> ModuleType:
    path = folder / f"{module_name.rpartition('.')[2]}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no script {path} to load as {module_name}")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # NOTE: registered before it runs: dataclasses (and pickle) look their module up by name
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
