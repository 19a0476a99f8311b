"""One module per management operation, and the registry of them, found by itself.

Each module defines ``OPERATION``, ``IDEMPOTENT``, ``Request`` (an ``OpRequest`` of its
``Response``), ``Response``, ``encode``, ``decode_request``, ``encode_response`` and
``decode`` (see ``_base``). The client encodes requests and decodes replies with them;
the fake namespace uses the same modules the other way round. Every public module of
this package is an operation: the registry below lists them, and every other list of
operations (the fake's handlers, ``sbmgmt.testing``'s mock, the tests, the docs) is
checked against it.
"""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from collections.abc import Mapping
from types import ModuleType
from typing import Any, cast

from ..amqp.envelope import EncodedRequest, Reply, encode_operation
from ..errors import OUTCOME_UNKNOWN
from ._base import OpModel, OpRequest, R

__all__ = ["MODULE_BY_REQUEST", "NAMES", "OPERATIONS", "decode_reply", "decode_response",
           "encode_request", "module_of", "operation"]

#: Module names, one per operation: every module of this package not named ``_*``.
NAMES = tuple(sorted(
    info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")
))

_MODULES = tuple(importlib.import_module(f"{__name__}.{name}") for name in NAMES)

#: Operation name (e.g. ``"com.microsoft:renew-lock"``) -> its module.
OPERATIONS: dict[str, ModuleType] = {module.OPERATION: module for module in _MODULES}

#: Request class -> its module (how the client finds the codec for a request).
MODULE_BY_REQUEST: dict[type[OpModel], ModuleType] = {
    module.Request: module for module in _MODULES
}


def operation(name: str) -> ModuleType:
    """The module of an operation name.

    Args:
        name: An operation name, for example ``"com.microsoft:renew-lock"``.

    Returns:
        Its module (``sbmgmt.ops.renew_lock``).

    Raises:
        KeyError: No operation has that name (the message names it).
    """
    try:
        return OPERATIONS[name]
    except KeyError:
        raise KeyError(f"unknown management operation {name!r}") from None


def module_of(request: OpModel) -> ModuleType:
    """The module whose ``Request`` class a request is.

    Args:
        request: An operation's ``Request``.

    Returns:
        Its module (``sbmgmt.ops.peek_message`` for an ``ops.peek_message.Request``).

    Raises:
        TypeError: ``request`` is not a request of any sbmgmt operation.
    """
    module = MODULE_BY_REQUEST.get(type(request))
    if module is None:
        raise TypeError(f"{type(request).__name__} is not a request of any sbmgmt operation")
    return module


def decode_response(
    request: OpRequest[R],
    status_code: int,
    application_properties: Mapping[str, Any],
    body: Any,
) -> R:
    """The response to ``request`` that a reply holds, typed as the request's ``Response``.

    Decoded by the operation's own ``decode`` and checked against the request by its
    ``check_response``, where it has one. Each module's ``decode`` returns its ``Response``, the
    ``R`` of its ``Request`` (``tests/unit/test_ops_registry.py`` holds every module to that).

    Args:
        request: The request the reply answers.
        status_code: The reply's status code.
        application_properties: The reply's application properties.
        body: The reply's body (the decoded amqp-value).

    Returns:
        The operation's ``Response``.

    Raises:
        sbmgmt.errors.OperationError: The reply is a failure (its status is not 2xx); the
            subclass for its status and condition.
        sbmgmt.errors.ProtocolError: The reply does not follow the operation's protocol, or does
            not answer the request.
        TypeError: ``request`` is not a request of any sbmgmt operation.
    """
    module = module_of(request)
    response = module.decode(status_code, application_properties, body)
    check = getattr(module, "check_response", None)
    if check is not None:
        check(request, response)
    return cast(R, response)


def encode_request(
    request: OpModel,
    *,
    message_id: uuid.UUID,
    reply_to: str,
    server_timeout_ms: int | None = None,
    associated_link_name: str | None = None,
) -> EncodedRequest:
    """The complete request message for an operation's ``Request``, encoded.

    The envelope of ``sbmgmt.amqp.envelope.encode_operation`` around the operation
    module's ``encode``.

    Args:
        request: The operation's ``Request``.
        message_id: The request's message-id (the reply's correlation-id).
        reply_to: The address of the client's reply link.
        server_timeout_ms: The ``com.microsoft:server-timeout`` application property; None
            leaves it out.
        associated_link_name: The ``associated-link-name`` application property (the
            receiver link that holds the lock or session); None leaves it out.

    Returns:
        The encoded request message, ready to send on the management link.

    Raises:
        sbmgmt.errors.ProtocolError: A value the AMQP encoder cannot encode.
    """
    module = module_of(request)
    properties, body = module.encode(request)
    return encode_operation(
        module.OPERATION, properties, body, message_id=message_id, reply_to=reply_to,
        server_timeout_ms=server_timeout_ms, associated_link_name=associated_link_name,
    )


def decode_reply(request: OpRequest[R], reply: Reply) -> R:
    """The operation's typed Response for this reply.

    Args:
        request: The request the reply answers (it names the operation and its Response).
        reply: The reply's status code, application properties and body.

    Returns:
        The operation's ``Response``.

    Raises:
        sbmgmt.errors.OperationError: The reply's status is not a success: the error its
            status code and condition map to (``may_have_been_applied`` set where the outcome
            is unknown and the operation is not idempotent).
        sbmgmt.errors.ProtocolError: The reply does not decode as the operation's Response.
    """
    try:
        return decode_response(
            request, reply.status_code, reply.application_properties, reply.body
        )
    except OUTCOME_UNKNOWN as error:
        error.may_have_been_applied = not request.IDEMPOTENT
        raise
