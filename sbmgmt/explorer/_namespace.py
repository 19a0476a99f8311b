"""What the explorer talks to: one namespace, through the public clients.

:class:`Namespace` holds the AMQP management client (peeks, sessions, rules, scheduling)
and the administration client (entities and counts, :mod:`sbmgmt.actions.entities`), both
opened by whoever starts the explorer and closed by them. The administration client
(azure-core over ``requests``) is used by one request at a time (a lock); the management
client takes requests from any thread.

It also knows the secrets of the connection it was opened with, only to take them out of
any error text before that reaches a page (:meth:`Namespace.redacted`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from ..actions.entities import EntityCounts, EntityProperties, entity_properties, list_entities
from ..actions.storage import Storage
from ..client import EntityClient, ManagementClient

__all__ = ["Namespace", "SqlCheck"]

#: Checks a SQL filter or action before it is sent; raises ``ValueError`` naming the fault.
SqlCheck = Callable[[str], object]


@dataclasses.dataclass
class Namespace:
    """The namespace the explorer shows.

    Attributes:
        label: What the page calls it (its host name; never the connection string).
        client: The management client.
        admin: The administration client (``sbmgmt.actions.entities.admin_client``).
        check_sql_filter: Checks a rule's SQL filter before it is sent (None: the
            service's answer is the check).
        check_sql_action: Checks a rule's SQL action likewise.
        secrets: Texts that never reach a page (the key, the signature).
        storage: Where the namespace is kept, when it says (the fake's data directory,
            ``sbmgmt.actions.storage``); every page's header shows it. None: not said.
    """

    label: str
    client: ManagementClient
    admin: Any
    check_sql_filter: SqlCheck | None = None
    check_sql_action: SqlCheck | None = None
    secrets: tuple[str, ...] = ()
    storage: Storage | None = None
    _admin_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def entity(self, path: str) -> EntityClient:
        """The operations on one entity (or sub-queue) path."""
        return self.client.entity(path)

    def entities(self) -> list[EntityCounts]:
        """Every queue, topic and subscription with its counts."""
        with self._admin_lock:
            return list_entities(self.admin)

    def properties(self, path: str) -> EntityProperties:
        """One entity's properties and counts."""
        with self._admin_lock:
            return entity_properties(self.admin, path)

    def redacted(self, text: str) -> str:
        """``text`` with every secret of the connection replaced by ``***``."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return text
