"""``sbmgmt entities create | update | delete``: one queue, topic or subscription, its
properties as options, through the same actions as ``sbmgmt topology apply``
(:mod:`sbmgmt.actions.topology`: a plan of one change, applied).

The options are the most used properties (a flag sets true: ``--set KEY=false`` clears
it); ``--set KEY=VALUE`` reaches every other one by the topology file's key
(docs/topology.md lists them). ``delete`` says what the entity
holds and asks first, as the other destructive commands do.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..actions import topology as action
from ..actions.entities import EntityKind
from ._command import command
from ._entities import HttpPort, admin_for, entities_group, port_hinted
from ._exit import UsageProblem
from ._state import CliState
from ._topology import DryRun, Yes, carry_out

__all__ = ["register"]


def _option(name: str, help_text: str) -> Any:
    return typer.Option(name, help=help_text, show_default=False)


Flag = bool | None
LockDuration = Annotated[str | None, _option("--lock-duration",
                                             "Lock duration (ISO 8601, e.g. PT30S).")]
MaxDeliveryCount = Annotated[int | None, _option("--max-deliveries", "Max delivery count.")]
DefaultTtl = Annotated[str | None, _option("--ttl", "Default message time to live (ISO 8601).")]
AutoDelete = Annotated[str | None, _option("--auto-delete",
                                           "Delete when idle this long (ISO 8601, PT5M or more).")]
DeadLetterOnExpiration = Annotated[Flag, _option(
    "--dead-lettering", "Dead-letter expired messages.")]
RequiresSession = Annotated[Flag, _option("--sessions", "Require sessions.")]
DuplicateDetection = Annotated[Flag, _option("--duplicates",
                                             "Detect duplicates.")]
DuplicateWindow = Annotated[str | None, _option(
    "--duplicate-window", "Duplicate detection window (ISO 8601).")]
ForwardTo = Annotated[str | None, _option("--forward-to",
                                          "Forward to a queue or topic ('' for none).")]
ForwardDeadLetters = Annotated[str | None, _option(
    "--forward-dlq-to", "Forward dead letters to ('' for none).")]
MaxSize = Annotated[int | None, _option("--max-size-mb", "Max size in megabytes.")]
Status = Annotated[str | None, _option(
    "--status", "Active, Disabled, SendDisabled or ReceiveDisabled.")]
UserMetadata = Annotated[str | None, _option("--metadata", "User metadata.")]
Settings = Annotated[list[str] | None, _option(
    "--set", "Any property by its Config.json key: KEY=VALUE (repeatable; docs/topology.md).")]

#: The options and the file keys they set.
_OPTIONS = {
    "lock_duration": "LockDuration", "max_delivery_count": "MaxDeliveryCount",
    "default_ttl": "DefaultMessageTimeToLive", "auto_delete_on_idle": "AutoDeleteOnIdle",
    "dead_letter_on_expiration": "DeadLetteringOnMessageExpiration",
    "requires_session": "RequiresSession",
    "duplicate_detection": "RequiresDuplicateDetection",
    "duplicate_window": "DuplicateDetectionHistoryTimeWindow",
    "forward_to": "ForwardTo", "forward_dead_letters_to": "ForwardDeadLetteredMessagesTo",
    "max_size_mb": "MaxSizeInMegabytes", "status": "Status", "user_metadata": "UserMetadata",
}


def _values(options: dict[str, Any], settings: list[str]) -> dict[str, Any]:
    """The properties the options give, by file key; ``--set KEY=VALUE`` (VALUE as JSON,
    else as text) after them."""
    values = {_OPTIONS[name]: value for name, value in options.items() if value is not None}
    for setting in settings:
        key, sep, text = setting.partition("=")
        if not sep or not key:
            raise UsageProblem(f"--set {setting!r}: write KEY=VALUE, e.g. "
                               "--set SupportOrdering=false")
        try:
            values[key] = json.loads(text)
        except ValueError:
            values[key] = text
    return values


def entities_create(
    ctx: typer.Context,
    kind: Annotated[EntityKind, typer.Argument(help="queue, topic or subscription.",
                                               case_sensitive=False)],
    entity: Annotated[str, typer.Argument(help="Its name; a subscription's "
                                               "TOPIC/Subscriptions/SUB or TOPIC/SUB.")],
    lock_duration: LockDuration = None,
    max_delivery_count: MaxDeliveryCount = None,
    default_ttl: DefaultTtl = None,
    auto_delete_on_idle: AutoDelete = None,
    dead_letter_on_expiration: DeadLetterOnExpiration = None,
    requires_session: RequiresSession = None,
    duplicate_detection: DuplicateDetection = None,
    duplicate_window: DuplicateWindow = None,
    forward_to: ForwardTo = None,
    forward_dead_letters_to: ForwardDeadLetters = None,
    max_size_mb: MaxSize = None,
    status: Status = None,
    user_metadata: UserMetadata = None,
    settings: Settings = None,
    http_port: HttpPort = None,
) -> None:
    """Create a queue, topic or subscription (a subscription gets the $Default rule).

    Properties left out are the service's defaults.

    Example: sbmgmt entities create queue invoices --lock-duration PT30S
    """
    given = {name: value for name, value in locals().items() if name in _OPTIONS}
    state = CliState.of(ctx)
    client = admin_for(state, http_port, "sbmgmt entities create")
    with port_hinted(state, http_port), client:
        plan = _checked(lambda: action.create_plan(client, kind, entity,
                                                   _values(given, settings or [])))
        carry_out(state, client, plan, yes=True, dry_run=False, ask=False,
                  matched=f"{entity} exists as given")


def entities_update(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="QUEUE, TOPIC or TOPIC/Subscriptions/SUB.")],
    lock_duration: LockDuration = None,
    max_delivery_count: MaxDeliveryCount = None,
    default_ttl: DefaultTtl = None,
    auto_delete_on_idle: AutoDelete = None,
    dead_letter_on_expiration: DeadLetterOnExpiration = None,
    duplicate_window: DuplicateWindow = None,
    forward_to: ForwardTo = None,
    forward_dead_letters_to: ForwardDeadLetters = None,
    max_size_mb: MaxSize = None,
    status: Status = None,
    user_metadata: UserMetadata = None,
    settings: Settings = None,
    http_port: HttpPort = None,
) -> None:
    """Change some properties of a queue, topic or subscription (the others stay).

    A session, duplicate-detection or partitioning choice cannot change on an existing
    entity: the service refuses it, and so does this command, before sending anything.

    Example: sbmgmt entities update orders --max-deliveries 20 --status Active
    """
    given = {name: value for name, value in locals().items() if name in _OPTIONS}
    values = _values(given, settings or [])
    if not values:
        raise UsageProblem("nothing to change: give a property, e.g. --max-deliveries 20 "
                           "or --set KEY=VALUE")
    state = CliState.of(ctx)
    client = admin_for(state, http_port, "sbmgmt entities update")
    with port_hinted(state, http_port), client:
        plan = _checked(lambda: action.update_plan(client, entity, values))
        carry_out(state, client, plan, yes=True, dry_run=False, ask=False,
                  matched=f"{entity} has these properties already")


def entities_delete(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="QUEUE, TOPIC (with its subscriptions) or "
                                               "TOPIC/Subscriptions/SUB.")],
    dry_run: DryRun = False,
    yes: Yes = False,
    http_port: HttpPort = None,
) -> None:
    """Delete a queue, topic or subscription with its messages.

    Says how many messages it holds and asks first; without a terminal on stdin it refuses
    unless --yes is given (exit code 11).

    Example: sbmgmt entities delete events --yes
    """
    state = CliState.of(ctx)
    client = admin_for(state, http_port, "sbmgmt entities delete")
    with port_hinted(state, http_port), client:
        plan = action.delete_plan(client, entity)
        carry_out(state, client, plan, yes=yes, dry_run=dry_run, ask=True,
                  matched=f"{entity} is not there")


def _checked(make: Any) -> action.Plan:
    """A plan, a bad property said in the user's words (the option or key it came from)."""
    try:
        plan: action.Plan = make()
    except action.TopologyFileError as error:
        raise UsageProblem(str(error)) from None
    return plan


def register(app: typer.Typer) -> None:
    """Add ``create``, ``update`` and ``delete`` to the ``entities`` group (which
    :func:`sbmgmt.cli._entities.register` adds to ``app``)."""
    del app  # the group is the app's already
    command(entities_group, "create")(entities_create)
    command(entities_group, "update")(entities_update)
    command(entities_group, "delete")(entities_delete)
