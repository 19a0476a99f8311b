"""Two defaults for pages in flight, on purpose (sbmgmt/spark/_options.py says why): the
client's peek_all keeps 32, a Spark task 8. Each is stated once in code and once in its
guide; these hold the guides, and every default that derives from them, to the constants."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path

from sbmgmt import AsyncEntityClient, EntityClient
from sbmgmt._client.peek_pager import DEFAULT_PAGES_IN_FLIGHT as CLIENT_DEFAULT
from sbmgmt._client.peek_pager import PeekPlan
from sbmgmt.spark._options import DEFAULT_PAGES_IN_FLIGHT as SPARK_DEFAULT
from sbmgmt.spark._options import read_options
from sbmgmt.spark._paging import peek_range

DOCS = Path(__file__).resolve().parents[2] / "docs"
CONN = ("Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=k;SharedAccessKey=v;"
        "UseDevelopmentEmulator=true")


def _default(function: Callable[..., object], name: str) -> object:
    return inspect.signature(function).parameters[name].default


def test_the_client_reads_with_its_own_default_everywhere() -> None:
    for function in (EntityClient.peek_all, AsyncEntityClient.peek_all, PeekPlan.__init__):
        assert _default(function, "pages_in_flight") == CLIENT_DEFAULT
    guide = (DOCS / "performance.md").read_text()
    assert f"pages_in_flight={CLIENT_DEFAULT}," in guide


def test_a_spark_task_reads_with_the_spark_default_everywhere() -> None:
    assert read_options({"connectionString": CONN, "entity": "q"}).pages_in_flight == (
        SPARK_DEFAULT)
    assert _default(peek_range, "in_flight") == SPARK_DEFAULT
    row = re.search(r"^\| `pagesInFlight` \| (\d+) \|", (DOCS / "spark.md").read_text(),
                    re.MULTILINE)
    assert row is not None and int(row.group(1)) == SPARK_DEFAULT
