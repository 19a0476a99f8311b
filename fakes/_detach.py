"""Ending links and connections from the server's side: forgetting a connection that went
away, and detaching links for a reason of the service's (an injected fault, an expired
token, a deleted entity).

A link closed here keeps its record until the client answers the detach (the server's
``on_link_remote_close``), so it still counts against its connection's links until then;
its consumer is dropped and it stops carrying replies at once. Not thread-safe: the
server calls it on its thread, under the namespace lock.
"""

from __future__ import annotations

from proton import Condition, Endpoint

from ._addresses import CBS_NODE, entity_key, split_management
from ._auth import scope_of
from ._clock import FakeClock
from ._consumers import Consumers
from ._coordinator import Coordinator
from ._links import ConnectionRecord, Records, unlist_reply_link
from ._proton import ConnectionHandle, LinkHandle

__all__ = ["Detacher"]

_UNAUTHORIZED = "amqp:unauthorized-access"


class Detacher:
    """Closes what the service would close, and forgets what went away."""

    def __init__(self, records: Records, consumers: Consumers, transactions: Coordinator,
                 clock: FakeClock) -> None:
        self._records = records
        self._consumers = consumers
        self._transactions = transactions
        self._clock = clock

    def forget_connection(self, connection: ConnectionHandle) -> None:
        """The connection closed or failed: its records, receivers and open transactions go."""
        record = self._records.forget(connection)
        if record is None:
            return
        self._consumers.connection_closed(record.key)
        self._transactions.connection_closed(record.key)

    def close_link(self, link: LinkHandle, condition: str, description: str) -> None:
        """Detach ``link`` with ``condition``."""
        record = self._records.link(link)
        if record is not None:
            if record.key is not None:
                self._consumers.drop(record.key)
            unlist_reply_link(record.connection, link)
        link.condition = Condition(condition, description)
        link.close()

    def management_links(self, wanted: str) -> int:
        """Detach the management links of the entity key ``wanted``; how many."""
        links = [link for link in self._records.active_links()
                 if _is_management_of(self._records.address(link), wanted)]
        for link in links:
            self.close_link(link, "amqp:link:detach-forced",
                            "The management link was detached (injected fault).")
        return len(links)

    def deleted(self, keys: set[str]) -> int:
        """Detach every link to the deleted entities (their keys), their ``$management``
        nodes too, with ``amqp:not-found``; how many."""
        found = [(link, self._records.address(link)) for link in self._records.active_links()]
        gone = [(link, address) for link, address in found
                if entity_key(split_management(address)[0]) in keys]
        for link, address in gone:
            self.close_link(link, "amqp:not-found",
                            f"The messaging entity {address!r} was deleted.")
        return len(gone)

    def connections(self) -> int:
        """Close every client connection with ``amqp:connection:forced``; how many."""
        records = list(self._records.connections.values())
        for record in records:
            connection = record.connection
            self.forget_connection(connection)
            if not connection.state & Endpoint.LOCAL_CLOSED:
                connection.condition = Condition(
                    "amqp:connection:forced", "The connection was closed (injected fault).")
                connection.close()
        return len(records)

    def expire_tokens(self) -> int:
        """Forget every token and detach the entity links they authorised; how many."""
        revoked = 0
        for record in self._records.connections.values():
            record.tokens.clear()
            revoked += self.revoke(record)
        return revoked

    def revoke(self, connection: ConnectionRecord) -> int:
        """Detach the connection's entity links that no valid token of it covers any more
        (as the service does when a token expires: ``amqp:unauthorized-access``)."""
        revoked = 0
        now = self._clock.now()
        for link in self._records.active_links([connection]):
            address = self._records.address(link)
            if not address or address.lower() == CBS_NODE:
                continue
            if not connection.tokens.covers(scope_of(address), now):
                self.close_link(link, _UNAUTHORIZED, f"The token for {address!r} has expired.")
                revoked += 1
        return revoked


def _is_management_of(address: str, path: str) -> bool:
    found, management = split_management(address)
    return management and entity_key(found) == path
