#!/usr/bin/env bash
# Installs the project with every extra (sbmgmt[test]) into .venv, then runs ruff, mypy, the
# import contracts (lint-imports, pyproject.toml), the docs site's strict build and the
# wheel's checks (scripts/check_dist.sh) beside pytest, and fails if any of them fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
# Python keeps the bytecode it compiles (__pycache__/, which git ignores), so that the suite's
# hundreds of Python processes (its workers, the CLI's and the fake's processes, the
# examples) compile the project's ~450 modules once rather than each (a third of a CLI
# process's start); PYTHONDONTWRITEBYTECODE, set on some machines, would forbid it.
unset PYTHONDONTWRITEBYTECODE
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# setuptools prints an "Editable installation" notice (be careful with folders named like
# the package in the working directory) at every editable install of a flat layout; here
# they are the package itself, so that one informational warning is filtered, nothing else.
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install --quiet -e '.[test]'
# The JavaScript SDK (a test-only peer) from the committed lock file. Without Node its tests
# skip locally; under CI=true they fail (tests/_peers.py), and so does a failed install here.
if command -v npm >/dev/null 2>&1; then
    if ! (cd tests/js && npm ci --no-audit --no-fund --loglevel=error); then
        [ "${CI:-}" != "true" ] || exit 1
        echo "warning: npm ci failed in tests/js; the JavaScript SDK tests will skip" >&2
    fi
fi
# Chromium for the explorer's browser tests (tests/explorer/: Playwright drives Debian's
# chromium; Playwright's own browser download is not reachable). Installed when missing and
# this runs as root (CI does); without it the tests skip locally and fail under CI=true.
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null); then
            [ "${CI:-}" != "true" ] || exit 1
            echo "warning: chromium did not install; the explorer's browser tests will skip" >&2
        fi
    else
        [ "${CI:-}" != "true" ] || { echo "CI=true needs chromium: apt-get install chromium" >&2; exit 1; }
        echo "warning: no chromium (apt-get install chromium); the explorer's browser tests will skip" >&2
    fi
fi
# The checks that do not need pytest run beside it (about a minute, mostly waiting on pip
# and disk while pytest's workers wait on their servers), their output kept in
# build/checks.log and printed when one fails. build/ is made first: the suite fails a run
# that adds an entry at the repository's root (tests/conftest.py), and the checks write there.
mkdir -p build
checks() {
    .venv/bin/ruff check .
    .venv/bin/mypy
    .venv/bin/lint-imports
    NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict
    bash scripts/check_dist.sh
}
(set -e; checks) >build/checks.log 2>&1 &
checks_pid=$!
# Six worker processes (pytest-xdist) on CI's two cores: much of a test is waiting on a
# server, a peer or a timer, so fewer workers leave the cores idle (fresh clones on the
# 2-core machine, 2026-12-08: four workers 8:21-8:56 with 141-209 s of the cores idle, six
# 7:22 with 68 s). worksteal: a worker that runs out takes tests queued on a busy one, and
# tests/conftest.py orders the run so that the long ones start first. SBMGMT_TEST_WORKERS
# changes the count. The slowest tests at the end of the log: what to look at when a run
# nears its 30 minutes (tests/README.md, "Time"). Arguments after these win (`-n 0`: one
# process).
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider -n "${SBMGMT_TEST_WORKERS:-6}" \
    --dist worksteal --durations=30 "$@" || status=$?
if wait "$checks_pid"; then
    tail -n 1 build/checks.log
else
    cat build/checks.log >&2
    echo "scripts/test.sh: a check failed (ruff, mypy, lint-imports, mkdocs or check_dist: above)" >&2
    [ "$status" -ne 0 ] || status=1
fi
exit "$status"
