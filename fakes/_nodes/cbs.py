"""The ``$cbs`` node: put-token requests, whose grants authorize the connection's links.

A valid token is kept in the connection's :class:`~fakes._auth.TokenBook` for its audience's
scope, and its expiry noted (the server's token timer detaches the links it covered when
it passes); the reply's ``status-code`` is 202, or 401 for a token that does not verify.

A valid token whose audience names an entity that does not exist is refused with 404 and
the service's words, "The messaging entity 'sb://…/queen0' could not be found."
(azure-service-bus issue 304, a put-token of the Python SDK; azure-service-bus-dotnet issue
415 and PurpleExplorer issue 103, the .NET client's "Put token failed. status-code: 404",
for an entity and for a deleted queue's ``$management`` node): the SDKs raise it at the
link's open, the Python SDK as ``ServiceBusAuthenticationError``
(``test_session_connection_failure_is_idempotent``). The signature is checked first, as the
service authorizes before it looks the entity up (azure-sdk-for-net issue 44734). An
audience names an entity when an entity is at its path or below it (a token for ``a``
covers ``a/b``: the fake keeps such a prefix token working); the namespace always exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sbmgmt.amqp.envelope import parse_request
from sbmgmt.auth import SasTokenError, verify_sas_token

from .._addresses import CBS_NODE
from .._auth import Scope, audience_scope
from .._errors import EntityNotFound, FakeServiceError
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
    #: Whether an audience's scope (its path's lower-case segments) names an entity.
    names_entity: Callable[[Scope], bool]
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
                scope = audience_scope(audience, policy.audience_hosts)
                if scope and not self.names_entity(scope):
                    raise EntityNotFound.of(audience)
                tokens.put(scope, expiry, now)
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
