"""The I/O driver of ``ManagementClient``: one thread runs the engine's loop.

Theory of operation
-------------------
:class:`IOThread` starts one daemon thread (``sbmgmt-io-<n>``) that runs an
:class:`~sbmgmt.transport.selector_loop.EngineLoop` (our own selector loop over proton's protocol
engine; proton's ``Container`` cost as much per request as the work itself) whose
handler is the :class:`~sbmgmt._engine.engine.Engine`. Nothing else touches proton objects.
Other threads hand work over through :meth:`IOThread.submit`, which appends to an
inbox under a lock and wakes the loop only while it sleeps (and no wake-up is pending), so
a burst of a thousand requests costs one wake-up; the I/O thread drains the whole inbox per wake.
Callers wait on the ``concurrent.futures.Future`` of their
:class:`~sbmgmt._protocol.dispatcher.PendingRequest` (the request bytes are encoded on the
caller's thread, the reply is decoded on this one).

What the engine does with the work, by job: connection and backoff, and the timers
(:mod:`sbmgmt._engine.engine`); CBS tokens (:mod:`sbmgmt._protocol.tokens`); each entity's
management link pair and its states (:mod:`sbmgmt._engine.link_pairs`); the per-request path on the
wire (:mod:`sbmgmt._engine.deliveries`); transactions (:mod:`sbmgmt._protocol.transaction`) and
session receiver links (:mod:`sbmgmt._engine.session_links`).

``close()`` fails all work with ClientClosedError, stops the loop and joins the
thread; if the loop fails, everything pending fails the same way.
"""

from __future__ import annotations

import _thread
import asyncio
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .._engine.connection import Endpoint
from .._engine.coordinator_link import Control
from .._engine.engine import Engine, Work
from .._engine.failures import fail_control, refuse_work
from .._engine.message_links import LinkWork
from .._engine.session_links import SessionAttach
from .._protocol.dispatcher import DEFAULT_WINDOW, DispatcherStats, PendingRequest
from .._protocol.tokens import AccessTokenLike, TokenSource
from ..transport.selector_loop import EngineLoop
from .waiter import Waiter

__all__ = ["AccessTokenLike", "Endpoint", "IOThread", "TokenSource"]

_log = logging.getLogger("sbmgmt.io")

_thread_numbers = itertools.count(1)


class IOThread:
    """The client's I/O thread; any thread may call :meth:`submit` and :meth:`close`."""

    def __init__(
        self,
        endpoint: Endpoint,
        tokens: TokenSource,
        *,
        audience_for: Callable[[str], str],
        reply_to_for: Callable[[str], str],
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.name = f"sbmgmt-io-{next(_thread_numbers)}"
        self._engine = Engine(
            endpoint, tokens, (audience_for, reply_to_for), window, self.name
        )
        self._lock = threading.Lock()
        self._inbox: deque[Work] = deque()
        self._controls: deque[Control] = deque()
        self._wake_pending = False
        self._sleeping = False  # the loop waits (or is about to) in select
        self._closed = False
        # Waiters resolved in the loop's current round, released before it waits again.
        self._ready: list[_thread.LockType] = []
        self._deferring = True
        self._ident: int | None = None
        self._loop = EngineLoop(self._engine, container_id=self.name, gate=self)
        self._engine.loop = self._loop
        self._engine.take_inbox = self._take_inbox
        self._engine.take_controls = self._take_controls
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def loop_future(self) -> None:
        """Requests are awaited through their ``concurrent.futures.Future`` (this
        driver has no event loop of its own)."""
        return None

    def waiter(self) -> Waiter:
        """The future of a blocking call: released with the others the loop resolved in
        its round, once the round is done (see :mod:`sbmgmt._drivers.waiter`)."""
        return Waiter(self._ready_lock)

    def submit(self, entity: str, request: PendingRequest | SessionAttach | LinkWork) -> None:
        """Hand a request to the I/O thread; its future resolves there. A
        :class:`SessionAttach` is attached (or, once ``detaching`` is set, detached)."""
        self._hand_over("_inbox", (entity, request), refuse_work)

    def submit_control(self, control: Control) -> None:
        """Hand a transaction's declare or discharge to the I/O thread."""
        self._hand_over("_controls", control, fail_control)

    def _hand_over(self, queue: str, item: Any, refuse: Callable[[Any], None]) -> None:
        """Append ``item`` to the queue attribute named ``queue`` (looked up under the
        lock: the I/O thread swaps the queues when it takes them) and wake the loop;
        ``refuse(item)`` if the client is closed."""
        with self._lock:
            closed = self._closed
            if not closed:
                getattr(self, queue).append(item)
                if self._sleeping and not self._wake_pending:
                    self._wake_pending = True
                    self._loop.wake()
        if closed:
            refuse(item)

    def stats(self) -> DispatcherStats:
        """Counters summed over every entity (``max_in_flight`` is the largest seen)."""
        return self._engine.stats()

    def close(self, timeout: float = 5.0) -> None:
        """Fail all pending work with ClientClosedError, stop and join the thread."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._engine.closing = True
                self._loop.wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    async def aclose(self) -> None:
        """:meth:`close` from a coroutine: the thread is joined off the event loop."""
        await asyncio.to_thread(self.close)

    def _take_inbox(self) -> deque[Work]:
        with self._lock:
            items = self._inbox
            self._inbox = deque()
            self._wake_pending = False
        return items

    def _take_controls(self) -> deque[Control]:
        with self._lock:
            items = self._controls
            self._controls = deque()
        return items

    def _ready_lock(self, lock: _thread.LockType) -> None:
        """A waiter's outcome is in: release it with the round's others (on the running
        loop's thread), else now."""
        if self._deferring and threading.get_ident() == self._ident:
            self._ready.append(lock)
        else:
            lock.release()

    def _release_ready(self) -> bool:
        """Release the waiters resolved in the round; whether there were any."""
        ready = self._ready
        if not ready:
            return False
        self._ready = []
        for lock in ready:
            lock.release()
        return True

    def sleep(self) -> bool:
        """The loop's round is done (its :class:`~sbmgmt.transport.selector_loop.Gate`): release the
        waiters it resolved and yield the GIL once, so that the callers woken run and
        hand their next requests over now; then wait, unless work was handed over
        meanwhile (it is then taken at once: callers wake the loop only while it waits)."""
        if self._release_ready():
            time.sleep(0)
        with self._lock:
            if self._inbox or self._controls:
                return False
            self._sleeping = True
            return True

    def awake(self) -> None:
        with self._lock:
            self._sleeping = False

    def _run(self) -> None:
        self._ident = threading.get_ident()
        try:
            self._loop.run()
        except Exception:
            _log.exception("%s: the I/O loop failed; failing all pending requests", self.name)
        finally:
            self._deferring = False
            self._release_ready()
            with self._lock:
                self._closed = True
            self._engine.fail_everything(self._take_inbox())
            for control in self._take_controls():
                fail_control(control)
