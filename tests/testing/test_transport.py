"""The in-memory pipe that stands in for a socket, and the error table read backwards."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sbmgmt import errors
from sbmgmt.testing import pytest_plugin
from sbmgmt.testing._transport import pipe


def test_bytes_arrive_in_order_and_wake_the_reader() -> None:
    client, server = pipe()
    woken: list[str] = []
    server.watch(lambda: woken.append("server"))
    with pytest.raises(BlockingIOError):
        server.recv(10)
    assert client.send(b"abc") == 3
    assert client.send(b"defg") == 4
    assert woken == ["server", "server"]
    assert server.recv(5) == b"abcde"
    assert server.recv(100) == b"fg"
    with pytest.raises(BlockingIOError):
        server.recv(10)


def test_close_is_read_as_the_end_after_what_was_sent() -> None:
    client, server = pipe()
    woken: list[str] = []
    server.watch(lambda: woken.append("server"))
    client.send(b"last words")
    client.close()
    assert woken == ["server", "server"]
    assert server.recv(100) == b"last words"
    assert server.recv(100) == b""
    with pytest.raises(BrokenPipeError):
        server.send(b"too late")
    with pytest.raises(BrokenPipeError):
        client.send(b"closed")
    client.close()  # twice is harmless


def test_every_operation_error_with_a_status_round_trips_through_the_table() -> None:
    classes = [errors.BadRequestError, errors.UnauthorizedError, errors.NotFoundError,
               errors.ConflictError, errors.LockLostError, errors.MessageLockLostError,
               errors.SessionLockLostError, errors.ServerBusyError, errors.ServerTimeoutError,
               errors.InternalServerError, errors.TransactionUnknownError,
               errors.TransactionTimeoutError, errors.TransactionRolledBackError,
               errors.SessionLockedElsewhereError, errors.QuotaExceededError]
    no_reply = [errors.OperationError, errors.TransactionRefusedError,
                errors.TransactionDeclareError]
    # one operation's reading of a reply (its description), not the table's:
    # cancel-scheduled-message's decode makes this NotFoundError of the service's words
    by_operation = {errors.ScheduledMessagesNotFoundError: errors.NotFoundError}
    assert set(classes) | set(no_reply) | set(by_operation) == {
        c for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.OperationError)}
    for cls, table_cls in by_operation.items():
        status, condition = errors.reply_status_for(cls)
        assert type(errors.error_for_status("op", status, condition)) is table_cls
    for cls in classes:
        status, condition = errors.reply_status_for(cls)
        assert type(errors.error_for_status("op", status, condition)) is cls
    for cls in no_reply:
        with pytest.raises(ValueError, match=cls.__name__):
            errors.reply_status_for(cls)


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8")
    section = re.search(r"^\[project\.entry-points\.pytest11\]\n(.*?)(?:^\[|\Z)", pyproject,
                        flags=re.MULTILINE | re.DOTALL)
    assert section is not None
    assert f'sbmgmt_mock = "{pytest_plugin.__name__}"' in section.group(1).splitlines()
    assert callable(pytest_plugin.sbmgmt_mock)
