"""``sbmgmt export``: peek an entity's messages into a file of the export format
(:mod:`sbmgmt.actions.export`; docs/export-format.md). Peeking changes nothing.

Also what ``deferred export`` shares with it: the file (:func:`output`, replaced only when
whole), the run (:func:`run_export`: :func:`sbmgmt.cli._long.run_long`'s progress and
Ctrl-C, the summary and its JSON record), and ``--max`` with its old name ``--count``."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Annotated

import typer

from .._wording import counted
from ..actions.contract import CancelToken, OnProgress, Outcome
from ..actions.export import ExportReport, export_entity
from ..actions.files import written_whole
from ..entity_paths import dead_letter_path
from ._command import command
from ._exit import UsageProblem
from ._long import run_long
from ._render import Record
from ._state import CliState

__all__ = ["CountAlias", "MaxOption", "at_most", "output", "register", "run_export"]

MaxOption = Annotated[int | None, typer.Option("--max", min=1, show_default=False,
                                               help="At most this many (default: all).")]
#: ``--count``, the old name of ``--max`` (hidden; kept one release).
CountAlias = Annotated[int | None, typer.Option("--count", min=1, hidden=True,
                                                help="Deprecated: use --max.")]


def at_most(max_count: int | None, count: int | None) -> int | None:
    """``--max``, or its old name ``--count``; both given is a usage error."""
    if count is None:
        return max_count
    if max_count is not None:
        raise UsageProblem("give --max once (--count is its old name)")
    return count

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
                                  help="Write here (replaced once the export is whole); "
                                  "default: stdout.")
    ] = None,
    from_sequence: Annotated[
        int, typer.Option("--from", min=0, help="First sequence number to export.")
    ] = 1,
    max_count: MaxOption = None,
    count: CountAlias = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session's messages.")
    ] = None,
) -> None:
    """Write an entity's messages as JSON lines, peeked: nothing changes.

    One JSON object a line with everything a message carries (the export format:
    docs/export-format.md). Ctrl-C stops it: a --file is then left as it was.

    Example: sbmgmt export orders --dead-letter --max 100
    """
    state = CliState.of(ctx)
    path = dead_letter_path(entity) if dead_letter else entity
    limit = at_most(max_count, count)
    client = state.entity(path, requires_session=session is not None)
    run_export(ctx, "exporting", file, "message", limit, lambda out, on_progress, cancel:
               export_entity(client, out, from_sequence_number=from_sequence,
                             max_count=limit, session_id=session,
                             on_progress=on_progress, cancel=cancel))


Export = Callable[[IO[str], OnProgress, CancelToken], ExportReport]
"""An export's call: given the file to write, ``on_progress`` and ``cancel``, its report."""


def run_export(ctx: typer.Context, title: str, file: Path | None, what: str,
               limit: int | None, export: Export, *, span: bool = True) -> ExportReport:
    """Run an export into :func:`output` through :func:`sbmgmt.cli._long.run_long`
    (progress, Ctrl-C, exit code 130) and say what it wrote: to a file, a sentence or the
    JSON record; to stdout (which holds the messages), the sentence on a terminal's stderr.
    A file is replaced only when the export ended: a Ctrl-C leaves it as it was (run_long's
    exit leaves :func:`output`'s block by an exception), and the report says how far the
    export had come. ``span``: the sentence names the first and last sequence numbers (not
    for the deferred messages, which are scattered)."""
    where = "stdout" if file is None else str(file)

    def sentence(report: ExportReport) -> str:
        exported = counted(report.exported, what)
        if report.outcome is Outcome.CANCELLED and file is not None:
            return (f"cancelled after {exported} of {report.entity}: {where} left as it was "
                    "(an export file is replaced only when whole)")
        numbers = ("" if report.first_sequence_number is None or not span else
                   f" (sequence numbers {report.first_sequence_number} to "
                   f"{report.last_sequence_number})")
        cut = "; cancelled before the end" if report.outcome is Outcome.CANCELLED else ""
        return f"exported {exported} of {report.entity}{numbers} to {where}{cut}"

    def record(report: ExportReport) -> Record:
        fields: Record = {"entity": report.entity, "exported": report.exported,
                          **report.details(), "file": where}
        if report.outcome is not Outcome.FINISHED:  # a finished export's shape is kept
            fields["outcome"] = report.outcome.value
        return fields

    with output(file) as out:
        return run_long(ctx, title, lambda on_progress, cancel: export(out, on_progress, cancel),
                        render=sentence, record=record, total=limit, to_stderr=file is None)


def register(app: typer.Typer) -> None:
    """Add ``export`` to the root app."""
    command(app, "export")(export)
