"""Dead-letter repair commands: ``resubmit`` (dead letters back to where they came from) and
``move`` (messages of any entity to another), both on :mod:`sbmgmt.actions.repair`; their
shared options are :mod:`._repair_options`'s, and ``import`` (:mod:`._import`) is
registered with them.

Each plans first (a peek: nothing changes), prints the plan with ``--dry-run`` and stops,
asks on a terminal (refuses without ``--yes`` when stdin is not one: exit code 11), then
runs through :func:`sbmgmt.cli._long.run_long`: progress on a terminal, Ctrl-C stops
cleanly (the batches in flight finish) and prints what was done (exit 130). It ends with
what it did, counted: moved, failed and why, not found, possible duplicates. A run that
did not move everything exits with 7 (transient): what was not moved is still in the
source, and running the command again moves it.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from .._wording import counted
from ..actions.repair import (
    DEAD_LETTER_SUFFIX,
    RepairPlan,
    RepairReport,
    plan_move,
    plan_resubmit,
    refuse_duplicates,
    repair,
)
from ..actions.targets import IfDuplicate
from ..client import ManagementClient
from ._command import command
from ._confirm import confirm
from ._exit import ExitCode
from ._import import import_file
from ._input import entity_path
from ._long import run_long
from ._messages import Entity
from ._render import Column, Record, iso_time
from ._repair_options import (
    RunOptions,
    describer,
    duplicate_parts,
    id_value,
    properties,
    warnings,
    with_run_options,
)
from ._state import CliState

__all__ = ["register"]

_PLAN_COLUMNS = (Column.of("sequence_number", "seq"), Column.of("message_id"),
                 Column.of("target"), Column.of("may_be_dropped", "duplicate?"),
                 Column.of("dead_letter_reason"), Column.time("enqueued_time"))


def _plan_record(item: Any, plan: RepairPlan) -> Record:
    return {
        "sequence_number": item.sequence_number,
        "message_id": id_value(item.message_id),
        "target": item.target,
        "may_be_dropped": item.sequence_number in plan.at_risk,
        "dead_letter_reason": item.dead_letter_reason,
        "enqueued_time": None if item.enqueued_time is None else iso_time(item.enqueued_time),
    }




def _where(plan: RepairPlan) -> str:
    targets = plan.targets
    if len(targets) == 1:
        return next(iter(targets))
    return ", ".join(f"{name} ({count})" for name, count in targets.items()) or "nowhere"


def _held(plan: RepairPlan) -> str:
    if not plan.held:
        return ""
    return (f"; {counted(plan.held, 'other message')} of {plan.source} (not selected, ahead "
            "of the selected ones) will be locked while it runs and given back unchanged "
            "(AMQP released: not a delivery attempt)")


def _at_risk_note(plan: RepairPlan, choice: IfDuplicate) -> str:
    if not plan.at_risk:
        return ""
    what = {IfDuplicate.NEW_ID: "will get a new MessageId (the old one in OriginalMessageId)",
            IfDuplicate.LEAVE: "will be left in the source",
            IfDuplicate.SEND: "will be sent as they are (the target may drop them)",
            IfDuplicate.REFUSE: "are refused"}[choice]
    return (f"; {counted(len(plan.at_risk), 'copy', 'copies')} the target's duplicate "
            f"detection may drop {what}")



def _summary(verb: str, plan: RepairPlan, report: RepairReport | None) -> Record:
    """The one JSON shape of a run, whatever happened (nothing planned included)."""
    return {
        "action": verb,
        "source": plan.source,
        "targets": plan.targets,
        "planned": len(plan.items) if report is None else report.planned,
        "moved": 0 if report is None else len(report.moved),
        "failed": [] if report is None else [
            {"sequence_number": f.sequence_number, "message_id": id_value(f.message_id),
             "reason": f.reason} for f in report.failed],
        "not_found": [] if report is None else report.not_found,
        "not_in_source": list(plan.not_found),
        "duplicates": [] if report is None else [id_value(d) for d in report.duplicates],
        "duplicate_detection": {path: check.duplicate_detection
                                for path, check in plan.checks.items()},
        "left": [] if report is None else report.left,
        "maybe_dropped": [] if report is None else [id_value(d) for d in report.maybe_dropped],
        "new_message_ids": {} if report is None else {
            str(number): new for number, new in report.new_message_ids.items()},
        "held": plan.held,
        "transactional": True if report is None else report.transactional,
        "cancelled": False if report is None else report.cancelled,
        "outcome": "finished" if report is None else report.outcome.value,
        "complete": report is None or report.complete,
    }



def _sentence(verb: str, plan: RepairPlan, report: RepairReport) -> str:
    of_planned = f"of {counted(report.planned, 'message')}"
    return (f"{verb}: {len(report.moved)} {of_planned} of "
            f"{report.source} moved to {_where(plan)}"
            + (f"; {len(report.failed)} failed" if report.failed else "")
            + (f"; {len(report.not_found)} not found" if report.not_found else "")
            + (f"; not in the source: {', '.join(map(str, plan.not_found))}"
               if plan.not_found else "")
            + duplicate_parts("left in the source", len(report.left),
                              len(report.new_message_ids), len(report.maybe_dropped))
            + (f"; {len(report.duplicates)} possibly sent twice (same MessageId)"
               if report.duplicates else "")
            + ("" if report.transactional else " (without transactions)"))


def _not_moved(report: RepairReport) -> int:
    """Say which messages were not moved (the first 20 failures, and how many are left);
    7 when any was not."""
    for failure in report.failed[:20]:
        sys.stderr.write(f"not moved: {failure.sequence_number} "
                         f"({id_value(failure.message_id)}): {failure.reason}\n")
    if report.complete:
        return 0
    sys.stderr.write(f"not moved: {report.planned - len(report.moved)} of "
                     f"{counted(report.planned, 'message')} (still in the source): run "
                     "the command again\n")
    return int(ExitCode.TRANSIENT)


_RUNNING = {"resubmit": "resubmitting", "move": "moving"}


def _carry_out(ctx: typer.Context, client: ManagementClient, plan: RepairPlan, verb: str,
               options: RunOptions) -> None:
    state = CliState.of(ctx)
    set_properties = properties(options.set_pairs)
    renderer = state.renderer
    planned = counted(len(plan.items), "message")
    notes = [*warnings(plan.checks)]
    if plan.not_found:
        notes.append(f"not in {plan.source}: {', '.join(map(str, plan.not_found))}")
    if options.dry_run:
        renderer.records((_plan_record(item, plan) for item in plan.items), _PLAN_COLUMNS,
                         empty=f"no messages of {plan.source} to {verb}")
        if plan.items:
            sys.stderr.write(f"dry run: would {verb} {planned} of {plan.source} to "
                             f"{_where(plan)}{_held(plan)}"
                             f"{_at_risk_note(plan, options.if_duplicate)}; nothing was "
                             "changed\n")
        for note in notes:
            sys.stderr.write(f"{note}\n")
        return
    if not plan.items:
        nothing = f"{verb}: no messages of {plan.source} to {verb}" + (
            f"; not in it: {', '.join(map(str, plan.not_found))}" if plan.not_found else "")
        renderer.done(nothing, _summary(verb, plan, None))
        return
    for note in notes:
        sys.stderr.write(f"{note}\n")
    refuse_duplicates(plan, options.if_duplicate)
    confirm(f"{verb.capitalize()} {planned} of {plan.source} to {_where(plan)}"
            f"{_held(plan)}{_at_risk_note(plan, options.if_duplicate)}?", yes=options.yes,
            refusal=f"refused to {verb} {planned}",
            declined="nothing was moved: not confirmed")
    run_long(ctx, _RUNNING[verb],
             lambda on_progress, cancel: repair(
                 client, plan, set_properties=set_properties,
                 keep_dead_letter_fields=options.keep_dead_letter_fields,
                 if_duplicate=options.if_duplicate, transactional=not options.no_transaction,
                 batch_size=options.batch_size, in_flight=options.in_flight,
                 on_progress=on_progress, cancel=cancel),
             render=lambda report: _sentence(verb, plan, report), total=len(plan.items),
             record=lambda report: _summary(verb, plan, report), exit_code=_not_moved)


@with_run_options
def resubmit(ctx: typer.Context, entity: Entity, options: RunOptions) -> None:
    """Send dead letters back to where they came from and remove them from the queue.

    Each batch moves in one transaction: all of it moves, or none. The target is checked
    first; copies its duplicate detection may drop are refused unless --if-duplicate says
    what to do. Messages not selected but ahead of the selected ones are locked while it
    runs and given back unchanged (AMQP released: no delivery counted).

    Example: sbmgmt resubmit orders --reason Poison --set fixed=true --dry-run
    """
    state = CliState.of(ctx)
    entity = entity_path(entity)
    source = entity if entity.endswith(DEAD_LETTER_SUFFIX) else entity + DEAD_LETTER_SUFFIX
    selection = options.selection()
    client = state.client(source)
    with describer(state, options.http_port) as describe:
        plan = plan_resubmit(client, source, selection, describe=describe)
    _carry_out(ctx, client, plan, "resubmit", options)


@with_run_options
def move(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="The entity to take messages from (a queue, "
                                           "a subscription, or a path ending in "
                                           "/$DeadLetterQueue).")],
    target: Annotated[str, typer.Argument(help="The queue or topic to send them to.")],
    dead_letter: Annotated[bool, typer.Option(
        "--dead-letter", help="Take them from SOURCE's dead-letter queue.")] = False,
    *, options: RunOptions,
) -> None:
    """Move messages: each is sent to TARGET and removed from SOURCE.

    Each batch moves in one transaction: all of it moves, or none. TARGET is checked
    first; copies its duplicate detection may drop are refused unless --if-duplicate says
    what to do. Messages not selected but ahead of the selected ones are locked while it
    runs and given back unchanged (AMQP released: no delivery counted).

    Example: sbmgmt move orders archive --dead-letter --before -7d --yes
    """
    state = CliState.of(ctx)
    source, target = entity_path(source), entity_path(target)
    path = source + DEAD_LETTER_SUFFIX if dead_letter and not source.endswith(
        DEAD_LETTER_SUFFIX) else source
    selection = options.selection()
    client = state.client(path)
    with describer(state, options.http_port) as describe:
        plan = plan_move(client, path, target, selection, describe=describe)
    _carry_out(ctx, client, plan, "move", options)


def register(app: typer.Typer) -> None:
    """Add ``resubmit``, ``move`` and ``import`` to the root command."""
    command(app, "resubmit")(resubmit)
    command(app, "move")(move)
    command(app, "import")(import_file)
