"""The ``$cbs`` node: put-token requests, whose grants authorize the connection's links.

A valid token is kept in the connection's :class:`~fakes._auth.TokenBook` for its audience's
scope, and its expiry noted (the server's token timer detaches the links it covered when
it passes); the reply's ``status-code`` is 202, or 401 for a token that does not verify.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sbmgmt.amqp.envelope import parse_request
from sbmgmt.auth import SasTokenError, verify_sas_token

from .._addresses import CBS_NODE
from .._auth import audience_scope
from .._errors import FakeServiceError
from .._links import ConnectionRecord
from .._management import Reply
from .._replies import Replies

__all__ = ["CbsNode", "TokenPolicy"]


@dataclass(frozen=True)
class TokenPolicy:
    """How put-token checks a token, and who hears of an expiry."""

    keys: dict[str, str]
    accept_any_token: bool
    audience_hosts: frozenset[str]
    #: (expiry, connection key): a token that expires then was kept.
    on_expiry: Callable[[float, int], None]
    #: (connection key, audience, status, description): a put-token was answered (the log).
    on_answer: Callable[[int, object, int, str], None] = lambda *_: None


@dataclass(eq=False)
class CbsNode:
    """``$cbs`` for one connection."""

    connection: ConnectionRecord
    policy: TokenPolicy
    replies: Replies
    name: str = CBS_NODE
    replies_to: str | None = CBS_NODE

    def accept(self, data: bytes, txn_id: bytes | None, now: float) -> bytes | None:
        request = parse_request(data)
        properties = request.application_properties
        props = properties if isinstance(properties, dict) else {}
        token, audience = request.body, props.get("name")
        policy, tokens = self.policy, self.connection.tokens
        status, description = 202, "Accepted"
        if policy.accept_any_token:
            tokens.any_token = True
        else:
            try:
                if not isinstance(token, str) or not isinstance(audience, str):
                    raise SasTokenError("put-token needs a string token and a name (audience)")
                expiry = verify_sas_token(token, policy.keys, audience, now)
                tokens.put(audience_scope(audience, policy.audience_hosts), expiry, now)
                policy.on_expiry(expiry, self.connection.key)
            except SasTokenError as exc:
                status, description = 401, str(exc)
            except FakeServiceError as exc:
                status, description = exc.status_code, exc.description
        policy.on_answer(self.connection.key, audience, status, description)
        reply = Reply(request.message_id, status, description=description,
                      status_key="status-code")
        self.replies.send(self.connection, CBS_NODE, request.reply_to, reply)
        return None
