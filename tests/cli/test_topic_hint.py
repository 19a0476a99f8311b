"""`sbmgmt peek TOPIC` (issue 40): the service's not-found, with what to peek instead."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt.cli import ExitCode, app

NOT_FOUND = "The messaging entity 'events' could not be found."


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(http_port=0) as namespace:
        namespace.add_queue("orders")
        namespace.add_topic("events")
        namespace.add_subscription("events", "all")
        namespace.add_subscription("events", "red")
        namespace.add_topic("empty")
        yield namespace


def _peek(fake: FakeNamespace, entity: str, http_port: int | None) -> tuple[int, str]:
    env = {"EMULATOR_HTTP_PORT": "" if http_port is None else str(http_port)}
    result = CliRunner().invoke(app, ["-c", fake.connection_string, "--timeout", "10", "peek",
                                      entity], env=env)
    return result.exit_code, result.stderr


def test_a_topic_is_named_as_one_with_its_subscriptions(fake: FakeNamespace) -> None:
    code, err = _peek(fake, "events", fake.http_port)
    assert code == ExitCode.NOT_FOUND
    assert "could not be found" in err and "events is a topic, which keeps no messages of " \
        "its own: name one of its subscriptions, events/Subscriptions/all, " \
        "events/Subscriptions/red)" in " ".join(err.split())


def test_a_topic_without_subscriptions(fake: FakeNamespace) -> None:
    code, err = _peek(fake, "empty", fake.http_port)
    assert code == ExitCode.NOT_FOUND
    assert "empty is a topic, without subscriptions" in err


def test_a_missing_entity_gets_no_topic_hint(fake: FakeNamespace) -> None:
    code, err = _peek(fake, "nowhere", fake.http_port)
    assert code == ExitCode.NOT_FOUND
    assert "topic" not in err


def test_without_the_administration_api_the_hint_says_what_to_try() -> None:
    with socket.socket() as probe:  # a port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with FakeNamespace() as plain:  # AMQP only
        plain.add_topic("events")
        code, err = _peek(plain, "events", closed)
    assert code == ExitCode.NOT_FOUND
    assert err.startswith("error: ") and NOT_FOUND in err
    assert ("if events is a topic, name one of its subscriptions, events/Subscriptions/SUB: "
            "`sbmgmt entities --match 'events/*'` lists them") in " ".join(err.split())


def test_an_entity_that_does_not_exist_at_all_gets_no_hint_even_unasked() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with FakeNamespace() as plain:  # its $management attach is refused: not even a topic
        code, err = _peek(plain, "nowhere", closed)
    assert code == ExitCode.NOT_FOUND
    assert "could not be found" in err and "topic" not in err
