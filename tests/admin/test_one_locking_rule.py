"""One locking rule for every administration handler (issue 41): each runs under the
namespace lock after the store's due work, every method but GET wakes the AMQP server after
the lock is released, and a delete's links are detached after it too. The rule is applied
where the handlers are looked up (``Operations.handle``), so this walks every registered
handler: one added later is held to it without a test of its own."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from fakes._admin._context import AdminNamespace
from fakes._admin._operations import Call, Operations
from fakes._admin._routes import Kind, Target
from fakes._entity_state import EntitySettings
from fakes._errors import FakeServiceError
from fakes._store import Store


class _Watched(Store):
    """A store that notes, on each call of ``process_due``, whether the lock was held."""

    def __init__(self, lock: threading.RLock) -> None:
        super().__init__()
        self.lock = lock
        self.due_calls = 0

    def process_due(self, now: float) -> Any:
        assert self.lock._is_owned()  # type: ignore[attr-defined]
        self.due_calls += 1
        return super().process_due(now)


_TARGETS = {
    Kind.NAMESPACE: Target(Kind.NAMESPACE), Kind.QUEUES: Target(Kind.QUEUES),
    Kind.TOPICS: Target(Kind.TOPICS), Kind.ENTITY: Target(Kind.ENTITY, "q"),
    Kind.SUBSCRIPTIONS: Target(Kind.SUBSCRIPTIONS, "t"),
    Kind.SUBSCRIPTION: Target(Kind.SUBSCRIPTION, "t", "s"),
    Kind.RULES: Target(Kind.RULES, "t", "s"), Kind.RULE: Target(Kind.RULE, "t", "s", "r"),
}


def _operations() -> tuple[Operations, _Watched, list[str]]:
    lock = threading.RLock()
    store = _Watched(lock)
    store.add_queue("q", EntitySettings())
    store.add_topic("t")
    store.add_subscription("t", "s", EntitySettings())
    events: list[str] = []

    def outside(name: str) -> Any:
        def hook(*_args: object) -> None:
            assert not lock._is_owned()  # type: ignore[attr-defined]
            events.append(name)
        return hook

    namespace = AdminNamespace(store=store, lock=lock, now=time.time, keys={}, name="ns",
                               accept_any_token=True, changed=outside("changed"),
                               detach=outside("detach"))
    return Operations(namespace), store, events


@pytest.mark.parametrize(("method", "kind"), sorted(_operations()[0]._handlers, key=str))
def test_every_handler_runs_under_the_lock_after_the_due_work(method: str, kind: Kind) -> None:
    operations, store, events = _operations()
    handler = operations._handlers[(method, kind)]

    def checked(call: Call) -> Any:
        assert store.lock._is_owned()  # type: ignore[attr-defined]
        assert store.due_calls == 1
        return handler(call)

    operations._handlers[(method, kind)] = checked
    call = Call(method=method, target=_TARGETS[kind], base_url="http://h/", host="h",
                api_version="2021-05", skip=0, top=100, update=False, description=None)
    try:
        operations.handle(call)
    except FakeServiceError:
        pass  # a PUT without a description is refused inside the handler: still under the rule
    else:
        assert ("changed" in events) is (method != "GET")
        assert ("detach" in events) is (method == "DELETE" and kind is not Kind.RULE)
    assert store.due_calls == 1
