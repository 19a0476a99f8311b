"""The lock renewer under OpenTelemetry: spans to the console, metrics to the console and
to Prometheus, and a picture of the renewal margins over a run with trouble in it.

Usage::

    python examples/observability.py [--png PATH] [--seconds 20]

Needs ``pip install 'sbmgmt[otel]' opentelemetry-sdk matplotlib`` (and
``opentelemetry-exporter-prometheus`` for the Prometheus endpoint, skipped when absent).
It runs against an in-process fake namespace on loopback, so it needs no Azure: a
queue with 6-second locks, 300 message locks and 3 session locks kept by one
:class:`~sbmgmt.renewer.LockRenewer`, while the fake misbehaves on a timetable:

- from 30% to 45% of the run, every renew-lock reply is 0.8 s late;
- from 60% to 70%, every renew-lock is answered 503 server-busy (the renewer retries);
- at 75%, 20 lock tokens the service does not know are registered (lost at once);
- at 85%, half of the messages are settled and unregistered.

The messages are locked and registered in waves half a second apart, as a receiver
would take them, so that their renewals fall due at different moments.

Every 0.25 s it reads the metrics, and at the end draws three panels from them: the
locks held, the renewals' margins (lock time left when the renewal landed) as a
heat map over time, and the losses by reason. The console gets one line per span and
the metrics' final values; with the Prometheus exporter, the same metrics are served
on ``http://127.0.0.1:<port>/metrics`` while the run lasts and a few lines are shown.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from fakes import FakeNamespace
from sbmgmt import ManagementClient, telemetry
from sbmgmt.message import Message
from sbmgmt.ops import renew_lock
from sbmgmt.renewer import LockRenewer

LOCK = timedelta(seconds=6)
MESSAGES = 300
WAVES = 10
SESSIONS = 3
UNKNOWN = 20
SAMPLE = 0.25
#: Finer buckets than the library's advice, for the picture (a View, as an app would).
MARGIN_BUCKETS = [round(0.1 * i, 1) for i in range(1, 41)]


def one_line(span: ReadableSpan) -> str:
    """The console span exporter's format: name, duration, outcome, batch size, links."""
    attributes = span.attributes or {}
    took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    outcome = attributes.get("error.type", "ok")
    count = attributes.get("messaging.batch.message_count", "-")
    return f"span {span.name!r}: {took:.1f} ms, {outcome}, {count} locks, {len(span.links)} links\n"


def metric_readers(prometheus: bool) -> tuple[InMemoryMetricReader, list[MetricReader], str]:
    """The reader the picture is drawn from, every reader, and the Prometheus URL (or "")."""
    sampled = InMemoryMetricReader()
    readers: list[MetricReader] = [sampled]
    if not prometheus:
        return sampled, readers, ""
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server
    except ImportError:
        print("(opentelemetry-exporter-prometheus is not installed: no Prometheus endpoint)")
        return sampled, readers, ""
    server, _thread = start_http_server(0, addr="127.0.0.1")
    readers.append(PrometheusMetricReader())
    return sampled, readers, f"http://127.0.0.1:{server.server_port}/metrics"


class Samples:
    """The metrics read every SAMPLE seconds: locks held, margin buckets, losses."""

    def __init__(self, reader: InMemoryMetricReader) -> None:
        self._reader = reader
        self.times: list[float] = []
        self.held: list[tuple[int, int]] = []
        self.margin_counts: list[list[int]] = []
        self.losses: list[dict[str, int]] = []

    def take(self, at: float) -> None:
        held = {"message": 0, "session": 0}
        buckets = [0] * (len(MARGIN_BUCKETS) + 1)
        losses: dict[str, int] = {}
        for name, point in _points(self._reader):
            kind = str(point.attributes.get("sbmgmt.lock.kind", ""))
            if name == "sbmgmt.renewer.locks":
                held[kind] = int(point.value)
            elif name == "sbmgmt.renewer.margin":
                buckets = [a + b for a, b in zip(buckets, point.bucket_counts, strict=True)]
            elif name == "sbmgmt.renewer.losses":
                reason = str(point.attributes["sbmgmt.lock.loss_reason"])
                losses[reason] = losses.get(reason, 0) + int(point.value)
        self.times.append(at)
        self.held.append((held["message"], held["session"]))
        self.margin_counts.append(buckets)
        self.losses.append(losses)


def _points(reader: InMemoryMetricReader) -> list[tuple[str, Any]]:
    data = reader.get_metrics_data()
    if data is None:
        return []
    return [(metric.name, point)
            for resource in data.resource_metrics for scope in resource.scope_metrics
            for metric in scope.metrics for point in metric.data.data_points]


def timetable(fake: FakeNamespace, renewer: LockRenewer, locked: Sequence[Any],
              seconds: float) -> list[tuple[float, str, Callable[[], None]]]:
    """What goes wrong when (fractions of the run), as (time, label, action)."""
    handles: dict[str, Any] = {}

    def late() -> None:
        handles["late"] = fake.faults.latency(0.8, operation=renew_lock.OPERATION)

    def busy() -> None:
        handles["busy"] = fake.faults.server_busy(None, operation=renew_lock.OPERATION)

    def unknown() -> None:
        until = datetime.now(timezone.utc) + LOCK
        for _ in range(UNKNOWN):
            renewer.register("work", uuid.uuid4(), until)

    def settle_half() -> None:
        for message in locked[: len(locked) // 2]:
            renewer.unregister("work", message)

    return [
        (0.30 * seconds, "replies 0.8 s late", late),
        (0.45 * seconds, "on time again", lambda: handles["late"].remove()),
        (0.60 * seconds, "503 server-busy", busy),
        (0.70 * seconds, "busy over", lambda: handles["busy"].remove()),
        (0.75 * seconds, f"{UNKNOWN} unknown tokens", unknown),
        (0.85 * seconds, "half settled", settle_half),
    ]


def run(seconds: float, samples: Samples) -> list[tuple[float, str]]:
    """The renewer's run against the fake; the labelled moments of the timetable."""
    marks: list[tuple[float, str]] = []
    with FakeNamespace() as fake:
        fake.add_queue("work", lock_duration=LOCK)
        fake.add_queue("sessions", lock_duration=LOCK, requires_session=True)
        fake.send("work", *(Message(body=f"m{i}".encode()) for i in range(MESSAGES)))
        with ManagementClient.from_connection_string(fake.connection_string) as client, \
                LockRenewer(client, max_renewal_duration=None) as renewer:
            sessions = [client.entity("sessions").session(f"s{i}") for i in range(SESSIONS)]
            for session in sessions:
                session.__enter__()
                renewer.register_session("sessions", session)
            start = time.monotonic()
            # Locked and registered in waves, 0.5 s apart, as a receiver would take them:
            # their renewals fall due at different moments.
            locked: list[Any] = []
            for _ in range(WAVES):
                wave = fake.receive_and_lock("work", MESSAGES // WAVES)
                for message in wave:
                    renewer.register("work", message)
                locked += wave
                samples.take(time.monotonic() - start)
                time.sleep(0.5)
            events = timetable(fake, renewer, locked, seconds)
            while (now := time.monotonic() - start) < seconds:
                while events and events[0][0] <= now:
                    at, label, action = events.pop(0)
                    action()
                    if label:
                        marks.append((at, label))
                samples.take(now)
                time.sleep(SAMPLE)
            print(f"renewer: {renewer.stats()}")
            for session in sessions:
                renewer.unregister_session("sessions", session)
                session.__exit__(None, None, None)
    return marks


def draw(samples: Samples, marks: list[tuple[float, str]], png: Path) -> None:
    """Locks held; the margins' heat map over time; the losses by reason."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    times = np.array(samples.times)
    fig, (held_ax, margin_ax, loss_ax) = plt.subplots(
        3, 1, figsize=(10, 9), sharex=True, layout="constrained",
        gridspec_kw={"height_ratios": [1, 2, 1]})
    held = np.array(samples.held)
    held_ax.step(times, held[:, 0], where="post", label="message locks")
    held_ax.set_ylabel("message locks held")
    session_ax = held_ax.twinx()
    session_ax.step(times, held[:, 1], where="post", color="tab:orange",
                    label="session locks")
    session_ax.set_ylabel("session locks held", color="tab:orange")
    session_ax.set_ylim(0, max(SESSIONS, 1) * 2)

    counts = np.array(samples.margin_counts)
    fresh = np.diff(counts, axis=0, prepend=np.zeros((1, counts.shape[1])))
    edges = np.array([0.0, *MARGIN_BUCKETS])
    centres = (edges[:-1] + edges[1:]) / 2
    shown = np.ma.masked_equal(fresh[:, :-1].T, 0)
    image = margin_ax.pcolormesh(times, centres, shown, shading="nearest", cmap="viridis")
    fig.colorbar(image, ax=(held_ax, margin_ax, loss_ax), label=f"renewals per {SAMPLE:g} s",
                 shrink=0.5)
    margin_ax.set_ylabel("lock time left when renewed (s)")
    margin_ax.set_ylim(0, MARGIN_BUCKETS[-1])
    margin_ax.grid(alpha=0.3)

    reasons = sorted({reason for losses in samples.losses for reason in losses})
    for reason in reasons:
        loss_ax.step(times, [losses.get(reason, 0) for losses in samples.losses],
                     where="post", label=reason)
    loss_ax.set_ylabel("locks lost (total)")
    loss_ax.set_xlabel("seconds into the run")
    if reasons:
        loss_ax.legend(loc="upper left")
    for at, label in marks:
        for ax in (held_ax, margin_ax, loss_ax):
            ax.axvline(at, color="tab:red", alpha=0.5, linestyle="--")
        margin_ax.annotate(label, (at, 0.97), xycoords=("data", "axes fraction"),
                           fontsize=8, color="tab:red", rotation=90, va="top",
                           ha="right")
    fig.suptitle(f"sbmgmt lock renewer: {MESSAGES} message and {SESSIONS} session locks "
                 f"of {LOCK.total_seconds():g} s, from its OpenTelemetry metrics")
    fig.savefig(png, dpi=110)
    print(f"picture: {png}")


DEFAULT_PNG = Path(tempfile.gettempdir()) / "sbmgmt-renewal-margins.png"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--png", type=Path, default=DEFAULT_PNG,
                        help="where to draw the picture (default: %(default)s, in the "
                        "temporary directory: nothing is written where the script runs)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--no-prometheus", action="store_true")
    args = parser.parse_args(argv)

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(ConsoleSpanExporter(formatter=one_line)))
    sampled, readers, prometheus = metric_readers(not args.no_prometheus)
    meter_provider = MeterProvider(metric_readers=readers, views=[View(
        instrument_name="sbmgmt.renewer.margin",
        aggregation=ExplicitBucketHistogramAggregation(MARGIN_BUCKETS))])
    # An application would call trace.set_tracer_provider / metrics.set_meter_provider;
    # instrument() keeps this example's providers out of the globals.
    telemetry.instrument(tracer_provider, meter_provider)
    if prometheus:
        print(f"Prometheus: {prometheus}")
    samples = Samples(sampled)
    marks = run(args.seconds, samples)
    if prometheus:
        with urllib.request.urlopen(prometheus, timeout=5) as page:
            lines = page.read().decode().splitlines()
        print("\n".join(line for line in lines if line.startswith("sbmgmt_renewer_")))
    for name, point in _points(sampled):
        if name.startswith("sbmgmt.renewer") or name == "messaging.client.operation.duration":
            value = getattr(point, "value", None)
            shown = value if value is not None else f"count={point.count} sum={point.sum:.2f}"
            print(f"metric {name} {dict(point.attributes)}: {shown}")
    draw(samples, marks, args.png)
    tracer_provider.shutdown()
    meter_provider.shutdown()


if __name__ == "__main__":
    main()
