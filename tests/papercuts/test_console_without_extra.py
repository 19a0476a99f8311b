"""``pip install sbmgmt`` with no extras, then the ``sbmgmt`` command: ``--version`` works,
``--help`` says first what to install, anything else names the extra and exits 2.

Here the console script's entry point runs in a subprocess with the cli extra's packages
hidden from imports; scripts/check_dist.sh checks the same the way a new user meets it
(the wheel installed in a throw-away venv with its core dependencies only, the installed
``sbmgmt`` script run outside the source tree).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sbmgmt
from sbmgmt.cli._console import CLI_EXTRA_HINT, HELP_WITHOUT_EXTRA

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60  # seconds any one process may take


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=LIMIT,
                          check=False, **kwargs)  # type: ignore[call-overload]


@pytest.mark.parametrize(("arguments", "code", "out", "err"), [
    (["--version"], 0, f"sbmgmt {sbmgmt.__version__}\n", ""),
    (["--help"], 0, HELP_WITHOUT_EXTRA, ""),
    ([], 2, "", CLI_EXTRA_HINT + "\n"),
    (["--version", "peek"], 2, "", CLI_EXTRA_HINT + "\n"),
])
def test_console_entry_point_with_the_extra_hidden(arguments: list[str], code: int, out: str,
                                                   err: str) -> None:
    script = ("import sys\n"
              "for name in ('typer', 'rich', 'click'): sys.modules[name] = None\n"
              "from sbmgmt.cli._console import main; main()")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = _run([sys.executable, "-c", script, *arguments], env=env, cwd=ROOT)
    assert (result.returncode, result.stdout, result.stderr) == (code, out, err)
