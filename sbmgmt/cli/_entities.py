"""``sbmgmt entities``: every queue, topic and subscription with its message counts, or one
entity's properties.

AMQP's management node lists no entities and counts no messages; the service's runtime
properties come from its administration API (HTTP, ATOM XML). This command uses the official
``ServiceBusAdministrationClient`` of azure-servicebus (the ``admin`` extra) rather than a
client of its own. Against the service it goes over TLS as usual; against an emulator
connection string (``UseDevelopmentEmulator=true``) it talks to the emulator's plain-HTTP port
(5300, or ``--http-port``), through a transport that sends the client's ``https://`` URLs as
``http://``: azure-servicebus 7.15 builds ``https://`` whatever the connection string says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import fnmatch
import importlib
from collections.abc import Iterator
from typing import Annotated, Any

import typer

from ..auth import format_connection_string, parse_connection_string
from ..errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    ServiceBusManagementError,
    TransportError,
    UnauthorizedError,
)
from ._command import command
from ._exit import UsageProblem
from ._render import Column, OutputFormat, Record, json_value
from ._state import CliState

__all__ = ["EMULATOR_HTTP_PORT", "admin_connection_string", "entities", "entity_records",
           "plain_http_transport", "register"]

#: The emulator's HTTP port (``EMULATOR_HTTP_PORT``): health and the administration API.
EMULATOR_HTTP_PORT = 5300
_EXTRA = "pip install 'sbmgmt[admin]'"

ENTITY_COLUMNS = (
    Column.of("kind"),
    Column.of("name"),
    Column.of("active"),
    Column.of("dead_letter", "dead-letter"),
    Column.of("scheduled"),
    Column.of("total"),
    Column.of("size_in_bytes", "bytes"),
)


class EntityKind(str, enum.Enum):
    """What ``--kind`` selects."""

    QUEUE = "queue"
    TOPIC = "topic"
    SUBSCRIPTION = "subscription"


class SortKey(str, enum.Enum):
    """What ``--sort`` orders by: the name, or a count (largest first)."""

    NAME = "name"
    ACTIVE = "active"
    DEAD_LETTER = "dead-letter"
    SCHEDULED = "scheduled"
    TOTAL = "total"
    SIZE = "size"


_SORT_FIELDS = {SortKey.ACTIVE: "active", SortKey.DEAD_LETTER: "dead_letter",
                SortKey.SCHEDULED: "scheduled", SortKey.TOTAL: "total",
                SortKey.SIZE: "size_in_bytes"}


def _sdk() -> Any:
    try:
        return importlib.import_module("azure.servicebus.management")
    except ImportError:
        raise UsageProblem(
            f"sbmgmt entities uses azure-servicebus's administration client: {_EXTRA}"
        ) from None


def plain_http_transport(**kwargs: Any) -> Any:
    """An azure-core ``RequestsTransport`` that sends ``https://`` URLs as ``http://``: how
    the administration client reaches an emulator's plain-HTTP port."""
    _sdk()
    from azure.core.pipeline.transport import RequestsTransport

    class PlainHttpTransport(RequestsTransport):  # type: ignore[misc]
        def send(self, request: Any, **options: Any) -> Any:
            if request.url.startswith("https://"):
                request.url = "http://" + request.url[len("https://"):]
            return super().send(request, **options)

    return PlainHttpTransport(**kwargs)


def admin_connection_string(connection_string: str, http_port: int) -> str:
    """The same namespace and credentials with the endpoint on ``http_port`` (an emulator's)."""
    parsed = parse_connection_string(connection_string)
    return format_connection_string(dataclasses.replace(
        parsed, port=http_port, entity_path=None, use_development_emulator=True))


def _client(state: CliState, http_port: int | None) -> Any:
    management = _sdk()
    options: dict[str, Any] = {"connection_timeout": state.timeout,
                               "read_timeout": state.timeout, "retry_total": 1}
    if state.emulator:
        raise UsageProblem("sbmgmt entities lists an existing namespace: pass "
                           "--connection-string (an emulator's, or the fake's) or --namespace")
    if state.connection_string:
        if parse_connection_string(state.connection_string).use_development_emulator:
            text = admin_connection_string(state.connection_string,
                                           http_port or EMULATOR_HTTP_PORT)
            state.scrub.add(text)
            return management.ServiceBusAdministrationClient.from_connection_string(
                text, transport=plain_http_transport(**options), **options)
        return management.ServiceBusAdministrationClient.from_connection_string(
            state.connection_string, **options)
    if state.namespace:
        from ._state import _default_credential

        return management.ServiceBusAdministrationClient(
            state.namespace, _default_credential(), **options)
    raise UsageProblem("no namespace: pass --connection-string (or set "
                       "SERVICEBUS_CONNECTION_STRING) or --namespace with Entra ID")


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """azure-core's errors as sbmgmt's, so that the exit codes are the CLI's own."""
    from azure.core import exceptions

    try:
        yield
    except exceptions.ClientAuthenticationError as error:
        raise UnauthorizedError(_first_line(error), status_code=401) from None
    except exceptions.ResourceNotFoundError as error:
        raise NotFoundError(_first_line(error), status_code=404) from None
    except exceptions.ResourceExistsError as error:
        raise ConflictError(_first_line(error), status_code=409) from None
    except exceptions.HttpResponseError as error:
        status = error.status_code
        kind = BadRequestError if status == 400 else ServiceBusManagementError
        raise kind(_first_line(error), status_code=status) from None
    except exceptions.ServiceRequestError as error:
        raise TransportError(f"the administration API did not answer: "
                             f"{_first_line(error)}") from None
    except exceptions.ServiceResponseError as error:
        raise TransportError(f"the administration API's port did not answer HTTP (is "
                             f"--http-port the HTTP port, not AMQP's?): {_first_line(error)}",
                             ) from None


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _counts(kind: EntityKind, name: str, runtime: Any) -> Record:
    details = ("active_message_count", "dead_letter_message_count", "scheduled_message_count",
               "transfer_message_count", "transfer_dead_letter_message_count",
               "total_message_count")
    values = [getattr(runtime, field, None) for field in details]
    keys = ("active", "dead_letter", "scheduled", "transfer", "transfer_dead_letter", "total")
    record: Record = {"kind": kind.value, "name": name}
    record.update(zip(keys, values, strict=True))
    if record["scheduled"] is None and kind is EntityKind.SUBSCRIPTION:
        record["scheduled"] = _parsed_scheduled_count(runtime)
    record["size_in_bytes"] = getattr(runtime, "size_in_bytes", None)
    return record


def _parsed_scheduled_count(runtime: Any) -> int | None:
    """A subscription's scheduled count: the service sends it (``CountDetails``) and
    azure-servicebus 7.15 parses it, but its ``SubscriptionRuntimeProperties`` has no
    property for it, so it is read from the parsed description."""
    details = getattr(getattr(runtime, "_internal_sd", None), "message_count_details", None)
    count = getattr(details, "scheduled_message_count", None)
    return count if isinstance(count, int) else None


def entity_records(client: Any) -> list[Record]:
    """Every queue, topic and subscription with its counts (a topic's subscriptions after it)."""
    records: list[Record] = []
    with _translated():
        for queue in client.list_queues_runtime_properties():
            records.append(_counts(EntityKind.QUEUE, queue.name, queue))
        for topic in client.list_topics_runtime_properties():
            records.append(_counts(EntityKind.TOPIC, topic.name, topic))
            for subscription in client.list_subscriptions_runtime_properties(topic.name):
                records.append(_counts(EntityKind.SUBSCRIPTION,
                                       f"{topic.name}/Subscriptions/{subscription.name}",
                                       subscription))
    return records


def _selected(records: list[Record], kinds: list[EntityKind] | None, match: str | None,
              dead_lettered: bool, sort: SortKey) -> list[Record]:
    wanted = {kind.value for kind in kinds} if kinds else None
    chosen = [r for r in records
              if (wanted is None or r["kind"] in wanted)
              and (match is None or fnmatch.fnmatchcase(r["name"].lower(), match.lower()))
              and (not dead_lettered or (r["dead_letter"] or 0) > 0)]
    if sort is SortKey.NAME:
        return sorted(chosen, key=lambda r: str(r["name"]).lower())
    field = _SORT_FIELDS[sort]
    return sorted(chosen, key=lambda r: (-(r[field] or 0), str(r["name"]).lower()))


def _properties(client: Any, entity: str) -> Record:
    """One entity's properties and runtime counts, by its path."""
    parts = [part for part in entity.split("/") if part]
    if len(parts) == 3 and parts[1].lower() == "subscriptions":
        parts = [parts[0], parts[2]]
    with _translated():
        if len(parts) == 2:
            properties = client.get_subscription(*parts)
            runtime = client.get_subscription_runtime_properties(*parts)
            kind, name = EntityKind.SUBSCRIPTION, f"{parts[0]}/Subscriptions/{parts[1]}"
        else:
            queue = _as_queue(client, entity)
            if queue is not None:
                properties, runtime = queue, client.get_queue_runtime_properties(entity)
                kind, name = EntityKind.QUEUE, entity
            else:
                properties = client.get_topic(entity)
                runtime = client.get_topic_runtime_properties(entity)
                kind, name = EntityKind.TOPIC, entity
    record = _counts(kind, name, runtime)
    for key, value in dict(properties).items():
        if key != "name":
            record[key] = json_value(value)
    for key in ("created_at_utc", "updated_at_utc", "accessed_at_utc"):
        record[key] = json_value(getattr(runtime, key, None))
    return record


def _as_queue(client: Any, name: str) -> Any:
    """The queue's properties, or None when ``name`` is a topic: a get answers a topic's
    entry, which azure-servicebus reads as a queue without a description (AttributeError)."""
    try:
        return client.get_queue(name)
    except AttributeError:
        return None


def entities(
    ctx: typer.Context,
    entity: Annotated[
        str | None,
        typer.Argument(help="QUEUE, TOPIC or TOPIC/Subscriptions/SUB (or TOPIC/SUB): show "
                       "its properties instead of the list.", show_default=False),
    ] = None,
    kind: Annotated[
        list[EntityKind] | None,
        typer.Option("--kind", "-k", case_sensitive=False,
                     help="Only this kind (repeatable).", show_default=False),
    ] = None,
    match: Annotated[
        str | None,
        typer.Option("--match", "-m", help="Only names matching this glob (case-insensitive, "
                     "e.g. 'orders*').", show_default=False),
    ] = None,
    dead_lettered: Annotated[
        bool, typer.Option("--dead-lettered", help="Only entities with dead-lettered "
                           "messages.")
    ] = False,
    sort: Annotated[
        SortKey, typer.Option("--sort", case_sensitive=False,
                              help="Order by name, or by a count (largest first).")
    ] = SortKey.NAME,
    http_port: Annotated[
        int | None,
        typer.Option("--http-port", min=1, max=65535, envvar="EMULATOR_HTTP_PORT",
                     help=f"The emulator's HTTP port (default {EMULATOR_HTTP_PORT}); used "
                     "with an emulator connection string only.", show_default=False),
    ] = None,
) -> None:
    """List queues, topics and subscriptions with their active, dead-letter and scheduled
    message counts, or show one entity's properties (needs the admin extra).

    Example: sbmgmt entities --dead-lettered --sort dead-letter
    """
    state = CliState.of(ctx)
    client = _client(state, http_port)
    with client:
        if entity is not None:
            _show(state, _properties(client, entity))
            return
        records = _selected(entity_records(client), kind, match, dead_lettered, sort)
    state.renderer.records(records, ENTITY_COLUMNS, empty="no entities")


def _show(state: CliState, record: Record) -> None:
    """One entity: a JSON object (or NDJSON line), or a table of property and value."""
    if state.output is OutputFormat.TABLE:
        rows = [{"property": key, "value": value} for key, value in record.items()]
        state.renderer.records(rows, (Column.of("property"), Column.of("value")))
    else:
        state.renderer.record(record, ENTITY_COLUMNS)


def register(app: typer.Typer) -> None:
    """Add ``entities`` to the root app."""
    command(app, "entities")(entities)
