"""Counts over time: the namespace sampled, a bounded history, rates and the largest movers.

What the service gives. The administration API's runtime properties are counts (each
queue's and subscription's ``CountDetails``: active, dead-letter, scheduled, transfer and
transfer dead-letter messages, and ``MessageCount``, their total), not counters of
messages sent or received; there is no deferred count either (a deferred message is
counted as active, as the fake's ``MessageCounts`` and the service's
``ActiveMessageCount`` do). So a rate here is a count's change over the time between two
samples: *in* is the total's rise per second, *out* its fall, *dead-lettered* the
dead-letter count's change. An entity that receives as fast as it is sent shows neither
(only Azure Monitor counts messages; it does not exist on the emulator or the fake).

Theory of operation. [list_entities][sbmgmt.actions.entities.list_entities] reads every queue,
topic and subscription with its counts in as few requests as the administration API
allows: a page of 100 queues, a page of 100 topics, and each topic's subscriptions (the API
has no listing of every subscription), all in flight at once. A :class:`Sampler` calls it
(or any reader of the same shape) every ``interval`` seconds, on a thread of its own
(:meth:`Sampler.start`, :meth:`Sampler.stop`) or in the caller's loop
(:meth:`Sampler.samples`), and adds each :class:`Sample` to its :class:`History`. A
sample's time is the wall clock when the sampler started plus the monotonic time since:
it reads as a UTC time and never goes backwards, so a rate never divides by a clock's jump.
A listing that fails is kept as :attr:`Sampler.failure` (the next one is tried on time).

The history keeps the last ``length`` samples (default :data:`DEFAULT_LENGTH`: an hour at
5 s). Its memory is fixed by ``length`` and the number of entities: one ring of times, and
per entity one ring of its six counts as 64-bit integers, allocated when the entity is first
seen (48 bytes a point: 1,000 entities x 720 points is 35 MB) and forgotten when a sample
no longer lists it (deleted). The namespace's own totals (the sum over its queues and
subscriptions: a topic's messages are its subscriptions') are one more ring, summed once
as each sample is added. Every read and write holds one lock; a read returns new objects.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from .entities import EntityCounts, EntityKind

__all__ = ["COUNTS", "DEFAULT_INTERVAL", "DEFAULT_LENGTH", "NAMESPACE", "History", "Mover",
           "Point", "Rate", "Sample", "Sampler", "rates"]

#: The counts kept of each entity, in this order (``EntityCounts``' fields).
COUNTS = ("active", "dead_letter", "scheduled", "transfer", "transfer_dead_letter", "total")
#: Seconds between two samples, unless told.
DEFAULT_INTERVAL = 5.0
#: Samples kept, unless told: an hour at :data:`DEFAULT_INTERVAL`.
DEFAULT_LENGTH = 720
#: The name the namespace's totals are kept under (no entity's name starts with a space).
NAMESPACE = " namespace"
#: A count the entity does not have (a topic's active count) or had not yet (not yet listed).
_MISSING = -1
_WIDTH = len(COUNTS)


@dataclasses.dataclass(frozen=True)
class Sample:
    """One listing of the whole namespace: when, how long it took, what it said."""

    at: float
    took: float
    entities: tuple[EntityCounts, ...]

    @property
    def time(self) -> datetime:
        """:attr:`at` as a UTC time."""
        return datetime.fromtimestamp(self.at, timezone.utc)


@dataclasses.dataclass(frozen=True)
class Point:
    """One entity's counts at one sample (None: not counted for this kind of entity)."""

    at: float
    active: int | None
    dead_letter: int | None
    scheduled: int | None
    transfer: int | None
    transfer_dead_letter: int | None
    total: int | None

    def count(self, field: str) -> int | None:
        """The count named ``field`` (one of :data:`COUNTS`)."""
        value: int | None = getattr(self, field)
        return value


@dataclasses.dataclass(frozen=True)
class Rate:
    """The change between two points, per second, ending at ``at``.

    Attributes:
        at: The later point's time.
        incoming: Messages in per second (the total's rise; 0 when it fell).
        outgoing: Messages out per second (the total's fall; 0 when it rose).
        dead_lettered: The dead-letter count's change per second (negative: drained).
    """

    at: float
    incoming: float | None
    outgoing: float | None
    dead_lettered: float | None


@dataclasses.dataclass(frozen=True)
class Mover:
    """An entity whose count changed most over a window: ``change`` from ``before`` (at
    ``since``) to ``now``."""

    name: str
    kind: EntityKind
    field: str
    before: int
    now: int
    since: float

    @property
    def change(self) -> int:
        """How much the count grew (negative: it fell)."""
        return self.now - self.before


def rates(points: Sequence[Point]) -> list[Rate]:
    """The rates between each point and the one before it (one fewer than the points).

    Args:
        points: One entity's points, oldest first (:meth:`History.points`).

    Returns:
        A :class:`Rate` per consecutive pair; a count either point lacks gives None.
    """
    found = []
    for before, after in itertools.pairwise(points):
        seconds = after.at - before.at
        total = _change(before.total, after.total, seconds)
        found.append(Rate(
            at=after.at,
            incoming=None if total is None else max(0.0, total),
            outgoing=None if total is None else max(0.0, -total),
            dead_lettered=_change(before.dead_letter, after.dead_letter, seconds)))
    return found


def _change(before: int | None, after: int | None, seconds: float) -> float | None:
    if before is None or after is None or seconds <= 0:
        return None
    return (after - before) / seconds


class _Ring:
    """One entity's counts at the history's last samples: slot ``i`` holds sample ``i``
    (the history's ring of times says when), :data:`_MISSING` where it was not listed."""

    __slots__ = ("counts", "kind", "since")

    def __init__(self, kind: EntityKind, length: int, since: int) -> None:
        self.kind = kind
        self.since = since  # the number of the first sample that listed it
        self.counts = array("q", [_MISSING]) * (length * _WIDTH)

    def put(self, slot: int, values: Sequence[int]) -> None:
        self.counts[slot * _WIDTH:(slot + 1) * _WIDTH] = array("q", values)

    def get(self, slot: int) -> tuple[int, ...]:
        return tuple(self.counts[slot * _WIDTH:(slot + 1) * _WIDTH])


def _values(counts: EntityCounts) -> list[int]:
    found = (getattr(counts, field) for field in COUNTS)
    return [_MISSING if value is None else value for value in found]


class History:
    """The last ``length`` samples of every entity's counts (see the module's theory).

    Args:
        length: Samples kept (at least 2: a rate needs two).

    Raises:
        ValueError: ``length`` is below 2.
    """

    def __init__(self, length: int = DEFAULT_LENGTH) -> None:
        if length < 2:
            raise ValueError(f"a history keeps 2 samples or more, not {length}")
        self._length = length
        self._times = array("d", [0.0]) * length
        self._added = 0  # samples added since the start; sample n is in slot n % length
        self._rings: dict[str, _Ring] = {}
        self._latest: Sample | None = None
        self._lock = threading.Lock()

    @property
    def length(self) -> int:
        """The most samples kept."""
        return self._length

    @property
    def latest(self) -> Sample | None:
        """The last sample added (None before the first)."""
        with self._lock:
            return self._latest

    def add(self, sample: Sample) -> None:
        """Add a sample: its entities' counts at its time; an entity it does not list is
        forgotten, the namespace's totals summed."""
        with self._lock:
            number = self._added
            slot = number % self._length
            self._times[slot] = sample.at
            listed = {counts.name for counts in sample.entities}
            for name in [name for name in self._rings if name not in listed and name != NAMESPACE]:
                del self._rings[name]
            totals = [0] * _WIDTH
            for counts in sample.entities:
                ring = self._rings.get(counts.name)
                if ring is None or ring.kind is not counts.kind:
                    ring = self._rings[counts.name] = _Ring(counts.kind, self._length, number)
                values = _values(counts)
                ring.put(slot, values)
                if counts.kind is not EntityKind.TOPIC:
                    totals = [t + max(v, 0) for t, v in zip(totals, values, strict=True)]
            if NAMESPACE not in self._rings:
                self._rings[NAMESPACE] = _Ring(EntityKind.QUEUE, self._length, number)
            self._rings[NAMESPACE].put(slot, totals)
            self._added = number + 1
            self._latest = sample

    def _slots(self, ring: _Ring, last: int | None = None) -> list[int]:
        """The slots of the samples that listed ``ring``'s entity (the ``last`` of them),
        oldest first."""
        kept = self._length if last is None else min(last, self._length)
        first = max(self._added - kept, ring.since)
        return [number % self._length for number in range(first, self._added)]

    def points(self, name: str) -> list[Point]:
        """An entity's points, oldest first (:data:`NAMESPACE`: the namespace's totals);
        none for an entity not listed by the last sample."""
        with self._lock:
            ring = self._rings.get(name)
            if ring is None:
                return []
            return [Point(self._times[slot], *(None if v == _MISSING else v
                                               for v in ring.get(slot)))
                    for slot in self._slots(ring)]

    def series(self, name: str, field: str, last: int | None = None) -> list[int | None]:
        """One count of an entity at the last ``last`` samples (all: None), oldest first:
        what a sparkline draws."""
        column = COUNTS.index(field)
        with self._lock:
            ring = self._rings.get(name)
            if ring is None:
                return []
            counts = ring.counts
            found = [counts[slot * _WIDTH + column] for slot in self._slots(ring, last)]
        return [None if value == _MISSING else value for value in found]

    def entities(self) -> list[tuple[str, EntityKind]]:
        """The entities the history holds, in the last sample's order."""
        with self._lock:
            latest = self._latest
        return [] if latest is None else [(c.name, c.kind) for c in latest.entities]

    def movers(self, seconds: float, field: str = "dead_letter",
               most: int = 10) -> list[Mover]:
        """The entities whose ``field`` grew most over the last ``seconds``: from the first
        sample in that window (or the entity's first, if it is newer) to the last. Only
        growth counts; the largest first, then by name.

        Args:
            seconds: The window.
            field: One of :data:`COUNTS`.
            most: The most movers returned.
        """
        column = COUNTS.index(field)
        with self._lock:
            if self._added < 2:
                return []
            end = (self._added - 1) % self._length
            # The window's first sample (the times only grow): found once, for every ring.
            first = next(number for number in range(max(self._added - self._length, 0),
                                                    self._added)
                         if self._times[number % self._length] >= self._times[end] - seconds)
            found = []
            for name, ring in self._rings.items():
                if name == NAMESPACE:
                    continue
                now = ring.counts[end * _WIDTH + column]
                start = max(first, ring.since) % self._length
                before = ring.counts[start * _WIDTH + column]
                if now != _MISSING and now > before:
                    found.append(Mover(name, ring.kind, field, before, now, self._times[start]))
        found.sort(key=lambda mover: (-mover.change, mover.name))
        return found[:most]

    def memory(self) -> int:
        """Bytes held by the rings (what the history's length and entities fix)."""
        with self._lock:
            rings = sum(ring.counts.itemsize * len(ring.counts) for ring in self._rings.values())
            return rings + self._times.itemsize * len(self._times)


class Sampler:
    """Reads the namespace's counts every ``interval`` seconds into a :class:`History`.

    Args:
        read: Lists the namespace's entities with their counts (e.g. ``lambda:
            list_entities(admin)``, or the explorer's ``Namespace.entities``).
        interval: Seconds between two samples' starts (a listing that takes longer is
            followed by the next at once).
        history: Where the samples go (a new one of :data:`DEFAULT_LENGTH`, if not given).
        clock: The wall clock (seconds since the epoch), read once at the start.
        monotonic: The monotonic clock the samples' times advance by.

    Raises:
        ValueError: ``interval`` is not positive.
    """

    def __init__(self, read: Callable[[], Sequence[EntityCounts]], *,
                 interval: float = DEFAULT_INTERVAL, history: History | None = None,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        if not interval > 0:
            raise ValueError(f"the interval between samples is above 0 s, not {interval:g}")
        self._read = read
        self.interval = interval
        self.history = history if history is not None else History()
        self._monotonic = monotonic
        self._origin = (clock(), monotonic())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: The last listing's error, as said (None: the last listing worked).
        self.failure: str | None = None


    def sample(self) -> Sample:
        """List the namespace once and add the sample to the history.

        Returns:
            The sample.

        Raises:
            ServiceBusManagementError: The listing failed (also kept as :attr:`failure`).
        """
        started = self._monotonic()
        wall, origin = self._origin
        at = wall + (started - origin)  # the wall clock at the start, plus the time since
        try:
            listed = tuple(self._read())
        except Exception as error:
            self.failure = " ".join(str(error).split()) or "the listing failed, unsaid why"
            raise
        sample = Sample(at, self._monotonic() - started, listed)
        self.history.add(sample)
        self.failure = None
        return sample

    def samples(self, count: int | None = None,
                stop: threading.Event | None = None) -> Iterator[Sample]:
        """Sample every :attr:`interval` seconds in the caller's thread: ``count`` samples
        (None: until ``stop`` is set, or the caller stops asking).

        Raises:
            ServiceBusManagementError: A listing failed.
        """
        stop = stop or self._stop
        taken = 0
        due = self._monotonic()
        while count is None or taken < count:
            yield self.sample()
            taken += 1
            if count is not None and taken >= count:
                return
            due += self.interval
            if stop.wait(max(0.0, due - self._monotonic())):
                return
            due = max(due, self._monotonic() - self.interval)  # late: no burst to catch up

    def start(self) -> Sampler:
        """Sample on a daemon thread until :meth:`stop` (a failed listing is kept as
        :attr:`failure`, and the next one is tried on time)."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="sbmgmt-sampler",
                                            daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        samples = self.samples()
        while True:
            try:
                next(samples)
            except StopIteration:
                return
            except Exception:  # kept as self.failure by sample(); the loop goes on
                samples = self.samples()
                if self._stop.wait(self.interval):
                    return

    def stop(self) -> None:
        """Stop the thread and wait for it (a listing on its way finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
