"""What a lazily decoded ReceivedMessage (a peek or receive-by-sequence-number reply's)
must do as the eagerly decoded one (``ReceivedMessage.from_bytes``) does: each field read,
in any order, and every public behaviour, from any stage of its decoding.

Values are compared by type, ``repr`` and ``==``: ``repr`` tells proton's wrapper types
(``uint(1)``, ``symbol('a')``) from plain ones, and dicts and lists all the way down.
"""

from __future__ import annotations

import copy
import pickle
import threading
from collections.abc import Callable, Sequence
from typing import Any

from sbmgmt.message import ReceivedMessage
from sbmgmt.ops import peek_message

NAMES = tuple(ReceivedMessage.model_fields)


def assert_same_value(ours: Any, theirs: Any, what: str) -> None:
    assert type(ours) is type(theirs), (what, ours, theirs)
    assert repr(ours) == repr(theirs), what
    assert ours == theirs or ours != ours, what  # NaN is not == itself


def assert_reads_as(lazy: ReceivedMessage, eager: ReceivedMessage, names: Sequence[str]) -> None:
    """Each field of ``names``, read in that order, is the eager message's."""
    for name in names:
        assert_same_value(getattr(lazy, name), getattr(eager, name), name)


def snapshot(message: Any) -> tuple[Any, ...]:
    """What a message is, as far as anyone can see: its type, repr, fields in
    ``__dict__`` order, fields set and pydantic's other slots."""
    return (type(message), repr(message), list(vars(message)), sorted(message.model_fields_set),
            message.__pydantic_extra__, message.__pydantic_private__)


def _outcome(call: Callable[[], Any]) -> Any:
    """The result, or the exception's type and text (``model_dump_json`` of a body that
    is not UTF-8, ``hash`` of any message: the eager message must raise the same)."""
    try:
        return call()
    except Exception as exc:  # compared, not hidden
        return ("raised", type(exc), str(exc))


def outcome(behaviour: str, message: ReceivedMessage) -> Any:
    """What behaviour ``behaviour`` of :data:`BEHAVIOURS` gives for ``message``, or
    raises."""
    return _outcome(lambda: BEHAVIOURS[behaviour](message))


def _response(message: ReceivedMessage) -> tuple[str, str, str]:
    response = peek_message.Response(messages=(message,))
    return response.model_dump_json(), repr(response.model_dump()), repr(response)


#: Every public behaviour that reads a message whole (or more than one field), as a
#: comparable result.
BEHAVIOURS: dict[str, Callable[[ReceivedMessage], Any]] = {
    "repr": repr,
    "str": str,
    "model_dump": lambda m: repr(m.model_dump()),
    "model_dump json mode": lambda m: repr(m.model_dump(mode="json")),
    "model_dump exclude_unset": lambda m: repr(m.model_dump(exclude_unset=True)),
    "model_dump_json": lambda m: m.model_dump_json(),
    "iteration": lambda m: repr(dict(m)),
    "model_fields_set": lambda m: sorted(m.model_fields_set),
    "hash": hash,
    "raw_annotations": lambda m: repr(m.raw_annotations),
    "body_bytes": lambda m: m.body_bytes(),
    "to_bytes": lambda m: m.to_bytes(),
    "copy.copy": lambda m: snapshot(copy.copy(m)),
    "copy.deepcopy": lambda m: snapshot(copy.deepcopy(m)),
    "pickle": lambda m: snapshot(pickle.loads(pickle.dumps(m))),
    "model_copy": lambda m: snapshot(m.model_copy()),
    "model_copy deep": lambda m: snapshot(m.model_copy(deep=True)),
    "model_copy update": lambda m: snapshot(m.model_copy(update={"subject": "changed"})),
    "model_copy deep update": lambda m: snapshot(
        m.model_copy(update={"body": b"changed"}, deep=True)),
    "in a Response": _response,
}


def assert_behaves_as(lazy: ReceivedMessage, eager: ReceivedMessage,
                      behaviours: Sequence[str]) -> None:
    """Each behaviour of ``behaviours``, in that order, gives what the eager message's
    does; then the two are equal both ways and look the same."""
    for name in behaviours:
        assert outcome(name, lazy) == outcome(name, eager), name
    assert lazy == eager and eager == lazy
    assert (lazy != eager) is False and (eager != lazy) is False
    assert snapshot(lazy) == snapshot(eager)


def read_from_threads(message: ReceivedMessage, orders: Sequence[Sequence[str]],
                      behaviours: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Read ``message`` from one thread per order at once (after a barrier), each
    reading its fields in its order and then running ``behaviours``; what each read, by
    name (and ``"behaviour:<name>"``)."""
    barrier = threading.Barrier(len(orders))
    seen: list[dict[str, Any]] = [{} for _ in orders]
    errors: list[BaseException] = []

    def run(order: Sequence[str], out: dict[str, Any]) -> None:
        try:
            barrier.wait()
            for name in order:
                out[name] = getattr(message, name)
            for name in behaviours:
                out[f"behaviour:{name}"] = outcome(name, message)
        except BaseException as exc:  # reported by the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(order, out))
               for order, out in zip(orders, seen, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return seen
