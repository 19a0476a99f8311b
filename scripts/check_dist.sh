#!/usr/bin/env bash
# The published artifacts, checked as a user gets them: builds the sdist and the wheel
# (python -m build), checks them (twine check --strict), installs the wheel into a fresh
# virtual environment under build/ (not the dev .venv), and runs from there, outside the
# source tree: `sbmgmt` without the cli extra (`--version` works, `--help` says first
# what to install, a command is one line naming the extra and exit 2), then with it
# `sbmgmt --version` and the demo tour against the embedded fake namespace (always: the
# namespace variables are dropped for it). A second fresh venv gets the wheel with only its
# `testing` extra (pytest and pytest-mock, nothing heavy) and runs a user's test that uses the
# `sbmgmt_mock` fixture; without pytest-mock the same test fails with the one line that names
# the extra.
# Run by scripts/test.sh; VENV_PYTHON picks the Python that has build and twine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${VENV_PYTHON:-.venv/bin/python}"
DIST=build/dist
VENV="$PWD/build/wheel-venv"
TESTING_VENV="$PWD/build/testing-venv"
LOG="$PWD/build/wheel-demo.log"
fail() { echo "check_dist: $*" >&2; exit 1; }

rm -rf "$DIST" "$VENV" "$TESTING_VENV" build/testing-cwd
mkdir -p build
# Without --sdist/--wheel, build makes the sdist and then the wheel from it (not the tree).
"$PY" -m build --outdir "$DIST" . >build/dist.log 2>&1 \
    || { cat build/dist.log >&2; fail "python -m build failed"; }
"$PY" -m twine check --strict "$DIST"/*
WHEEL="$(ls "$PWD/$DIST"/sbmgmt-*.whl)"
VERSION="$("$PY" -c 'import ast, pathlib; print(next(n.value.value for n in ast.parse(pathlib.Path("sbmgmt/_version.py").read_text()).body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__version__"))')"
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
# The explorer from the wheel: its templates and its static files (htmx) are package data.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "sbmgmt[explorer] @ file://$WHEEL"
"$VENV/bin/python" - >"$LOG" 2>&1 <<'PY' || { cat "$LOG" >&2; fail "the explorer from the wheel failed"; }
import urllib.request
from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.entities import admin_client
from sbmgmt.explorer import Explorer, Namespace

with FakeNamespace(http_port=0) as fake, \
        ManagementClient.from_connection_string(fake.connection_string) as client, \
        admin_client(connection_string=fake.connection_string, http_port=fake.http_port) as admin, \
        Explorer(Namespace(label="wheel", client=client, admin=admin)) as explorer:
    fake.add_queue("orders")
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    assert b"orders" in opener.open(explorer.url).read()
    assert b"htmx" in opener.open(explorer.base_url + "/static/htmx.min.js").read()
PY

# A user's own tests with the light extra: the sbmgmt_mock fixture works with pytest-mock,
# and without it fails with the line that names the extra (not "fixture 'mocker' not found").
cd "$OLDPWD"
"$PY" -m venv "$TESTING_VENV"
"$TESTING_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "sbmgmt[testing] @ file://$WHEEL"
heavy="$("$TESTING_VENV/bin/python" -m pip list --format=freeze 2>/dev/null \
    | grep -iE '^(pyspark|mkdocs|mypy|azure-servicebus|typer|hypothesis)==' || true)"
[ -z "$heavy" ] || fail "the testing extra installed more than pytest and pytest-mock: $heavy"
mkdir -p build/testing-cwd && cd build/testing-cwd
printf '[pytest]\n' >pytest.ini   # the user's project: not this repository's pytest settings
cat >test_uses_sbmgmt_mock.py <<'PY'
from sbmgmt import ManagementClient, ops


def test_a_peek_is_answered_by_the_mock(sbmgmt_mock):
    sbmgmt_mock.add(ops.peek_message, entity="orders", response=ops.peek_message.Response())
    with ManagementClient.from_connection_string(sbmgmt_mock.connection_string) as client:
        assert client.entity("orders").peek_messages() == []
    assert [call.entity for call in sbmgmt_mock.calls] == ["orders"]
PY
"$TESTING_VENV/bin/python" -m pytest -q -p no:cacheprovider test_uses_sbmgmt_mock.py \
    >"$LOG" 2>&1 || { cat "$LOG" >&2; fail "sbmgmt_mock with the testing extra failed"; }
"$TESTING_VENV/bin/python" -m pip uninstall --quiet --yes pytest-mock
set +e
"$TESTING_VENV/bin/python" -m pytest -q -p no:cacheprovider test_uses_sbmgmt_mock.py >"$LOG" 2>&1
code=$?
set -e
[ "$code" -eq 1 ] || { cat "$LOG" >&2; fail "sbmgmt_mock without pytest-mock exited $code"; }
grep -qF "needs pytest-mock (its 'mocker' fixture), which is not installed: pip install 'sbmgmt[testing]'" "$LOG" \
    || { cat "$LOG" >&2; fail "sbmgmt_mock without pytest-mock did not name the extra"; }
echo "check_dist: sdist and wheel $VERSION pass twine check; the demo and the explorer ran from the wheel;"\
     "sbmgmt_mock ran with only the testing extra"
