"""The search's SQL condition agrees with the fake's rule matching on the fake's SQL corpus.

The corpus is every filter of tests/fake_sql/test_sql_filters.py written as
``evaluate("<expression>", name=<literal>, ...)``, read from its source (so a case added
there is checked here too), with the application properties it gives. Each distinct set
of properties is one message, sent by the official SDK to a topic and to a queue; each
expression is the one rule of a subscription of that topic. What the fake let into each
subscription must be what ``search(where=expression)`` finds in the queue, by MessageId.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.search import Conditions, search
from sbmgmt.rules import RuleDescription, SqlFilter
from sbmgmt.sql import SqlSyntaxError, parse_filter
from tests._peers import missing_peer

CORPUS_FILE = Path(__file__).resolve().parents[1] / "fake_sql" / "test_sql_filters.py"


def _corpus() -> list[tuple[str, dict[str, Any]]]:
    """(expression, properties) of every literal ``evaluate(...)`` call of the corpus."""
    found: list[tuple[str, dict[str, Any]]] = []
    for node in ast.walk(ast.parse(CORPUS_FILE.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "evaluate" and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        try:
            props = {k.arg: ast.literal_eval(k.value) for k in node.keywords
                     if k.arg is not None}
        except ValueError:
            continue  # a property computed at run time: not a literal
        if len(props) == len(node.keywords):
            found.append((node.args[0].value, props))
    return found


CORPUS = _corpus()
EXPRESSIONS = sorted({expression for expression, _ in CORPUS})
PROPERTY_SETS = sorted({json.dumps(props, sort_keys=True) for _, props in CORPUS})


def test_the_corpus_is_large_and_parses() -> None:
    assert len(EXPRESSIONS) > 60 and len(PROPERTY_SETS) > 10
    for expression in EXPRESSIONS:
        try:
            parse_filter(expression)
        except SqlSyntaxError as error:  # pragma: no cover - a corpus case that stopped parsing
            pytest.fail(f"{expression!r}: {error}")


@pytest.fixture(scope="module")
def routed() -> Iterator[tuple[FakeNamespace, dict[str, set[str]]]]:
    """The namespace, and the MessageIds the fake let into each expression's subscription."""
    try:
        from azure.servicebus import ServiceBusClient, ServiceBusMessage
    except ImportError:
        missing_peer("azure-servicebus is not installed: pip install -e '.[test]'")
    with FakeNamespace() as fake:
        fake.add_topic("t")
        fake.add_queue("q")
        for index, expression in enumerate(EXPRESSIONS):
            fake.add_subscription("t", f"s{index}", rules=[RuleDescription(
                name="corpus", filter=SqlFilter(expression=expression))])
        messages = [ServiceBusMessage(f"m{index}", message_id=f"m{index}",
                                      application_properties=json.loads(props) or None)
                    for index, props in enumerate(PROPERTY_SETS)]
        with ServiceBusClient.from_connection_string(fake.connection_string,
                                                     retry_total=0) as sdk:
            with sdk.get_topic_sender("t") as sender:
                sender.send_messages(messages)
            with sdk.get_queue_sender("q") as sender:
                sender.send_messages(messages)
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=10) as client:
            let_in = {expression: {str(m.message_id) for m in
                                   client.entity(f"t/Subscriptions/s{index}").peek_all()}
                      for index, expression in enumerate(EXPRESSIONS)}
        yield fake, let_in


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_search_finds_what_the_fake_routes(
        routed: tuple[FakeNamespace, dict[str, set[str]]], expression: str) -> None:
    fake, let_in = routed
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as client:
        found = {str(f.message.message_id) for f in search(client, "q",
                                                           Conditions(where=expression))}
    assert found == let_in[expression]


def test_both_let_some_in_and_keep_some_out(
        routed: tuple[FakeNamespace, dict[str, set[str]]]) -> None:
    _, let_in = routed
    assert sum(1 for ids in let_in.values() if ids) > 20
    assert sum(1 for ids in let_in.values() if len(ids) < len(PROPERTY_SETS)) > 20
