#!/usr/bin/env bash
# Builds the documentation site (strict: a broken link or reference fails) and serves it on
# http://127.0.0.1:8000 with live reload; DOCS_ADDRESS=HOST:PORT to change it. Ctrl-C stops.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
export NO_MKDOCS_2_WARNING=1
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# setuptools prints an "Editable installation" notice (be careful with folders named like
# the package in the working directory) at every editable install of a flat layout; here
# they are the package itself, so that one informational warning is filtered, nothing else.
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install --quiet -e '.[docs]'
.venv/bin/mkdocs build --strict --quiet
exec .venv/bin/mkdocs serve --strict --dev-addr "${DOCS_ADDRESS:-127.0.0.1:8000}"
