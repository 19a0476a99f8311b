"""``sbmgmt import``: an export file's messages sent to an entity
(:mod:`sbmgmt.actions.import_file`).

Every line is read and checked before anything is sent; the target is checked (its
duplicate detection read); the dry run lists the messages; a terminal is asked, and
without one ``--yes`` is needed. The run goes through :func:`sbmgmt.cli._long.run_long`:
progress on a terminal, Ctrl-C stops between batches and prints what was sent (exit 130).
A run that did not send everything exits with 7 (transient).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from .._wording import counted
from ..actions.export import read_messages
from ..actions.import_file import ImportReport, import_messages
from ..actions.import_file import refuse_duplicates as refuse_import
from ..actions.targets import IfDuplicate, TargetCheck, check_target
from ..errors import ExportFormatError
from ..message import Message
from ._confirm import confirm
from ._exit import ExitCode, UsageProblem
from ._input import entity_path
from ._long import run_long
from ._messages import DryRun
from ._render import Column, Record
from ._repair_options import (
    HttpPortOption,
    IfDuplicateOption,
    ImportBatchOption,
    InFlightOption,
    SetOption,
    YesOption,
    describer,
    duplicate_parts,
    id_value,
    properties,
    warnings,
)
from ._state import CliState

__all__ = ["import_file"]

_IMPORT_COLUMNS = (Column.of("number", "#"), Column.of("message_id"), Column.of("subject"),
                   Column.of("target"))


def _record(report: ImportReport, file: Path, read: int, check: TargetCheck) -> Record:
    """The one JSON shape of an import, whatever happened."""
    return {"entity": report.entity, "file": str(file), "read": read, "sent": report.sent,
            "failed": [{"number": f.index + 1, "message_id": id_value(f.message_id),
                        "reason": f.reason} for f in report.failed],
            "duplicate_detection": check.duplicate_detection,
            "left": [index + 1 for index in report.left],
            "maybe_dropped": [id_value(d) for d in report.maybe_dropped],
            "new_message_ids": {str(index + 1): new
                                for index, new in report.new_message_ids.items()},
            "outcome": report.outcome.value}


def _sentence(report: ImportReport, file: Path, read: int) -> str:
    return (f"import: {report.sent} of {counted(read, 'message')} of {file} sent to "
            f"{report.entity}"
            + (f"; {len(report.failed)} failed" if report.failed else "")
            + duplicate_parts("left out", len(report.left), len(report.new_message_ids),
                              len(report.maybe_dropped)))


def _not_sent(report: ImportReport) -> int:
    """Say which messages were not sent (the first 20); 7 when any was not."""
    for failure in report.failed[:20]:
        sys.stderr.write(f"not sent: message {failure.index + 1} "
                         f"({id_value(failure.message_id)}): {failure.reason}\n")
    return int(ExitCode.TRANSIENT) if report.failed else 0


def _read(file: Path) -> list[Message]:
    """Every message of the file, each line checked before any is sent (stdin is read, not
    closed: the question asked next looks at it)."""
    if str(file) == "-":
        return _parsed(sys.stdin, file)
    with file.open(encoding="utf-8") as lines:
        return _parsed(lines, file)


def _parsed(lines: Iterable[str], file: Path) -> list[Message]:
    try:
        return list(read_messages(lines))
    except ExportFormatError as error:
        raise UsageProblem(f"{file}: {error}") from None


def import_file(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="An export file (one JSON message a line; "
                                         "- for stdin).", allow_dash=True)],
    entity: Annotated[str, typer.Argument(help="The queue or topic to send them to.")],
    set_pairs: SetOption = None,
    if_duplicate: IfDuplicateOption = IfDuplicate.REFUSE,
    batch_size: ImportBatchOption = 100,
    in_flight: InFlightOption = 8,
    http_port: HttpPortOption = None,
    dry_run: DryRun = False,
    yes: YesOption = False,
) -> None:
    """Send the messages of an export file (sbmgmt export's format) to an entity.

    Example: sbmgmt import - orders --set replayed=true --dry-run
    """
    state = CliState.of(ctx)
    entity = entity_path(entity)
    set_properties = properties(set_pairs)
    messages = _read(file)
    renderer = state.renderer
    read = counted(len(messages), "message")
    client = state.client(entity)
    with describer(state, http_port) as describe:
        check = check_target(client, entity, describe=describe)
    risky = bool(check.duplicate_detection) and any(m.message_id is not None
                                                     for m in messages)
    at_risk = (f"; {entity} detects duplicates: the messages with a MessageId "
               + {IfDuplicate.NEW_ID: "get a new one (the old one in OriginalMessageId)",
                  IfDuplicate.LEAVE: "are left out",
                  IfDuplicate.SEND: "are sent as they are (it may drop them)",
                  IfDuplicate.REFUSE: "are refused"}[if_duplicate]) if risky else ""
    for note in warnings({entity: check}):
        sys.stderr.write(f"{note}\n")
    if dry_run:
        renderer.records(({"number": i, "message_id": id_value(m.message_id),
                           "subject": m.subject, "target": entity}
                          for i, m in enumerate(messages, start=1)),
                         _IMPORT_COLUMNS, empty=f"no messages in {file}")
        if messages:
            sys.stderr.write(f"dry run: would send {read} of {file} to {entity}{at_risk}; "
                             "nothing was sent\n")
        return
    if not messages:  # an empty file sends nothing: its summary says so, nothing is asked
        empty = ImportReport(entity=entity)
        renderer.done(_sentence(empty, file, 0), _record(empty, file, 0, check))
        return
    if risky:
        refuse_import(check, if_duplicate)
    confirm(f"Send {read} of {file} to {entity}{at_risk}?", yes=yes,
            refusal=f"refused to send {read}", declined="nothing was sent: not confirmed")
    run_long(ctx, "importing",
             lambda on_progress, cancel: import_messages(
                 client, entity, messages, set_properties=set_properties,
                 batch_size=batch_size, in_flight=in_flight, on_progress=on_progress,
                 cancel=cancel, if_duplicate=if_duplicate, check=check),
             render=lambda report: _sentence(report, file, len(messages)),
             total=len(messages),
             record=lambda report: _record(report, file, len(messages), check),
             exit_code=_not_sent)
