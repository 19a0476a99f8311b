"""A namespace's topology exported and applied: sbmgmt against the official administration
client one request at a time.

    .venv/bin/python -m bench.topology --entities 1000 --latency-ms 5 --rounds 3

The fake runs in its own process (``python -m fakes``, a fresh one per apply); its HTTP
port (the administration API) is reached through ``bench/_delay.py``'s proxy, which holds
every chunk half the round trip each way in a process of its own. The namespace: 40% queues,
then topics of 9 subscriptions each, every subscription with one SQL rule beside
``$Default`` (1,000 entities: 400 queues, 60 topics, 540 subscriptions, 540 rules).

- *export*: sbmgmt's ``export_topology`` (listings in flight) and ``write_topology``, against
  the official client listing queues, topics, each topic's subscriptions and each
  subscription's rules one after the other (what a script written with it does);
- *apply*: sbmgmt's ``plan`` + ``apply_plan`` on an empty namespace, against the official
  client's ``create_queue`` / ``create_topic`` / ``create_subscription`` / ``create_rule``
  one after the other.

The issue's targets (62): export under 2 s, apply under 10 s, at 5 ms. Each figure is the
median of ``--rounds`` (lowest and highest beside it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from azure.servicebus.management import SqlRuleFilter  # noqa: E402

from bench._delay import delayed  # noqa: E402
from sbmgmt.actions import topology  # noqa: E402
from sbmgmt.actions.entities import admin_client, admin_connection_string  # noqa: E402

SUBSCRIPTIONS_PER_TOPIC = 9
TARGETS = {"export": 2.0, "apply": 10.0}


@contextlib.contextmanager
def fake_process() -> Iterator[tuple[str, int]]:
    """``python -m fakes`` on loopback, free ports: (connection string, HTTP port)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("CONFIG_PATH", "CONFIG_JSON")}
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes", "--host", "127.0.0.1", "--port", "0",
         "--http-port", "0"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        connection_string = process.stdout.readline().strip()
        http_port = int(process.stdout.readline().strip().rstrip("/").rsplit(":", 1)[1])
        yield connection_string, http_port
    finally:
        process.terminate()
        process.communicate(timeout=30)


@contextlib.contextmanager
def admin_at(connection_string: str, http_port: int, latency_ms: float) -> Iterator[Any]:
    """The official administration client of the fake's HTTP port, through the proxy."""
    with delayed(admin_connection_string(connection_string, http_port), latency_ms) as proxied:
        port = int(proxied.split(";")[0].rsplit(":", 1)[1])
        with admin_client(connection_string=connection_string, http_port=port,
                          timeout=60) as client:
            yield client


def shape(entities: int) -> topology.Topology:
    """The namespace of the module's docstring, as a topology."""
    queues = entities * 4 // 10
    topics = (entities - queues) // (SUBSCRIPTIONS_PER_TOPIC + 1)
    queues = entities - topics * (SUBSCRIPTIONS_PER_TOPIC + 1)
    document: dict[str, Any] = {"UserConfig": {"Namespaces": [{
        "Name": "sbemulatorns",
        "Queues": [{"Name": f"queue-{q:04d}", "Properties": {"LockDuration": "PT30S"}}
                   for q in range(queues)],
        "Topics": [{"Name": f"topic-{t:03d}", "Subscriptions": [
            {"Name": f"sub-{s}", "Rules": [{"Name": "high", "Properties": {
                "FilterType": "Sql", "SqlFilter": {"SqlExpression": f"priority > {s}"}}}],
             "x-sbmgmt": {"DefaultRule": {"FilterType": "Sql",
                                          "SqlFilter": {"SqlExpression": "1=1"}}}}
            for s in range(SUBSCRIPTIONS_PER_TOPIC)]} for t in range(topics)]}],
        "Logging": {"Type": "Console"}}}
    return topology.read_topology(json.dumps(document))


def sbmgmt_apply(client: Any, wanted: topology.Topology) -> None:
    report = topology.apply_plan(client, topology.plan(client, wanted))
    if report.outcome is not topology.ApplyOutcome.FINISHED:
        raise RuntimeError(f"apply {report.outcome.value}: {report.error}")


def sdk_apply(client: Any, wanted: topology.Topology) -> None:
    """What a script with the official client does: one create after the other."""
    for entity in wanted.entities:
        if entity.kind.value == "queue":
            client.create_queue(entity.name, lock_duration=entity.properties["LockDuration"])
        elif entity.kind.value == "topic":
            client.create_topic(entity.name)
        else:
            client.create_subscription(entity.topic, entity.name)
            for rule in entity.rules or ():
                if rule.name != "$Default":
                    client.create_rule(entity.topic, entity.name, rule.name,
                                       filter=SqlRuleFilter(
                                           rule.properties["SqlFilter"]["SqlExpression"]))


def sbmgmt_export(client: Any) -> None:
    topology.write_topology(topology.export_topology(client))


def sdk_export(client: Any) -> None:
    """Every listing one after the other, as a script with the official client reads."""
    list(client.list_queues())
    for topic in list(client.list_topics()):
        for sub in list(client.list_subscriptions(topic.name)):
            list(client.list_rules(topic.name, sub.name))


def timed(work: Callable[[], None]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def one_round(wanted: topology.Topology, latency_ms: float) -> dict[str, float]:
    """Each of the four figures once, in seconds."""
    figures: dict[str, float] = {}
    for who, apply in (("sbmgmt", sbmgmt_apply), ("sdk", sdk_apply)):
        with fake_process() as (connection_string, http_port), admin_at(
                connection_string, http_port, latency_ms) as client:
            figures[f"apply {who}"] = timed(lambda c=client, a=apply: a(c, wanted))
            if who == "sbmgmt":
                for exporter in ("sbmgmt", "sdk"):
                    work = sbmgmt_export if exporter == "sbmgmt" else sdk_export
                    figures[f"export {exporter}"] = timed(lambda c=client, w=work: w(c))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.topology", description=__doc__)
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    wanted = shape(args.entities)
    rounds = [one_round(wanted, args.latency_ms) for _ in range(args.rounds)]
    print(f"{len(wanted.entities)} entities and "
          f"{sum(len(e.rules or ()) - 1 for e in wanted.entities if e.rules)} rules at "
          f"{args.latency_ms:g} ms, {args.rounds} round(s), {os.cpu_count()} cores")
    print("| action | sbmgmt s (min-max) | SDK one at a time s (min-max) | ratio | target |")
    print("| --- | --- | --- | --- | --- |")
    for action in ("export", "apply"):
        ours = [r[f"{action} sbmgmt"] for r in rounds]
        theirs = [r[f"{action} sdk"] for r in rounds]
        mine, sdk = statistics.median(ours), statistics.median(theirs)
        met = "met" if mine < TARGETS[action] else "NOT met"
        print(f"| {action} | {mine:.2f} ({min(ours):.2f}-{max(ours):.2f}) | {sdk:.2f} "
              f"({min(theirs):.2f}-{max(theirs):.2f}) | {sdk / mine:.1f}x faster | "
              f"< {TARGETS[action]:g} s: {met} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
