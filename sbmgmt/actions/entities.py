"""The namespace's entities with their message counts, and one entity's properties.

AMQP's management node lists no entities and counts no messages; the service's runtime
properties come from its administration API (HTTP, ATOM XML). This module uses the official
``ServiceBusAdministrationClient`` of azure-servicebus (the ``admin`` extra) rather than a
client of its own. Against the service it goes over TLS as usual; against an emulator
connection string (``UseDevelopmentEmulator=true``) it talks to the emulator's plain-HTTP port
(5300, or the one given), through a transport that sends the client's ``https://`` URLs as
``http://``: azure-servicebus 7.15 builds ``https://`` whatever the connection string says.

The front ends (``sbmgmt entities``, the explorer) call :func:`admin_client`, then
:func:`list_entities` or :func:`entity_properties`; errors of azure-core come out as
sbmgmt's (:mod:`sbmgmt.errors`), converted once here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import html
import importlib
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..auth import format_connection_string, parse_connection_string
from ..errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    ServiceBusManagementError,
    TransportError,
    UnauthorizedError,
)

__all__ = ["ADMIN_EXTRA", "DESCRIPTION_NAMESPACE", "EMULATOR_HTTP_PORT", "LISTINGS_IN_FLIGHT",
           "LISTING_PAGE", "EntityCounts", "EntityKind", "EntityProperties", "admin_client",
           "admin_connection_string", "entity_model", "entity_properties", "feed_entries",
           "list_entities", "plain_http_transport"]

#: The emulator's HTTP port (``EMULATOR_HTTP_PORT``): health and the administration API.
EMULATOR_HTTP_PORT = 5300
#: The most listing requests :func:`list_entities` has on their way at once.
LISTINGS_IN_FLIGHT = 8
#: How to install what this module needs.
ADMIN_EXTRA = "pip install 'sbmgmt[admin]'"


class EntityKind(str, enum.Enum):
    """A queue, a topic or a subscription."""

    QUEUE = "queue"
    TOPIC = "topic"
    SUBSCRIPTION = "subscription"


@dataclasses.dataclass(frozen=True)
class EntityCounts:
    """One entity's message counts, as its runtime properties give them (None: not counted,
    e.g. a topic's active messages, which live in its subscriptions).

    ``name`` is the entity's path: ``QUEUE``, ``TOPIC`` or ``TOPIC/Subscriptions/SUB``.
    """

    kind: EntityKind
    name: str
    active: int | None = None
    dead_letter: int | None = None
    scheduled: int | None = None
    transfer: int | None = None
    transfer_dead_letter: int | None = None
    total: int | None = None
    size_in_bytes: int | None = None

    def as_record(self) -> dict[str, Any]:
        """The counts as a plain dict, in field order, the kind as its text."""
        record = dataclasses.asdict(self)
        record["kind"] = self.kind.value
        return record


@dataclasses.dataclass(frozen=True)
class EntityProperties:
    """One entity's counts, its properties (the administration client's values, untouched)
    and its created / updated / accessed times."""

    counts: EntityCounts
    properties: dict[str, Any]


def _sdk() -> Any:
    try:
        return importlib.import_module("azure.servicebus.management")
    except ImportError:
        raise ImportError(
            f"listing entities uses azure-servicebus's administration client: {ADMIN_EXTRA}"
        ) from None


def plain_http_transport(**kwargs: Any) -> Any:
    """An azure-core ``RequestsTransport`` that sends ``https://`` URLs as ``http://``: how
    the administration client reaches an emulator's plain-HTTP port.

    Args:
        **kwargs: The transport's settings (``connection_timeout``, ``read_timeout``).

    Returns:
        The transport, for ``ServiceBusAdministrationClient(transport=...)``.

    Raises:
        ImportError: azure-servicebus (the ``admin`` extra) is not installed.
    """
    _sdk()
    from azure.core.pipeline.transport import RequestsTransport

    class PlainHttpTransport(RequestsTransport):  # type: ignore[misc]
        def send(self, request: Any, **options: Any) -> Any:
            if request.url.startswith("https://"):
                request.url = "http://" + request.url[len("https://"):]
            return super().send(request, **options)

    return PlainHttpTransport(**kwargs)


def admin_connection_string(connection_string: str, http_port: int) -> str:
    """The same namespace and credentials with the endpoint on ``http_port`` (an emulator's).

    Args:
        connection_string: An emulator's connection string (its AMQP endpoint).
        http_port: The emulator's HTTP port.

    Returns:
        The connection string the administration client takes for that port.
    """
    parsed = parse_connection_string(connection_string)
    return format_connection_string(dataclasses.replace(
        parsed, port=http_port, entity_path=None, use_development_emulator=True))


def admin_client(*, connection_string: str | None = None, namespace: str | None = None,
                 credential: object = None, http_port: int | None = None,
                 timeout: float = 30.0) -> Any:
    """The official administration client for a namespace, by connection string (an
    emulator's goes to its plain-HTTP port) or by name with a credential.

    Args:
        connection_string: The namespace's connection string; wins over ``namespace``.
        namespace: The fully qualified namespace, used with ``credential``.
        credential: An azure-identity credential (for ``namespace``).
        http_port: An emulator's HTTP port (default 5300); used with an emulator
            connection string only.
        timeout: Seconds to connect and to read each reply.

    Returns:
        A ``ServiceBusAdministrationClient`` (a context manager).

    Raises:
        ImportError: azure-servicebus (the ``admin`` extra) is not installed.
        ValueError: Neither a connection string nor a namespace with a credential.
    """
    management = _sdk()
    options: dict[str, Any] = {"connection_timeout": timeout, "read_timeout": timeout,
                               "retry_total": 1}
    if connection_string:
        if parse_connection_string(connection_string).use_development_emulator:
            text = admin_connection_string(connection_string,
                                           http_port or EMULATOR_HTTP_PORT)
            return management.ServiceBusAdministrationClient.from_connection_string(
                text, transport=plain_http_transport(**options), **options)
        return management.ServiceBusAdministrationClient.from_connection_string(
            connection_string, **options)
    if namespace and credential is not None:
        return management.ServiceBusAdministrationClient(namespace, credential, **options)
    raise ValueError("no namespace: a connection string, or a namespace with a credential")


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """azure-core's errors as sbmgmt's, converted once at this boundary."""
    from azure.core import exceptions

    try:
        yield
    except exceptions.ClientAuthenticationError as error:
        raise UnauthorizedError(_said(error), status_code=401) from None
    except exceptions.ResourceNotFoundError as error:
        raise NotFoundError(_said(error), status_code=404) from None
    except exceptions.ResourceExistsError as error:
        raise ConflictError(_said(error), status_code=409) from None
    except exceptions.HttpResponseError as error:
        status = error.status_code
        kind = BadRequestError if status == 400 else ServiceBusManagementError
        raise kind(_said(error), status_code=status) from None
    except exceptions.ServiceRequestError as error:
        raise TransportError(f"the administration API did not answer: "
                             f"{_first_line(error)}") from None
    except exceptions.ServiceResponseError as error:
        raise TransportError(f"the administration API's port did not answer HTTP (is "
                             f"--http-port the HTTP port, not AMQP's?): {_first_line(error)}",
                             ) from None


def _said(error: Any) -> str:
    """What the service said: the ``<Detail>`` of its error body (azure-core's own first
    line is "Operation returned an invalid status 'NOT FOUND'"), else the first line."""
    response = getattr(error, "response", None)
    try:
        body = response.text() if response is not None else ""
    except Exception:  # a body that cannot be read (not loaded, not text) says nothing more
        body = ""
    detail = re.search(r"<Detail>(.*?)</Detail>", body, re.DOTALL)
    if detail is not None and detail.group(1).strip():
        return html.unescape(detail.group(1).strip())
    return _first_line(error)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _counts(kind: EntityKind, name: str, runtime: Any) -> EntityCounts:
    scheduled = getattr(runtime, "scheduled_message_count", None)
    if scheduled is None and kind is EntityKind.SUBSCRIPTION:
        scheduled = _parsed_scheduled_count(runtime)
    return EntityCounts(
        kind=kind, name=name,
        active=getattr(runtime, "active_message_count", None),
        dead_letter=getattr(runtime, "dead_letter_message_count", None),
        scheduled=scheduled,
        transfer=getattr(runtime, "transfer_message_count", None),
        transfer_dead_letter=getattr(runtime, "transfer_dead_letter_message_count", None),
        total=getattr(runtime, "total_message_count", None),
        size_in_bytes=getattr(runtime, "size_in_bytes", None),
    )


def _parsed_scheduled_count(runtime: Any) -> int | None:
    """A subscription's scheduled count: the service sends it (``CountDetails``) and
    azure-servicebus 7.15 parses it, but its ``SubscriptionRuntimeProperties`` has no
    property for it, so it is read from the parsed description."""
    details = getattr(getattr(runtime, "_internal_sd", None), "message_count_details", None)
    count = getattr(details, "scheduled_message_count", None)
    return count if isinstance(count, int) else None


#: The ATOM feed's namespace, the descriptions', and their count details'.
ATOM_NAMESPACE = "http://www.w3.org/2005/Atom"
DESCRIPTION_NAMESPACE = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
_ATOM = "{" + ATOM_NAMESPACE + "}"
_SB = "{" + DESCRIPTION_NAMESPACE + "}"
_SB_COUNT = "{http://schemas.microsoft.com/netservices/2011/06/servicebus}"
#: The entries of a listing's page (the administration API's most).
LISTING_PAGE = 100
#: Each kind's counts, as azure-servicebus 7.15's runtime properties have them (a count its
#: ``*RuntimeProperties`` lacks stays None: a topic's active messages are its
#: subscriptions'), and the element of the entity's description that holds each.
_COUNTED: dict[EntityKind, dict[str, str]] = {
    EntityKind.QUEUE: {
        "active": "CountDetails/ActiveMessageCount",
        "dead_letter": "CountDetails/DeadLetterMessageCount",
        "scheduled": "CountDetails/ScheduledMessageCount",
        "transfer": "CountDetails/TransferMessageCount",
        "transfer_dead_letter": "CountDetails/TransferDeadLetterMessageCount",
        "total": "MessageCount", "size_in_bytes": "SizeInBytes"},
    EntityKind.TOPIC: {"scheduled": "CountDetails/ScheduledMessageCount",
                       "size_in_bytes": "SizeInBytes"},
    EntityKind.SUBSCRIPTION: {
        "active": "CountDetails/ActiveMessageCount",
        "dead_letter": "CountDetails/DeadLetterMessageCount",
        "scheduled": "CountDetails/ScheduledMessageCount",
        "transfer": "CountDetails/TransferMessageCount",
        "transfer_dead_letter": "CountDetails/TransferDeadLetterMessageCount",
        "total": "MessageCount"},
}


def _count(description: Any, where: str) -> int | None:
    """The whole number at ``where`` (``CountDetails/X`` or ``X``) in a description."""
    outer, _, inner = where.rpartition("/")
    holder = description.find(_SB + outer) if outer else description
    found = None if holder is None else holder.find((_SB_COUNT if outer else _SB) + inner)
    return None if found is None or found.text is None else int(found.text)


def feed_entries(list_page: Callable[[int], Any]) -> Iterator[tuple[str, Any]]:
    """Every entry of a listing as (its title, its description: the ``content``'s element,
    None without one), the pages read in order: ``list_page(skip)`` answers one page's ATOM
    feed parsed into an ``ElementTree`` element, until a page has no ``next`` link (whose
    ``$skip`` says where the next page starts)."""
    skip: int | None = 0
    while skip is not None:
        feed = list_page(skip)
        for entry in feed.iterfind(_ATOM + "entry"):
            content = entry.find(_ATOM + "content")
            description = None if content is None or not len(content) else content[0]
            yield entry.findtext(_ATOM + "title") or "", description
        skip = next((int(parse_qs(urlsplit(link.get("href", "")).query)["$skip"][0])
                     for link in feed.iterfind(_ATOM + "link") if link.get("rel") == "next"),
                    None)


def _feed_counts(list_page: Any, kind: EntityKind, prefix: str = "") -> list[EntityCounts]:
    """Every entry of a listing (:func:`feed_entries`), each as its counts."""
    return [EntityCounts(kind, prefix + title, **{
                field: None if description is None else _count(description, where)
                for field, where in _COUNTED[kind].items()})
            for title, description in feed_entries(list_page)]


def list_entities(client: Any) -> list[EntityCounts]:
    """Every queue, topic and subscription with its counts (a topic's subscriptions after it).

    The administration client's own listing parses each entry into its models, which took
    60% of a namespace's listing; this asks its generated operations (``client._impl``:
    the same requests, the same pipeline, credential and retries) and reads only the counts
    from the ATOM feed (``tests/admin/test_listing_parse.py`` holds it to the client's
    runtime properties, count for count). The listings are asked at once, each on a
    thread of its own (:data:`LISTINGS_IN_FLIGHT` at most): the queues' pages (one after
    the other: each page's link names the next), the topics', and each topic's
    subscriptions as soon as the topics are known.

    Args:
        client: A ``ServiceBusAdministrationClient`` (see :func:`admin_client`).

    Returns:
        The entities in the administration API's order: queues, then each topic followed
        by its subscriptions (named ``TOPIC/Subscriptions/SUB``).

    Raises:
        UnauthorizedError: The credentials were refused.
        TransportError: The administration API did not answer.
        ServiceBusManagementError: Any other failed reply.
    """
    operations = client._impl

    def entities(kind: str) -> Any:
        return lambda skip: operations.list_entities(kind, skip=skip, top=LISTING_PAGE)

    def subscriptions(topic: str) -> list[EntityCounts]:
        return _feed_counts(
            lambda skip: operations.list_subscriptions(topic, skip=skip, top=LISTING_PAGE),
            EntityKind.SUBSCRIPTION, f"{topic}/Subscriptions/")

    with _translated(), ThreadPoolExecutor(LISTINGS_IN_FLIGHT,
                                           thread_name_prefix="sbmgmt-listing") as pool:
        queued = pool.submit(_feed_counts, entities("queues"), EntityKind.QUEUE)
        topics = [(topic, pool.submit(subscriptions, topic.name))
                  for topic in _feed_counts(entities("topics"), EntityKind.TOPIC)]
        found = queued.result()
        for topic, its_subscriptions in topics:
            found.append(topic)
            found += its_subscriptions.result()
    return found


def entity_properties(client: Any, entity: str) -> EntityProperties:
    """One entity's properties and runtime counts, by its path.

    Args:
        client: A ``ServiceBusAdministrationClient`` (see :func:`admin_client`).
        entity: ``QUEUE``, ``TOPIC``, ``TOPIC/Subscriptions/SUB`` or ``TOPIC/SUB``.

    Returns:
        Its counts and its properties (``name`` left out; the created, updated and
        accessed times added).

    Raises:
        NotFoundError: There is no such entity.
        UnauthorizedError: The credentials were refused.
        TransportError: The administration API did not answer.
    """
    kind, parts, properties = entity_model(client, entity)
    with _translated():
        if kind is EntityKind.SUBSCRIPTION:
            runtime = client.get_subscription_runtime_properties(*parts)
        elif kind is EntityKind.QUEUE:
            runtime = client.get_queue_runtime_properties(parts[0])
        else:
            runtime = client.get_topic_runtime_properties(parts[0])
    name = parts[0] if len(parts) == 1 else f"{parts[0]}/Subscriptions/{parts[1]}"
    values = {key: value for key, value in dict(properties).items() if key != "name"}
    for key in ("created_at_utc", "updated_at_utc", "accessed_at_utc"):
        values[key] = getattr(runtime, key, None)
    return EntityProperties(_counts(kind, name, runtime), values)


def entity_model(client: Any, entity: str) -> tuple[EntityKind, list[str], Any]:
    """An entity's kind, its path's parts (``[QUEUE]``, ``[TOPIC]`` or ``[TOPIC, SUB]``) and
    the administration client's model of it (``QueueProperties`` ...), by its path.

    Args:
        client: A ``ServiceBusAdministrationClient`` (see :func:`admin_client`).
        entity: ``QUEUE``, ``TOPIC``, ``TOPIC/Subscriptions/SUB`` or ``TOPIC/SUB``.

    Raises:
        NotFoundError: There is no such entity.
        UnauthorizedError: The credentials were refused.
        TransportError: The administration API did not answer.
    """
    parts = [part for part in entity.split("/") if part]
    if len(parts) == 3 and parts[1].lower() == "subscriptions":
        parts = [parts[0], parts[2]]
    elif len(parts) == 2 and _is_queue_with_slash(client, entity):
        parts = [entity]
    if len(parts) == 2:
        with _translated():
            return EntityKind.SUBSCRIPTION, parts, client.get_subscription(*parts)
    queue = _as_queue(client, entity)
    if queue is not None:
        return EntityKind.QUEUE, [entity], queue
    with _translated():
        return EntityKind.TOPIC, [entity], client.get_topic(entity)


def _as_queue(client: Any, name: str) -> Any:
    """The queue's properties, or None when ``name`` is a topic: a get answers a topic's
    entry, which azure-servicebus reads as a queue without a description (AttributeError)."""
    with _translated():
        try:
            return client.get_queue(name)
        except AttributeError:
            return None


def _is_queue_with_slash(client: Any, name: str) -> bool:
    """Whether ``A/B`` is a queue (a queue's name may hold slashes) rather than topic A's
    subscription B."""
    try:
        return _as_queue(client, name) is not None
    except NotFoundError:
        return False
