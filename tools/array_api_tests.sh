#!/usr/bin/env bash
# Run the Array API conformance suite (data-apis/array-api-tests) against p10.
#
# The suite is NOT vendored: pass a checkout of it at the pinned tag, with its `array-api`
# submodule (the spec stubs) filled in, e.g.
#   git clone --branch 2026.02.26 --recurse-submodules \
#       https://github.com/data-apis/array-api-tests /tmp/array-api-tests
#   tools/array_api_tests.sh /tmp/array-api-tests
#
# Environment knobs (all optional):
#   MAX_EXAMPLES       hypothesis examples per test (default 100, the suite's default)
#   SKIP_DTYPES        ARRAY_API_TESTS_SKIP_DTYPES (default "": every dtype, complex included)
#   DISABLE_EXTENSIONS space-separated extensions to disable (default "": linalg and fft run)
#   NO_INSTALL=1       do not pip-install requirements-array-api.txt first
#   PYTHON             interpreter (default: .venv/bin/python of this repository)
#   JUNIT              where to write the JUnit XML (default /tmp/array_api_tests.xml)
#   TESTS              what to collect, relative to the checkout (default "array_api_tests";
#                      e.g. "array_api_tests/test_set_functions.py")
# Extra arguments after the checkout path go to pytest (e.g. -k EXPR, or --disable-deadline:
# the suite fails an example slower than 800 ms, which on a loaded machine is timing, not
# conformance; -rfs lists the failures and the skip reasons).
# The last lines printed are the pass/fail/skip counts per test file.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="${1:?usage: tools/array_api_tests.sh SUITE_CHECKOUT [pytest args...]}"
shift
suite="$(cd "$suite" && pwd)"
python="${PYTHON:-$repo/.venv/bin/python}"
junit="${JUNIT:-/tmp/array_api_tests.xml}"

if [ ! -d "$suite/array_api_tests" ] || [ ! -d "$suite/array-api/spec" ]; then
    echo "error: $suite is not an array-api-tests checkout with its array-api submodule" >&2
    echo "fix: git -C $suite submodule update --init" >&2
    exit 2
fi
if [ -z "${NO_INSTALL:-}" ]; then
    "$python" -m pip install -q -r "$repo/requirements-array-api.txt"
fi

ext_args=()
for ext in ${DISABLE_EXTENSIONS-}; do
    ext_args+=(--disable-extension "$ext")
done

status=0
(
    cd "$suite"
    PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" \
    ARRAY_API_TESTS_MODULE=p10 \
    ARRAY_API_TESTS_SKIP_DTYPES="${SKIP_DTYPES-}" \
    "$python" -m pytest ${TESTS:-array_api_tests} -q -p no:randomly -p no:cacheprovider \
        --continue-on-collection-errors --max-examples="${MAX_EXAMPLES:-100}" "${ext_args[@]}" \
        --junitxml="$junit" -o junit_family=xunit2 "$@"
) || status=$?
"$python" "$repo/tools/array_api_summary.py" "$junit"
exit "$status"
