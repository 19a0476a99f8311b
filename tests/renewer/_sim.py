"""A discrete-event simulation for the renewal scheduler: a manual clock and a fake service.

The fake service keeps the server's view of every lock (token -> expiry) and answers
renew requests the way Service Bus does: a renew-lock with any lost or expired token
fails whole with 410; a success extends every token by the lock duration. Replies
arrive ``latency`` seconds after the request (simulated time).
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sbmgmt.errors import error_for_status
from sbmgmt.ops import renew_lock, renew_session_lock
from sbmgmt.ops._base import OpModel
from sbmgmt.renewer import LockLoss, RenewalScheduler


def utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class ManualClock:
    """Simulated epoch seconds."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@dataclass
class Sent:
    """One request the scheduler sent, and when."""

    at: float
    entity: str
    request: OpModel
    timeout: float


@dataclass
class FakeService:
    """The server side of renew-lock and renew-session-lock, on a manual clock."""

    clock: ManualClock
    lock_duration: float = 60.0
    latency: float = 0.0
    locks: dict[uuid.UUID, float] = field(default_factory=dict)
    sessions: dict[str, float] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    #: Exceptions answered to the next requests, one each, before normal service.
    inject: deque[BaseException] = field(default_factory=deque)
    #: When set, every request is answered with this error.
    always: BaseException | None = None
    #: Renewals the server refused because the lock had already expired.
    expired_renewals: int = 0
    _pending: list[tuple[float, int, Future[Any], OpModel]] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def lock_messages(self, count: int) -> list[uuid.UUID]:
        tokens = [uuid.uuid4() for _ in range(count)]
        for token in tokens:
            self.locks[token] = self.clock.now + self.lock_duration
        return tokens

    def lock_session(self, session_id: str) -> float:
        self.sessions[session_id] = self.clock.now + self.lock_duration
        return self.sessions[session_id]

    def submit(self, entity: str, request: OpModel, timeout: float) -> Future[Any]:
        self.sent.append(Sent(self.clock.now, entity, request, timeout))
        future: Future[Any] = Future()
        heapq.heappush(
            self._pending, (self.clock.now + self.latency, next(self._seq), future, request)
        )
        if self.latency == 0:
            self.deliver()
        return future

    def next_delivery(self) -> float:
        return self._pending[0][0] if self._pending else float("inf")

    def deliver(self) -> None:
        while self._pending and self._pending[0][0] <= self.clock.now:
            _, _, future, request = heapq.heappop(self._pending)
            try:
                future.set_result(self._answer(request))
            except Exception as exc:
                future.set_exception(exc)

    def _answer(self, request: OpModel) -> Any:
        now = self.clock.now
        if self.always is not None:
            raise self.always
        if self.inject:
            raise self.inject.popleft()
        if isinstance(request, renew_session_lock.Request):
            if self.sessions.get(request.session_id, 0.0) <= now:
                raise error_for_status(renew_session_lock.OPERATION, 410,
                                       "com.microsoft:session-lock-lost")
            self.sessions[request.session_id] = now + self.lock_duration
            return renew_session_lock.Response(expiration=utc(now + self.lock_duration))
        assert isinstance(request, renew_lock.Request)
        for token in request.lock_tokens:
            if self.locks.get(token, 0.0) <= now:
                if token in self.locks:
                    self.expired_renewals += 1
                raise error_for_status(renew_lock.OPERATION, 410,
                                       "com.microsoft:message-lock-lost")
        for token in request.lock_tokens:
            self.locks[token] = now + self.lock_duration
        return renew_lock.Response(
            expirations=tuple(utc(now + self.lock_duration) for _ in request.lock_tokens))

    def renew_requests(self) -> list[Sent]:
        return [s for s in self.sent if isinstance(s.request, renew_lock.Request)]


class Simulation:
    """A scheduler wired to a fake service on a manual clock; :meth:`run_until` drives it."""

    def __init__(self, lock_duration: float = 60.0, latency: float = 0.0,
                 **settings: Any) -> None:
        self.clock = ManualClock()
        self.service = FakeService(self.clock, lock_duration, latency)
        self.losses: list[LockLoss] = []
        self.wakes = 0
        settings.setdefault("on_lock_lost", self.losses.append)
        self.scheduler = RenewalScheduler(self.service.submit, self._wake, **settings)
        self._woken = False

    def _wake(self) -> None:
        self.wakes += 1
        self._woken = True

    def register(self, tokens: list[uuid.UUID], entity: str = "q", **kwargs: Any) -> None:
        for token in tokens:
            self.scheduler.register_message(entity, token, self.service.locks[token],
                                            self.clock.now, **kwargs)

    def run_until(self, end: float) -> None:
        """Process every event (scheduler runs, replies) up to ``end``, in time order.

        A wake-up (a reply arrived, an earlier registration) runs the scheduler again
        at once, as the shells do.
        """
        next_run = self._run()
        while True:
            at = min(next_run if next_run is not None else float("inf"),
                     self.service.next_delivery())
            if self._woken:
                at = self.clock.now
            if at > end:
                self.clock.now = end
                return
            self.clock.now = max(self.clock.now, at)
            self.service.deliver()
            next_run = self._run()

    def _run(self) -> float | None:
        self._woken = False
        return self.scheduler.run(self.clock.now)

    def advance(self, seconds: float) -> None:
        self.run_until(self.clock.now + seconds)

    def live_locks_valid(self, tokens: list[uuid.UUID]) -> bool:
        return all(self.service.locks[t] > self.clock.now for t in tokens)
