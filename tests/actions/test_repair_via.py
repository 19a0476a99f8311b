"""The via entity of a move: the source's top-level entity (the service's one-entity rule).

A transaction acts on one top-level entity (a queue or a topic): the service refuses a
second with "Local transactions cannot span multiple top-level entities such as queue or
topic", and its transactions page says a move out of a subscription goes via the
subscription's topic. So a move out of ``t/subscriptions/s/$DeadLetterQueue`` sends via
``t``, one out of ``q/$DeadLetterQueue`` via ``q``, and a resubmit into the source's own
queue directly (docs/dead-letters.md, "Which entity is the via").
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message, MessageSender
from sbmgmt.actions.repair import plan_move, repair
from sbmgmt.client import EntityClient

COUNT = 30


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("orders")
        namespace.add_queue("archive")
        namespace.add_topic("events")
        namespace.add_subscription("events", "audit")
        yield namespace


def _dead_letter(fake: FakeNamespace, client: ManagementClient, entity: str) -> None:
    locked = fake.receive_and_lock(entity, COUNT)
    client.entity(entity).update_disposition([m.lock_token for m in locked], "suspended",
                                             dead_letter_reason="Poison")


def _attached_senders(client: ManagementClient, source: str,
                      monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """Move the source's messages to ``archive``; each sender's (target, via) that the run
    opened (the plan's check attached one to ``archive`` directly, and detached it)."""
    opened: list[tuple[str, str | None]] = []
    original = EntityClient.sender

    def sender(self: EntityClient, *, via: str | None = None) -> MessageSender:
        opened.append((self.path, via))
        return original(self, via=via)

    plan = plan_move(client, source, "archive")
    monkeypatch.setattr(EntityClient, "sender", sender)
    report = repair(client, plan)
    assert report.transactional and report.complete and report.planned == COUNT
    return opened


@pytest.mark.parametrize(("sent_to", "dead_lettered_in", "via"), [
    ("events", "events/subscriptions/audit", "events"),  # a subscription's: via its topic
    ("orders", "orders", "orders"),  # a queue's: via the queue
])
def test_dead_letters_move_via_their_top_level_entity(
        fake: FakeNamespace, monkeypatch: pytest.MonkeyPatch, sent_to: str,
        dead_lettered_in: str, via: str) -> None:
    fake.send(sent_to, *(Message(body=f"m{i}".encode(), message_id=f"m{i}")
                         for i in range(COUNT)))
    source = f"{dead_lettered_in}/$DeadLetterQueue"
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as client:
        _dead_letter(fake, client, dead_lettered_in)
        senders = _attached_senders(client, source, monkeypatch)
    assert senders == [("archive", via)]
    assert fake.accounting("archive")["active"] == COUNT
    assert fake.accounting(source)["active"] == 0
