"""Every third-party import of the shipped code (p10, tpx, tpx_inspect, examples) is covered by
a dependency declared in pyproject.toml, every declared runtime dependency is imported, and the
exact pins of the requirements files fall inside the declared ranges."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from p10.backends import LIBRARIES
from tpx_inspect._deps import OPTIONAL

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("p10", "tpx", "tpx_inspect", "examples")
FIRST_PARTY = {"p10", "tpx", "tpx_inspect"}
RUNTIME_EXTRAS = ("inspect", "backends", "data")
# Imported (or loaded by name as a backend) but deliberately not declared: pip would install a
# CUDA build of several GB for torch; cupy and jax are the user's GPU choice (README, Install).
UNDECLARED = {"torch", "cupy", "jax"}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    names = {canonicalize_name(Requirement(r).name) for r in requirements}
    return names - {"tpx"}  # self-references such as tpx[inspect]


def _declared(*extras: str) -> set[str]:
    project = _pyproject()
    out = _names(project["dependencies"])
    for extra in extras:
        out |= _names(project["optional-dependencies"][extra])
    return out


def _python_files() -> list[Path]:
    files = []
    for top in SHIPPED:
        # NOTE: not following links: tpx_inspect/examples is a link to examples/
        for folder, _, names in os.walk(ROOT / top, followlinks=False):
            files += [Path(folder) / n for n in sorted(names) if n.endswith(".py")]
    return files


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.partition(".")[0])
    return out


@functools.cache
def _third_party_imports() -> dict[str, list[str]]:
    """Top-level module -> the shipped files importing it (plus backends loaded by name)."""
    found: dict[str, list[str]] = {}
    for path in _python_files():
        for module in _imports(path) - FIRST_PARTY - set(sys.stdlib_module_names):
            found.setdefault(module, []).append(str(path.relative_to(ROOT)))
    for module in LIBRARIES.values():
        found.setdefault(module.partition(".")[0], []).append("p10/backends LIBRARIES")
    return found


@functools.cache
def _installed_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distribution(module: str) -> str:
    dists = _installed_distributions().get(module)
    if module in OPTIONAL:
        return canonicalize_name(OPTIONAL[module][0])
    return canonicalize_name(dists[0] if dists else module)


def test_the_walk_finds_the_known_imports():
    found = _third_party_imports()
    assert {"numpy", "scipy", "click", "rich", "fastapi", "uvicorn", "graphviz"} <= set(found)
    assert "tpx_inspect/export/dot.py" in found["graphviz"]


def _undeclared(found: dict[str, list[str]], declared: set[str]) -> dict[str, list[str]]:
    return {
        module: files
        for module, files in found.items()
        if module not in UNDECLARED and _distribution(module) not in declared
    }


def _stray_pins(pins: dict[str, str], ranges: dict) -> set[str]:
    return set(pins) - set(ranges) - UNDECLARED


def test_every_third_party_import_is_declared():
    undeclared = _undeclared(_third_party_imports(), _declared(*RUNTIME_EXTRAS))
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_the_checks_catch_a_planted_import_and_a_stray_pin(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    import httpx2.client\n    from yaml import safe_load\n")
    found = {m: [str(planted)] for m in _imports(planted)}
    assert set(_undeclared(found, _declared(*RUNTIME_EXTRAS))) == {"httpx2", "yaml"}
    ranges = {"numpy": None}
    assert _stray_pins({"numpy": "2.4.6", "httpx2": "2.16.2"}, ranges) == {"httpx2"}


def test_every_declared_runtime_dependency_is_imported():
    imported = {_distribution(m) for m in _third_party_imports()}
    unused = _declared(*RUNTIME_EXTRAS) - imported
    assert not unused, f"declared in pyproject.toml but imported nowhere: {sorted(unused)}"


def test_dev_only_packages_stay_out_of_the_runtime_dependencies():
    runtime = _declared(*RUNTIME_EXTRAS)
    for name in ("jsonschema", "pytest", "httpx", "hypothesis", "ruff", "playwright"):
        assert canonicalize_name(name) not in runtime
        assert canonicalize_name(name) in _declared("dev")


def test_the_optional_table_matches_the_extras():
    extras = _pyproject()["optional-dependencies"]
    for module, (dist, extra) in OPTIONAL.items():
        assert canonicalize_name(dist) in _names(extras[extra]), (module, dist, extra)
    listed = {canonicalize_name(dist) for dist, _ in OPTIONAL.values()}
    for extra in RUNTIME_EXTRAS:
        assert _names(extras[extra]) <= listed, f"{extra}: add it to tpx_inspect._deps.OPTIONAL"


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            spec = str(req.specifier)
            assert spec.startswith("==") and "," not in spec, f"{name}: not an exact pin: {line}"
            key = canonicalize_name(req.name)
            assert key not in pins, f"{name}: {req.name} pinned twice"
            pins[key] = spec[2:]
    return pins


@pytest.mark.parametrize(
    ("pins_file", "extras"),
    [
        ("requirements-dev.txt", ("inspect", "data", "dev")),
        ("requirements-backends.txt", ("backends",)),
    ],
)
def test_pins_are_declared_and_inside_the_declared_ranges(pins_file, extras):
    project = _pyproject()
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    ranges = {canonicalize_name(r.name): r.specifier for r in map(Requirement, requirements)}
    ranges.pop("tpx", None)
    pins = _pins(pins_file)
    stray = _stray_pins(pins, ranges)
    assert not stray, f"{pins_file} pins what pyproject.toml does not declare: {sorted(stray)}"
    for name, version in pins.items():
        if name in ranges:
            assert ranges[name].contains(version), f"{name}=={version} not in {ranges[name]}"
    if pins_file == "requirements-dev.txt":
        assert set(ranges) - set(pins) == set(), "declared but not pinned for CI"


def test_core_install_imports_without_any_extra():
    """p10, tpx and the tpx_inspect library import with numpy and scipy alone; a DOT export
    then names the extra to install instead of a traceback."""
    blocked = sorted({*OPTIONAL, *UNDECLARED})
    code = (
        f"import sys\nfor m in {blocked!r}: sys.modules[m] = None\n"
        "import p10, tpx, tpx.nn, tpx.optim, tpx.data, tpx_inspect, tpx_inspect.checks\n"
        "x = tpx.ones(2, requires_grad=True)\n"
        "t = tpx_inspect.trace(lambda: x.exp().sum().backward())\n"
        "try:\n    tpx_inspect.to_dot(t.graphs[0])\n"
        "except tpx_inspect.errors.MissingDependencyError as e:\n    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith('pip install "tpx[inspect]"'), done.stdout


def test_the_wheel_ships_the_viewer_and_the_examples():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    assert "examples/*.py" in package_data["tpx_inspect"]
    inspect_dir = ROOT / "tpx_inspect"
    assert (inspect_dir / "web" / "index.html").is_file()
    assert (inspect_dir / "examples" / "train_mlp.py").is_file()
    assert (inspect_dir / "examples").resolve() == ROOT / "examples"
