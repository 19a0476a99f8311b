"""The coordinator's frames (AMQP 1.0 part 4): control messages and transactional state.

A transaction is declared on the connection's coordinator: a sender link whose target
is a coordinator terminus (descriptor 0x30) with the capability
``amqp:local-transactions``. The controller (we) sends control messages on it and the
coordinator answers with each delivery's outcome::

    declare   (0x31) -> declared (0x33) [txn-id]     a transaction is open
    discharge (0x32) [txn-id, fail] -> accepted      committed (fail=false) / rolled back
                                    -> rejected      refused, with a transaction error

Work joins a transaction by carrying ``transactional-state`` (0x34) [txn-id] as its
transfer's delivery state; the service applies it only if the transaction commits.

This module encodes and decodes those frames, for the client's coordinator link
(:mod:`sbmgmt._engine.coordinator_link`), its deliveries and the fake namespace's coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cproton import (
    PN_BINARY,
    PN_DESCRIBED,
    PN_LIST,
    PN_ULONG,
    lib,
    pn_data_get_binary,
    pn_data_put_binary,
    pn_delivery_remote_state,
)
from proton import Data, Described, symbol, ulong

from ..errors import ProtocolError
from .encode import encode_amqp_value
from .sections import AMQP_VALUE, sections

__all__ = [
    "COORDINATOR_CAPABILITY",
    "DECLARED",
    "TRANSACTIONAL_STATE",
    "Declare",
    "Discharge",
    "decode_control",
    "encode_declare",
    "encode_discharge",
    "set_transactional_state",
    "transactional_state",
]

# "<descriptor name="amqp:declare:list" code="0x00000000:0x00000031"/>"; field: global-id
DECLARE = 0x31
# "<descriptor name="amqp:discharge:list" code="0x00000000:0x00000032"/>"; fields:
# txn-id (binary, mandatory), fail (boolean)
DISCHARGE = 0x32
# "<descriptor name="amqp:declared:list" code="0x00000000:0x00000033"/>"; field:
# txn-id (binary, mandatory). A delivery state (outcome) of the declare message.
DECLARED = 0x33
# "<descriptor name="amqp:transactional-state:list" code="0x00000000:0x00000034"/>";
# fields: txn-id (binary, mandatory), outcome (an outcome, optional)
TRANSACTIONAL_STATE = 0x34
#: What a coordinator target asks for (the capability every Service Bus SDK sends).
COORDINATOR_CAPABILITY = symbol("amqp:local-transactions")
_NAMES = {
    DECLARE: DECLARE, symbol("amqp:declare:list"): DECLARE,
    DISCHARGE: DISCHARGE, symbol("amqp:discharge:list"): DISCHARGE,
}


@dataclass(frozen=True, slots=True)
class Declare:
    """A declare control message; ``global_id`` is for distributed transactions."""

    global_id: Any = None


@dataclass(frozen=True, slots=True)
class Discharge:
    """A discharge control message: commit (``fail`` False) or roll back."""

    txn_id: bytes
    fail: bool


def encode_declare() -> bytes:
    """The declare message: an amqp-value body holding ``declare`` with no global-id."""
    return encode_amqp_value(Described(ulong(DECLARE), []))


def encode_discharge(txn_id: bytes, fail: bool) -> bytes:
    """The discharge message of ``txn_id``: an amqp-value body holding ``discharge``."""
    return encode_amqp_value(Described(ulong(DISCHARGE), [txn_id, fail]))


def decode_control(data: bytes) -> Declare | Discharge:
    """The control message a controller sent to a coordinator (ProtocolError if it is
    neither a declare nor a discharge)."""
    body = next((value for code, value in sections(data) if code == AMQP_VALUE), None)
    if not isinstance(body, Described):
        raise ProtocolError("a coordinator message holds a declare or a discharge as its "
                            "amqp-value body")
    kind = _NAMES.get(body.descriptor)
    fields = body.value if isinstance(body.value, list) else []
    if kind == DECLARE:
        return Declare(fields[0] if fields else None)
    if kind == DISCHARGE and fields and isinstance(fields[0], (bytes, memoryview)):
        fail = fields[1] if len(fields) > 1 else None
        if fail is not None and not isinstance(fail, bool):
            raise ProtocolError(f"discharge: fail must be a boolean, got {fail!r}")
        return Discharge(bytes(fields[0]), bool(fail))
    raise ProtocolError(f"not a declare or a discharge with a txn-id: {body.descriptor!r}")


def set_transactional_state(delivery: Any, txn_id: bytes, outcome: int | None = None) -> None:
    """Set ``delivery``'s (a C pointer) local state to transactional-state [txn-id] and,
    when given, its outcome (an outcome descriptor with no fields: 0x24 accepted...).

    Written into the disposition's data node by node (proton-C's own calls): the sender of
    every transactional transfer and settlement, client and fake, comes through here, and
    proton's Python wrappers cost several times more than the frame itself."""
    data = lib.pn_disposition_data(lib.pn_delivery_local(delivery))
    lib.pn_data_clear(data)
    lib.pn_data_put_list(data)
    lib.pn_data_enter(data)
    pn_data_put_binary(data, txn_id)
    if outcome is not None:  # described(ulong outcome, list [])
        lib.pn_data_put_described(data)
        lib.pn_data_enter(data)
        lib.pn_data_put_ulong(data, outcome)
        lib.pn_data_put_list(data)
        lib.pn_data_exit(data)
    lib.pn_data_exit(data)
    lib.pn_delivery_update(delivery, TRANSACTIONAL_STATE)


def transactional_state(delivery: Any) -> tuple[bytes, Any] | None:
    """The txn-id and outcome of ``delivery``'s (a C pointer) remote transactional-state,
    or None when its state is another one. The txn-id is copied (proton's binary values
    point into its buffers); the outcome is a ``Described`` (None when absent)."""
    if pn_delivery_remote_state(delivery) != TRANSACTIONAL_STATE:
        return None
    data = lib.pn_disposition_data(lib.pn_delivery_remote(delivery))
    lib.pn_data_rewind(data)
    if not lib.pn_data_next(data) or lib.pn_data_type(data) != PN_LIST:
        return None
    lib.pn_data_enter(data)
    if not lib.pn_data_next(data) or lib.pn_data_type(data) != PN_BINARY:
        return None
    txn_id = bytes(pn_data_get_binary(data))
    outcome = _outcome(data) if lib.pn_data_next(data) else None
    return txn_id, outcome


def _outcome(data: Any) -> Any:
    """The outcome at ``data``'s current node: an outcome with no fields read directly (the
    usual accepted), any other value by proton's decoder."""
    if lib.pn_data_type(data) == PN_DESCRIBED:
        lib.pn_data_enter(data)
        simple = (lib.pn_data_next(data) and lib.pn_data_type(data) == PN_ULONG)
        code = lib.pn_data_get_ulong(data) if simple else 0
        simple = simple and lib.pn_data_next(data) and lib.pn_data_type(data) == PN_LIST \
            and lib.pn_data_get_list(data) == 0
        lib.pn_data_exit(data)
        if simple:
            return Described(ulong(code), [])
    return Data(data).get_object()
