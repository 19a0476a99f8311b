"""Every argument of every public method, given None or a value of the wrong type, is a
TypeError or ValueError whose message names that argument, raised before anything is
sent (the sync and asyncio entity clients, a session lock, the lock renewer).

The table lists, for each method, arguments that work and, for each argument, careless
values; each case replaces one argument of the working call by one careless value.
(What pydantic's models convert on purpose is not careless here: ``b"s1"`` for a str
field, ``"text"`` for a bytes one, ``"1"`` for an int.)
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import AsyncManagementClient, ManagementClient
from sbmgmt.message import Message
from sbmgmt.ops import peek_message
from sbmgmt.renewer import LockRenewer
from sbmgmt.rules import SqlFilter

LATER = datetime.now(timezone.utc) + timedelta(hours=1)
TOKEN = uuid.uuid4()
THING = object()


@dataclass(frozen=True)
class Method:
    """A public method: arguments that work, and careless values for each argument."""

    name: str
    works: dict[str, Any]
    careless: dict[str, list[Any]] = field(default_factory=dict)


_INT = [None, "x", 1.5, THING]
_OPTIONAL_TEXT = [42, THING, [1]]
_TEXT = [None, 42, THING]
_REQUIRED_TEXT = [*_TEXT, ""]
_TOKENS = [None, 42, "not-a-token", [THING], ["not-a-uuid"], [None]]
_NUMBERS = [None, 42, "12", ["x"], [None], [1.5]]

ENTITY_METHODS = [
    Method("peek_messages", {"from_sequence_number": 1, "max_count": 1, "session_id": None},
           {"from_sequence_number": _INT, "max_count": _INT, "session_id": _OPTIONAL_TEXT}),
    Method("renew_message_locks", {"lock_tokens": [TOKEN]}, {"lock_tokens": _TOKENS}),
    Method("schedule_messages",
           {"messages": [Message(body=b"x")], "scheduled_enqueue_time": LATER,
            "transaction": None},
           {"messages": [None, 42, Message(body=b"x"), [None], [THING]],
            "scheduled_enqueue_time": [None, "2030-01-01", 1_900_000_000, THING],
            "transaction": [42, THING]}),
    Method("cancel_scheduled_messages", {"sequence_numbers": [1]},
           {"sequence_numbers": _NUMBERS}),
    Method("receive_deferred_messages",
           {"sequence_numbers": [1], "settle_mode": "peek_lock", "session_id": None},
           {"sequence_numbers": _NUMBERS, "settle_mode": [None, 42, "peek"],
            "session_id": _OPTIONAL_TEXT}),
    Method("update_disposition",
           {"lock_tokens": [TOKEN], "status": "completed", "dead_letter_reason": None,
            "dead_letter_description": None, "properties_to_modify": None,
            "session_id": None, "transaction": None},
           {"lock_tokens": _TOKENS, "status": [None, 42, "done"],
            "dead_letter_reason": _OPTIONAL_TEXT, "dead_letter_description": _OPTIONAL_TEXT,
            "properties_to_modify": [42, "abc", [("k", 1)], {1: "x"}, {"k": THING}],
            "session_id": _OPTIONAL_TEXT, "transaction": [42, THING]}),
    Method("renew_session_lock", {"session_id": "s"}, {"session_id": _REQUIRED_TEXT}),
    Method("get_session_state", {"session_id": "s"}, {"session_id": _REQUIRED_TEXT}),
    Method("set_session_state", {"session_id": "s", "state": b"x"},
           {"session_id": _REQUIRED_TEXT, "state": [42, 1.5, THING]}),
    Method("session", {"session_id": "s"}, {"session_id": _REQUIRED_TEXT}),
    Method("list_sessions", {"last_updated_time": None, "skip": 0, "top": 1},
           {"last_updated_time": ["2030-01-01", 42, THING], "skip": _INT, "top": _INT}),
    Method("add_rule", {"name": "r", "filter": SqlFilter(expression="1=1"), "action": None},
           {"name": _REQUIRED_TEXT, "filter": [None, 42, "1=1"], "action": [42, "SET a=1"]}),
    Method("remove_rule", {"name": "r"}, {"name": _REQUIRED_TEXT}),
    Method("list_rules", {"skip": 0, "top": 1}, {"skip": _INT, "top": _INT}),
    Method("send_request", {"request": peek_message.Request(from_sequence_number=1,
                                                            message_count=1)},
           {"request": [None, 42, THING]}),
    Method("submit", {"request": peek_message.Request(from_sequence_number=1,
                                                      message_count=1), "timeout": None},
           {"request": [None, 42, THING], "timeout": ["x", THING, -1]}),
]

SESSION_METHODS = [
    Method("set_state", {"state": b"x"}, {"state": [42, 1.5, THING]}),
    Method("renew_lock", {"timeout": None}, {"timeout": ["x", THING, -1, 0]}),
]


def _cases(methods: list[Method]) -> list[Any]:
    return [pytest.param(m, argument, value, id=f"{m.name}-{argument}-{value!r:.20}")
            for m in methods for argument, values in m.careless.items() for value in values]


def _names(argument: str) -> str:
    return rf"\b{re.escape(argument)}\b"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("q")
        namespace.add_queue("sq", requires_session=True)
        yield namespace


@pytest.fixture(scope="module")
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as c:
        yield c


@pytest.mark.parametrize(("method", "argument", "value"), _cases(ENTITY_METHODS))
def test_sync_entity_client(client: ManagementClient, method: Method, argument: str,
                            value: Any) -> None:
    before = client.stats.submitted
    call = getattr(client.entity("q"), method.name)
    with pytest.raises((TypeError, ValueError), match=_names(argument)):
        call(**{**method.works, argument: value})
    assert client.stats.submitted == before


@pytest.mark.parametrize(("method", "argument", "value"), _cases(ENTITY_METHODS))
def test_async_entity_client(fake: FakeNamespace, method: Method, argument: str,
                             value: Any) -> None:
    async def run() -> None:
        async with AsyncManagementClient.from_connection_string(fake.connection_string,
                                                                timeout=5) as client:
            call = getattr(client.entity("q"), method.name)
            with pytest.raises((TypeError, ValueError), match=_names(argument)):
                result = call(**{**method.works, argument: value})
                if asyncio.iscoroutine(result):
                    await result
            assert client.stats.submitted == 0

    asyncio.run(run())


@pytest.mark.parametrize(("method", "argument", "value"), _cases(SESSION_METHODS))
def test_session_lock(client: ManagementClient, method: Method, argument: str,
                      value: Any) -> None:
    with client.entity("sq").session("s1") as session:
        before = client.stats.submitted
        with pytest.raises((TypeError, ValueError), match=_names(argument)):
            getattr(session, method.name)(**{**method.works, argument: value})
        assert client.stats.submitted == before


def _submit(entity: str, request: Any, timeout: float) -> Future[Any]:
    return Future()


RENEWER_METHODS = [
    Method("register", {"entity": "q", "lock": TOKEN, "locked_until": LATER,
                        "max_renewal_duration": 60.0, "lock_duration": 30.0,
                        "on_lock_lost": None},
           {"entity": [42, THING], "lock": [None, 42, THING, "not-a-uuid"],
            "locked_until": ["2030-01-01", 42, THING],
            "max_renewal_duration": ["x", THING, -1.0],
            "lock_duration": ["x", THING, -1.0], "on_lock_lost": [42, "print"]}),
    Method("register_session", {"entity": "sq", "session": "s", "locked_until": LATER,
                                "max_renewal_duration": 60.0, "lock_duration": 30.0,
                                "on_lock_lost": None},
           {"entity": [42, THING], "session": [None, 42, ""],
            "locked_until": ["2030-01-01", 42, THING],
            "max_renewal_duration": ["x", THING, -1.0],
            "lock_duration": ["x", THING, -1.0], "on_lock_lost": [42, "print"]}),
    Method("unregister", {"entity": "q", "lock": TOKEN},
           {"entity": [None, 42, THING], "lock": [None, 42, THING]}),
    Method("unregister_session", {"entity": "sq", "session": "s"},
           {"entity": [None, 42, THING], "session": [None, 42, ""]}),
]

RENEWER_SETTINGS: dict[str, list[Any]] = {
    "batch_size": [None, "x", 0, 1.5],
    "batch_window": [None, "x", 0, THING],
    "max_renewal_duration": ["x", THING, 0],
    "request_timeout": [None, "x", 0],
    "on_lock_lost": [42, "print"],
    "log_interval": [None, "x", 0],
    "clock": [42, "time"],
    "poll_interval": [None, "x", 0],
}


@pytest.fixture
def renewer() -> Iterator[LockRenewer]:
    with LockRenewer(_submit) as r:
        yield r


@pytest.mark.parametrize(("method", "argument", "value"), _cases(RENEWER_METHODS))
def test_renewer_methods(renewer: LockRenewer, method: Method, argument: str,
                         value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=_names(argument)):
        getattr(renewer, method.name)(**{**method.works, argument: value})
    assert renewer.stats().tracked == 0


@pytest.mark.parametrize(("argument", "value"),
                         [(a, v) for a, values in RENEWER_SETTINGS.items() for v in values])
def test_renewer_settings(argument: str, value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=_names(argument)):
        LockRenewer(_submit, **{argument: value})


@pytest.mark.parametrize("client_argument", [None, 42, "client"])
def test_renewer_client(client_argument: Any) -> None:
    with pytest.raises(TypeError, match=_names("client")):
        LockRenewer(client_argument)


def test_the_working_calls_work(client: ManagementClient, renewer: LockRenewer) -> None:
    """The baseline of each table is valid: only the careless value makes a case fail."""
    q = client.entity("q")
    for method in ENTITY_METHODS:
        if method.name in ("renew_session_lock", "get_session_state", "set_session_state",
                           "add_rule", "remove_rule", "list_rules", "renew_message_locks",
                           "update_disposition", "receive_deferred_messages"):
            continue  # valid arguments, refused by the service for this entity or state
        result: Any = getattr(q, method.name)(**method.works)
        if isinstance(result, Future):
            result.result(5)
    for method in RENEWER_METHODS:
        getattr(renewer, method.name)(**method.works)



