"""Session commands: list, state get / set / clear, renew.

The service answers session state and renewal requests only for a session locked on
the requesting connection, so each of those commands locks the session itself for its
own duration (``EntityClient.session``) and releases it when done. A session held by
another receiver ends the command at once with exit code 9 (session locked elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from ..client import EntityClient
from ._command import command, group
from ._exit import UsageProblem
from ._messages import DryRun, Entity
from ._render import Column, Record, base64_text, iso_time, outcome, utf8_text
from ._state import CliState
from ._times import parse_time

__all__ = ["register", "session_ids", "sessions", "state"]

_PAGE = 100

SessionId = Annotated[str, typer.Argument(help="The session id.")]

sessions = group("sessions", "List sessions, read and write their state, renew their locks.")
state = group("state", "Get, set or clear a session's state.")


def session_ids(
    entity: EntityClient, updated_since: datetime | None
) -> Iterator[str]:
    """Every session id of the entity, page by page."""
    skip = 0
    while True:
        page = entity.list_sessions(updated_since, skip=skip, top=_PAGE)
        yield from page
        if len(page) < _PAGE:
            return
        skip += len(page)


@command(sessions, "list")
def sessions_list(
    ctx: typer.Context,
    entity: Entity,
    updated_since: Annotated[
        str | None,
        typer.Option("--updated-since", help="Only sessions updated after this time "
                     "(ISO 8601 or relative, e.g. -1h)."),
    ] = None,
) -> None:
    """List the sessions of a session-enabled entity.

    Example: sbmgmt sessions list conversations --updated-since -1h
    """
    since = None if updated_since is None else parse_time(updated_since)
    cli = CliState.of(ctx)
    client = cli.entity(entity, requires_session=True)
    cli.renderer.records(
        ({"session_id": s} for s in session_ids(client, since)), (Column.of("session_id"),),
        empty="no sessions" if since is None else f"no sessions updated since {iso_time(since)}",
    )


def _state_record(session_id: str, value: bytes | None) -> Record:
    return {
        "session_id": session_id,
        "state_base64": None if value is None else base64_text(value),
        "state_text": None if value is None else utf8_text(value),
    }


@command(state, "get")
def state_get(ctx: typer.Context, entity: Entity, session_id: SessionId) -> None:
    """Print a session's state (null when it has none).

    Example: sbmgmt sessions state get conversations user-42 -o json
    """
    cli = CliState.of(ctx)
    with cli.entity(entity, requires_session=True).session(session_id) as held:
        value = held.get_state()
    cli.renderer.record(
        _state_record(session_id, value),
        (Column.of("session_id"), Column.of("state_text"), Column.of("state_base64")),
    )


@command(state, "set")
def state_set(
    ctx: typer.Context,
    entity: Entity,
    session_id: SessionId,
    value: Annotated[str | None, typer.Option("--value", help="The new state (text).")] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", exists=True, dir_okay=False, help="A file holding the state."),
    ] = None,
) -> None:
    """Set a session's state from --value or --file.

    Example: sbmgmt sessions state set conversations user-42 --value '{"step": 3}'
    """
    if (value is None) == (file is None):
        raise UsageProblem("give exactly one of --value or --file")
    data = value.encode() if value is not None else Path(str(file)).read_bytes()
    cli = CliState.of(ctx)
    with cli.entity(entity, requires_session=True).session(session_id) as held:
        held.set_state(data)
    cli.renderer.done(
        f"set the state of session {session_id} of {entity} ({len(data)} bytes)",
        {"session_id": session_id, "state_bytes": len(data)},
    )


@command(state, "clear")
def state_clear(
    ctx: typer.Context, entity: Entity, session_id: SessionId, dry_run: DryRun = False
) -> None:
    """Clear a session's state.

    Example: sbmgmt sessions state clear conversations user-42 --dry-run
    """
    cli = CliState.of(ctx)
    if not dry_run:
        with cli.entity(entity, requires_session=True).session(session_id) as held:
            held.set_state(None)
    cli.renderer.done(
        outcome(dry_run, f"clear the state of session {session_id} of {entity}",
                f"cleared the state of session {session_id} of {entity}"),
        {"session_id": session_id, "dry_run": dry_run},
    )


@command(sessions, "renew")
def sessions_renew(ctx: typer.Context, entity: Entity, session_id: SessionId) -> None:
    """Lock the session, renew the lock and print its new expiry (then release it).

    The CLI holds the lock only while the command runs: this checks that the session
    can be locked and renewed (a session held elsewhere exits with code 9).

    Example: sbmgmt sessions renew conversations user-42
    """
    cli = CliState.of(ctx)
    with cli.entity(entity, requires_session=True).session(session_id) as held:
        expiry = held.renew_lock()
    cli.renderer.record(
        {"session_id": session_id, "locked_until": iso_time(expiry)},
        (Column.of("session_id", whole=True), Column.time("locked_until")),
    )


def register(app: typer.Typer) -> None:
    """Add the sessions group to the root app."""
    sessions.add_typer(state)
    app.add_typer(sessions)
