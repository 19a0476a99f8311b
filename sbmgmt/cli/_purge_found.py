"""``sbmgmt purge-found``: remove exactly the messages export lines name (``sbmgmt find -o
ndjson``), each by its sequence number and MessageId, whatever its state
(:mod:`sbmgmt.actions.purge_found`: scheduled and deferred ones by number, active ones
received in order, the others held and released).

Destructive: every line is read and checked, then the entity is peeked for the plan
(nothing changes), which is said; a terminal is asked, ``--yes`` is needed otherwise
(lines on stdin leave no terminal to ask); the run goes through ``_long.run_long``
(progress, Ctrl-C: a clean stop and the report of what was removed, exit 130).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer

from .._wording import counted
from ..actions.purge_found import FoundPurgeReport, plan_purge_found, purge_found
from ..actions.search import read_found
from ..entity_paths import dead_letter_path
from ..errors import ExportFormatError
from ._command import command
from ._confirm import confirm
from ._exit import ExitCode, UsageProblem
from ._long import run_long
from ._messages import DryRun, Entity
from ._state import CliState

__all__ = ["register"]


def _said(report: FoundPurgeReport) -> str:
    sentence = f"removed {counted(len(report.removed), 'message')} from {report.entity}"
    left = [f"{len(numbers)} {name}" for name, numbers in (
        ("not found", report.not_found), ("in sessions, left", report.in_sessions),
        ("failed", report.failed), ("not attempted", report.not_attempted)) if numbers]
    return sentence + (f" ({', '.join(left)})" if left else "")


def _exit_code(report: FoundPurgeReport) -> int:
    return int(ExitCode.TRANSIENT) if report.failed else int(ExitCode.OK)


def purge_found_command(
    ctx: typer.Context,
    entity: Entity,
    file: Annotated[Path, typer.Argument(
        help="Export lines naming the messages (sbmgmt find -o ndjson); - for stdin.",
        allow_dash=True)],
    dead_letter: Annotated[bool, typer.Option(
        "--dead-letter", help="The messages are in the entity's dead-letter queue.")] = False,
    dry_run: DryRun = False,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Do not ask (needed when stdin is not a terminal).")] = False,
) -> None:
    """Remove exactly the messages that export lines name (sbmgmt find -o ndjson).

    Scheduled and deferred messages are removed by sequence number; active ones are
    received in order, the named ones completed, the others held and released at the end.

    Lines on stdin (sbmgmt find ... -o ndjson | sbmgmt purge-found orders - --yes) leave
    no terminal to ask: --yes is needed.

    Example: sbmgmt purge-found orders - --dry-run
    """
    state = CliState.of(ctx)
    source = dead_letter_path(entity) if dead_letter else entity
    # stdin stays open: the confirmation looks at it
    lines = contextlib.nullcontext(sys.stdin) if str(file) == "-" else \
        file.open(encoding="utf-8")
    with lines as read:
        try:
            named = read_found(read)  # every line checked before anything is sent
        except ExportFormatError as error:
            raise UsageProblem(f"{file}: {error}") from None
    if not named.ids:  # a search that found nothing: nothing to remove
        state.renderer.done(f"nothing to do: {file} names no message",
                            {"entity": source, "planned": 0})
        return
    client = state.client(source)
    plan = plan_purge_found(client, source, named)
    said = plan.describe()
    if dry_run or not plan.count:
        state.renderer.done(("would " if plan.count else "nothing to do: would ") + said,
                            {"entity": source, "planned": plan.count,
                             "not_found": list(plan.not_found),
                             "in_sessions": list(plan.in_sessions)})
        return
    confirm(f"{said[0].upper()}{said[1:]}?", yes=yes,
            refusal=f"refused to remove {counted(plan.count, 'message')}",
            declined="nothing removed: not confirmed")
    run_long(ctx, "removing",
             lambda on_progress, cancel: purge_found(client, plan, on_progress=on_progress,
                                                     cancel=cancel),
             render=_said, total=plan.count, exit_code=_exit_code)


def register(app: typer.Typer) -> None:
    """Add ``purge-found`` to the root app."""
    command(app, "purge-found")(purge_found_command)
