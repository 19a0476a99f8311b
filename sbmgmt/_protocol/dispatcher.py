"""The correlation dispatcher of one management link pair (sans-I/O).

Theory of operation
-------------------
A caller's request becomes a :class:`PendingRequest`: its correlation key (the
normalised message-id), the encoded request bytes, its timeout, the function that
turns a reply into a response, and the future the caller waits on (an
:class:`Outcome`: a ``concurrent.futures.Future`` for a thread, an ``asyncio.Future``
for a coroutine on the engine's event loop). The engine owns one :class:`Dispatcher`
per link pair and drives it with plain method calls; the dispatcher never touches a
socket, a thread or a clock of its own (the current time is passed in), so every rule
is unit-tested without a network.

Life of a request::

    submit()          -> queued (FIFO), waiting for room in the window
    next_sendable()   -> taken: counted in flight, at most ``window`` at once
    on_sent()         -> sent: its reply deadline starts now (now + timeout)
    on_reply()        -> done: the future gets the decoded response or its error
    tick(now)         -> done: OperationTimeoutError once the deadline has passed
    on_link_lost()    -> done: ConnectionLostError for every request on the wire
    fail_all()        -> done: the given error for every request (client closed)

- The window bounds the requests on the wire; the receiver link's credit never falls
  below it (:func:`~sbmgmt._engine.deliveries.reply_credit`), so the peer can always deliver
  every reply we wait for at once.
- A queued request waits at most its timeout for room (or for the link to attach)
  and then fails with OperationTimeoutError, saying it was never sent.
- A reply resolves exactly one future; a reply that does not decode fails that
  request alone. A reply for a request that already timed out is *late*, one
  for a key never seen is *unknown*: both are logged, counted in :attr:`stats`
  and dropped.
- Losing the link fails every request on the wire at once; a non-idempotent one
  carries ``may_have_been_applied=True``, unless its transaction was lost with the
  connection (then nothing it did can be committed: TransactionLostError). Queued and
  taken-but-unsent requests go back to the head of the queue and wait for the re-attach.
- Every exit removes the entry from the pending map before its future resolves.
- Deadlines live in one heap with lazy deletion (stale items are skipped, and the
  heap is rebuilt when stale items dominate), so per-request work stays O(log n).
  The heap holds its requests weakly: a finished request, and the response its
  future carries, lives only as long as the caller keeps it, not for its timeout.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol

from typing_extensions import TypeVar

from ..errors import (
    ConnectionLostError,
    OperationTimeoutError,
    ProtocolError,
    ServiceBusManagementError,
)

if TYPE_CHECKING:
    from .transaction_state import TransactionState

__all__ = [
    "DEFAULT_WINDOW",
    "Dispatcher",
    "DispatcherStats",
    "Outcome",
    "PendingRequest",
    "reject",
    "server_timeout_ms",
]

_log = logging.getLogger("sbmgmt.dispatcher")

#: Requests in flight per entity unless the client is given another ``window``. The
#: window bounds a link pair to ``window / round trip`` requests per second: 64 at 5 ms
#: was 12,800/s, under what one client core does (about 20,000/s), and at 20 ms 3,200/s.
#: 1,024 keeps the pipe full at 20 ms and costs nothing at 0 ms (a window is a bound, not
#: an allocation; the service's own credit on the request link bounds it too: the fake
#: gives 500 and tops it up as it reads). docs/performance.md, "A window that fits the
#: latency".
DEFAULT_WINDOW = 1024
_SERVER_TIMEOUT_MARGIN_MS = 500
_LATE_KEYS_REMEMBERED = 4096

#: What a request's future resolves to (its operation's Response); a dispatcher holds
#: requests of every operation, so unparametrized it is Any.
T = TypeVar("T", default=Any)
T_contra = TypeVar("T_contra", contravariant=True)

_QUEUED = 0
_TAKEN = 1
_SENT = 2
_DONE = 3


def server_timeout_ms(timeout: float) -> int:
    """``com.microsoft:server-timeout`` for a request that waits ``timeout`` seconds.

    The service is asked to give up a margin before the client does (half the
    timeout for short ones), so its own timeout reply can still arrive in time.
    """
    total = max(1, int(timeout * 1000))
    return max(1, total - min(_SERVER_TIMEOUT_MARGIN_MS, total // 2))


class Outcome(Protocol[T_contra]):
    """Where a request's result goes: what ``concurrent.futures.Future`` and
    ``asyncio.Future`` both are."""

    def cancelled(self) -> bool: ...

    def set_result(self, result: T_contra, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


@dataclass(eq=False, slots=True, weakref_slot=True)
class PendingRequest(Generic[T]):
    """One request from submit to its outcome: ``future`` gets what ``decode`` makes of
    the reply (an operation's Response, ``T``)."""

    key: str
    operation: str
    idempotent: bool
    payload: bytes
    timeout: float
    decode: Callable[[Any], T]
    #: The transaction the request joins (its txn-id rides on the transfer).
    transaction: TransactionState | None = None
    future: Outcome[T] = field(default_factory=Future)
    state: int = _QUEUED


@dataclass(slots=True)
class DispatcherStats:
    """Counters of one dispatcher (read them from any thread; they only grow)."""

    submitted: int = 0
    sent: int = 0
    completed: int = 0
    failed: int = 0
    timed_out: int = 0
    late_replies: int = 0
    unknown_replies: int = 0
    max_in_flight: int = 0


class Dispatcher:
    """Pending requests of one link pair, keyed by correlation key."""

    def __init__(self, *, window: int = DEFAULT_WINDOW, name: str = "") -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.window = window
        self.name = name
        self.stats = DispatcherStats()
        self._queue: deque[PendingRequest] = deque()
        self._pending: dict[str, PendingRequest] = {}
        # (deadline, order, the request, the state it must still be in): a weak reference,
        # so a finished request (its response included) is not kept for its timeout.
        self._deadlines: list[tuple[float, int, weakref.ref[PendingRequest], int]] = []
        self._sequence = itertools.count()
        self._late: OrderedDict[str, None] = OrderedDict()
        #: Why the link was last lost, until a request goes out again (for error messages).
        self.last_loss: str | None = None

    @property
    def in_flight(self) -> int:
        """Requests taken for sending or sent, not yet answered."""
        return len(self._pending)

    @property
    def queued(self) -> int:
        """Requests waiting for room in the window (or for the link)."""
        return len(self._queue)

    def submit(self, request: PendingRequest, now: float) -> None:
        """Queue a request; it waits at most its timeout to be sent."""
        self.stats.submitted += 1
        request.state = _QUEUED
        self._queue.append(request)
        self._push_deadline(now + request.timeout, request, _QUEUED)

    def next_sendable(self) -> PendingRequest | None:
        """The next request to write, if the window has room; it is then in flight."""
        queue = self._queue
        while queue and len(self._pending) < self.window:
            request = queue.popleft()
            if request.state != _QUEUED:
                continue
            if request.future.cancelled():
                request.state = _DONE
                continue
            request.state = _TAKEN
            self._pending[request.key] = request
            if len(self._pending) > self.stats.max_in_flight:
                self.stats.max_in_flight = len(self._pending)
            return request
        return None

    def on_sent(self, request: PendingRequest, now: float) -> None:
        """The request was written to the link: its reply deadline starts now."""
        if request.state != _TAKEN:
            return
        request.state = _SENT
        self.last_loss = None
        self.stats.sent += 1
        self._push_deadline(now + request.timeout, request, _SENT)

    def on_reply(self, key: str | None, reply: Any) -> bool:
        """Resolve the request ``key`` with ``reply``; False if it was late or unknown."""
        request = self._pending.pop(key, None) if key is not None else None
        if request is None:
            self._dropped(key)
            return False
        request.state = _DONE
        try:
            result = request.decode(reply)
        except ServiceBusManagementError as exc:
            self._fail(request, exc)
        except Exception as exc:  # a decoder bug must not stop the I/O thread
            self._fail(request, ProtocolError(
                f"{request.operation}: reply could not be decoded: {exc!r}",
                operation=request.operation,
            ))
        else:
            self.stats.completed += 1
            _resolve(request.future, result)
        return True

    def on_reply_error(self, key: str | None, error: ServiceBusManagementError) -> bool:
        """Fail the request ``key`` with a reply-level error (e.g. a malformed envelope)."""
        request = self._pending.pop(key, None) if key is not None else None
        if request is None:
            self._dropped(key)
            return False
        request.state = _DONE
        self._fail(request, error)
        return True

    def tick(self, now: float) -> float | None:
        """Expire what is due at ``now``; return the next deadline, if any."""
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, _, ref, phase = heapq.heappop(heap)
            request = ref()
            if request is None or request.state != phase:
                continue
            if phase == _SENT:
                del self._pending[request.key]
                self._remember_late(request.key)
                message = f"{request.operation}: no reply within {request.timeout:g} s"
            else:
                cause = (
                    f"last connection problem: {self.last_loss}" if self.last_loss
                    else "the management link was not available or the window stayed full"
                )
                message = f"{request.operation}: not sent within {request.timeout:g} s ({cause})"
            request.state = _DONE
            self.stats.timed_out += 1
            self._fail(request, OperationTimeoutError(message, operation=request.operation))
        self._compact()
        return heap[0][0] if heap else None

    def on_link_lost(
        self,
        reason: str,
        *,
        error_type: type[ConnectionLostError] = ConnectionLostError,
        error_condition: str | None = None,
    ) -> None:
        """Fail every request on the wire; unsent ones go back to wait for the re-attach."""
        self.last_loss = reason
        pending = list(self._pending.values())
        self._pending.clear()
        unsent = [r for r in pending if r.state == _TAKEN]
        for request in reversed(unsent):
            request.state = _QUEUED
            self._queue.appendleft(request)
        for request in pending:
            if request.state != _SENT:
                continue
            request.state = _DONE
            transaction = request.transaction
            if transaction is not None and transaction.lost is not None:
                self._fail(request, transaction.lost_error(request.operation))
                continue
            applied = not request.idempotent
            suffix = (
                "; it was sent, so the service may have applied it"
                if applied else ""
            )
            self._fail(request, error_type(
                f"{request.operation}: {reason}{suffix}",
                operation=request.operation,
                may_have_been_applied=applied,
                error_condition=error_condition,
            ))

    def fail_all(self, make_error: Callable[[PendingRequest], Exception]) -> None:
        """Fail every queued and in-flight request (used when the client closes)."""
        everything = [*self._pending.values(), *self._queue]
        self._pending.clear()
        self._queue.clear()
        self._deadlines.clear()
        for request in everything:
            if request.state == _DONE:
                continue
            request.state = _DONE
            self._fail(request, make_error(request))

    def _fail(self, request: PendingRequest, error: Exception) -> None:
        self.stats.failed += 1
        reject(request.future, error)

    def _dropped(self, key: str | None) -> None:
        if key is not None and key in self._late:
            self.stats.late_replies += 1
            _log.debug("%s: dropped a late reply for %s", self.name, key)
        else:
            self.stats.unknown_replies += 1
            _log.warning("%s: dropped a reply with unknown correlation-id %r", self.name, key)

    def _remember_late(self, key: str) -> None:
        self._late[key] = None
        if len(self._late) > _LATE_KEYS_REMEMBERED:
            self._late.popitem(last=False)

    def _push_deadline(self, deadline: float, request: PendingRequest, phase: int) -> None:
        heapq.heappush(self._deadlines,
                       (deadline, next(self._sequence), weakref.ref(request), phase))

    def _compact(self) -> None:
        live = len(self._pending) + len(self._queue)
        if len(self._deadlines) > 4 * live + 1024:
            self._deadlines = [item for item in self._deadlines if _waiting(item)]
            heapq.heapify(self._deadlines)


def _waiting(deadline: tuple[float, int, weakref.ref[PendingRequest], int]) -> bool:
    """Whether a deadline entry's request still exists and is in the entry's state."""
    request = deadline[2]()
    return request is not None and request.state == deadline[3]


# Once per request: try/except rather than a contextlib.suppress object per call.
_CANCELLED = (InvalidStateError, asyncio.InvalidStateError)


def _resolve(future: Outcome[Any], result: Any) -> None:
    try:  # noqa: SIM105
        future.set_result(result)
    except _CANCELLED:  # cancelled by its caller meanwhile
        pass


def reject(future: Outcome[Any], error: Exception) -> None:
    """Fail ``future`` unless its caller cancelled it (or its event loop is gone)."""
    try:
        future.set_exception(error)
    except _CANCELLED:  # cancelled by its caller meanwhile
        pass
    except RuntimeError:  # an asyncio future whose event loop has closed: nobody waits
        pass
