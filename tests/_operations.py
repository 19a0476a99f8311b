"""Per-operation test data, in one place: what a new operation adds to the tests.

- ``REQUESTS``: a hypothesis strategy of requests for every operation (request round trips,
  our encoder against proton's bytes);
- ``RESPONSES``: strategies of the responses that carry data (response round trips);
- ``SAMPLES``: one request and one response for every operation (the in-process and the wire
  paths of ``sbmgmt.testing`` carry the same bytes);
- ``NOT_IDEMPOTENT``: the operations that are not replayed automatically (DESIGN §2).

Tests hold each table to the registry ``sbmgmt.ops.OPERATIONS``, so an operation missing
here fails them by name. The strategies of the values inside (messages, rules) live here
too, for the tests that draw them directly.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

from sbmgmt import ops
from sbmgmt.message import Message as SbMessage
from sbmgmt.message import MessageState, ReceivedMessage
from sbmgmt.ops import (
    add_rule,
    batch_delete_messages,
    cancel_scheduled_message,
    enumerate_rules,
    get_message_sessions,
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
from sbmgmt.ops._base import OpModel
from sbmgmt.ops.update_disposition import DispositionStatus
from sbmgmt.rules import (
    CorrelationFilter,
    FalseFilter,
    RuleDescription,
    SqlFilter,
    SqlRuleAction,
    TrueFilter,
)

UTC = timezone.utc

# --- rules ----------------------------------------------------------------------------

names = st.text(min_size=1, max_size=20)
optional_texts = st.none() | st.text(max_size=12)
rule_datetimes = st.integers(min_value=-(2**41), max_value=253402300799000).map(
    lambda ms: datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
)
property_values = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.uuids(),
    rule_datetimes,
    st.timedeltas(timedelta(microseconds=-(2**63 // 10)), timedelta(microseconds=2**63 // 10)),
)
CORRELATION_ATTRIBUTES = (
    "correlation_id", "message_id", "to", "reply_to", "subject", "session_id",
    "reply_to_session_id", "content_type",
)


@st.composite
def correlation_filters(draw: st.DrawFn) -> CorrelationFilter:
    values: dict[str, Any] = {name: draw(optional_texts) for name in CORRELATION_ATTRIBUTES}
    values["properties"] = draw(st.dictionaries(st.text(max_size=8), property_values, max_size=4))
    if not values["properties"] and all(values[name] is None for name in CORRELATION_ATTRIBUTES):
        values["correlation_id"] = draw(names)
    return CorrelationFilter(**values)


sql_filters = st.builds(SqlFilter, expression=names)
rule_filters = st.one_of(
    sql_filters, correlation_filters(), st.just(TrueFilter()), st.just(FalseFilter())
)
actions = st.none() | st.builds(SqlRuleAction, expression=names)
rules = st.builds(
    RuleDescription,
    name=names,
    filter=rule_filters,
    action=actions,
    created_at=st.none() | rule_datetimes,
)


# --- messages and operations -----------------------------------------------------------

ms_datetimes = st.integers(min_value=0, max_value=253402300799000).map(
    lambda ms: datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
)
texts = st.text(min_size=1, max_size=20)
session_ids = st.text(min_size=1, max_size=128)
sequence_numbers = st.integers(min_value=0, max_value=2**63 - 1)
tokens = st.uuids()
app_values = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), texts,
                       st.binary(max_size=8))

outgoing = st.builds(
    SbMessage,
    body=st.binary(max_size=64),
    message_id=texts,
    session_id=st.none() | session_ids,
    correlation_id=st.none() | texts,
    subject=st.none() | texts,
    content_type=st.none() | st.text(alphabet=st.characters(max_codepoint=127), min_size=1),
    application_properties=st.dictionaries(texts, app_values, max_size=3),
    scheduled_enqueue_time=ms_datetimes,
    time_to_live=st.none() | st.integers(0, 2**31).map(lambda ms: timedelta(milliseconds=ms)),
)
received = st.builds(
    ReceivedMessage,
    body=st.binary(max_size=64),
    message_id=st.none() | texts,
    session_id=st.none() | session_ids,
    sequence_number=sequence_numbers,
    enqueued_time=st.none() | ms_datetimes,
    locked_until=st.none() | ms_datetimes,
    state=st.sampled_from(MessageState),
    dead_letter_reason=st.none() | texts,
    dead_letter_source=st.none() | texts,
    # The dead-letter application properties are typed fields of a received message, so
    # they cannot round-trip as plain application properties (Hypothesis draws string
    # constants it finds in sbmgmt, such as these keys).
    application_properties=st.dictionaries(
        texts.filter(lambda key: key not in ("DeadLetterReason", "DeadLetterErrorDescription")),
        app_values, max_size=3),
)
locked = received.map(lambda m: m.model_copy(update={"lock_token": uuid.uuid4()}))

#: Requests of every operation (round trips; the encoder against proton).
REQUESTS: dict[ModuleType, st.SearchStrategy[Any]] = {
    renew_lock: st.builds(renew_lock.Request, lock_tokens=st.lists(tokens, min_size=1, max_size=5)
                          .map(tuple), session_id=st.none() | session_ids),
    peek_message: st.builds(peek_message.Request, from_sequence_number=sequence_numbers,
                            message_count=st.integers(1, 2**31 - 1),
                            session_id=st.none() | session_ids),
    schedule_message: st.builds(schedule_message.Request,
                                messages=st.lists(outgoing, min_size=1, max_size=3).map(tuple)),
    cancel_scheduled_message: st.builds(
        cancel_scheduled_message.Request,
        sequence_numbers=st.lists(sequence_numbers, min_size=1, max_size=5).map(tuple)),
    renew_session_lock: st.builds(renew_session_lock.Request, session_id=session_ids),
    set_session_state: st.builds(set_session_state.Request, session_id=session_ids,
                                 session_state=st.none() | st.binary(max_size=64)),
    get_session_state: st.builds(get_session_state.Request, session_id=session_ids),
    get_message_sessions: st.builds(get_message_sessions.Request, last_updated_time=ms_datetimes,
                                    skip=st.integers(0, 2**31 - 1), top=st.integers(1, 2**31 - 1)),
    receive_by_sequence_number: st.builds(
        receive_by_sequence_number.Request,
        sequence_numbers=st.lists(sequence_numbers, min_size=1, max_size=5).map(tuple),
        receiver_settle_mode=st.sampled_from(receive_by_sequence_number.ReceiverSettleMode),
        session_id=st.none() | session_ids),
    update_disposition: st.builds(
        update_disposition.Request,
        disposition_status=st.sampled_from(
            [s for s in update_disposition.DispositionStatus
             if s is not update_disposition.DispositionStatus.SUSPENDED]),
        lock_tokens=st.lists(tokens, min_size=1, max_size=5).map(tuple),
        properties_to_modify=st.none() | st.dictionaries(texts, app_values, min_size=1,
                                                         max_size=3)),
    add_rule: st.builds(add_rule.Request, rule_name=names, filter=rule_filters, action=actions),
    remove_rule: st.builds(remove_rule.Request, rule_name=names),
    enumerate_rules: st.builds(enumerate_rules.Request, top=st.integers(1, 2**31 - 1),
                               skip=st.integers(0, 2**31 - 1)),
    batch_delete_messages: st.builds(
        batch_delete_messages.Request, message_count=st.integers(1, 2**31 - 1),
        enqueued_time_utc=ms_datetimes, session_id=st.none() | session_ids),
}

#: Responses of the operations whose replies carry data of their own (the rule operations'
#: replies are drawn from ``rules`` in tests/unit/test_rules.py).
RESPONSES: dict[ModuleType, st.SearchStrategy[Any]] = {
    renew_lock: st.builds(renew_lock.Response,
                          expirations=st.lists(ms_datetimes, max_size=5).map(tuple)),
    peek_message: st.builds(peek_message.Response,
                            messages=st.lists(received, max_size=3).map(tuple)),
    schedule_message: st.builds(schedule_message.Response,
                                sequence_numbers=st.lists(sequence_numbers, max_size=5).map(tuple)),
    cancel_scheduled_message: st.just(cancel_scheduled_message.Response()),
    renew_session_lock: st.builds(renew_session_lock.Response, expiration=ms_datetimes),
    set_session_state: st.just(set_session_state.Response()),
    get_session_state: st.builds(get_session_state.Response,
                                 session_state=st.none() | st.binary(max_size=64)),
    get_message_sessions: st.builds(
        get_message_sessions.Response, skip=st.integers(0, 2**31 - 1),
        session_ids=st.lists(session_ids, max_size=5).map(tuple)).map(
            lambda r: r if r.session_ids else get_message_sessions.Response()),
    receive_by_sequence_number: st.builds(receive_by_sequence_number.Response,
                                          messages=st.lists(locked, max_size=3).map(tuple)),
    update_disposition: st.just(update_disposition.Response()),
    batch_delete_messages: st.builds(batch_delete_messages.Response,
                                     message_count=st.integers(0, 2**31 - 1)),
}


#: The operations that may have been applied when their outcome is unknown.
NOT_IDEMPOTENT = frozenset({
    schedule_message.OPERATION, add_rule.OPERATION, receive_by_sequence_number.OPERATION,
    update_disposition.OPERATION, batch_delete_messages.OPERATION,
})

# --- one sample of each operation --------------------------------------------------------

WHEN = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
TOKENS = (uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), uuid.UUID(int=7))
PEEKED = ReceivedMessage(body=b"peeked", message_id="m-1", sequence_number=3,
                         enqueued_time=WHEN, application_properties={"colour": "red"})

#: A request and a response for each operation (the test below checks the keys are
#: exactly the registry's operations).
SAMPLES: dict[str, tuple[OpModel, OpModel]] = {
    ops.add_rule.OPERATION: (
        ops.add_rule.Request(rule_name="red", filter=SqlFilter(expression="colour = 'red'"),
                             action=SqlRuleAction(expression="SET seen = TRUE")),
        ops.add_rule.Response()),
    ops.batch_delete_messages.OPERATION: (
        ops.batch_delete_messages.Request(message_count=500, enqueued_time_utc=WHEN,
                                          session_id="s-1"),
        ops.batch_delete_messages.Response(message_count=37)),
    ops.cancel_scheduled_message.OPERATION: (
        ops.cancel_scheduled_message.Request(sequence_numbers=(5, 2**40)),
        ops.cancel_scheduled_message.Response()),
    ops.enumerate_rules.OPERATION: (
        ops.enumerate_rules.Request(top=10, skip=1),
        ops.enumerate_rules.Response(rules=(RuleDescription(
            name="red", filter=SqlFilter(expression="colour = 'red'"), created_at=WHEN),))),
    ops.get_message_sessions.OPERATION: (
        ops.get_message_sessions.Request(last_updated_time=WHEN, skip=0, top=5),
        ops.get_message_sessions.Response(skip=2, session_ids=("s-1", "s-2"))),
    ops.get_session_state.OPERATION: (
        ops.get_session_state.Request(session_id="s-1"),
        ops.get_session_state.Response(session_state=b"\x00state")),
    ops.peek_message.OPERATION: (
        ops.peek_message.Request(from_sequence_number=3, message_count=5),
        ops.peek_message.Response(messages=(PEEKED,))),
    ops.receive_by_sequence_number.OPERATION: (
        ops.receive_by_sequence_number.Request(sequence_numbers=(3,), session_id="s-1"),
        ops.receive_by_sequence_number.Response(messages=(
            PEEKED.model_copy(update={"lock_token": TOKENS[0]}),))),
    ops.remove_rule.OPERATION: (
        ops.remove_rule.Request(rule_name="red"), ops.remove_rule.Response()),
    ops.renew_lock.OPERATION: (
        ops.renew_lock.Request(lock_tokens=TOKENS),
        ops.renew_lock.Response(expirations=(WHEN, WHEN))),
    ops.renew_session_lock.OPERATION: (
        ops.renew_session_lock.Request(session_id="s-1"),
        ops.renew_session_lock.Response(expiration=WHEN)),
    ops.schedule_message.OPERATION: (
        ops.schedule_message.Request(messages=(
            SbMessage(body=b"later", message_id="m-2", scheduled_enqueue_time=WHEN),)),
        ops.schedule_message.Response(sequence_numbers=(42,))),
    ops.set_session_state.OPERATION: (
        ops.set_session_state.Request(session_id="s-1", session_state=b"state"),
        ops.set_session_state.Response()),
    ops.update_disposition.OPERATION: (
        ops.update_disposition.Request(
            disposition_status=DispositionStatus.SUSPENDED, lock_tokens=TOKENS,
            dead_letter_reason="poison", properties_to_modify={"tries": 3}),
        ops.update_disposition.Response()),
}
