"""``sbmgmt send``: send messages to a queue or topic, on the entity's sender link.

The body comes from the argument, a file (``--file``) or stdin (piped: its bytes are one
body); application properties are ``--set KEY=VALUE`` (``-p``), typed as ``resubmit``'s and
``import``'s ``--set`` type them (a JSON number, true, false or null as such, anything else
a string). ``--count N`` sends N copies for test traffic, each with its own MessageId (a new
UUID each, or ``ID-1`` ... ``ID-N`` from ``--message-id``), ``--batch-size`` at a time; the
sender waits for the service's outcome of each batch before the next, so the count printed
is what the service took.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from .._wording import counted
from ..message import Message
from ._command import command
from ._exit import UsageProblem
from ._render import Record
from ._repair_options import properties as _properties
from ._state import CliState

__all__ = ["register", "send"]


def _body(body: str | None, file: Path | None) -> bytes:
    """The body: the argument's UTF-8, the file's bytes, or stdin's when piped."""
    if body is not None and file is not None:
        raise UsageProblem("give the body as BODY or --file, not both")
    if body is not None:
        return body.encode()
    if file is not None:
        return file.read_bytes()  # an OSError is said with its path (_exit.describe_error)
    if sys.stdin.isatty():
        raise UsageProblem("give the body: BODY, --file PATH, or pipe it on stdin")
    return sys.stdin.buffer.read()


def _ids(message_id: str | None, count: int) -> Iterator[str]:
    """Each message's MessageId: ``message_id`` (with ``-N`` when there are several), or a
    new UUID each (as the official SDKs give a message without one)."""
    for number in range(1, count + 1):
        if message_id is None:
            yield str(uuid.uuid4())
        else:
            yield message_id if count == 1 else f"{message_id}-{number}"


def send(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="A queue or topic.")],
    body: Annotated[
        str | None, typer.Argument(help="The body, as text (else --file, or stdin piped).",
                                   show_default=False)
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", help="A file whose bytes are the body.",
                                  show_default=False)
    ] = None,
    properties: Annotated[
        list[str] | None,
        typer.Option("--set", "-p", metavar="KEY=VALUE",
                     help="An application property (a JSON number, true, false or null is "
                     "taken as such, anything else as a string, as resubmit's --set); "
                     "repeatable.")
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="The session id (a session entity needs "
                                                   "one).")
    ] = None,
    content_type: Annotated[
        str | None, typer.Option("--content-type", help="The content type "
                                                        "(application/json, ...).")
    ] = None,
    subject: Annotated[str | None, typer.Option("--subject", help="The subject (label).")] = None,
    message_id: Annotated[
        str | None, typer.Option("--message-id", help="The MessageId (with --count, ID-1 to "
                                                      "ID-N); default: a new UUID each.")
    ] = None,
    count: Annotated[
        int, typer.Option("--count", min=1, help="How many copies to send (test traffic).")
    ] = 1,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, max=1000, help="Messages sent together.")
    ] = 100,
) -> None:
    """Send a message (or --count copies) to a queue or topic.

    The body is BODY, the bytes of --file, or stdin when it is piped; --set KEY=VALUE (or -p)
    adds application properties, typed as JSON where they read as a number, true, false or
    null.

    Example: sbmgmt send orders '{"n": 1}' -p region=eu -p amount=12.5

    Example: sbmgmt send conversations hello --session user-42

    Example: sbmgmt send orders hello --count 1000
    """
    payload = _body(body, file)
    application_properties = _properties(properties)
    state = CliState.of(ctx)
    client = state.entity(entity, requires_session=session is not None)
    ids = list(_ids(message_id, count))
    messages = [Message(body=payload, message_id=identifier, session_id=session,
                        content_type=content_type, subject=subject,
                        application_properties=application_properties)
                for identifier in ids]
    with state.renderer.progress("sending", count) as advance, client.sender() as sender:
        for start in range(0, count, batch_size):
            batch = messages[start:start + batch_size]
            sender.send_messages(batch)
            advance(len(batch))
    records: list[Record] = [{"entity": entity, "message_id": identifier,
                              "session_id": session, "bytes": len(payload)} for identifier in ids]
    shown = f" {ids[0]}" if count == 1 else ""
    state.renderer.done(f"sent {counted(count, 'message')}{shown} to {entity}", records)


def register(app: typer.Typer) -> None:
    """Add ``send`` to the root app."""
    command(app, "send")(send)
