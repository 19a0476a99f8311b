#!/usr/bin/env bash
# Installs the project with its CLI (and the explorer: sbmgmt --emulator explore) into .venv,
# then runs the demo tour:
# against the embedded fake namespace unless SERVICEBUS_CONNECTION_STRING is set.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# setuptools prints an "Editable installation" notice (be careful with folders named like
# the package in the working directory) at every editable install of a flat layout; here
# they are the package itself, so that one informational warning is filtered, nothing else.
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install --quiet -e '.[cli,admin,explorer]'
exec .venv/bin/sbmgmt demo "$@"
