"""``sbmgmt explore``'s own failures: the missing extra named, no namespace to explore."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from sbmgmt.cli import app


def test_without_the_explorer_extra_the_message_names_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sbmgmt.explorer", None)
    result = CliRunner().invoke(app, ["--emulator", "explore", "--no-browser"])
    assert result.exit_code == 2
    assert "pip install 'sbmgmt[explorer]'" in result.stderr


def test_without_a_namespace_it_says_how_to_name_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SERVICEBUS_CONNECTION_STRING", "SERVICEBUS_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(app, ["explore", "--no-browser"])
    assert result.exit_code == 2
    assert "--connection-string" in result.stderr and "--emulator" in result.stderr


def test_without_the_admin_extra_the_message_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.servicebus.management", None)
    result = CliRunner().invoke(app, ["--emulator", "explore", "--no-browser"])
    assert result.exit_code == 2
    assert "pip install 'sbmgmt[admin]'" in result.stderr
