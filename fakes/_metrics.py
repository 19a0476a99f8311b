"""``GET /metrics``: what the fake holds and did, in the Prometheus text format.

The page is written by ``prometheus-client`` (the format's reference library: its writer
and its parser are the ones Prometheus's own tests hold to the format, so the fake has no
writer of its own to get wrong). Nothing is registered globally: :class:`FakeCollector`
reads the namespace when a scrape asks, under the namespace lock, and is handed to the
library's ``generate_latest`` directly, so two namespaces in one process never mix.

What it reads: the store's per-entity counts (the same records the administration API
reports), and :class:`Counts`, the running totals that :class:`~fakes._log.FakeLog`
keeps whether or not it writes a line (management requests by operation and status,
connections, throttled and refused requests, HTTP requests). The names, their labels and
what each counts are listed in docs/fake.md ("Metrics").

Theory of operation
-------------------
:class:`Counts` is changed on the server thread under the namespace lock (AMQP events,
the administration API's handlers) and, for the HTTP port's requests, on its worker threads
under its own small lock; a scrape copies both under the namespace lock, then writes the
page outside it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ._entity import Entity
from ._store import Store

__all__ = ["CONTENT_TYPE", "Counts", "FakeCollector", "metrics_page"]

#: The page's content type (the library's, with its format version).
CONTENT_TYPE = CONTENT_TYPE_LATEST
_PREFIX = "fakes_"


@dataclass
class Counts:
    """Running totals since the namespace started (see the module's theory of operation)."""

    #: (entity as addressed, operation, status code) -> requests answered.
    management: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    #: (entity, operation) -> requests refused for throttling (``server-busy``).
    throttled: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: (entity, what was refused) -> requests refused for a quota, a tier or a check.
    refused: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: AMQP connections opened since start, and open now.
    connections_opened: int = 0
    connections_open: int = 0
    #: (method, status) -> HTTP requests answered; changed under :attr:`http_lock`.
    http: Counter[tuple[str, int]] = field(default_factory=Counter)
    http_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_http(self, method: str, status: int) -> None:
        """One HTTP request answered (any thread)."""
        with self.http_lock:
            self.http[(method, status)] += 1

    def copy(self) -> Counts:
        """A copy to write a page from (under the namespace lock)."""
        with self.http_lock:
            http = Counter(self.http)
        return Counts(Counter(self.management), Counter(self.throttled), Counter(self.refused),
                      self.connections_opened, self.connections_open, http)


@dataclass(frozen=True)
class _EntityRow:
    """One queue, topic or subscription as the page shows it."""

    entity: str
    kind: str
    active: int = 0
    dead_letter: int = 0
    scheduled: int = 0
    deferred: int = 0
    incoming: int = 0
    outgoing: int = 0


def _entity_row(entity: Entity, kind: str) -> _EntityRow:
    held = entity.accounting()
    dead_letter = 0
    if entity.dead_letter_queue is not None:
        dead = entity.dead_letter_queue.accounting()
        dead_letter = dead["active"] + dead["locked"] + dead["deferred"]
    # "active" as the service counts it (ActiveMessageCount): what a receiver can get or
    # holds, deferred messages included; "outgoing": what left the entity by a receiver
    # (completed, or received in receive-and-delete mode)
    return _EntityRow(entity.path, kind,
                      active=held["active"] + held["locked"] + held["deferred"],
                      dead_letter=dead_letter, scheduled=held["scheduled"],
                      deferred=held["deferred"], incoming=held["accepted"],
                      outgoing=held["completed"])


def _rows(store: Store) -> list[_EntityRow]:
    rows = [_entity_row(queue, "queue") for queue in store.queues()]
    for topic in store.topics():
        rows.append(_EntityRow(topic.name, "topic", scheduled=len(topic.scheduled),
                               incoming=topic.accepted))
        rows.extend(_entity_row(sub, "subscription") for sub in topic.subscriptions.values())
    return rows


#: (name without the prefix, help, the row's field) of each per-entity gauge.
_GAUGES = (
    ("entity_active_messages", "Messages a receiver can get or holds (deferred included), "
     "as the service's ActiveMessageCount.", "active"),
    ("entity_dead_letter_messages", "Messages in the entity's dead-letter queue.",
     "dead_letter"),
    ("entity_scheduled_messages", "Scheduled messages not yet due.", "scheduled"),
    ("entity_deferred_messages", "Deferred messages.", "deferred"),
)
_COUNTERS = (
    ("entity_incoming_messages", "Messages the entity accepted (sent, scheduled, forwarded, "
     "fanned out).", "incoming"),
    ("entity_outgoing_messages", "Messages that left the entity by a receiver (completed, "
     "or received and deleted).", "outgoing"),
)
#: The two transfer counts of the service: the fake forwards at once, so they stay 0.
_TRANSFER_GAUGES = (
    ("entity_transfer_messages", "Messages waiting to be forwarded (always 0: the fake "
     "forwards at once)."),
    ("entity_transfer_dead_letter_messages", "Messages that could not be forwarded (always "
     "0 in the fake)."),
)


class FakeCollector(Collector):
    """Every family of the page, read from a snapshot taken when :meth:`collect` runs."""

    def __init__(self, snapshot: Callable[[], tuple[list[_EntityRow], Counts]],
                 data_dir: tuple[str, str] | None = None) -> None:
        self._snapshot = snapshot
        self._data_dir = data_dir

    def collect(self) -> Iterator[Metric]:
        rows, counts = self._snapshot()
        labels = ["entity", "kind"]
        for name, text, attribute in _GAUGES:
            gauge = GaugeMetricFamily(_PREFIX + name, text, labels=labels)
            for row in rows:
                gauge.add_metric([row.entity, row.kind], getattr(row, attribute))
            yield gauge
        for name, text in _TRANSFER_GAUGES:
            gauge = GaugeMetricFamily(_PREFIX + name, text, labels=labels)
            for row in rows:
                gauge.add_metric([row.entity, row.kind], 0)
            yield gauge
        for name, text, attribute in _COUNTERS:
            counter = CounterMetricFamily(_PREFIX + name, text, labels=labels)
            for row in rows:
                counter.add_metric([row.entity, row.kind], getattr(row, attribute))
            yield counter
        yield from _totals(counts)
        if self._data_dir is not None:
            path, sync = self._data_dir
            yield InfoMetricFamily(_PREFIX + "data_dir", "Where the namespace is kept (its "
                                   "data directory) and how each commit is synced.",
                                   value={"path": path, "sync": sync})


def _totals(counts: Counts) -> Iterator[Metric]:
    management = CounterMetricFamily(
        _PREFIX + "management_requests", "Requests to the entities' $management nodes, by "
        "operation and the reply's status code.", labels=["entity", "operation", "status"])
    for (entity, operation, status), number in sorted(counts.management.items()):
        management.add_metric([entity, operation, str(status)], number)
    yield management
    throttled = CounterMetricFamily(
        _PREFIX + "throttled_requests", "Requests refused with server-busy for throttling.",
        labels=["entity", "operation"])
    for (entity, operation), number in sorted(counts.throttled.items()):
        throttled.add_metric([entity, operation], number)
    yield throttled
    refused = CounterMetricFamily(
        _PREFIX + "refused_requests", "Requests refused for a quota, a tier's feature or a "
        "check (not throttling).", labels=["entity", "request"])
    for (entity, request), number in sorted(counts.refused.items()):
        refused.add_metric([entity, request], number)
    yield refused
    yield GaugeMetricFamily(_PREFIX + "connections", "AMQP connections open now.",
                            value=counts.connections_open)
    yield CounterMetricFamily(_PREFIX + "connections_opened", "AMQP connections opened "
                              "since the namespace started.", value=counts.connections_opened)
    http = CounterMetricFamily(_PREFIX + "http_requests", "Requests the HTTP port answered "
                               "before this page, by method and status code.",
                               labels=["method", "status"])
    for (method, status), number in sorted(counts.http.items()):
        http.add_metric([method, str(status)], number)
    yield http


def metrics_page(store: Store, counts: Counts, lock: threading.RLock,
                 now: Callable[[], float], data_dir: tuple[str, str] | None = None) -> bytes:
    """The page for one scrape: the store's due work applied first (an expired message is
    not active), everything read under ``lock``, the text written outside it; with
    ``data_dir`` (its path and sync mode), the namespace's data directory too."""

    def snapshot() -> tuple[list[_EntityRow], Counts]:
        with lock:
            store.process_due(now())
            return _rows(store), counts.copy()

    return generate_latest(FakeCollector(snapshot, data_dir))
