"""cancel-scheduled-message of a number that is not a scheduled message (issue 40).

The service refuses it: 404 ``com.microsoft:message-not-found``, "Messages not found. Missing
sequence numbers: …" (its replies quoted in MassTransit issue 926 and azure-service-bus issue
239). The fake answers the same, to the official Python SDK and to sbmgmt, whose client raises
``ScheduledMessagesNotFoundError`` naming the numbers, and whose CLI says what happened.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from azure.servicebus import ServiceBusClient
from azure.servicebus.exceptions import ServiceBusError
from typer.testing import CliRunner

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.cli import app
from sbmgmt.errors import NotFoundError, ScheduledMessagesNotFoundError
from sbmgmt.message import Message
from sbmgmt.ops import cancel_scheduled_message

LATER = timedelta(hours=1)


#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(queues=["orders"], topics={"events": ["all"]})


def _schedule(client: ManagementClient, path: str, count: int) -> list[int]:
    at = datetime.now(timezone.utc) + LATER
    return client.entity(path).schedule_messages(
        [Message(body=f"s{i}".encode()) for i in range(count)], at)


def test_an_unknown_number_is_refused_naming_it(client: ManagementClient) -> None:
    with pytest.raises(ScheduledMessagesNotFoundError) as caught:
        client.entity("orders").cancel_scheduled_messages([9999])
    error = caught.value
    assert isinstance(error, NotFoundError)
    assert error.sequence_numbers == (9999,)
    assert (error.status_code, error.error_condition) == (404, "com.microsoft:message-not-found")
    assert error.description == "Messages not found. Missing sequence numbers: 9999"
    assert str(error).startswith(
        "not cancelled: no scheduled message has the sequence number 9999 (")


def test_an_active_message_is_refused_and_left_alone(fake: FakeNamespace,
                                                     client: ManagementClient) -> None:
    fake.send("orders", Message(body=b"active"))
    with pytest.raises(ScheduledMessagesNotFoundError) as caught:
        client.entity("orders").cancel_scheduled_messages([1])
    assert caught.value.sequence_numbers == (1,)
    counts = fake.accounting("orders")
    assert (counts["active"], counts["cancelled"]) == (1, 0)


def test_a_request_with_one_missing_number_cancels_none(fake: FakeNamespace,
                                                        client: ManagementClient) -> None:
    scheduled = _schedule(client, "orders", 2)
    with pytest.raises(ScheduledMessagesNotFoundError) as caught:
        client.entity("orders").cancel_scheduled_messages([*scheduled, 9998, 9999])
    assert caught.value.sequence_numbers == (9998, 9999)
    assert caught.value.description == (
        "Messages not found. Missing sequence numbers: 9998, 9999")
    counts = fake.accounting("orders")
    assert (counts["scheduled"], counts["cancelled"]) == (2, 0)
    client.entity("orders").cancel_scheduled_messages(scheduled)
    assert fake.accounting("orders")["cancelled"] == 2


def test_a_number_cancelled_twice_is_refused_the_second_time(client: ManagementClient) -> None:
    [number] = _schedule(client, "orders", 1)
    client.entity("orders").cancel_scheduled_messages([number])
    with pytest.raises(ScheduledMessagesNotFoundError) as caught:
        client.entity("orders").cancel_scheduled_messages([number])
    assert caught.value.sequence_numbers == (number,)


def test_a_topic_refuses_the_same_way(client: ManagementClient) -> None:
    [number] = _schedule(client, "events", 1)
    with pytest.raises(ScheduledMessagesNotFoundError) as caught:
        client.entity("events").cancel_scheduled_messages([number, number + 1])
    assert caught.value.sequence_numbers == (number + 1,)
    client.entity("events").cancel_scheduled_messages([number])


def test_a_missing_entity_stays_a_plain_not_found(client: ManagementClient) -> None:
    with pytest.raises(NotFoundError) as caught:
        client.entity("nowhere").cancel_scheduled_messages([1])
    assert not isinstance(caught.value, ScheduledMessagesNotFoundError)


def test_the_official_sdk_gets_the_services_answer(fake: FakeNamespace) -> None:
    # no retries: the SDK retries this refusal (three times, backing off: 12 s) before it
    # raises the same answer
    with ServiceBusClient.from_connection_string(fake.connection_string, retry_total=0) as sdk, \
            sdk.get_queue_sender("orders") as sender, pytest.raises(ServiceBusError) as caught:
        sender.cancel_scheduled_messages(9999)
    assert "Messages not found. Missing sequence numbers: 9999" in str(caught.value)


@pytest.mark.parametrize("description, numbers", [
    # the service's replies as users quote them, tracking id and all
    ("Messages not found. Missing sequence numbers: 72043423689408512 "
     "TrackingId:c64ff296-15d7-4a46-9423-62c9cb60bbb7_G21_B28, SystemTracker:ns:Topic:t",
     (72043423689408512,)),
    ("Messages not found. Missing sequence numbers: -56294995341979", (-56294995341979,)),
    ("Messages not found. Missing sequence numbers: 3, 4", (3, 4)),
])
def test_the_services_wording_is_read(description: str, numbers: tuple[int, ...]) -> None:
    properties = {"error-condition": "com.microsoft:message-not-found",
                  "statusDescription": description}
    with pytest.raises(ScheduledMessagesNotFoundError) as caught:
        cancel_scheduled_message.decode(404, properties, None)
    assert caught.value.sequence_numbers == numbers


def _cancel(fake: FakeNamespace, *numbers: int) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["-c", fake.connection_string, "--timeout", "10",
                                      "cancel", "orders", *map(str, numbers)])
    return result.exit_code, result.stdout, result.stderr


def test_the_cli_says_what_was_not_cancelled(fake: FakeNamespace,
                                             client: ManagementClient) -> None:
    code, out, err = _cancel(fake, 9999)
    assert (code, out) == (4, "")
    assert err == ("error: not cancelled: orders has no scheduled message with the sequence "
                   "number 9999 (the service answered: Messages not found. Missing sequence "
                   "numbers: 9999)\n")
    [number] = _schedule(client, "orders", 1)
    code, out, err = _cancel(fake, number, 9999)
    assert (code, out) == (4, "")
    assert err == (
        "error: not cancelled: orders has no scheduled message with the sequence number 9999; "
        f"the reply does not say whether {number} was cancelled (sbmgmt peek orders --from "
        f"{number} shows what is scheduled) (the service answered: Messages not found. "
        "Missing sequence numbers: 9999)\n")
    code, out, _ = _cancel(fake, number)
    assert (code, out) == (0, f"cancelled the scheduled messages {number} of orders\n")
