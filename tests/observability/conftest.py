"""Fixtures for the telemetry tests: OpenTelemetry SDK providers with in-memory readers,
pinned for one test (``sbmgmt.telemetry.instrument``) so that no global provider is set
for the rest of the suite. The fake namespace and the client are the suite's
(tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from sbmgmt import telemetry


@dataclass
class Recorded:
    """The providers of one test and what they recorded."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    spans_exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    @property
    def tracer(self) -> Tracer:
        """A tracer for the test's own (application) spans."""
        return self.tracer_provider.get_tracer("tests.observability")

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = self.spans_exporter.get_finished_spans()
        return [s for s in found if name is None or s.name == name]

    def points(self, metric: str) -> list[Any]:
        """The data points of ``metric`` collected now (empty when it has none)."""
        data = self.reader.get_metrics_data()
        if data is None:
            return []
        return [point
                for resource in data.resource_metrics
                for scope in resource.scope_metrics if scope.scope.name == "sbmgmt"
                for m in scope.metrics if m.name == metric
                for point in m.data.data_points]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.instrument(tracer_provider, meter_provider)
    yield Recorded(tracer_provider, meter_provider, exporter, reader)
    telemetry.follow_global_providers()
    tracer_provider.shutdown()
    meter_provider.shutdown()
