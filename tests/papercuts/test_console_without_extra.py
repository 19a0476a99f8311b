"""``pip install sbmgmt`` with no extras, then the ``sbmgmt`` command: ``--version`` works,
``--help`` says first what to install, anything else names the extra and exits 2.

Once the way a new user meets it (the package's wheel installed in a throw-away venv,
with its core dependencies only, running the installed console script), once in this
interpreter with the cli extra's packages hidden from imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

import sbmgmt
from sbmgmt._console import CLI_EXTRA_HINT, HELP_WITHOUT_EXTRA

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 300  # seconds for building and installing (pip's cache is warm on CI too)


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=LIMIT,
                          check=False, **kwargs)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def bare_install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The bin directory of a venv holding sbmgmt's wheel and its core dependencies."""
    where = tmp_path_factory.mktemp("bare")
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(where / "dist"),
                  str(ROOT)])
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (where / "dist").glob("sbmgmt-*.whl")
    venv.create(where / "venv", with_pip=True)
    bin_dir = where / "venv" / ("Scripts" if os.name == "nt" else "bin")
    installed = _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)])
    assert installed.returncode == 0, installed.stderr[-2000:]
    yield bin_dir


def test_the_bare_install_has_no_cli_extra(bare_install: Path) -> None:
    probe = _run([str(bare_install / "python"), "-c", "import typer"])
    assert probe.returncode != 0


def test_version_without_the_extra(bare_install: Path) -> None:
    result = _run([str(bare_install / "sbmgmt"), "--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"sbmgmt {sbmgmt.__version__}\n"


def test_help_without_the_extra_says_first_what_to_install(bare_install: Path) -> None:
    result = _run([str(bare_install / "sbmgmt"), "--help"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == CLI_EXTRA_HINT
    assert "--version" in result.stdout


def test_a_command_without_the_extra_names_it_and_exits_2(bare_install: Path) -> None:
    result = _run([str(bare_install / "sbmgmt"), "peek", "q"])
    assert result.returncode == 2
    assert result.stderr == CLI_EXTRA_HINT + "\n"
    assert result.stdout == ""


def test_the_library_works_without_any_extra(bare_install: Path) -> None:
    code = ("from sbmgmt.telemetry._switch import current; import sbmgmt.renewer; "
            "print(current())")
    result = _run([str(bare_install / "python"), "-c", code])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "None\n"


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
              "from sbmgmt._console import main; main()")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = _run([sys.executable, "-c", script, *arguments], env=env, cwd=ROOT)
    assert (result.returncode, result.stdout, result.stderr) == (code, out, err)
