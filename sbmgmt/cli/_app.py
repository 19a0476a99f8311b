"""The ``sbmgmt`` Typer app: global options, the demo, ``fake serve``, and the groups."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .. import __version__
from . import (
    _deferred,
    _entities,
    _entity_admin,
    _explore,
    _export,
    _find,
    _messages,
    _purge,
    _purge_found,
    _repair,
    _rules,
    _send,
    _sessions,
    _topology,
)
from ._command import HelpfulGroup, command, group
from ._exit import UsageProblem
from ._help import reflow_help
from ._logs import capture_logs
from ._render import OutputFormat
from ._state import CliState

__all__ = ["app", "main"]

CONNECTION_STRING_ENV = "SERVICEBUS_CONNECTION_STRING"
NAMESPACE_ENV = "SERVICEBUS_NAMESPACE"

app = typer.Typer(
    name="sbmgmt",
    help="Azure Service Bus management operations over AMQP 1.0.\n\n"
    "Example: sbmgmt --emulator peek orders",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=HelpfulGroup,
)
fake = group("fake", "Run the fake Service Bus namespace.")


def _at_least_a_tenth(value: float) -> float:
    """--timeout's check, said in words (a range in the metavar would take the help's room:
    at 80 columns its env var names were cut)."""
    if value < 0.1:
        raise typer.BadParameter(f"{value:g} is less than 0.1 seconds")
    return value


def _print_version(value: bool) -> None:
    if value:
        print(f"sbmgmt {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    connection_string: Annotated[
        str | None,
        typer.Option("--connection-string", "-c", envvar=CONNECTION_STRING_ENV,
                     show_default=False, show_envvar=True,
                     help="Namespace connection string (never printed)."),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", envvar=NAMESPACE_ENV, show_envvar=True,
                     help="The namespace's host name, signed in with Entra ID "
                     "(azure-identity's default credential: the identity extra)."),
    ] = None,
    emulator: Annotated[
        bool, typer.Option("--emulator", help="Run against an embedded fake namespace, started "
                           "for this command with the entity it names.")
    ] = False,
    output: Annotated[
        OutputFormat, typer.Option("--output", "-o", case_sensitive=False, metavar="<format>",
                                   help="table for people; json or ndjson for scripts.")
    ] = OutputFormat.TABLE,
    timeout: Annotated[
        float, typer.Option(metavar="<seconds>", callback=_at_least_a_tenth,
                            help="Seconds per operation (at least 0.1), retries included.")
    ] = 30.0,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks and the library's logs "
                           "(secrets scrubbed).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, expose_value=False,
                           callback=_print_version, help="Print the version and exit.")
    ] = False,
) -> None:
    """Azure Service Bus management operations over AMQP 1.0.

    Example: sbmgmt --emulator schedule orders --at +10m --body hello
    """
    state = CliState(connection_string=connection_string, namespace=namespace,
                     emulator=emulator, timeout=timeout, output=output, debug=debug)
    state.scrub.add(connection_string)
    ctx.obj = state
    ctx.call_on_close(capture_logs(debug, state.scrub))


@command(app, "demo")
def demo(
    ctx: typer.Context,
    entity: Annotated[
        str | None, typer.Option(help="Entity for the read-only tour of a real namespace.")
    ] = None,
) -> None:
    """A tour of every operation (read-only against --connection-string).

    Without a connection string, or with --emulator, the full tour runs on the embedded
    fake namespace.

    Example: sbmgmt --emulator demo

    Example: sbmgmt demo --entity orders
    """
    from ._demo import run_demo

    state = CliState.of(ctx)
    if state.namespace and not state.connection_string and not state.emulator:
        raise UsageProblem("the demo needs --connection-string or --emulator, not --namespace")
    connection_string = None if state.emulator else state.connection_string
    if connection_string and not (entity or state.connection_settings().entity_path):
        raise UsageProblem("the read-only tour looks at one entity: name it with --entity "
                           "(QUEUE or TOPIC/Subscriptions/SUB) or EntityPath in the "
                           "connection string; sbmgmt --emulator demo runs the full tour")
    run_demo(connection_string, Console(), entity=entity)


class DataDirSync(str, enum.Enum):
    """``--data-dir-sync``: what a change waits for (docs/fake.md, "A data directory")."""

    NORMAL = "normal"
    FULL = "full"


@command(fake, "serve")
def fake_serve(
    config: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False,
                                  help="An emulator Config.json with the entities.")
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="0 picks a free port.")] = 0,
    accept_any_token: Annotated[
        bool, typer.Option("--accept-any-token", help="Skip SAS signature checks.")
    ] = False,
    data_dir: Annotated[
        Path | None, typer.Option(file_okay=False, help="Keep the namespace in this directory "
                                  "and read it back at the next start (default: in memory).")
    ] = None,
    data_dir_sync: Annotated[
        DataDirSync, typer.Option(
            help="normal: each change reaches the directory's files before the client is "
            "told (it outlives a kill of the fake); full: it is synced to the disk too (it "
            "outlives a power cut; slower).")
    ] = DataDirSync.NORMAL,
) -> None:
    """Run the fake namespace until Ctrl-C; the first stdout line is its connection string.

    Example: sbmgmt fake serve --config Config.json
    """
    from fakes.__main__ import main as serve

    argv = ["--host", host, "--port", str(port), "--http-port", "0"]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir), "--data-dir-sync", data_dir_sync.value]
    if config is not None:
        argv += ["--config", str(config)]
    elif data_dir is None:
        Console(stderr=True, highlight=False).print(
            "note: without --config the namespace has no entities (give an emulator "
            "Config.json; sbmgmt --emulator COMMAND creates the entity it names instead)")
    if accept_any_token:
        argv.append("--accept-any-token")
    status = serve(argv)
    if status:
        raise typer.Exit(status)


_messages.register(app)
_sessions.register(app)
_rules.register(app)
_entities.register(app)
_entity_admin.register(app)
_topology.register(app)
_export.register(app)
_repair.register(app)
_explore.register(app)
_purge.register(app)
_send.register(app)
_deferred.register(app)
_find.register(app)
_purge_found.register(app)
app.add_typer(fake)
reflow_help(app)


def main() -> None:
    """Run the ``sbmgmt`` command (the console script)."""
    app(prog_name="sbmgmt")
