"""Nothing lost: after any sequence of store operations every accepted message is counted once."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from fakes._entity import Entity
from fakes._entity_state import EntitySettings, State
from fakes._errors import FakeServiceError
from fakes._namespace import FakeNamespace
from fakes._store import Store
from sbmgmt.message import Message

_STATES = [state.value for state in State]

Step = tuple[str, int]

steps = st.lists(st.tuples(
    st.sampled_from(["send", "send_same", "schedule", "take", "take_delete", "complete",
                     "abandon", "defer", "dead_letter", "receive_deferred", "cancel",
                     "advance"]),
    st.integers(min_value=0, max_value=40),
), max_size=60)


def _check(store: Store, path: str) -> None:
    counts = store.accounting(path)
    assert all(counts[name] >= 0 for name in _STATES)
    assert sum(counts[name] for name in _STATES) == counts["accepted"]


@settings(max_examples=150, deadline=None)
@given(steps)
def test_every_accepted_message_is_in_exactly_one_state(plan: list[Step]) -> None:
    namespace = FakeNamespace()
    namespace.add_queue("q", lock_duration=timedelta(seconds=10), max_delivery_count=3,
                        default_ttl=timedelta(seconds=25), requires_duplicate_detection=True,
                        duplicate_detection_history_time_window=timedelta(seconds=30))
    store = namespace._store
    entity = store.entity("q")
    now = 1_000_000.0
    tokens = []
    for action, n in plan:
        try:
            if action == "send":
                store.send("q", Message(body=b"x"), now)
            elif action == "send_same":  # a repeated message-id: a duplicate in the window
                store.send("q", Message(body=b"d", message_id=str(n % 3)), now)
            elif action == "schedule":
                at = datetime.fromtimestamp(now + n, tz=timezone.utc)
                entity.accept(Message(body=b"s", scheduled_enqueue_time=at), now)
            elif action in ("take", "take_delete"):
                stored = entity.take(now, None, peek_lock=action == "take")
                if stored is not None and stored.lock_token is not None:
                    tokens.append(stored.lock_token)
            elif action == "receive_deferred":
                for stored in entity.receive_deferred([n], now, peek_lock=True):
                    tokens.append(stored.lock_token)  # type: ignore[arg-type]
            elif action == "cancel":
                entity.cancel_scheduled([n])
            elif action == "advance":
                now += n
                store.process_due(now)
            elif tokens:
                token = tokens.pop(n % len(tokens))
                getattr(entity, action)(token, now)
        except FakeServiceError:
            pass
        _check(store, "q")
        _check(store, "q/$DeadLetterQueue")
    dead = store.accounting("q")["dead_lettered"]
    assert store.accounting("q/$DeadLetterQueue")["accepted"] == dead


def test_process_due_keeps_the_next_deadline_of_every_timed_heap() -> None:
    entity = Entity("q", EntitySettings(lock_duration=10.0, default_ttl=30.0))
    assert entity.process_due(0.0) is None
    entity.accept(Message(body=b"a"), 100.0)
    assert entity.process_due(100.0) == 130.0          # TTL
    locked = entity.take(101.0, None, peek_lock=True)
    assert locked is not None and locked.lock_token is not None
    assert entity.process_due(101.0) == 111.0          # the lock, earlier than the TTL
    entity.renew(locked.lock_token, 105.0)
    assert entity.process_due(105.0) == 111.0          # the stale entry still bounds it
    assert entity.process_due(111.0) == 115.0          # stale entry dropped: the renewed lock
    assert entity.accounting()["locked"] == 1
    assert entity.process_due(115.0) == 130.0          # lock expired: the message is back
    assert entity.accounting()["active"] == 1
    assert entity.process_due(130.0) is None
    assert entity.accounting()["expired"] == 1
