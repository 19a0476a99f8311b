"""Soak: many messages through the fake with random settlements, lock expiries and faults.

Each round sends a few messages, locks a batch and settles it at random (complete,
abandon, defer, dead-letter via update-disposition through ``ManagementClient``, or
renew-lock then complete, or let the lock lapse by moving the fake's clock); deferred
messages are received by sequence number and completed. Faults are injected on the way:
503 server-busy (retried, not applied), latency, and dropped replies on renew-lock (an
idempotent operation, so replayed). A model of every message's state is kept alongside;
at the end the fake's accounting must match it: every accepted message in exactly one
state, totals equal to the number sent, and each request applied exactly once.

Size: ``SBMGMT_SOAK_MESSAGES`` (default 2,000); seed: ``SBMGMT_SOAK_SEED``. The seed is in
every failure message so a failing run can be repeated.
"""

from __future__ import annotations

import os
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from fakes import FakeClock, FakeNamespace, FaultHandle
from sbmgmt import ManagementClient
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.message import Message, ReceivedMessage
from sbmgmt.ops import receive_by_sequence_number, renew_lock, update_disposition
from sbmgmt.ops.update_disposition import DispositionStatus

MESSAGES = int(os.environ.get("SBMGMT_SOAK_MESSAGES", "2000"))
SEED = int(os.environ.get("SBMGMT_SOAK_SEED", "20261122"))

QUEUE = "soak"
LOCK_SECONDS = 30.0
MAX_DELIVERIES = 4
#: generous for calls whose reply always comes ...
ATTEMPT_TIMEOUT = 10.0
#: ... short for renew-lock, whose reply is sometimes dropped on purpose (then replayed)
LOST_REPLY_TIMEOUT = 0.5
RETRY = RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.05, deadline=30.0)

#: what happens to a locked message, with its weight
OUTCOMES = {"complete": 30, "abandon": 15, "defer": 15, "dead-letter": 10, "renew": 20,
            "expire": 10}
SETTLE_STATUS = {"complete": DispositionStatus.COMPLETED,
                 "abandon": DispositionStatus.ABANDONED,
                 "defer": DispositionStatus.DEFERED,
                 "dead-letter": DispositionStatus.SUSPENDED}
BUSY_OPERATIONS = (update_disposition.OPERATION, renew_lock.OPERATION,
                   receive_by_sequence_number.OPERATION)


@dataclass
class Soak:
    """The run's random source, clients, the model of every message, and request counts."""

    rng: random.Random
    fake: FakeNamespace
    client: ManagementClient
    renew_client: ManagementClient
    total: int
    sent: int = 0
    #: sequence number -> "active" | "locked" | "deferred" | "completed" | "dead_lettered"
    state: dict[int, str] = field(default_factory=dict)
    deliveries: Counter[int] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    busy: list[FaultHandle] = field(default_factory=list)
    dropped: int = 0

    def where(self) -> str:
        """What a failure message needs to reproduce the run."""
        return f"(seed {SEED}, {self.total} messages, {self.sent} sent)"

    def count(self, state: str) -> int:
        return sum(1 for value in self.state.values() if value == state)

    # --- one round -------------------------------------------------------------------

    def run_round(self) -> None:
        self.send_some()
        latency = self.inject_faults()
        locked = self.fake.receive_and_lock(QUEUE, self.rng.randint(1, 40))
        groups: dict[str, list[ReceivedMessage]] = {outcome: [] for outcome in OUTCOMES}
        for message in locked:
            sequence = self.sequence(message)
            assert self.state.get(sequence) == "active", \
                f"locked message {sequence} was {self.state.get(sequence)} {self.where()}"
            self.state[sequence] = "locked"
            outcome = self.rng.choices(list(OUTCOMES), weights=list(OUTCOMES.values()))[0]
            groups[outcome].append(message)
        settle_order = list(SETTLE_STATUS)
        self.rng.shuffle(settle_order)
        for outcome in settle_order:
            self.settle(groups[outcome], outcome)
        if groups["renew"] or groups["expire"]:
            self.renew_and_expire(groups["renew"], groups["expire"])
        deferred = [s for s, value in self.state.items() if value == "deferred"]
        if deferred and (self.rng.random() < 0.3 or self.count("active") == 0):
            self.complete_deferred(self.rng.sample(deferred, min(len(deferred), 20)))
        if latency is not None:
            latency.remove()

    def send_some(self) -> None:
        count = min(self.total - self.sent, self.rng.randint(0, 60))
        if count:
            self.fake.send(QUEUE, *(Message(body=f"m{self.sent + i}".encode(),
                                            message_id=str(self.sent + i))
                                    for i in range(count)))
            for sequence in range(self.sent + 1, self.sent + count + 1):
                self.state[sequence] = "active"
            self.sent += count

    def inject_faults(self) -> FaultHandle | None:
        if self.rng.random() < 0.15 and not any(h.active for h in self.busy):
            self.busy.append(self.fake.faults.server_busy(
                self.rng.randint(1, 2), entity=QUEUE, operation=self.rng.choice(BUSY_OPERATIONS)))
        if self.rng.random() < 0.1:
            return self.fake.faults.latency(self.rng.uniform(0.001, 0.01), jitter=0.005,
                                            entity=QUEUE)
        return None

    def sequence(self, message: ReceivedMessage) -> int:
        assert message.sequence_number is not None, self.where()
        return message.sequence_number

    def token(self, message: ReceivedMessage) -> uuid.UUID:
        assert message.lock_token is not None, self.where()
        return message.lock_token

    def settle(self, messages: list[ReceivedMessage], outcome: str) -> None:
        if not messages:
            return
        reason = "soak" if outcome == "dead-letter" else None
        self.client.entity(QUEUE).update_disposition(
            [self.token(m) for m in messages], SETTLE_STATUS[outcome], dead_letter_reason=reason)
        self.calls["update_disposition"] += 1
        for message in messages:
            sequence = self.sequence(message)
            if outcome == "complete":
                self.state[sequence] = "completed"
            elif outcome == "defer":
                # A defer counts the receive that locked the message, as the service does
                # (azure-service-bus issue 375): at MaxDeliveryCount it is dead-lettered.
                self.deliveries[sequence] += 1
                self.state[sequence] = ("dead_lettered"
                                        if self.deliveries[sequence] >= MAX_DELIVERIES
                                        else "deferred")
            elif outcome == "dead-letter":
                self.state[sequence] = "dead_lettered"
            else:
                self.release(sequence)

    def release(self, sequence: int) -> None:
        """A delivery failed (abandon or lock expiry): active again, or dead-lettered."""
        self.deliveries[sequence] += 1
        self.state[sequence] = ("dead_lettered" if self.deliveries[sequence] >= MAX_DELIVERIES
                                else "active")

    def renew_and_expire(self, renew: list[ReceivedMessage],
                         expire: list[ReceivedMessage]) -> None:
        """Past half the lock, renew some locks; past the old expiry, only those are held."""
        self.fake.clock.advance(LOCK_SECONDS * 0.6)
        if renew:
            dropped = None
            if self.rng.random() < 0.1:
                dropped = self.fake.faults.drop_replies(1, entity=QUEUE,
                                                        operation=renew_lock.OPERATION)
            expiries = self.renew_client.entity(QUEUE).renew_message_locks(
                [self.token(m) for m in renew])
            self.calls["renew_lock"] += 1
            if dropped is not None:
                assert dropped.hits == 1, self.where()
                self.dropped += 1
            floor = self.fake.clock.now_datetime() + timedelta(seconds=LOCK_SECONDS * 0.6)
            assert len(expiries) == len(renew), self.where()
            assert all(when > floor for when in expiries), self.where()
        self.fake.clock.advance(LOCK_SECONDS * 0.6)
        self.settle(renew, "complete")
        for message in expire:
            self.release(self.sequence(message))

    def complete_deferred(self, sequences: list[int]) -> None:
        received = self.client.entity(QUEUE).receive_deferred_messages(sequences)
        self.calls["receive_by_sequence_number"] += 1
        assert sorted(self.sequence(m) for m in received) == sorted(sequences), self.where()
        for message in received:
            self.state[self.sequence(message)] = "locked"
        self.settle(received, "complete")

    # --- the end -----------------------------------------------------------------------

    def finished(self) -> bool:
        return self.sent == self.total and all(
            value in ("completed", "dead_lettered") for value in self.state.values())

    def check_accounting(self) -> dict[str, int]:
        counts = self.fake.accounting(QUEUE)
        accepted = counts.pop("accepted")
        assert accepted == self.total, f"accepted {accepted} {self.where()}"
        assert sum(counts.values()) == self.total, f"lost or doubled: {counts} {self.where()}"
        expected = Counter(self.state.values())
        assert {k: v for k, v in counts.items() if v} == dict(expected), self.where()
        dead_letter_queue = self.fake.accounting(QUEUE + "/$DeadLetterQueue")
        assert dead_letter_queue["accepted"] == counts["dead_lettered"], self.where()
        assert dead_letter_queue["active"] == counts["dead_lettered"], self.where()
        return counts

    def check_applied_once(self) -> None:
        applied = {name: self.fake.applied(QUEUE, module.OPERATION) for name, module in (
            ("update_disposition", update_disposition), ("renew_lock", renew_lock),
            ("receive_by_sequence_number", receive_by_sequence_number))}
        assert applied == {
            "update_disposition": self.calls["update_disposition"],
            "renew_lock": self.calls["renew_lock"] + self.dropped,
            "receive_by_sequence_number": self.calls["receive_by_sequence_number"],
        }, self.where()


@pytest.fixture
def soak_fake() -> Iterator[FakeNamespace]:
    # The soak moves the clock far past any token's expiry; tokens are test_security's business.
    with FakeNamespace(clock=FakeClock(), accept_any_token=True) as namespace:
        namespace.add_queue(QUEUE, lock_duration=timedelta(seconds=LOCK_SECONDS),
                            max_delivery_count=MAX_DELIVERIES)
        yield namespace


@pytest.mark.timeout(120 + MESSAGES // 50)
def test_soak_accounts_for_every_message(soak_fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(
            soak_fake.connection_string, timeout=ATTEMPT_TIMEOUT, retry=RETRY) as client, \
            ManagementClient.from_connection_string(
                soak_fake.connection_string, timeout=LOST_REPLY_TIMEOUT, retry=RETRY) as renew:
        soak = Soak(random.Random(SEED), soak_fake, client, renew, MESSAGES)
        rounds = 0
        while not soak.finished():
            soak.run_round()
            rounds += 1
            assert rounds <= MESSAGES * MAX_DELIVERIES + 1000, f"no progress {soak.where()}"
        soak_fake.faults.clear()
        counts = soak.check_accounting()
        soak.check_applied_once()
    busy_hits = sum(handle.hits for handle in soak.busy)
    assert counts["completed"] + counts["dead_lettered"] == MESSAGES
    print(f"\nsoak seed={SEED} messages={MESSAGES} rounds={rounds} states={counts} "
          f"calls={dict(soak.calls)} server_busy={busy_hits} dropped={soak.dropped}")
