"""``sbmgmt explore``: the Service Bus explorer in the browser (the ``explorer`` extra).

It connects the way every command does (``-c`` / ``SERVICEBUS_CONNECTION_STRING``, ``-n``
with Entra ID, an emulator's connection string with its HTTP port for the counts), or with
``--emulator`` starts the embedded fake namespace with a few entities to look at
(:func:`seed`). It opens the two clients the explorer reads through (AMQP management, and
the administration client for the entities and counts), hands them to
:class:`sbmgmt.explorer.Explorer` with the SQL checks of the fake's parser, prints the
address (with its token) and opens it in the browser, then serves until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import webbrowser
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Annotated

import typer

from ..actions.entities import ADMIN_EXTRA, EMULATOR_HTTP_PORT, admin_client
from ..actions.storage import storage_of
from ..auth import parse_connection_string
from ..client import ManagementClient
from ..message import Message
from ..ops.update_disposition import DispositionStatus
from ..rules import SqlFilter, SqlRuleAction
from ._command import command
from ._exit import UsageProblem
from ._state import CliState

if TYPE_CHECKING:
    from fakes import FakeNamespace

    from ..explorer import Namespace

__all__ = ["explore", "register", "seed"]

_EXTRA = "pip install 'sbmgmt[explorer]'"


def seed(fake: FakeNamespace) -> None:
    """A few entities to explore: ``orders`` (messages of every body kind, two dead
    letters, one scheduled), ``conversations`` (sessions, one with state) and ``events``
    with its subscription ``audit`` (a SQL rule)."""
    fake.add_queue("orders")
    fake.add_queue("conversations", requires_session=True)
    fake.add_topic("events")
    fake.add_subscription("events", "audit")
    fake.send("orders",
              Message(body=b'{"order": 1, "items": ["tea", "milk"]}', message_id="order-1",
                      content_type="application/json", subject="order",
                      application_properties={"region": "eu", "amount": 12.5}),
              Message(body=b"<order id='2'><item>bread</item></order>", message_id="order-2",
                      content_type="application/xml", subject="order"),
              Message(body=b"plain text order 3", message_id="order-3", subject="note"),
              Message(body=bytes(range(40)), message_id="order-4",
                      content_type="application/octet-stream"),
              Message(body=b'{"order": 5}', message_id="order-5"),
              Message(body=b'{"order": 6}', message_id="order-6"))
    fake.send("conversations",
              *(Message(body=f"turn {n}".encode(), session_id=f"user-{n % 2}")
                for n in range(4)))
    fake.send("events", Message(body=b'{"event": "created"}', subject="created"))
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        orders = client.entity("orders")
        locked = fake.receive_and_lock("orders", 6)
        tokens = [m.lock_token for m in locked[4:] if m.lock_token is not None]
        orders.update_disposition(tokens, DispositionStatus.SUSPENDED,
                                  dead_letter_reason="PaymentDeclined",
                                  dead_letter_description="the card was refused")
        orders.schedule_messages([Message(body=b"later", message_id="order-7")],
                                 datetime.now(timezone.utc) + timedelta(hours=1))
        with client.entity("conversations").session("user-0") as held:
            held.set_state(b'{"step": 2}')
        client.entity("events/Subscriptions/audit").add_rule(
            "big", SqlFilter(expression="amount > 100"), SqlRuleAction(expression="SET big = 1"))


def explore(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option(help="The address to listen on (loopback: only this machine).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="0 picks a free port.")] = 0,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Only print the address.")
    ] = False,
    http_port: Annotated[
        int | None,
        typer.Option("--http-port", min=1, max=65535, envvar="EMULATOR_HTTP_PORT",
                     help=f"The emulator's HTTP port (default {EMULATOR_HTTP_PORT}); used "
                     "with an emulator connection string only.", show_default=False),
    ] = None,
    refresh: Annotated[
        float, typer.Option(min=0.5, help="Seconds between refreshes of the counts.")
    ] = 5.0,
) -> None:
    """Explore a namespace in the browser: entities, messages, sessions and rules.

    Counts, messages page by page, sessions, rules, and the actions on them (needs the
    explorer and admin extras).

    Example: sbmgmt --emulator explore

    Example: sbmgmt explore --no-browser --refresh 2
    """
    try:
        from ..explorer import Explorer
    except ImportError:
        raise UsageProblem(f"sbmgmt explore serves a web app: {_EXTRA}") from None
    state = CliState.of(ctx)
    with contextlib.ExitStack() as stack:
        namespace = stack.enter_context(_namespace(state, http_port))
        explorer = stack.enter_context(Explorer(namespace, host=host, port=port,
                                                refresh_seconds=refresh))
        # Plain lines, never wrapped: the address is copied as it is.
        typer.echo(f"sbmgmt explorer of {namespace.label} at {explorer.url}")
        typer.echo("(the address holds its token: keep it to yourself; Ctrl-C stops)")
        sys.stdout.flush()
        if not no_browser:
            webbrowser.open(explorer.url)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


@contextlib.contextmanager
def _namespace(state: CliState, http_port: int | None) -> Iterator[Namespace]:
    """The explorer's namespace: the clients opened, the SQL checks, the secrets known."""
    from ..explorer import Namespace
    from ..sql import parse_action, parse_filter

    with contextlib.ExitStack() as stack:
        connection_string = state.connection_string
        credential = None
        if state.emulator:
            from fakes import FakeNamespace

            fake = stack.enter_context(FakeNamespace(http_port=0))
            seed(fake)
            connection_string, http_port = fake.connection_string, fake.http_port
        elif not connection_string and state.namespace:
            from ._state import _default_credential

            credential = _default_credential()
        elif not connection_string:
            raise UsageProblem("no namespace: pass --connection-string (or set "
                               "SERVICEBUS_CONNECTION_STRING), --namespace with Entra ID, "
                               "or --emulator")
        try:
            admin = stack.enter_context(admin_client(
                connection_string=connection_string, namespace=state.namespace,
                credential=credential, http_port=http_port, timeout=state.timeout))
        except ImportError:
            raise UsageProblem(f"sbmgmt explore lists entities with azure-servicebus's "
                               f"administration client: {ADMIN_EXTRA}") from None
        storage = None
        if connection_string:
            parsed = parse_connection_string(connection_string)
            client = ManagementClient.from_connection_string(connection_string,
                                                             timeout=state.timeout)
            label = parsed.fully_qualified_namespace
            secrets = tuple(s for s in (parsed.shared_access_key,
                                        parsed.shared_access_signature) if s)
            if parsed.use_development_emulator:  # the fake says where it keeps it
                storage = storage_of(connection_string, http_port or EMULATOR_HTTP_PORT,
                                     timeout=min(state.timeout, 5.0))
        else:
            assert state.namespace is not None
            client = ManagementClient(state.namespace, credential, timeout=state.timeout)
            label, secrets = state.namespace, ()
        stack.enter_context(client)
        yield Namespace(label=label, client=client, admin=admin,
                        check_sql_filter=parse_filter, check_sql_action=parse_action,
                        secrets=secrets, storage=storage)


def register(app: typer.Typer) -> None:
    """Add ``explore`` to the root app."""
    command(app, "explore")(explore)

