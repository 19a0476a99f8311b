"""An entity's ``$management`` node: requests go to the :class:`ManagementHandler`
(the namespace's :class:`~fakes._management.ManagementNode`, or ``sbmgmt.testing``'s
mock), after the fault plan for the operation (a server-busy reply instead, or the
reply dropped, changed, repeated, late or held: :meth:`fakes._replies.Replies.planned`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from sbmgmt.amqp.envelope import Request, parse_request

from .._faults import NO_FAULTS, Faults
from .._links import ConnectionRecord
from .._management import Reply
from .._replies import Replies

__all__ = ["ManagementHandler", "ManagementRequests"]

_SERVER_BUSY = "com.microsoft:server-busy"


class ManagementHandler(Protocol):
    """What answers the requests sent to ``<entity>/$management`` (on the server thread)."""

    #: (entity key, operation) -> how many requests were applied (answered with success).
    applied: Counter[tuple[str, str]]

    def handle(self, path: str, message: Request, connection: int,
               now: float, txn_id: bytes | None = None) -> Reply | None:
        """The reply to one request (``txn_id``: the transaction its transfer names, if
        any); None sends none. A FakeServiceError raised here rejects the request's
        delivery with its condition."""


@dataclass(eq=False)
class ManagementRequests:
    """``<path>/$management`` for one connection."""

    connection: ConnectionRecord
    #: The entity path as attached.
    name: str
    #: The entity path in lower case (its reply links' key).
    replies_to: str
    handler: ManagementHandler
    faults: Faults
    replies: Replies

    def accept(self, data: bytes, txn_id: bytes | None, now: float) -> bytes | None:
        request = parse_request(data)
        path = self.name
        plan = self.faults.plan(path, request.operation)
        if plan.server_busy:
            reply = Reply(request.message_id, 503,
                          description="The server is busy (injected fault).",
                          error_condition=_SERVER_BUSY)
        else:
            handled = self.handler.handle(path, request, self.connection.key, now, txn_id)
            if handled is None:
                return None
            reply = handled
        if plan is NO_FAULTS:
            self.replies.send(self.connection, self.replies_to, request.reply_to, reply)
        else:
            self.replies.planned(self.connection, self.replies_to, request, reply, plan)
        return None
