"""``sbmgmt export``: peek an entity's messages into a file of the export format
(:mod:`sbmgmt.actions.export`; docs/export-format.md). Peeking changes nothing."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated

import typer

from .._wording import counted
from ..actions.export import export_entity
from ..actions.files import written_whole
from ._command import command
from ._exit import UsageProblem
from ._state import CliState

__all__ = ["output", "register"]

_DEAD_LETTER_SUFFIX = "/$DeadLetterQueue"


@contextlib.contextmanager
def output(path: Path | None) -> Iterator[IO[str]]:
    """The file to write, or stdout without one: a file is replaced only once the export
    is whole (:func:`sbmgmt.actions.files.written_whole`), so a failed export (a mistyped
    entity, a lost connection, Ctrl-C) leaves the file as it was."""
    if path is None:
        yield sys.stdout
        return
    try:
        with written_whole(path) as out:
            yield out
    except OSError as exc:
        raise UsageProblem(f"cannot write {path}: {exc.strerror}") from None


def export(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(
        help="Entity path: QUEUE or TOPIC/Subscriptions/SUB (or either's "
             "/$DeadLetterQueue).")],
    dead_letter: Annotated[
        bool, typer.Option("--dead-letter", help="Export the entity's dead-letter queue.")
    ] = False,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", dir_okay=False,
                                  help="Write here (replaced if it exists); default: stdout.")
    ] = None,
    from_sequence: Annotated[
        int, typer.Option("--from", min=0, help="First sequence number to export.")
    ] = 1,
    count: Annotated[
        int | None, typer.Option("--count", min=1, help="At most this many (default: all).")
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session's messages.")
    ] = None,
) -> None:
    """Write an entity's messages as JSON lines, peeked: nothing changes.

    One JSON object a line with everything a message carries (the export format:
    docs/export-format.md).

    Example: sbmgmt export orders --dead-letter --count 100
    """
    state = CliState.of(ctx)
    path = entity + _DEAD_LETTER_SUFFIX if dead_letter else entity
    client = state.entity(path, requires_session=session is not None)
    with output(file) as out, state.renderer.progress_done("exporting", count) as reached:
        report = export_entity(client, out, from_sequence_number=from_sequence,
                               max_count=count, session_id=session, progress=reached)
    where = "stdout" if file is None else str(file)
    span = ("" if report.first_sequence_number is None else
            f" (sequence numbers {report.first_sequence_number} to "
            f"{report.last_sequence_number})")
    exported = counted(report.exported, "message")
    sentence = f"exported {exported} of {report.entity}{span} to {where}"
    record = {"entity": report.entity, "exported": report.exported,
              "first_sequence_number": report.first_sequence_number,
              "last_sequence_number": report.last_sequence_number, "file": where}
    if file is None:  # stdout holds the messages: the summary goes to a terminal's stderr
        if sys.stderr.isatty():
            typer.echo(sentence, err=True)
    else:
        state.renderer.done(sentence, record)


def register(app: typer.Typer) -> None:
    """Add ``export`` to the root app."""
    command(app, "export")(export)
