"""What every operation module shares: the model base and the reply-status rule.

An operation module ``sbmgmt/ops/<name>.py`` defines, for its operation:

- ``OPERATION``: the operation name sent in the ``operation`` application property;
- ``IDEMPOTENT``: whether a lost request may be replayed automatically;
- ``Response``: a frozen pydantic model;
- ``Request``: a frozen pydantic model that subclasses ``OpRequest["Response"]`` (or
  ``TransactionalRequest["Response"]``) and repeats ``OPERATION`` and ``IDEMPOTENT`` as
  class variables, so a request knows its operation and, for mypy, its response type;
- ``encode(request) -> (application_properties, body)`` and the reverse
  ``decode_request(application_properties, body) -> Request`` (used by the fake);
- ``encode_response(response) -> (status_code, body)`` and the reverse
  ``decode(status_code, application_properties, body) -> Response``;
- optionally ``check_response(request, response)``: what the page says a reply holds
  *for the request it answers* (an expiry per lock token sent, a sequence number per
  message scheduled, only the messages asked for, at most ``top`` entries); a reply that
  breaks it raises :class:`~sbmgmt.errors.ProtocolError`, as callers pair results with
  their request by position.

All five functions are pure: values in, values out, no I/O. The registry
(``sbmgmt.ops``) finds every module of this package by itself: adding an operation
is adding its module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .._protocol.transaction import TransactionBase
from ..amqp.envelope import ERROR_CONDITION, STATUS_DESCRIPTION
from ..errors import ProtocolError, error_for_status

__all__ = [
    "ERROR_CONDITION",
    "STATUS_DESCRIPTION",
    "Int32Count",
    "Int32Offset",
    "OpModel",
    "OpRequest",
    "SequenceNumber",
    "SessionId",
    "TransactionalRequest",
    "check_at_most",
    "check_reply",
    "mismatch",
    "validated",
]


_M = TypeVar("_M", bound=BaseModel)
#: The Response type of a request (covariant: a request whose Response is ``A`` is a
#: request whose Response is ``A | B``).
R = TypeVar("R", bound="OpModel", covariant=True)

#: A sequence number travels as AMQP long.
SequenceNumber = Annotated[int, Field(ge=0, le=2**63 - 1)]
#: Counts the page types as AMQP int (message-count, top).
Int32Count = Annotated[int, Field(ge=1, le=2**31 - 1)]
#: Offsets the page types as AMQP int (skip).
Int32Offset = Annotated[int, Field(ge=0, le=2**31 - 1)]
#: Service Bus session ids are non-empty strings of at most 128 characters.
SessionId = Annotated[str, Field(min_length=1, max_length=128)]


class OpModel(BaseModel):
    """Base of every Request and Response: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class OpRequest(OpModel, Generic[R]):
    """Base of every Request: ``R`` is its operation's Response.

    ``EntityClient.send_request(request)`` returns an ``R``; the class variables say
    which operation the request is and whether a lost one may be replayed.
    """

    OPERATION: ClassVar[str]
    IDEMPOTENT: ClassVar[bool]


class TransactionalRequest(OpRequest[R]):
    """A request of an operation that supports transactions.

    ``transaction`` is an open transaction of the client that sends the request
    (``client.transaction()``). Its txn-id is not part of the body: it rides on the
    request's transfer as its transactional-state (AMQP 1.0 part 4, descriptor 0x34),
    set before the send.
    """

    transaction: TransactionBase | None = None


def check_reply(
    operation: str,
    status_code: int,
    application_properties: Mapping[str, Any] | None,
    *,
    no_content: bool = False,
) -> bool:
    """Raise the typed error for a failed status; return True for an empty (204) result.

    ``no_content`` says whether the page allows 204 for this operation.
    """
    if 200 <= status_code < 300:
        return status_code == 204 and no_content
    props = application_properties or {}
    condition = props.get(ERROR_CONDITION, props.get("error-condition"))
    description = props.get(STATUS_DESCRIPTION)
    raise error_for_status(
        operation,
        status_code,
        None if condition is None else str(condition),
        None if description is None else str(description),
    )


def validated(model: type[_M], operation: str, **values: Any) -> _M:
    """Build a model from decoded wire values; a bad value is a ProtocolError."""
    try:
        return model(**values)
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"{operation}: invalid value: {exc}", operation=operation) from None


def mismatch(operation: str, detail: str) -> ProtocolError:
    """The error for a reply that does not answer its request as the page says."""
    return ProtocolError(f"{operation}: the reply does not match the request: {detail}",
                         operation=operation)


def check_at_most(operation: str, what: str, got: int, limit: int) -> None:
    """A page of ``got`` entries must hold at most the ``limit`` asked for."""
    if got > limit:
        raise mismatch(operation, f"{got} {what} for at most {limit} asked for")
