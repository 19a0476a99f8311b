"""The I/O driver of ``AsyncManagementClient``: the engine on the running event loop.

Theory of operation
-------------------
:class:`EventLoopIO` runs the same :class:`~sbmgmt._engine.engine.Engine` as the sync
client's :class:`~sbmgmt._drivers.io_thread.IOThread`, but on the asyncio event loop the client is
used from, through an :class:`~sbmgmt.transport.asyncio_loop.AsyncioLoop` (non-blocking
sockets watched by the event loop, timers as ``call_later``). An awaited request costs
no thread hop: its future is an ``asyncio.Future`` of that loop (:meth:`loop_future`),
resolved in the turn that reads its reply, and a burst of requests handed over in one
pass of the event loop is taken in turns of :data:`EARLY_TURN` requests: the first
are written while the rest are still being built, so that a round trip overlaps the
building of a large ``asyncio.gather`` instead of following it.

The client binds to an event loop when it is first used from one (not when it is
made, so it can be made outside any loop). Later:

- on that loop's thread, work goes straight into the inbox (no lock: only that thread
  touches it) and one wake-up per burst schedules the turn that takes it;
- from another thread (a ``LockRenewer`` thread, ``submit`` from a worker), work is
  handed over with ``call_soon_threadsafe`` and its ``concurrent.futures.Future``
  resolves on the loop's thread, as the sync client's do;
- from another running event loop while the bound one has stopped or closed (a test
  framework's loop per test), the client follows the new loop: the old connection is
  dropped, what was still pending on it fails with ConnectionLostError, and the next
  request connects again on the new loop. While the bound loop runs, another loop's
  calls are handed over as from another thread.

Used with no running event loop and none bound (or only a closed one), a call raises
``RuntimeError``: an asyncio client needs its event loop. ``close()`` fails everything
pending with ClientClosedError and closes the connection at once; if the engine ever
raises, everything pending fails the same way and the client is closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from .._engine.connection import Endpoint
from .._engine.coordinator_link import Control
from .._engine.engine import Engine, Work
from .._engine.failures import fail_control, refuse_work
from .._engine.link_pairs import add_stats
from .._engine.message_links import LinkWork
from .._engine.session_links import SessionAttach
from .._protocol.dispatcher import DispatcherStats, PendingRequest
from .._protocol.tokens import TokenSource
from ..errors import ConnectionLostError
from ..transport.asyncio_loop import AsyncioLoop
from .waiter import Waiter

__all__ = ["EventLoopIO"]

_log = logging.getLogger("sbmgmt.io")

_numbers = itertools.count(1)
_running_loop = asyncio._get_running_loop  # the C accelerated lookup, no exception
_CLOSE_WAIT = 5.0

EARLY_TURN = 64
"""Requests handed over on the loop's thread that make a turn run at once: the
first of a burst on the wire after 64 are built (about 1 ms), not after all of them,
for a turn's cost (tens of microseconds) per 64 requests."""


class EventLoopIO:
    """The engine of one ``AsyncManagementClient``; any thread may call :meth:`submit`."""

    def __init__(
        self,
        endpoint: Endpoint,
        tokens: TokenSource,
        *,
        audience_for: Callable[[str], str],
        reply_to_for: Callable[[str], str],
        window: int,
    ) -> None:
        self.name = f"sbmgmt-aio-{next(_numbers)}"
        self._settings = (endpoint, tokens, (audience_for, reply_to_for), window)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: Engine | None = None
        self._proton: AsyncioLoop | None = None
        self._inbox: deque[Work] = deque()
        self._controls: deque[Control] = deque()
        self._closed = False
        self._earlier = DispatcherStats()  # the counters of engines of earlier loops

    @property
    def closed(self) -> bool:
        return self._closed

    def loop_future(self) -> asyncio.Future[Any] | None:
        """A future of the running event loop for a request awaited there, when the
        engine runs on that loop (binding it if need be); None: await a
        ``concurrent.futures.Future`` instead (another loop's thread, or closed)."""
        loop = _running_loop()
        if loop is None or self._closed or not self._on(loop):
            return None
        return loop.create_future()

    def waiter(self) -> Waiter:
        """The future of a blocking call from a thread (released at once)."""
        return Waiter()

    def submit(self, entity: str, request: PendingRequest | SessionAttach | LinkWork) -> None:
        """Hand a request (or a session link to attach or detach) to the engine."""
        proton = self._proton
        if proton is not None and self._loop is _running_loop() and not self._closed:
            inbox = self._inbox  # the common case: the loop's own thread
            inbox.append((entity, request))
            if len(inbox) >= EARLY_TURN:
                proton.turn_now()
            else:
                proton.wake_here()
            return
        self._hand_over("_inbox", (entity, request), refuse_work)

    def submit_control(self, control: Control) -> None:
        """Hand a transaction's declare or discharge to the engine."""
        self._hand_over("_controls", control, fail_control)

    def stats(self) -> DispatcherStats:
        """Counters summed over every entity (and every event loop the client ran on)."""
        engine = self._engine
        return self._earlier if engine is None else add_stats(self._earlier, engine.stats())

    def close(self) -> None:
        """Fail everything pending with ClientClosedError and close the connection (from
        any thread; from another thread it waits for the loop to do it, boundedly)."""
        if self._closed:
            return
        self._closed = True
        loop = self._loop
        if loop is None or _running_loop() is loop or not loop.is_running():
            self._shut_down()
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def shut_down() -> None:
            self._shut_down()
            done.set_result(None)

        try:
            loop.call_soon_threadsafe(shut_down)
        except RuntimeError:  # the loop closed meanwhile
            self._shut_down()
            return
        try:
            done.result(_CLOSE_WAIT)
        except concurrent.futures.TimeoutError:
            _log.warning("%s: the event loop did not close the client in %g s",
                         self.name, _CLOSE_WAIT)

    async def aclose(self) -> None:
        """:meth:`close` from a coroutine: at once on the client's own loop (or when
        that loop has stopped); from another loop, waiting off that loop."""
        loop = self._loop
        if loop is None or _running_loop() is loop or not loop.is_running():
            self.close()
        else:
            await asyncio.to_thread(self.close)

    # ---- binding ---------------------------------------------------------------------

    def _on(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether the engine runs on ``loop`` (the running one), binding it to ``loop``
        if it is unbound or its loop has stopped; False while another loop runs it."""
        bound = self._loop
        if bound is loop:
            return True
        if bound is not None and bound.is_running():
            return False
        if self._engine is not None:
            self._drop_engine()
        engine = Engine(*self._settings, self.name)
        proton = AsyncioLoop(engine, container_id=self.name, loop=loop, failed=self._failed)
        engine.loop = proton
        engine.take_inbox = self._take_inbox
        engine.take_controls = self._take_controls
        self._loop, self._engine, self._proton = loop, engine, proton
        return True

    def _drop_engine(self) -> None:
        """The bound loop stopped with the engine on it: close its sockets and fail what
        was pending there (the loop is not running, so this thread may touch it)."""
        engine, proton = self._engine, self._proton
        assert engine is not None and proton is not None
        _log.info("%s: following a new event loop; the old connection is dropped", self.name)
        proton.close()
        self._earlier = add_stats(self._earlier, engine.stats())
        engine.fail_everything(self._take_inbox(), lambda request: ConnectionLostError(
            f"{request.operation}: the event loop the client ran on has stopped",
            operation=request.operation, may_have_been_applied=not request.idempotent))
        for control in self._take_controls():
            fail_control(control)
        self._loop = self._engine = self._proton = None

    def _hand_over(self, queue: str, item: Any, refuse: Callable[[Any], None]) -> None:
        """Append ``item`` to the queue attribute named ``queue`` on the loop's thread
        (named, not held: the engine swaps the queues when it takes them); ``refuse(item)``
        if the client is closed."""
        if self._closed:
            refuse(item)
            return
        here = _running_loop()
        if here is not None and self._on(here):
            getattr(self, queue).append(item)
            assert self._proton is not None
            self._proton.wake_here()
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            raise RuntimeError(
                "AsyncManagementClient: no running event loop here and none to hand the "
                "request to; call it from a coroutine (ManagementClient serves threads)")
        try:
            loop.call_soon_threadsafe(self._take_from_thread, queue, item, refuse)
        except RuntimeError:  # the loop closed meanwhile
            refuse(item)

    def _take_from_thread(self, queue: str, item: Any, refuse: Callable[[Any], None]) -> None:
        if self._closed or self._proton is None:
            refuse(item)
            return
        getattr(self, queue).append(item)
        self._proton.wake_here()

    # ---- the engine's side -------------------------------------------------------------

    def _take_inbox(self) -> deque[Work]:
        items, self._inbox = self._inbox, deque()
        return items

    def _take_controls(self) -> deque[Control]:
        items, self._controls = self._controls, deque()
        return items

    def _shut_down(self) -> None:
        engine, proton = self._engine, self._proton
        if engine is None or proton is None:
            return
        engine.closing = True
        engine.on_wake()
        proton.close()
        self._end(engine)

    def _failed(self, error: Exception) -> None:
        _log.error("%s: the engine failed; failing all pending requests", self.name,
                   exc_info=error)
        self._closed = True
        assert self._engine is not None
        self._end(self._engine)

    def _end(self, engine: Engine) -> None:
        engine.fail_everything(self._take_inbox())
        for control in self._take_controls():
            fail_control(control)
