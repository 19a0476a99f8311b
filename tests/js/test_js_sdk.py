"""The official JavaScript SDK (``@azure/service-bus``, pinned in tests/js/package.json)
against the fake namespace.

One Node process runs every scenario of ``scenarios.mjs`` against one fake (a Node start-up
and the SDK's import cost about a second each); each test checks one scenario's output. The
scenarios with lock expiry and renewal run in real time with short locks, because the SDK
checks them against the wall clock. ``npm ci`` in this folder installs the SDK
(``scripts/test.sh`` does it); without Node or the installed SDK these tests skip, and fail
under ``CI=true``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt.auth import audience_for, generate_sas_token
from tests.js._node import node_with_the_pinned_sdk, run_script

KEY = "SAS_KEY_VALUE"
WRONG_KEY = "d3Jvbmc="


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    """Every scenario's output, from one run of ``scenarios.mjs`` against a fresh fake."""
    node_with_the_pinned_sdk()  # before the fake starts: a missing peer skips (fails in CI)
    with FakeNamespace(key=KEY) as fake:
        for queue in ("js-send", "js-settle", "js-schedule"):
            fake.add_queue(queue)
        fake.add_queue("js-sessions", requires_session=True)
        fake.add_queue("js-renew", lock_duration=timedelta(seconds=2))
        fake.add_queue("js-expiry", lock_duration=timedelta(seconds=1))
        fake.add_queue("js-token")
        fake.add_topic("js-topic")
        fake.add_subscription("js-topic", "js-sub")
        wrong = fake.connection_string.replace(f"SharedAccessKey={KEY}",
                                               f"SharedAccessKey={WRONG_KEY}")
        # a SAS token for js-token that expires in real time, 3-4 s from now
        token = generate_sas_token(audience_for(fake.host, "js-token"), fake.key_name, KEY,
                                   int(time.time()) + 4)
        short = (f"Endpoint=sb://{fake.host}:{fake.port};SharedAccessSignature={token};"
                 "UseDevelopmentEmulator=true")
        return run_script("scenarios.mjs", fake.connection_string, wrong, short)


@pytest.fixture
def scenario(results: dict[str, Any]) -> Callable[[str], dict[str, Any]]:
    def get(name: str) -> dict[str, Any]:
        observed: dict[str, Any] = results[name]
        assert "error" not in observed, f"{name} failed in the SDK: {observed['error']}"
        return observed
    return get


def test_single_array_and_batch_sends_with_the_links_size_limit(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    sent = scenario("sending")
    assert sent["batchMaxSize"] == 256 * 1024 and sent["batchCount"] == 3
    assert sent["bodies"] == ["single", "array-1", "array-2", "batch-1", "batch-2", "batch-3"]
    assert sent["sequenceNumbers"] == [1, 2, 3, 4, 5, 6]
    assert sent["idOfArrayMessage"]  # the broker gives a message without an id one
    assert sent["tooBig"]["code"] == "MessageSizeExceeded"


def test_complete_abandon_defer_and_dead_letter(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    settled = scenario("settlement")
    assert settled["firstBodies"] == ["complete", "abandon", "defer", "dead"]
    assert settled["abandoned"] == {"body": "abandon", "deliveryCount": 1}
    assert settled["deferred"] == [{"body": "defer", "state": "deferred"}]
    assert settled["deadLettered"] == [{"body": "dead", "reason": "bad",
                                        "description": "really bad", "source": "js-settle"}]


def test_sessions_state_renewal_and_next_available(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    sessions = scenario("sessions")
    assert sessions == {"s1Bodies": ["s1-a", "s1-b"], "state": "state-of-s1",
                        "renewedLater": True, "nextSession": "s2", "nextBodies": ["s2-a"]}


def test_schedule_and_cancel_as_a_new_clients_first_operation(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    scheduled = scenario("scheduling")
    assert scheduled["sequenceNumbers"] == [1, 2]
    assert scheduled["peeked"] == [{"body": "later-1", "state": "scheduled"},
                                   {"body": "later-2", "state": "scheduled"}]
    assert scheduled["afterCancel"] == ["later-2"]


def test_rule_manager_creates_lists_and_deletes_rules(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    rules = scenario("rules")
    assert rules["listed"] == [{"name": "$Default", "filter": "1=1"},
                               {"name": "red", "filter": "color = 'red'"},
                               {"name": "by-subject", "filter": "orders"}]
    assert rules["after"] == ["$Default", "by-subject"]
    assert rules["missing"]["code"] == "MessagingEntityNotFound"


def test_lock_renewal_in_real_time(scenario: Callable[[str], dict[str, Any]]) -> None:
    locks = scenario("lockRenewal")
    # each renewal, 1.2 s after the last, moves the 2 s lock on by about that much
    assert locks["first"] < locks["second"] < locks["third"]
    assert locks["third"] - locks["first"] >= 2000


def test_an_expired_lock_is_redelivered_to_the_waiting_receiver(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    deliveries = scenario("lockExpiry")["deliveries"]
    assert [d["deliveryCount"] for d in deliveries] == [0, 1]
    assert deliveries[1]["at"] >= 900  # after the 1 s lock, not before


def test_a_token_expiring_in_real_time_stops_the_receiver(
        scenario: Callable[[str], dict[str, Any]]) -> None:
    reported = scenario("tokenExpiry")["reported"]
    assert reported is not None, "the receiver went on after its token expired"
    assert reported["code"] == "UnauthorizedAccess"
    # the link was open and then detached (not refused at once: the token was good at first)
    assert "has expired" in reported["message"]


def test_wrong_key_and_unknown_entities(scenario: Callable[[str], dict[str, Any]]) -> None:
    errors = scenario("errors")
    assert errors["wrongKey"]["code"] == "UnauthorizedAccess"
    assert errors["unknownSend"]["code"] == "MessagingEntityNotFound"
    assert errors["unknownPeek"]["code"] == "MessagingEntityNotFound"
