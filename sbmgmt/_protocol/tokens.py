"""CBS tokens of a connection's entities (sans-I/O).

Theory of operation
-------------------
Before an entity's management links attach, a put-token for its audience
(``sb://host/entity``) goes out on the connection's ``$cbs`` link pair, and a timer
sends a fresh token before the current one expires. :class:`TokenManager` owns that
part and nothing else: it asks the :class:`TokenSource` for tokens, and turns each
put-token into a :class:`~sbmgmt._protocol.dispatcher.PendingRequest` on :attr:`dispatcher`,
the ``$cbs`` pair's :class:`~sbmgmt._protocol.dispatcher.Dispatcher` (the same correlation,
window and time-out rules as a management request), and calls ``send``: the engine
writes it and feeds the reply to the dispatcher like any other. The request's future
resolves on the engine's thread, and its outcome decides:

- 2xx: the token is in force; a refresh is scheduled, and an AUTHORIZING entity is
  handed to ``attach``.
- while AUTHORIZING, anything else (a refusal, a reply that does not decode, no
  reply in time, no token from the source): ``refuse`` with UnauthorizedError (a 5xx
  with the error its status names), which fails the entity's waiting requests.
- on a refresh, a failure is logged and the refresh retried later
  (:data:`~sbmgmt._protocol.retry.TOKEN_REFRESH_RETRY`); the links stay up meanwhile.

Each connection is a generation: a put-token answered after its connection was lost
(or the manager closed) changes nothing. It never touches a socket or a thread; time
comes from the given clocks and timers from the given ``schedule``, so the tests
drive it by hand.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from ..amqp.envelope import PUT_TOKEN, encode_put_token
from ..errors import (
    ClientClosedError,
    NotFoundError,
    OperationTimeoutError,
    ServiceBusManagementError,
    UnauthorizedError,
    error_for_status,
)
from .dispatcher import DEFAULT_WINDOW, Dispatcher, PendingRequest
from .link_state import CBS_NODE, Cancellable, EntityLinks, LinkState
from .retry import TOKEN_REFRESH_RETRY

__all__ = ["PUT_TOKEN_TIMEOUT", "AccessTokenLike", "TokenManager", "TokenSource"]

_log = logging.getLogger("sbmgmt.io")

#: How long a put-token waits for its reply (and for room on the ``$cbs`` link).
PUT_TOKEN_TIMEOUT = 60.0
_REFRESH_MARGIN = 300.0


class AccessTokenLike(Protocol):
    """What a token source returns (``sbmgmt.auth.AccessToken`` fits)."""

    @property
    def token(self) -> str: ...

    @property
    def expires_on(self) -> float: ...

    @property
    def token_type(self) -> str: ...


class TokenSource(Protocol):
    """Anything that can produce a CBS token for an audience."""

    def get_token(self, audience: str) -> AccessTokenLike: ...


Schedule = Callable[[float, Callable[[], None]], Cancellable]


class TokenManager:
    """Put-tokens of one client's entities, through the ``$cbs`` dispatcher."""

    def __init__(
        self,
        tokens: TokenSource,
        *,
        schedule: Schedule,
        attach: Callable[[EntityLinks], None],
        refuse: Callable[[EntityLinks, ServiceBusManagementError], None],
        send: Callable[[], None],
        name: str = "",
        window: int = DEFAULT_WINDOW,
        wall_clock: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.tokens = tokens
        self.dispatcher = Dispatcher(window=window, name=CBS_NODE)
        self.reply_to = ""
        self.name = name
        self._schedule = schedule
        self._attach = attach
        self._refuse = refuse
        self._send = send
        self._wall_clock = wall_clock
        self._clock = clock
        self._generation = 0
        self._connected = False

    def connected(self) -> None:
        """A new connection: its ``$cbs`` replies come to a new :attr:`reply_to`."""
        self._generation += 1
        self._connected = True
        self.reply_to = f"{CBS_NODE}/sbmgmt-reply-{uuid.uuid4()}"

    def connection_lost(self) -> None:
        """Put-tokens of the lost connection are forgotten, unanswered."""
        self._forget()
        self.dispatcher.fail_all(_forgotten)

    def close(self) -> None:
        self._forget()
        self.dispatcher.fail_all(_forgotten)

    def authorize(self, links: EntityLinks) -> None:
        """Send a put-token for an IDLE entity (it is AUTHORIZING until the reply)."""
        links.move(LinkState.AUTHORIZING)
        try:
            token = usable_token(self.tokens.get_token(links.audience))
        except ServiceBusManagementError as exc:
            self._refuse(links, unauthorized(links, str(exc)))
            return
        except Exception as exc:
            self._refuse(links, unauthorized(links, f"no token ({type(exc).__name__})"))
            return
        self._put(links, token)

    def refresh(self, links: EntityLinks) -> None:
        """The refresh timer fired: a fresh token for an entity whose links are up."""
        links.refresh_task = None
        if not self._connected or links.state not in (LinkState.ATTACHING, LinkState.READY):
            return
        try:
            token = usable_token(self.tokens.get_token(links.audience))
        except Exception as exc:
            _log.warning(
                "%s: token refresh for %s failed (%s)", self.name, links.entity,
                type(exc).__name__,
            )
            self._schedule_refresh(links, self._wall_clock() + TOKEN_REFRESH_RETRY)
            return
        _log.debug("%s: refreshing the token of %s", self.name, links.entity)
        self._put(links, token)

    def _forget(self) -> None:
        self._generation += 1
        self._connected = False

    def _put(self, links: EntityLinks, token: AccessTokenLike) -> None:
        message_id = uuid.uuid4()
        answered: Future[Any] = Future()
        request: PendingRequest[Any] = PendingRequest(
            key=str(message_id), operation=PUT_TOKEN, idempotent=True,
            payload=encode_put_token(
                message_id=message_id, reply_to=self.reply_to, token_type=token.token_type,
                audience=links.audience, token=token.token,
            ),
            timeout=PUT_TOKEN_TIMEOUT, decode=_reply, future=answered,
        )
        generation = self._generation
        answered.add_done_callback(
            lambda future: self._answered(links, token, generation, future))
        self.dispatcher.submit(request, self._clock())
        self._send()

    def _answered(self, links: EntityLinks, token: AccessTokenLike, generation: int,
                  future: Future[Any]) -> None:
        if generation != self._generation:
            return
        error = future.exception()
        if error is None:
            reply = future.result()
            if 200 <= reply.status_code < 300:
                self._schedule_refresh(links, token.expires_on)
                if links.state is LinkState.AUTHORIZING:
                    self._attach(links)
                return
            error = _refused(links, reply)
        elif not isinstance(error, OperationTimeoutError):
            # A reply that does not decode (ProtocolError) ends the entity's attempt.
            self._refuse(links, unauthorized(links, f"bad CBS reply: {error}"))
            return
        elif links.state is LinkState.AUTHORIZING:
            error = unauthorized(links, str(error))
        if links.state is LinkState.AUTHORIZING:
            assert isinstance(error, ServiceBusManagementError)
            self._refuse(links, error)
        else:
            _log.warning("%s: token refresh for %s failed: %s", self.name, links.entity, error)
            self._schedule_refresh(links, self._wall_clock() + TOKEN_REFRESH_RETRY)

    def _schedule_refresh(self, links: EntityLinks, expires_on: float) -> None:
        links.cancel_refresh()
        remaining = expires_on - self._wall_clock()
        delay = max(0.5, remaining - min(_REFRESH_MARGIN, remaining * 0.2))
        links.refresh_task = self._schedule(delay, lambda: self.refresh(links))


def _reply(reply: Any) -> Any:
    """A put-token's result is its reply; :class:`TokenManager` reads the status."""
    return reply


def _forgotten(request: PendingRequest) -> ClientClosedError:
    return ClientClosedError(f"{request.operation}: its connection is gone",
                             operation=request.operation)


def unauthorized(links: EntityLinks, reason: str) -> UnauthorizedError:
    return UnauthorizedError(
        f"{PUT_TOKEN} for {links.entity} failed: {reason}", operation=PUT_TOKEN
    )


def _refused(links: EntityLinks, reply: Any) -> ServiceBusManagementError:
    """A put-token reply other than 2xx: a 5xx (or any refusal of a refresh) is the error
    its status names; while authorizing, a 404 is NotFoundError (the service refuses a
    token for an entity that does not exist: "Put token failed. status-code: 404 ... The
    messaging entity ... could not be found", as azure-service-bus-dotnet issue 415 shows),
    any other 4xx UnauthorizedError."""
    if reply.status_code >= 500 or links.state is not LinkState.AUTHORIZING:
        return error_for_status(
            PUT_TOKEN, reply.status_code, reply.error_condition, reply.description
        )
    kind = NotFoundError if reply.status_code == 404 else UnauthorizedError
    return kind(
        f"{PUT_TOKEN} for {links.entity} was refused with status {reply.status_code}"
        + (f": {reply.description}" if reply.description else ""),
        operation=PUT_TOKEN,
        status_code=reply.status_code,
        error_condition=reply.error_condition,
        description=reply.description,
    )


def _type_of(value: object) -> str:
    return "None" if value is None else type(value).__name__


def usable_token(token: Any) -> Any:
    """What a token source returned, if it is a usable token (else UnauthorizedError:
    the I/O thread reads these fields later and must not fail on them)."""
    what = "the credential's token"
    text = getattr(token, "token", None)
    if not isinstance(text, str) or not text:
        raise UnauthorizedError(f"{what} has no token string (got {_type_of(text)})")
    expires_on = getattr(token, "expires_on", None)
    if (isinstance(expires_on, bool) or not isinstance(expires_on, int | float)
            or not math.isfinite(expires_on)):
        raise UnauthorizedError(f"{what} has no expiry in epoch seconds (expires_on is "
                                f"{_type_of(expires_on)})")
    if not isinstance(getattr(token, "token_type", None), str):
        raise UnauthorizedError(f"{what} has no token_type string")
    return token
