"""The administration API's parts without a server: durations and routes."""

from __future__ import annotations

import pytest

from fakes._admin._durations import NEVER, format_duration, parse_duration
from fakes._admin._routes import Kind, Target, route


@pytest.mark.parametrize(("text", "seconds"), [
    ("PT1M", 60.0), ("P14D", 14 * 86400.0), ("PT0.5S", 0.5), ("P1DT2H3M4.5S", 93784.5),
    ("PT0S", 0.0), ("PT10M", 600.0), ("PT0.0000001S", 1e-7),
])
def test_durations_round_trip(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert format_duration(seconds) == text


def test_never_is_the_timespan_maximum() -> None:
    assert parse_duration(NEVER) is None
    assert format_duration(None) == NEVER
    assert parse_duration("P99999999D") is None
    assert parse_duration("P1Y2M") == (365 + 60) * 86400.0


@pytest.mark.parametrize("text", ["", "P", "PT", "1M", "P1H", "PT1D", "-PT1M", "PT1.S"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(("path", "target"), [
    ("/$namespaceinfo", Target(Kind.NAMESPACE)),
    ("/$Resources/queues", Target(Kind.QUEUES)),
    ("/%24Resources/Topics", Target(Kind.TOPICS)),
    ("/q", Target(Kind.ENTITY, "q")),
    ("/a/b", Target(Kind.ENTITY, "a/b")),
    ("/a%2Fb", Target(Kind.ENTITY, "a/b")),
    ("/t/subscriptions", Target(Kind.SUBSCRIPTIONS, "t")),
    ("/t%2Fx/subscriptions/s", Target(Kind.SUBSCRIPTION, "t/x", "s")),
    ("/t/Subscriptions/s/Rules", Target(Kind.RULES, "t", "s")),
    ("/t/Subscriptions/s/rules/%24Default", Target(Kind.RULE, "t", "s", "$Default")),
])
def test_routes(path: str, target: Target) -> None:
    assert route(path) == target
    assert route(path + "?api-version=2021-05") == target


def test_paths_as_the_service_writes_them() -> None:
    assert Target(Kind.RULE, "t", "s", "r").path == "t/Subscriptions/s/Rules/r"
    assert Target(Kind.SUBSCRIPTIONS, "t").path == "t/Subscriptions"
    assert Target(Kind.QUEUES).path == "$Resources/queues"
