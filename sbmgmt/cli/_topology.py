"""``sbmgmt topology export | plan | apply``: a namespace's entities as the emulator's
Config.json, and a namespace made to match one (:mod:`sbmgmt.actions.topology`).

``export`` writes the file (replaced only when whole: :mod:`sbmgmt.actions.files`) or
prints it; what the file cannot hold and where it is past the emulator's limits is said on
stderr. ``plan`` shows what ``apply`` would change. ``apply`` shows the plan on stderr (each
delete with the messages its entity holds), asks on a terminal, refuses without ``--yes``
when stdin is not one, and reports exactly the changes the namespace answered done, Ctrl-C
included. :func:`carry_out` is the same for ``sbmgmt entities create | update | delete``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from .._wording import counted
from ..actions import topology as action
from ..actions.contract import CancelToken
from ..actions.entities import EntityKind
from ..actions.files import written_whole
from ._command import command, group
from ._confirm import confirm
from ._entities import HttpPort, admin_for, port_hinted
from ._exit import ExitCode, UsageProblem, exit_code_for
from ._long import ctrl_c_cancels
from ._render import Column
from ._state import CliState

__all__ = ["carry_out", "register", "topology"]

topology = group("topology", "A namespace's entities as the emulator's Config.json: export "
                 "one, plan and apply one (docs/topology.md).")

_PAST = {action.ChangeKind.CREATE: "created", action.ChangeKind.UPDATE: "updated",
         action.ChangeKind.DELETE: "deleted"}
_PLAN_COLUMNS = (Column.of("action", whole=True), Column.of("kind", whole=True),
                 Column.of("path"), Column.of("details"))

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed when stdin is not "
                                                       "a terminal).")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the changes; make none.")]


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _read(file: Path) -> action.Topology:
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageProblem(f"cannot read {file}: {error.strerror or error}") from None
    try:
        return action.read_topology(text)
    except action.TopologyFileError as error:
        raise UsageProblem(f"{file}: {error}") from None


def _details(change: action.Change) -> str:
    text = change.describe()
    head = f"{change.action.value} {change.kind} {change.path}"
    return text[len(head):].lstrip(": ").strip()


def _plan_records(plan: action.Plan) -> list[dict[str, Any]]:
    return [{**change.as_record(), "details": _details(change)} for change in plan.changes]


def _summary(plan: action.Plan) -> str:
    return ", ".join(f"{plan.count(kind)} to {kind.value}" for kind in action.ChangeKind)


def _refuse(plan: action.Plan, said: str = "nothing changed") -> None:
    """What the service cannot change, said before anything is sent (exit 2)."""
    if plan.refused:
        raise UsageProblem(f"{said}: " + "; ".join(plan.refused))


def carry_out(state: CliState, client: Any, plan: action.Plan, *, yes: bool, dry_run: bool,
              ask: bool, matched: str) -> None:
    """Show, confirm and apply a plan, and report what was done.

    Args:
        state: The command's state (its renderer).
        client: The administration client.
        plan: The changes.
        yes: ``--yes``.
        dry_run: Show the changes, make none.
        ask: Confirm first (``topology apply``, ``entities delete``): the plan on stderr,
            the question on a terminal, a refusal without one and without ``--yes``.
        matched: Said when there is nothing to change ("the namespace matches FILE").

    Raises:
        UsageProblem: The plan has changes the service cannot make (nothing was sent).
        NotConfirmed: Not confirmed.
    """
    _refuse(plan)
    nothing = {**action.ApplyReport((), action.ApplyOutcome.FINISHED).as_record(),
               "changes": []}
    if not plan.changes:
        state.renderer.done(f"nothing to change: {matched}", nothing)
        return
    if dry_run:
        lines = [change.describe() for change in plan.changes]
        state.renderer.done("\n".join([*lines, f"dry run: nothing changed ({_summary(plan)})"]),
                            {**nothing, "outcome": "dry-run",
                             "changes": [c.as_record() for c in plan.changes]})
        return
    if ask and not yes:
        stderr = _stderr()
        for change in plan.changes:
            stderr.print(escape(f"to {change.describe()}"))
        count = len(plan.changes)
        confirm("Make this change?" if count == 1 else f"Make these {count} changes?", yes=yes,
                refusal=f"refused to make {counted(len(plan.changes), 'change')}",
                declined="nothing changed: not confirmed")
    cancel = CancelToken()
    done_so_far = [0]

    def advanced(_change: action.Change) -> None:
        done_so_far[0] += 1
        reached(done_so_far[0])

    with ctrl_c_cancels(cancel), state.renderer.progress_done("applying",
                                                              len(plan.changes)) as reached:
        report = action.apply_plan(client, plan, on_progress=advanced, cancel=cancel.event)
    lines = [f"{_PAST[c.action]} {c.kind} {c.path}"
             + (f" (it held {counted(c.messages, 'message')})" if c.messages else "")
             for c in report.done]
    totals = ", ".join(f"{report.count(kind)} {_PAST[kind]}" for kind in action.ChangeKind)
    ending = {action.ApplyOutcome.FINISHED: "",
              action.ApplyOutcome.CANCELLED: " (cancelled: nothing sent after Ctrl-C)",
              action.ApplyOutcome.FAILED: " (stopped by an error)"}[report.outcome]
    record = {**report.as_record(), "changes": [c.as_record() for c in report.done]}
    state.renderer.done("\n".join([*lines, f"{totals}{ending}"]), record)
    if report.outcome is action.ApplyOutcome.CANCELLED:
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if report.error is not None:
        failed = report.failed.describe() if report.failed is not None else "a change"
        _stderr().print(f"[red]error:[/] {escape(state.scrub(f'{failed}: {report.error}'))}")
        raise typer.Exit(int(exit_code_for(report.error)))


def topology_export(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Argument(help="Write here (replaced only when whole); stdout without it.",
                       show_default=False, dir_okay=False),
    ] = None,
    http_port: HttpPort = None,
) -> None:
    """Write the namespace's queues, topics, subscriptions and rules as an emulator
    Config.json.

    Every property is kept: what the emulator's format lacks goes in an x-sbmgmt object
    beside each entity's Properties. What cannot be written at all, and where the file is
    past the emulator's limits, is said on stderr.

    Example: sbmgmt topology export Config.json
    """
    state = CliState.of(ctx)
    client = admin_for(state, http_port, "sbmgmt topology export")
    with port_hinted(state, http_port), client:
        found = action.export_topology(client)
    text = action.write_topology(found)
    stderr = _stderr()
    for sentence in found.left_out:
        stderr.print(escape(f"left out: {sentence}"))
    for sentence in action.emulator_limits(found):
        stderr.print(escape(f"past the emulator's limits: {sentence}"))
    if file is None:
        typer.echo(text, nl=False)
        return
    with written_whole(file) as out:
        out.write(text)
    kinds = {kind: len(found.of_kind(kind)) for kind in EntityKind}
    rules = sum(len(e.rules or ()) for e in found.of_kind(EntityKind.SUBSCRIPTION))
    words = ", ".join([*(counted(n, kind.value) for kind, n in kinds.items()),
                       counted(rules, "rule")])
    state.renderer.done(f"wrote {words} to {file}",
                        {"file": str(file), **{f"{k.value}s": n for k, n in kinds.items()},
                         "rules": rules, "left_out": list(found.left_out)})


FileArgument = Annotated[Path, typer.Argument(help="The Config.json (topology export's, or "
                                              "the emulator's).", dir_okay=False)]
Prune = Annotated[bool, typer.Option("--prune", help="Also delete the entities and rules the "
                                                     "file lacks.")]


def topology_plan(ctx: typer.Context, file: FileArgument, prune: Prune = False,
                  http_port: HttpPort = None) -> None:
    """Show what apply would create, update and (with --prune) delete for the namespace
    to match the file; a delete shows the messages its entity holds.

    Example: sbmgmt topology plan Config.json --prune
    """
    state = CliState.of(ctx)
    wanted = _read(file)
    client = admin_for(state, http_port, "sbmgmt topology plan")
    with port_hinted(state, http_port), client:
        plan = action.plan(client, wanted, prune=prune)
    _refuse(plan, "apply would refuse this file")
    state.renderer.records(_plan_records(plan), _PLAN_COLUMNS,
                           empty=f"nothing to change: the namespace matches {file}")


def topology_apply(ctx: typer.Context, file: FileArgument, prune: Prune = False,
                   dry_run: DryRun = False, yes: Yes = False,
                   http_port: HttpPort = None) -> None:
    """Make the namespace match the file: create and update (and with --prune delete)
    what differs, several requests at once.

    Shows the changes and asks first; without a terminal on stdin it refuses unless --yes
    is given (exit code 11). Applying the same file twice changes nothing the second time.

    Example: sbmgmt topology apply Config.json --yes
    """
    state = CliState.of(ctx)
    wanted = _read(file)
    client = admin_for(state, http_port, "sbmgmt topology apply")
    with port_hinted(state, http_port), client:
        plan = action.plan(client, wanted, prune=prune)
        carry_out(state, client, plan, yes=yes, dry_run=dry_run, ask=True,
                  matched=f"the namespace matches {file}")


def register(app: typer.Typer) -> None:
    """Add the ``topology`` group to the root app."""
    command(topology, "export")(topology_export)
    command(topology, "plan")(topology_plan)
    command(topology, "apply")(topology_apply)
    app.add_typer(topology)
