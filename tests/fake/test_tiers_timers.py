"""The service's throttling and timers, against the fake (fakes/_throttle.py, fakes/_idle.py):
throttled sends slow and all arrive through the official SDK's own retry; idle entity links
and connections without links are closed with the service's conditions and words; an
entity idle for its AutoDeleteOnIdle is deleted.

Times are the fake's settable ones, short: assertions are on what happened, never on how
long it took.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusServerBusyError
from azure.servicebus.management import ServiceBusAdministrationClient
from proton import Endpoint, Message
from proton.utils import BlockingConnection, ConnectionClosed, LinkDetached

from fakes import STANDARD, FakeClock, FakeNamespace, Limits
from sbmgmt.cli._entities import plain_http_transport
from tests._amqp_messages import raw_connection
from tests._waiting import wait_until

_THROTTLED = ("The request was terminated because the entity is being throttled. Error code: "
              "50009. Please wait 2 seconds and try again.")


def _admin(namespace: FakeNamespace, retries: int = 0) -> ServiceBusAdministrationClient:
    assert namespace.http_connection_string is not None
    return ServiceBusAdministrationClient.from_connection_string(
        namespace.http_connection_string, transport=plain_http_transport(),
        retry_total=retries)


# --- throttling -----------------------------------------------------------------------------

def test_throttled_sends_slow_and_all_arrive_through_the_sdks_retry() -> None:
    tier = dataclasses.replace(STANDARD, credits_per_second=20)
    with FakeNamespace(tier=tier, throttle=True) as namespace:
        namespace.add_queue("q")
        ids = [f"id-{i}" for i in range(60)]
        with ServiceBusClient.from_connection_string(namespace.connection_string) as client:
            with client.get_queue_sender("q") as sender:
                for message_id in ids:  # the SDK's default retry: 3 tries, 0.8 s backoff
                    sender.send_messages(ServiceBusMessage(message_id, message_id=message_id))
            assert namespace.throttled > 0  # it was throttled, and retried
            got: list[str] = []
            with client.get_queue_receiver("q", max_wait_time=5) as receiver:
                while len(got) < len(ids):
                    batch = receiver.receive_messages(max_message_count=50, max_wait_time=5)
                    if not batch:
                        break
                    for message in batch:
                        got.append(str(message.message_id))
                        receiver.complete_message(message)
    assert sorted(got) == sorted(ids)  # every one, once


def test_a_throttled_request_gets_server_busy_in_the_services_words() -> None:
    tier = dataclasses.replace(STANDARD, credits_per_second=25)
    with FakeNamespace(tier=tier, throttle=True, http_port=0) as namespace:
        namespace.add_queue("q")
        # a management operation is 10 credits: the third within a second is refused
        with _admin(namespace) as admin, pytest.raises(HttpResponseError) as caught:
            for _ in range(20):
                admin.get_queue_runtime_properties("q")
        assert caught.value.status_code == 503
        assert "Error code: 50009" in str(caught.value)
        # a message is 1 credit: a batch larger than a period's credits is never let through
        with ServiceBusClient.from_connection_string(
                namespace.connection_string, retry_total=0) as client, client.get_queue_sender(
                "q") as sender, pytest.raises(ServiceBusServerBusyError, match="Error code: 50009"):
            sender.send_messages([ServiceBusMessage(str(i)) for i in range(26)])
    assert namespace.accounting("q")["accepted"] == 0


def test_without_throttle_nothing_is_throttled() -> None:
    tier = dataclasses.replace(STANDARD, credits_per_second=1)
    with FakeNamespace(tier=tier) as namespace:
        namespace.add_queue("q")
        with ServiceBusClient.from_connection_string(
                namespace.connection_string, retry_total=0) as client, client.get_queue_sender(
                "q") as sender:
            sender.send_messages([ServiceBusMessage(str(i)) for i in range(100)])
        assert (namespace.throttled, namespace.accounting("q")["accepted"]) == (0, 100)


# --- idle links and connections -------------------------------------------------------------

def _short(**kwargs: float) -> Limits:
    return Limits(**{"link_idle_timeout": 60.0, "linkless_timeout": 60.0,
                     "first_link_timeout": 60.0, **kwargs})  # type: ignore[arg-type]


def test_an_idle_entity_link_is_detached_forced() -> None:
    with FakeNamespace(accept_any_token=True, limits=_short(link_idle_timeout=0.3)) as ns:
        ns.add_queue("q")
        connection = raw_connection(ns, "q", timeout=10)
        try:
            sender = connection.create_sender("q")
            with pytest.raises(LinkDetached, match="amqp:link:detach-forced"):
                connection.wait(lambda: False, timeout=10, msg="the idle link's detach")
            condition = sender.link.remote_condition
            assert "IdleTimerExpired" in condition.description
            # the connection stays, and so do its $cbs links (not entity links)
            assert connection.conn.state & Endpoint.REMOTE_ACTIVE
            connection.create_sender("q", name="after").send(Message(body="after"))
        finally:
            connection.close()
        assert ns.accounting("q")["accepted"] == 1


def test_a_transfer_starts_a_links_idle_time_again() -> None:
    """The watch's sweep is given the time (the service's 600 s, no waiting): 599 s after a
    send the link stays, 601 s after the last send it is detached."""
    with FakeNamespace(accept_any_token=True) as ns:
        ns.add_queue("q")
        server = ns._server
        assert server is not None
        connection = raw_connection(ns, "q", timeout=10)
        try:
            sender = connection.create_sender("q")
            before = time.monotonic()
            sender.send(Message(body="one"))
            server._call(lambda: server._idle.sweep(before + 599), "sweep")
            sender.send(Message(body="two"))  # its outcome comes after any detach would
            assert sender.link.state & Endpoint.REMOTE_ACTIVE
            server._call(lambda: server._idle.sweep(time.monotonic() + 601), "sweep")
            with pytest.raises(LinkDetached, match="Idle timeout: 00:10:00"):
                connection.wait(lambda: False, timeout=10, msg="the idle link's detach")
        finally:
            connection.close()
        assert ns.accounting("q")["accepted"] == 2


def test_a_new_connection_without_a_link_is_closed() -> None:
    with FakeNamespace(limits=_short(first_link_timeout=0.3)) as ns:
        connection = BlockingConnection(f"amqp://127.0.0.1:{ns.port}",
                                        allowed_mechs="ANONYMOUS", timeout=10)
        with pytest.raises(ConnectionClosed, match="amqp:connection:forced"):
            connection.wait(lambda: False, timeout=10, msg="the forced close")
        assert "did not have any active links in the past 300 milliseconds" in (
            connection.conn.remote_condition.description)


def test_a_connection_whose_links_are_gone_is_closed() -> None:
    with FakeNamespace(accept_any_token=True,
                       limits=_short(linkless_timeout=0.3, first_link_timeout=60)) as ns:
        ns.add_queue("q")
        connection = raw_connection(ns, "q", timeout=10)
        connection.create_sender("q").close()
        link = connection.conn.link_head(Endpoint.LOCAL_ACTIVE)
        while link is not None:  # the $cbs pair
            link.close()
            link = link.next(Endpoint.LOCAL_ACTIVE)
        with pytest.raises(ConnectionClosed, match="amqp:connection:forced"):
            connection.wait(lambda: False, timeout=10, msg="the forced close")
        assert "in the past 300 milliseconds" in connection.conn.remote_condition.description


# --- auto-delete-on-idle --------------------------------------------------------------------

def test_an_idle_entity_is_deleted_after_its_auto_delete_on_idle() -> None:
    clock = FakeClock()
    with FakeNamespace(clock=clock, http_port=0) as namespace, _admin(namespace) as admin:
        admin.create_queue("idle", auto_delete_on_idle=timedelta(minutes=5))
        admin.create_queue("used", auto_delete_on_idle=timedelta(minutes=5))
        admin.create_topic("t", auto_delete_on_idle=timedelta(minutes=5))
        admin.create_subscription("t", "s")
        admin.create_queue("kept")
        clock.advance(200)
        with ServiceBusClient.from_connection_string(
                namespace.connection_string) as client, client.get_queue_sender("used") as sender:
            sender.send_messages(ServiceBusMessage("keeps it"))  # a send is activity
        clock.advance(101)  # 301 s since the creates, 101 since the send
        assert wait_until(lambda: _gone(admin, "idle"))
        assert _gone(admin, "t")
        assert not _gone(admin, "used") and not _gone(admin, "kept")
        assert admin.get_queue("used").auto_delete_on_idle == timedelta(minutes=5)
        clock.advance(200)  # 301 s since the send
        assert wait_until(lambda: _gone(admin, "used"))
        assert not _gone(admin, "kept")


def _gone(admin: ServiceBusAdministrationClient, name: str) -> bool:
    try:
        admin.get_queue(name) if name != "t" else admin.get_topic(name)
    except ResourceNotFoundError:
        return True
    return False
