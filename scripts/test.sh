#!/usr/bin/env bash
# Installs the project with its test dependencies into .venv, then runs ruff, mypy and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
.venv/bin/ruff check .
.venv/bin/mypy
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict
bash scripts/check_dist.sh
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
