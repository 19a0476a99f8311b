"""The ``<entity>/$management`` node: every operation, through the ``sbmgmt.ops`` codecs.

A request envelope (:func:`sbmgmt.amqp.envelope.parse_request`, the server decodes it) names
its operation, its body is decoded by the operation module's ``decode_request``
(:func:`decode_request`, which ``sbmgmt.testing``'s mock shares), handled against the
store, and answered with the module's ``encode_response`` inside
:func:`sbmgmt.amqp.envelope.encode_reply`. The hot operations
(peek-message, renew-lock) build their response body from the store's values without
the response model; tests hold those bodies equal to ``encode_response``'s.
"""

from __future__ import annotations

import functools
import logging
import math
import struct
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from sbmgmt import ops
from sbmgmt.amqp.decode import decode_described
from sbmgmt.amqp.encode import encode_amqp_value, encode_value
from sbmgmt.amqp.envelope import ASSOCIATED_LINK_NAME, Request, encode_reply, request_operation
from sbmgmt.amqp.sections import AMQP_VALUE_PREFIX
from sbmgmt.amqp.values import MAX_TIMESTAMP_MS, ms_from_datetime
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message
from sbmgmt.ops import (
    add_rule,
    batch_delete_messages,
    cancel_scheduled_message,
    get_session_state,
    peek_message,
    receive_by_sequence_number,
    remove_rule,
    renew_lock,
    renew_session_lock,
    schedule_message,
    set_session_state,
    update_disposition,
)

from ._addresses import entity_key
from ._coordinator import Coordinator, OpenTransaction, Staged
from ._entity import Entity
from ._entity_state import SessionOwner
from ._errors import (
    ArgumentError,
    ArgumentOutOfRange,
    EntityNotFound,
    FakeServiceError,
    InternalError,
    SessionLockLost,
)
from ._session_rule_ops import RULE_HANDLERS, SESSION_HANDLERS
from ._storable import check_storable
from ._store import Store, Topic
from ._throttle import MANAGEMENT_COST

__all__ = ["EncodedBody", "ManagementNode", "Reply", "decode_request"]

_LOG = logging.getLogger("fakes.management")

#: Stands in for a correlation-id while a reply envelope is encoded once per status code.
_PLACEHOLDER_ID = uuid.UUID("5bd1e995-c0de-4a11-9e5e-f1d0c0ffee42")
_MESSAGES_KEY = encode_value("messages")
_MESSAGE_KEY = encode_value("message")
_EXPIRATIONS_KEY = encode_value("expirations")
_BB = struct.Struct(">BB").pack
_BI = struct.Struct(">BI").pack
_BII = struct.Struct(">BII").pack


@dataclass(frozen=True, slots=True)
class EncodedBody:
    """A reply body already encoded, as its whole amqp-value section (the hot paths)."""

    section: bytes

    def value(self) -> Any:
        """The body value the section encodes."""
        return decode_described(self.section)[1]


@functools.cache
def _envelope(status_code: int) -> tuple[bytes, bytes]:
    """A success reply's encoding before and after its (uuid) correlation-id's 16 bytes."""
    encoded = encode_reply(_PLACEHOLDER_ID, status_code)
    at = encoded.index(_PLACEHOLDER_ID.bytes)
    return encoded[:at], encoded[at + 16:]


@dataclass(frozen=True, slots=True)
class Reply:
    """A management reply: :func:`sbmgmt.amqp.envelope.encode_reply`'s arguments."""

    correlation_id: Any
    status_code: int
    body: Any = None
    description: str | None = None
    error_condition: str | None = None
    #: ``"status-code"`` for the ``$cbs`` node's replies.
    status_key: str = "statusCode"

    @classmethod
    def refusal(cls, correlation_id: Any, error: FakeServiceError) -> Reply:
        """The reply that refuses a request with ``error``'s status and condition."""
        return cls(correlation_id, error.status_code, description=error.description,
                   error_condition=error.condition)

    def encode(self) -> bytes:
        """The reply's bytes (:func:`~sbmgmt.amqp.envelope.encode_reply`); a reply with a
        uuid correlation-id and no description or error condition (every success) is put
        together from its status code's envelope, encoded once, and its body."""
        if (type(self.correlation_id) is not uuid.UUID or self.description is not None
                or self.error_condition is not None or self.status_key != "statusCode"):
            body = self.body.value() if isinstance(self.body, EncodedBody) else self.body
            return encode_reply(self.correlation_id, self.status_code, body,
                                description=self.description,
                                error_condition=self.error_condition,
                                status_key=self.status_key)
        before, after = _envelope(self.status_code)
        encoded = before + self.correlation_id.bytes + after
        if self.body is None:
            return encoded
        if isinstance(self.body, EncodedBody):
            return encoded + self.body.section
        return encoded + encode_amqp_value(self.body)


_Handler = Callable[[Entity, Any, float], Any]
#: Handles a decoded request and encodes its response: ``(status, body)``.
_EncodingHandler = Callable[[Entity, Any, float], tuple[int, Any]]


#: The operations the service applies only to a session locked by the receiver link
#: named in the request's ``associated-link-name``, on the requesting connection.
_HOLDER_ONLY = frozenset({renew_session_lock.OPERATION, get_session_state.OPERATION,
                          set_session_state.OPERATION})
#: Which session receiver link ``name`` is on connection ``key`` (None: no such link).
OwnerOf = Callable[[int, str], SessionOwner | None]


@functools.cache
def _entry_head(size: int) -> bytes:
    """What precedes a message's wire bytes of ``size`` in its ``{"message": ...}`` map32."""
    head = _BB(0xA0, size) if size < 256 else _BI(0xB0, size)  # vbin8 / vbin32
    return _BII(0xD1, 4 + len(_MESSAGE_KEY) + len(head) + size, 2) + _MESSAGE_KEY + head


def message_list_body(wires: list[bytes]) -> EncodedBody:
    """``encode_amqp_value({"messages": encoded_message_list(wires)})`` for one or more
    messages' wire bytes, put together from them: a map32 holding a list32 of one map32
    per message."""
    heads = [_entry_head(len(wire)) for wire in wires]
    size = sum(map(len, heads)) + sum(map(len, wires))
    listed = _BII(0xD0, 4 + size, len(wires))
    parts = [AMQP_VALUE_PREFIX, _BII(0xD1, 4 + len(_MESSAGES_KEY) + len(listed) + size, 2),
             _MESSAGES_KEY, listed]
    for head, wire in zip(heads, wires, strict=True):
        parts.append(head)
        parts.append(wire)
    return EncodedBody(b"".join(parts))


def _peek(entity: Entity, request: peek_message.Request, _now: float) -> tuple[int, Any]:
    """Peeked messages go out as each one's cached wire bytes (no lock token):
    ``encode_wire_response`` of them, encoded."""
    found = entity.peek(request.from_sequence_number, request.message_count, request.session_id)
    if not found:
        return peek_message.encode_wire_response([])
    return 200, message_list_body([m.wire() for m in found])


def _ms(seconds: float) -> int:
    """``ms_from_datetime(as_datetime(seconds))`` without the datetime (which keeps whole
    microseconds, the fraction rounded half to even)."""
    fraction, whole = math.modf(seconds)
    return int(whole) * 1000 + round(fraction * 1e6) // 1000


def expirations_body(milliseconds: list[int]) -> EncodedBody:
    """``encode_amqp_value({"expirations": <array of timestamp>})``, renew-lock's response
    body: a map32 holding an array32 of timestamps (0x83, milliseconds since the epoch)."""
    items = struct.pack(f">{len(milliseconds)}q", *milliseconds)
    array = _BII(0xF0, 5 + len(items), len(milliseconds)) + b"\x83" + items
    header = _BII(0xD1, 4 + len(_EXPIRATIONS_KEY) + len(array), 2)
    return EncodedBody(b"".join((AMQP_VALUE_PREFIX, header, _EXPIRATIONS_KEY, array)))


def _renew_lock(entity: Entity, request: renew_lock.Request, now: float) -> tuple[int, Any]:
    """``encode_response`` of the new expiries, each taken to milliseconds directly (once
    per distinct expiry: the locks renewed at one moment share theirs)."""
    in_ms: dict[float, int] = {}
    expirations = []
    for token in request.lock_tokens:
        expiry = entity.renew(token, now)
        ms = in_ms.get(expiry)
        if ms is None:
            ms = in_ms[expiry] = _ms(expiry)
        expirations.append(ms)
    # "expirations | array of timestamp | Yes | new expiration per request lock token."
    return 200, expirations_body(expirations)


def _check_schedule(request: schedule_message.Request) -> None:
    """Every message of a schedule-message request checked before any takes a sequence
    number (a refused request uses none up)."""
    for message in request.messages:
        when = message.scheduled_enqueue_time
        if when is None:
            raise ArgumentError("each scheduled message needs x-opt-scheduled-enqueue-time")
        check_storable(message)
        if ms_from_datetime(when) >= MAX_TIMESTAMP_MS:
            raise ArgumentOutOfRange(
                f"The scheduled enqueue time {when.isoformat()} is out of range: it must be "
                "before 9999-12-31T23:59:59.999Z (DateTime.MaxValue).")


def _schedule(entity: Entity, request: schedule_message.Request,
              now: float) -> schedule_message.Response:
    _check_schedule(request)
    entity.check_sessions(list(request.messages))
    return schedule_message.Response(sequence_numbers=tuple(
        entity.accept(m, now) for m in request.messages))


def _schedule_in(transaction: OpenTransaction, entity: Entity,
                 request: schedule_message.Request, now: float) -> schedule_message.Response:
    """Schedule when the transaction commits; the sequence numbers are given now."""
    _check_schedule(request)
    entity.check_sessions(list(request.messages))
    numbered = list(zip(entity.reserve_sequence_numbers(len(request.messages)),
                        request.messages, strict=True))

    def schedule(at: float) -> None:
        for sequence, message in numbered:
            entity.accept(message, at, sequence)

    transaction.stage(Staged(schedule, messages=len(numbered)))  # the transaction's quota
    return schedule_message.Response(sequence_numbers=tuple(n for n, _ in numbered))


def _schedule_on_topic(topic: Topic, request: schedule_message.Request,
                       now: float) -> schedule_message.Response:
    """Schedule on a topic: kept by the topic, fanned out when due (the store)."""
    _check_schedule(request)
    return schedule_message.Response(sequence_numbers=tuple(
        topic.schedule(m, _due_seconds(m)) for m in request.messages))


def _due_seconds(message: Message) -> float:
    when = message.scheduled_enqueue_time
    assert when is not None  # _check_schedule refused a message without one
    return ms_from_datetime(when) / 1000


def _cancel_on_topic(topic: Topic, request: cancel_scheduled_message.Request,
                     _now: float) -> cancel_scheduled_message.Response:
    topic.cancel(list(request.sequence_numbers))
    return cancel_scheduled_message.Response()


def _cancel(entity: Entity, request: cancel_scheduled_message.Request,
            _now: float) -> cancel_scheduled_message.Response:
    entity.cancel_scheduled(list(request.sequence_numbers))
    return cancel_scheduled_message.Response()


def _receive_deferred(entity: Entity, request: receive_by_sequence_number.Request,
                      now: float) -> receive_by_sequence_number.Response:
    mode = receive_by_sequence_number.ReceiverSettleMode
    peek_lock = request.receiver_settle_mode is mode.PEEK_LOCK
    found = entity.receive_deferred(list(request.sequence_numbers), now, peek_lock=peek_lock,
                                    session_id=request.session_id)
    return receive_by_sequence_number.Response(messages=tuple(m.render() for m in found))


def _dispose(entity: Entity, request: update_disposition.Request,
             now: float) -> update_disposition.Response:
    status = update_disposition.DispositionStatus
    props = request.properties_to_modify
    for token in request.lock_tokens:
        if request.disposition_status is status.COMPLETED:
            entity.complete(token, now)
        elif request.disposition_status is status.ABANDONED:
            entity.abandon(token, now, props)
        elif request.disposition_status is status.DEFERED:
            entity.defer(token, now, props)
        else:
            entity.dead_letter(token, now, request.dead_letter_reason,
                               request.dead_letter_description, props)
    return update_disposition.Response()


def _dispose_in(transaction: OpenTransaction, entity: Entity,
                request: update_disposition.Request,
                now: float) -> update_disposition.Response:
    """Settle when the transaction commits; every lock must be valid now and then."""

    def check(at: float) -> None:
        for token in request.lock_tokens:
            entity.locked(token, at)

    def dispose(at: float) -> None:
        _dispose(entity, request, at)

    check(now)
    transaction.stage(Staged(dispose, check, tuple(request.lock_tokens)))
    return update_disposition.Response()


def _batch_delete(entity: Entity, request: batch_delete_messages.Request,
                  now: float) -> batch_delete_messages.Response:
    """The oldest available messages before the cutoff, at most the count asked for (the
    tier's quota is checked first: :meth:`ManagementNode._check_tier`)."""
    return batch_delete_messages.Response(message_count=entity.batch_delete(
        request.message_count, ms_from_datetime(request.enqueued_time_utc), request.session_id,
        now))


_HANDLERS: dict[str, _Handler] = {
    batch_delete_messages.OPERATION: _batch_delete,
    schedule_message.OPERATION: _schedule,
    cancel_scheduled_message.OPERATION: _cancel,
    receive_by_sequence_number.OPERATION: _receive_deferred,
    update_disposition.OPERATION: _dispose,
    **SESSION_HANDLERS,
    **RULE_HANDLERS,
}

#: The operations a topic's management node answers (the rest are its subscriptions').
_TOPIC_HANDLERS: dict[str, Callable[[Topic, Any, float], Any]] = {
    schedule_message.OPERATION: _schedule_on_topic,
    cancel_scheduled_message.OPERATION: _cancel_on_topic,
}

#: The operations that support transactions, and how each is staged on one.
_TRANSACTIONAL_HANDLERS: dict[str, Callable[[OpenTransaction, Entity, Any, float], Any]] = {
    schedule_message.OPERATION: _schedule_in,
    update_disposition.OPERATION: _dispose_in,
}

#: Operations whose handler encodes its own response (from cached message bytes, or
#: from the store's float seconds).
_ENCODING_HANDLERS: dict[str, _EncodingHandler] = {
    peek_message.OPERATION: _peek,
    renew_lock.OPERATION: _renew_lock,
}


def decode_request(message: Request) -> tuple[ModuleType, Any]:
    """A request message's operation module and typed ``Request``, decoded as the service
    reads it; ArgumentError (400, the service's answer) if it is malformed or its
    operation unknown."""
    try:
        operation = request_operation(message)
        module = ops.OPERATIONS.get(operation)
        if module is None:
            raise ArgumentError(f"Unknown management operation {operation!r}.")
        # sbmgmt.amqp.decode's values are owned already (no proton memoryviews to copy).
        return module, module.decode_request(message.application_properties, message.body)
    except ProtocolError as exc:
        raise ArgumentError(str(exc)) from None


class ManagementNode:
    """Answers management requests for every entity of a store.

    renew-session-lock and get/set-session-state apply, as on the service, only to a
    session locked by the receiver link named in the request's ``associated-link-name``
    on the requesting connection (``owner_of`` finds that link's lock). With
    ``relaxed_session_locks`` any holder will do, on any connection (the fake's former
    behaviour, for tests that lock sessions with ``FakeNamespace.receive_and_lock``).
    """

    def __init__(self, store: Store, owner_of: OwnerOf | None = None,
                 transactions: Coordinator | None = None, *,
                 relaxed_session_locks: bool = False) -> None:
        self._store = store
        self._transactions = transactions if transactions is not None else Coordinator()
        self._owner_of = owner_of
        self.relaxed_session_locks = relaxed_session_locks
        #: (entity key, operation) -> how many requests were applied (answered with success).
        self.applied: Counter[tuple[str, str]] = Counter()

    def handle(self, path: str, message: Request, connection: int,
               now: float, txn_id: bytes | None = None) -> Reply:
        """The reply to one request message sent to ``<path>/$management`` (``txn_id``:
        the transaction its transfer names, if any)."""
        message_id = message.message_id
        try:
            module, decoded = decode_request(message)
            operation = module.OPERATION
            self._check_tier(path, operation, decoded)
            if self._store.is_topic(path):
                return self._on_topic(path, message_id, module, decoded, now, txn_id)
            entity = self._store.entity(path)
            if operation in _HOLDER_ONLY and not self.relaxed_session_locks:
                self._check_holder(entity, decoded.session_id, message.application_properties,
                                   connection, now)
            elif (operation == receive_by_sequence_number.OPERATION
                  and entity.settings.requires_session and not self.relaxed_session_locks):
                # A session's deferred messages are received under its lock: the service
                # answers session-lock-lost otherwise (azure-sdk-for-net issue 34662).
                self._check_holder(entity, decoded.session_id or "",
                                   message.application_properties, connection, now)
            encoding = _ENCODING_HANDLERS.get(operation)
            if txn_id is not None:
                staged = _TRANSACTIONAL_HANDLERS.get(operation)
                if staged is None:
                    raise ArgumentError(f"The operation {operation!r} does not support "
                                        "transactions.")
                transaction = self._transactions.transaction(txn_id, connection, now)
                status, body = module.encode_response(staged(transaction, entity, decoded, now))
            elif encoding is not None:
                status, body = encoding(entity, decoded, now)
            else:
                status, body = module.encode_response(
                    _HANDLERS[operation](entity, decoded, now))
            self.applied[(entity_key(path), operation)] += 1
            return Reply(message_id, status, body)
        except ProtocolError as exc:
            error: FakeServiceError = ArgumentError(str(exc))
        except FakeServiceError as exc:
            error = exc
        except Exception as exc:  # a bug here must answer 500, not stop the server
            _LOG.exception("management request to %s failed", path)
            error = InternalError(f"{type(exc).__name__} in the fake namespace")
        return Reply.refusal(message_id, error)

    def _check_tier(self, path: str, operation: str, decoded: Any) -> None:
        """What the namespace's tier refuses of a request: its credits (a rule operation is
        a management operation, 10; every other request 1: ``fakes._throttle``), the
        batch-delete quota and the topic's filter quotas."""
        store = self._store
        rule_change = operation in (add_rule.OPERATION, remove_rule.OPERATION)
        store.throttle.charge(MANAGEMENT_COST if rule_change else 1)
        if operation == batch_delete_messages.OPERATION:
            store.tier.check_batch_delete(decoded.message_count)
        elif operation == add_rule.OPERATION and "/Subscriptions/" in path:
            store.check_filters(path.split("/Subscriptions/", 1)[0], [decoded.filter])

    def _on_topic(self, path: str, message_id: Any, module: ModuleType, decoded: Any,
                  now: float, txn_id: bytes | None) -> Reply:
        """Schedule or cancel on a topic; its node answers nothing else (404, as before)."""
        handler = _TOPIC_HANDLERS.get(module.OPERATION)
        if handler is None:
            raise EntityNotFound.of(path)
        if txn_id is not None:
            raise ArgumentError("The fake does not schedule on a topic in a transaction.")
        status, body = module.encode_response(handler(self._store.topic(path), decoded, now))
        self.applied[(entity_key(path), module.OPERATION)] += 1
        return Reply(message_id, status, body)

    def _check_holder(self, entity: Entity, session_id: str, properties: dict[Any, Any],
                      connection: int, now: float) -> None:
        """The session must be locked by the request's associated link (else 410)."""
        name = properties.get(ASSOCIATED_LINK_NAME)
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        owner = None
        if isinstance(name, str) and self._owner_of is not None:
            owner = self._owner_of(connection, name)
        record = entity.sessions.get(session_id)
        if owner is None or record is None or not record.held(now) or record.owner != owner:
            raise SessionLockLost(
                f"The session lock for {session_id!r} is not held by the receiver link named "
                "in associated-link-name on this connection; lock the session with a session "
                "receiver first.")
