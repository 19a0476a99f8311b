"""Credit-based throttling, as the Standard tier does it (off unless asked for).

Theory of operation
-------------------
"At the start of each time period, Service Bus provides some credits to each namespace. Any
operations performed by the sender or receiver client applications are counted against these
credits ... If the credits are depleted, subsequent operations are throttled until the start
of the next time period" (learn.microsoft.com, ``service-bus-throttling``): the limit is 1,000
credits a second per namespace; a data operation costs 1 credit per message, a management
operation (create, read, update, delete of an entity or a filter) 10. A throttled request is
answered with ``com.microsoft:server-busy`` and "The request was terminated because the
entity is being throttled. Error code: 50009. Please wait 2 seconds and try again.", which
the SDKs retry with their backoff.

:class:`Throttle` keeps one period (``period`` seconds, 1 by default) and the credits used in
it, on a monotonic clock (the SDKs' retries wait in real time, so the fake's settable clock
does not drive it). :meth:`Throttle.charge` takes a request's cost or raises
:class:`~fakes._errors.ServerBusy` without taking any: a refused request costs nothing, so a
retry in the next period goes through. A request that costs more than a whole period's
credits (a batch of 1,001 messages) is never let through, as on the service. The credits per
period are settable (``FakeNamespace(throttle=True, tier=replace(STANDARD,
credits_per_second=20))``) so that a test meets the limit with a few messages.

What is charged (docs/fake.md, "Throttling"): each message sent (a batch: each of its
messages), each ``$management`` request (1; add-rule and remove-rule 10), each request of the
administration API (10). Receives are not charged: a delivery to a receiver with credit is no
request the fake could answer with server-busy.

Thread-safe: the AMQP server and the HTTP port's threads charge the same throttle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ._errors import ServerBusy

__all__ = ["MANAGEMENT_COST", "THROTTLED", "Throttle"]

#: "Management operations (Create, Read, Update, Delete on queues, topics, subscriptions,
#: filters) | 10 credits" (service-bus-throttling).
MANAGEMENT_COST = 10
#: The service's words for a throttled request (service-bus-throttling, "How will I know
#: that I'm being throttled?").
THROTTLED = ("The request was terminated because the entity is being throttled. Error code: "
             "50009. Please wait 2 seconds and try again.")


class Throttle:
    """A namespace's credits: ``credits`` per ``period`` seconds (None: unlimited)."""

    def __init__(self, credits: int | None, *, period: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if credits is not None and credits < 1:
            raise ValueError(f"credits must be at least 1, not {credits!r}")
        if not period > 0:
            raise ValueError(f"period must be positive, not {period!r}")
        self._credits = credits
        self._period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._started = -float("inf")
        self._used = 0
        #: How many requests were refused (server-busy) since the start.
        self.throttled = 0

    @property
    def limited(self) -> bool:
        """Whether anything is ever refused (False: throttling is off)."""
        return self._credits is not None

    def charge(self, cost: int) -> None:
        """Take ``cost`` credits from the current period, or raise ServerBusy taking none."""
        credits = self._credits
        if credits is None:
            return
        with self._lock:
            now = self._clock()
            if now - self._started >= self._period:
                self._started, self._used = now, 0
            if self._used + cost > credits:
                self.throttled += 1
                raise ServerBusy(THROTTLED)
            self._used += cost
