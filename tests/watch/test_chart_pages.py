"""The charts' pages without a browser or a namespace: the explorer's app (without its
guard) over a sampler fed made-up listings; what a page says of a failed listing, an
entity name with markup, and a series with a gap."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlencode

import pytest
from starlette.applications import Starlette

from sbmgmt.actions.entities import EntityCounts, EntityKind
from sbmgmt.actions.watch import Sample, Sampler
from sbmgmt.explorer import Namespace
from sbmgmt.explorer._app import create_app
from sbmgmt.explorer._charts import charts_of

SECRET = "c2VjcmV0LWtleQ=="
MARKUP = "<b>bold&co"


@dataclass
class Answer:
    status_code: int
    text: str


@dataclass
class Client:
    """GETs on the app, called as an ASGI server calls it (no socket, no guard)."""

    app: Starlette

    def get(self, path: str, params: dict[str, str] | None = None) -> Answer:
        return asyncio.run(self._get(path, urlencode(params or {})))

    async def _get(self, path: str, query: str) -> Answer:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": query.encode(), "root_path": "",
                 "headers": [(b"host", b"127.0.0.1")], "server": ("127.0.0.1", 80),
                 "client": ("127.0.0.1", 1)}
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return Answer(sent[0]["status"], body.decode())


def app_over(sampler: Sampler) -> Client:
    namespace = Namespace(label="127.0.0.1", client=cast(Any, None), admin=None,
                          secrets=(SECRET,))
    return Client(create_app(namespace, sampler=sampler))


def test_a_failed_listing_is_said_on_the_charts_without_the_connection_s_secrets() -> None:
    def read() -> list[EntityCounts]:
        raise RuntimeError(f"refused: SharedAccessKey={SECRET} is not valid")

    sampler = Sampler(read, interval=5.0)
    with pytest.raises(RuntimeError):
        sampler.sample()
    page = app_over(sampler).get("/charts/part").text
    assert "the last listing failed: refused: SharedAccessKey=*** is not valid" in page
    assert SECRET not in page


def test_an_entity_name_with_markup_is_text_on_its_charts_and_among_the_movers() -> None:
    counts = iter(range(10))

    def read() -> list[EntityCounts]:
        dead = next(counts)
        return [EntityCounts(EntityKind.QUEUE, MARKUP, active=0, dead_letter=dead,
                             scheduled=0, transfer=0, transfer_dead_letter=0, total=dead)]

    sampler = Sampler(read, interval=5.0)
    for _ in range(3):
        sampler.sample()
    client = app_over(sampler)
    for path in ("/charts/entity", "/charts/movers", "/charts"):
        page = client.get(path, params={"path": MARKUP, "kind": "queue"}).text
        assert "<b>bold" not in page
    assert "&lt;b&gt;bold&amp;co" in client.get("/charts/movers").text
    entity = client.get("/charts/entity", params={"path": MARKUP, "kind": "queue"}).text
    assert 'data-series="dead-letter" data-values="0 1 2"' in entity


def test_a_topic_is_drawn_by_its_scheduled_count_and_has_no_rates() -> None:
    sampler = Sampler(lambda: [], interval=5.0)
    topic = EntityCounts(EntityKind.TOPIC, "t", scheduled=2)
    sampler.history.add(Sample(0.0, 0.0, (topic,)))
    (chart,) = charts_of(sampler.history.points("t"), EntityKind.TOPIC)
    assert [line.label for line in chart.lines] == ["scheduled"]
    assert chart.lines[0].value_text == "2" and chart.top == 2


def test_a_movers_window_out_of_bounds_is_a_400_in_words() -> None:
    client = app_over(Sampler(lambda: [], interval=5.0))
    answer = client.get("/charts/movers", params={"minutes": "0"})
    assert answer.status_code == 400
    assert "1 to 60, not 0" in answer.text


def test_a_missing_value_breaks_the_line_and_the_scale_s_top_is_the_box_s_top() -> None:
    from sbmgmt.explorer._charts import _path

    assert _path([0.0, 1.0, 2.0, 3.0], [4, None, 2, 0], 4.0, 300.0, 100.0) == (
        "M0.0,0.0 M200.0,50.0 L300.0,100.0")
