"""A not-found entity that is a topic: say so, and name its subscriptions' paths.

``sbmgmt peek events`` on a topic fails as the service answers it, "The messaging entity
'events' could not be found." (a topic keeps no messages of its own). The administration
API (the admin extra) tells whether the name is a topic and lists its subscriptions; when it
cannot be asked (no extra, an emulator's HTTP port elsewhere than EMULATOR_HTTP_PORT says),
the hint says what to try instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ..amqp.envelope import PUT_TOKEN
from ..errors import NotFoundError, ServiceBusManagementError

__all__ = ["topic_hint"]

_NOT_FOUND = re.compile(r"The messaging entity '([^']+)' could not be found")
_LOOKUP_TIMEOUT = 10.0


def topic_hint(error: NotFoundError, *, connection_string: str | None, namespace: str | None,
               timeout: float, credential: Callable[[], object]) -> str | None:
    """What to peek instead when the entity not found is a topic; None when it is not.
    ``credential`` makes the Entra ID credential used with ``namespace``."""
    found = _NOT_FOUND.search(error.description or "")
    if found is None or error.status_code is None:
        return None  # a refused attach: a topic has a $management node, so this is no topic
    if f"{PUT_TOKEN} for " in str(error):
        # The service refuses a token only for an entity that does not exist (404 "Put
        # token failed", azure-service-bus issue 304); a topic exists, so this is no topic.
        return None
    name = found.group(1)
    if "://" in name:  # the service names the entity by its URL
        name = name.split("://", 1)[1].partition("/")[2]
    if not name or "/" in name:
        return None
    try:
        subscriptions = _subscriptions_of(
            name, connection_string, namespace, min(timeout, _LOOKUP_TIMEOUT),
            None if connection_string else credential)
    except (ImportError, ValueError, ServiceBusManagementError):
        return (f"if {name} is a topic, name one of its subscriptions, "
                f"{name}/Subscriptions/SUB: `sbmgmt entities --match '{name}/*'` lists them")
    if subscriptions is None:
        return None
    if not subscriptions:
        return f"{name} is a topic, without subscriptions: a topic keeps no messages of its own"
    return (f"{name} is a topic, which keeps no messages of its own: name one of its "
            f"subscriptions, {', '.join(subscriptions)}")


def _subscriptions_of(name: str, connection_string: str | None, namespace: str | None,
                      timeout: float, credential: Callable[[], object] | None,
                      ) -> list[str] | None:
    """The paths of the subscriptions of topic ``name``; None when it is no topic."""
    from ..actions.entities import EntityKind, admin_client, list_entities

    port = os.environ.get("EMULATOR_HTTP_PORT")
    client = admin_client(connection_string=connection_string, namespace=namespace,
                          credential=None if credential is None else credential(),
                          http_port=int(port) if port else None, timeout=timeout)
    with client:
        entities = list_entities(client)
    if not any(e.kind is EntityKind.TOPIC and e.name.lower() == name.lower() for e in entities):
        return None
    prefix = f"{name.lower()}/subscriptions/"
    return [e.name for e in entities
            if e.kind is EntityKind.SUBSCRIPTION and e.name.lower().startswith(prefix)]
