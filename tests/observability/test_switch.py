"""When telemetry is on: only with a provider the application configured. Without the
OpenTelemetry API, or with only the API's proxy / no-op providers, nothing is recorded
and the hot paths see None. Runs that set global providers (once per process, by the
API's rule) run in a subprocess, so that the rest of the suite keeps none."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

from sbmgmt.telemetry import _switch


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_apis_own_providers_are_not_real() -> None:
    assert not _switch._is_real(ProxyTracerProvider())
    assert not _switch._is_real(NoOpTracerProvider())
    assert not _switch._is_real(NoOpMeterProvider())
    assert not _switch._is_real(None)
    assert _switch._is_real(TracerProvider())
    assert _switch._is_real(MeterProvider())


def test_without_the_api_nothing_is_recorded_and_calls_work() -> None:
    out = _run("""
        import sys
        sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
        from fakes import FakeNamespace
        from sbmgmt import ManagementClient
        from sbmgmt.telemetry import _switch
        with FakeNamespace() as ns:
            ns.add_queue("q")
            with ManagementClient.from_connection_string(ns.connection_string) as c:
                c.entity("q").peek_messages()
        print(_switch.current(), _switch._state.settled)
    """)
    assert out == "None True"


def test_global_providers_are_followed_once_set() -> None:
    out = _run("""
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider
        from sbmgmt.telemetry import _switch
        print(_switch.current() is None, _switch._state.settled)
        trace.set_tracer_provider(TracerProvider())
        tracing = _switch.refresh()
        print(tracing is not None and tracing.tracer is not None, tracing.meters is None,
              _switch._state.settled)
        metrics.set_meter_provider(MeterProvider())
        both = _switch.refresh()
        print(both.meters is not None, _switch._state.settled, _switch.current() is both)
    """)
    assert out.splitlines() == ["True False", "True True False", "True True True"]
