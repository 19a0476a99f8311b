#!/usr/bin/env bash
# The published artifacts, checked as a user gets them: builds the sdist and the wheel
# (python -m build), checks them (twine check --strict), installs the wheel into a fresh
# virtual environment under build/ (not the dev .venv), and runs from there, outside the
# source tree: `sbmgmt` without the cli extra (`--version` works, `--help` says first
# what to install, a command is one line naming the extra and exit 2), then with it
# `sbmgmt --version` and the demo tour against the embedded fake namespace (always: the
# namespace variables are dropped for it).
# Run by scripts/test.sh; VENV_PYTHON picks the Python that has build and twine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV_PYTHON:-.venv/bin/python}"
DIST=build/dist
VENV="$PWD/build/wheel-venv"
LOG="$PWD/build/wheel-demo.log"
fail() { echo "check_dist: $*" >&2; exit 1; }

rm -rf "$DIST" "$VENV"
# Without --sdist/--wheel, build makes the sdist and then the wheel from it (not the tree).
"$PY" -m build --outdir "$DIST" . >build/dist.log 2>&1 \
    || { cat build/dist.log >&2; fail "python -m build failed"; }
"$PY" -m twine check --strict "$DIST"/*
WHEEL="$(ls "$PWD/$DIST"/sbmgmt-*.whl)"
VERSION="$("$PY" -c 'import ast, pathlib; print(next(n.value.value for n in ast.parse(pathlib.Path("sbmgmt/__init__.py").read_text()).body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__version__"))')"
[[ "$(basename "$WHEEL")" == "sbmgmt-$VERSION-"* ]] || fail "$WHEEL is not version $VERSION"

"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL"
mkdir -p build/wheel-cwd && cd build/wheel-cwd   # no source here: only the wheel imports
HINT="sbmgmt: the command line needs its extra: pip install 'sbmgmt[cli]'"
[ "$("$VENV/bin/sbmgmt" --version)" = "sbmgmt $VERSION" ] \
    || fail "sbmgmt --version without the cli extra is not $VERSION"
[ "$("$VENV/bin/sbmgmt" --help | head -n 1)" = "$HINT" ] \
    || fail "sbmgmt --help without the cli extra does not say first what to install"
set +e
without_cli="$("$VENV/bin/sbmgmt" peek q 2>&1)"; code=$?
set -e
[ "$code" -eq 2 ] || fail "sbmgmt without the cli extra exited $code: $without_cli"
[ "$without_cli" = "$HINT" ] || fail "sbmgmt without the cli extra printed: $without_cli"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "sbmgmt[cli] @ file://$WHEEL"
[ "$("$VENV/bin/sbmgmt" --version)" = "sbmgmt $VERSION" ] || fail "sbmgmt --version is not $VERSION"
where="$("$VENV/bin/python" -c 'import sbmgmt, fakes; print(sbmgmt.__file__, fakes.__file__)')"
[[ "$where" == "$VENV"/*" $VENV"/* ]] || fail "imported from outside the wheel's venv: $where"
env -u SERVICEBUS_CONNECTION_STRING -u SERVICEBUS_NAMESPACE "$VENV/bin/sbmgmt" demo >"$LOG" 2>&1 || { cat "$LOG" >&2; fail "the demo from the wheel failed"; }
echo "check_dist: sdist and wheel $VERSION pass twine check; the demo ran from the wheel"
