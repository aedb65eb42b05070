#!/usr/bin/env bash
# The wheel works on its own: build it, install it into a fresh virtual environment with only its
# declared dependencies, and run the installed `tpx-inspect` as a user would:
#   1. the wheel alone (numpy, scipy): the library imports and captures; `tpx-inspect --help`
#      says in one line to install the `inspect` extra (exit 2);
#   2. with the `inspect` extra: --help, `run` on a shipped example, `export --format svg`,
#      export without the Graphviz binary (one line, exit 2), `serve` (the viewer's index page and
#      the API queried over HTTP on a free port of 127.0.0.1, then stopped), and
#      `demo --quick` (serving, queried, then stopped).
# Environment: PYTHON (builds, makes the venv and installs into it with pip --python, so its pip
# must be 22.3 or newer; default python3), WHEEL_CHECK_DIR (default
# build/wheel-check), WHEEL_CHECK_CONSTRAINTS (default requirements-dev.txt: the versions CI
# tests; "lowest": the lower bound of every range in pyproject.toml; empty: the newest releases
# inside the declared ranges). pip uses its cache.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
DIR=${WHEEL_CHECK_DIR:-$ROOT/build/wheel-check}
CONSTRAINTS=${WHEEL_CHECK_CONSTRAINTS-requirements-dev.txt}
VENV=$DIR/venv
VPY=$VENV/bin/python
TPXI=$VENV/bin/tpx-inspect
WORK=$DIR/work
PIDS=()
start=$SECONDS

say() { echo "check_wheel: [$((SECONDS - start)) s] $*"; }
die() {
  echo "check_wheel: FAILED: $*" >&2
  exit 1
}
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

# Run the installed tool from a scratch folder, without the checkout on the import path.
# (Servers start as `(cd ... && exec ...) &`, so that $! is the server's own process.)
tool() { (cd "$WORK" && exec env -u PYTHONPATH "$@"); }

# wait_for LOG PATTERN PID: until LOG holds PATTERN (the process must stay alive), 120 s at most.
wait_for() {
  local _
  for _ in $(seq 1 240); do
    grep -q "$2" "$1" && return 0
    kill -0 "$3" 2>/dev/null || die "$(basename "$1" .log) exited early: $(tail -n 5 "$1")"
    sleep 0.5
  done
  die "no '$2' in $1 after 120 s: $(tail -n 5 "$1")"
}

# get URL [FILE]: HTTP GET with the venv's Python; the body goes to FILE (default: stdout).
get() {
  "$VPY" - "$1" "${2:-/dev/stdout}" <<'PY' || die "GET $1 failed"
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as r:
    assert r.status == 200, r.status
    open(sys.argv[2], "wb").write(r.read())
PY
}

# run_ok URL NAME: the server at URL lists a run NAME that finished ok and holds graphs.
run_ok() {
  "$VPY" - "${1}api/runs" "$2" <<'PY' || die "no finished run $2 with graphs at $1"
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as r:
    runs = json.loads(r.read())
ok = [x for x in runs if x.get("name") == sys.argv[2] and x.get("status") == "ok" and x.get("graphs")]
if not ok:
    sys.exit(f"runs: {runs}")
PY
}

url_in() { grep -o 'http://127\.0\.0\.1:[0-9]*/' "$1" | head -n 1; }

build() {
  say "building the wheel"
  rm -rf "$DIR" "$ROOT/build/lib" "$ROOT/build/bdist."*  # no stale files in the wheel
  mkdir -p "$DIR/dist" "$WORK"
  local iso=()  # PYTHON's own setuptools when it is new enough (faster than an isolated build)
  "$PYTHON" -c "import setuptools as s, sys; sys.exit(int(s.__version__.split('.')[0]) < 77)" \
    2>/dev/null && iso=(--no-build-isolation)
  "$PYTHON" -m pip wheel --quiet --no-deps "${iso[@]}" --wheel-dir "$DIR/dist" "$ROOT" \
    >"$DIR/build.log" 2>&1 ||
    die "pip wheel: $(tail -n 20 "$DIR/build.log")"
  WHEEL=$(ls "$DIR"/dist/tpx-*.whl)
  "$PYTHON" - "$WHEEL" <<'PY' || die "the wheel lacks files it must ship"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["tpx_inspect/web/index.html", "tpx_inspect/web/js/main.js",
        "tpx_inspect/examples/train_mlp.py", "tpx_inspect/examples/data/tiny_corpus.txt",
        "tpx_inspect/schema/trace.schema.json", "p10/__init__.py", "tpx/rules.py"]
missing = [n for n in need if n not in names]
if missing:
    sys.exit(f"missing from the wheel: {missing}")
PY
}

# The lower bound of each core and `inspect` requirement, as exact pins.
lowest_pins() {
  "$PYTHON" - "$ROOT/pyproject.toml" <<'PY'
import re, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
for req in project["dependencies"] + project["optional-dependencies"]["inspect"]:
    name = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
    low = re.search(r">=\s*([^,;\s]+)", req)
    if low:
        print(f"{name}=={low.group(1)}")
PY
}

pip_install() {
  local c=()
  if [ "$CONSTRAINTS" = lowest ]; then
    lowest_pins >"$DIR/lowest.txt"
    c=(-c "$DIR/lowest.txt")
  elif [ -n "$CONSTRAINTS" ]; then
    c=(-c "$ROOT/$CONSTRAINTS")
  fi
  "$PYTHON" -m pip --python "$VPY" install --quiet "${c[@]}" "$@" >"$DIR/pip.log" 2>&1 ||
    die "pip install $*: $(tail -n 20 "$DIR/pip.log")"
}

check_core_only() {
  say "installing the wheel alone into a fresh venv"
  "$PYTHON" -m venv --without-pip "$VENV"  # PYTHON's pip installs into it (pip --python)
  pip_install "$WHEEL"
  tool "$VPY" -c "
import tpx, tpx_inspect
assert tpx_inspect.__file__.startswith('$VENV'), tpx_inspect.__file__
x = tpx.ones(2, requires_grad=True)
assert tpx_inspect.trace(lambda: x.exp().sum().backward()).graphs
" || die "the core install cannot capture"
  local rc=0
  tool "$TPXI" --help >"$DIR/core-help.log" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || die "tpx-inspect without the inspect extra: exit $rc, not 2"
  grep -q 'pip install "tpx\[inspect\]"' "$DIR/core-help.log" ||
    die "no install hint: $(cat "$DIR/core-help.log")"
  [ "$(wc -l <"$DIR/core-help.log")" -eq 1 ] || die "not one line: $(cat "$DIR/core-help.log")"
}

check_cli() {
  say "installing the inspect extra"
  pip_install "$WHEEL[inspect]"
  "$PYTHON" -m pip --python "$VPY" check >"$DIR/pip-check.log" 2>&1 ||
    die "pip check: $(cat "$DIR/pip-check.log")"
  say "tpx-inspect --help, run, export"
  tool "$TPXI" --help >"$DIR/help.log" 2>&1 || die "tpx-inspect --help: $(cat "$DIR/help.log")"
  grep -q demo "$DIR/help.log" || die "tpx-inspect --help lists no demo"
  EXAMPLES=$(tool "$VPY" -c "from tpx_inspect.cli import EXAMPLES_DIR; print(EXAMPLES_DIR)") ||
    die "cannot import tpx_inspect.cli from the venv"
  case "$EXAMPLES" in "$VENV"/*) ;; *) die "examples not from the venv: $EXAMPLES" ;; esac
  tool "$TPXI" run "$EXAMPLES/custom_rule.py" -o run1 >"$DIR/run.log" 2>&1 ||
    die "tpx-inspect run: $(tail -n 20 "$DIR/run.log")"
  [ -s "$WORK/run1/trace.json" ] || die "tpx-inspect run wrote no trace"
  tool "$TPXI" export run1 --format svg -o graph.svg >"$DIR/export.log" 2>&1 ||
    die "tpx-inspect export: $(cat "$DIR/export.log")"
  grep -q "<svg" "$WORK/graph.svg" || die "export --format svg wrote no SVG"
  local rc=0
  tool env PATH=/nonexistent "$TPXI" export run1 --format html -o page.html \
    >"$DIR/nodot.log" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] && [ ! -e "$WORK/page.html" ] && grep -q "apt-get install graphviz" \
    "$DIR/nodot.log" || die "export without dot: exit $rc: $(cat "$DIR/nodot.log")"
}

check_serve() {
  say "tpx-inspect serve (viewer + API over HTTP, then stopped)"
  (cd "$WORK" && exec env -u PYTHONPATH "$TPXI" serve run1 --port 0) >"$DIR/serve.log" 2>&1 &
  PIDS+=($!)
  wait_for "$DIR/serve.log" "serving http" "${PIDS[-1]}"
  local url
  url=$(url_in "$DIR/serve.log")
  get "$url" "$DIR/index.html"
  # NOTE: the page names its files under v/<digest of web/>/ (server/webfiles.py): without
  # that prefix it is web/index.html, and a script under it is the repository's file
  sed -E 's#="v/[0-9a-f]{12}/#="#g' "$DIR/index.html" | cmp -s - "$ROOT/web/index.html" ||
    die "the served page is not web/index.html (with its files under v/<version>/)"
  local main
  main=$(grep -oE 'v/[0-9a-f]{12}/js/main\.js' "$DIR/index.html" | head -n 1)
  [ -n "$main" ] || die "the served page names no versioned js/main.js"
  get "$url$main" "$DIR/main.js"
  cmp -s "$DIR/main.js" "$ROOT/web/js/main.js" || die "the served $main is not web/js/main.js"
  run_ok "$url" custom_rule
  cleanup
  PIDS=()
}

check_demo() {
  say "tpx-inspect demo --quick (serving, queried, then stopped)"
  (cd "$WORK" && exec env -u PYTHONPATH "$TPXI" demo --quick --port 0 -o demo-run) \
    >"$DIR/demo.log" 2>&1 &
  PIDS+=($!)
  wait_for "$DIR/demo.log" "until Ctrl-C" "${PIDS[-1]}"
  local url
  url=$(url_in "$DIR/demo.log")
  run_ok "$url" train_mlp
  get "$url" >/dev/null
  [ -s "$WORK/demo-run/trace.json" ] || die "the demo wrote no trace"
  cleanup
  PIDS=()
}

build
check_core_only
check_cli
check_serve
check_demo
say "OK: the wheel installs and tpx-inspect works from it ($((SECONDS - start)) s)"
