#!/usr/bin/env bash
# Installs the project with its CLI (and the explorer: sbmgmt --emulator explore) into .venv,
# then runs the demo tour:
# against the embedded fake namespace unless SERVICEBUS_CONNECTION_STRING is set.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[cli,admin,explorer]'
exec .venv/bin/sbmgmt demo "$@"
