"""The suite's warning policy (issue 40): under this project's pytest settings a test fails
when it warns, or when an exception is raised where nobody can catch it (a weakref callback,
a ``__del__``, a thread), as pytest-timeout's signal once was, inside a weakref callback,
while the test went on to pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CASES = '''
import gc
import threading
import warnings
import weakref


class Target:
    pass


def test_an_exception_in_a_weakref_callback():
    def callback(_ref):
        raise RuntimeError("raised where nobody can catch it")

    target = Target()
    ref = weakref.ref(target, callback)
    del target
    gc.collect()
    assert ref() is None


def test_an_exception_in_a_thread():
    def fail():
        raise RuntimeError("raised in a thread")

    thread = threading.Thread(target=fail)
    thread.start()
    thread.join()


def test_a_deprecation():
    warnings.warn("old", DeprecationWarning)


def test_an_unclosed_file(tmp_path):
    handle = open(tmp_path / "f", "w")
    del handle
    gc.collect()


def test_a_quiet_one():
    assert True
'''


def test_warnings_and_unraisable_exceptions_fail_their_test(tmp_path: Path) -> None:
    cases = tmp_path / "test_cases.py"
    cases.write_text(CASES)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
         str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(cases)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 1, done.stdout
    assert "4 failed, 1 passed" in summary, done.stdout
