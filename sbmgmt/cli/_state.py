"""The global options of one ``sbmgmt`` run, and the client they open."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import typer

from ..auth import ConnectionString, parse_connection_string
from ..client import EntityClient, ManagementClient
from ..errors import ConnectFailedError, NotFoundError
from ._exit import Scrubber, UsageProblem
from ._input import entity_path
from ._render import OutputFormat, Renderer

if TYPE_CHECKING:
    from fakes import FakeNamespace

__all__ = ["GLOBAL_OPTIONS", "CliState", "ensure_entity"]

#: The options of the root command that every subcommand takes too (the fields below).
GLOBAL_OPTIONS = ("connection_string", "namespace", "emulator", "output", "timeout", "debug")

_DEAD_LETTER = "$deadletterqueue"
_SUBSCRIPTIONS = "subscriptions"


def ensure_entity(fake: FakeNamespace, path: str, *, requires_session: bool) -> None:
    """Create the queue, or topic and subscription, that ``path`` names on a fresh fake."""
    parts = [part for part in path.split("/") if part]
    if parts and parts[-1].lower() == _DEAD_LETTER:
        parts = parts[:-1]
    if len(parts) == 1:
        fake.add_queue(parts[0], requires_session=requires_session)
    elif len(parts) == 3 and parts[1].lower() == _SUBSCRIPTIONS:
        fake.add_topic(parts[0])
        fake.add_subscription(parts[0], parts[2], requires_session=requires_session)
    else:
        raise UsageProblem(
            f"{path!r} is not an entity path: use QUEUE or TOPIC/Subscriptions/SUBSCRIPTION"
        )


@dataclass
class CliState:
    """What the global options chose; opens the client on first use, closes it at the end."""

    connection_string: str | None = None
    namespace: str | None = None
    emulator: bool = False
    timeout: float = 30.0
    output: OutputFormat = OutputFormat.TABLE
    debug: bool = False
    scrub: Scrubber = field(default_factory=Scrubber)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _client: ManagementClient | None = None

    @staticmethod
    def of(ctx: typer.Context) -> CliState:
        """The state the root command stored (a default one when there is none)."""
        root = ctx.find_root()
        if not isinstance(root.obj, CliState):
            root.obj = CliState()
        return root.obj

    def update(self, options: dict[str, Any]) -> None:
        """Take global options given after the subcommand (they win over the root's)."""
        for name, value in options.items():
            if name not in GLOBAL_OPTIONS:
                raise ValueError(f"{name!r} is not a global option")
            setattr(self, name, value)
        self.scrub.add(options.get("connection_string"))

    def connection_settings(self) -> ConnectionString:
        """The connection string's settings; one that does not parse is a usage problem in
        the parser's words (they never repeat a key), not ``error: ValueError: ...``."""
        try:
            return parse_connection_string(self.connection_string or "")
        except ValueError as exc:
            raise UsageProblem(f"the connection string (--connection-string or "
                               f"SERVICEBUS_CONNECTION_STRING) cannot be used: {exc}") from None

    def hint(self, error: BaseException) -> str | None:
        """What the user may have meant, for an error the options explain."""
        if isinstance(error, NotFoundError):
            from ._topic_hint import topic_hint

            return topic_hint(error, connection_string=self.connection_string,
                              namespace=self.namespace, timeout=self.timeout,
                              credential=_default_credential)
        if not isinstance(error, ConnectFailedError) or self.emulator:
            return None
        if not self.connection_string:
            return None
        parsed = parse_connection_string(self.connection_string)
        if parsed.port is None or parsed.use_development_emulator or parsed.port == error.port:
            return None
        return (f"the Endpoint's port {parsed.port} was not used: without "
                f"UseDevelopmentEmulator=true every connection goes to port {error.port}")

    @property
    def renderer(self) -> Renderer:
        """Prints results in the chosen output format."""
        return Renderer(self.output)

    def entity(self, path: str, *, requires_session: bool = False) -> EntityClient:
        """The operations on ``path``, connecting on first use.

        With ``--emulator`` a fresh embedded fake namespace is started and the entity is
        created on it (a session entity when ``requires_session``). The short form
        ``TOPIC/SUB`` names a subscription, as in every command (``entity_path``).
        """
        path = entity_path(path)
        if self._client is None:
            self._client = self._stack.enter_context(self._connect(path, requires_session))
        return self._client.entity(path)

    def client(self, path: str) -> ManagementClient:
        """The namespace's client (for the actions), connecting on first use as
        :meth:`entity` does for ``path``."""
        self.entity(path)
        assert self._client is not None
        return self._client

    def _connect(self, path: str, requires_session: bool) -> ManagementClient:
        if self.emulator:
            fake = self.start_emulator()
            ensure_entity(fake, path, requires_session=requires_session)
            return ManagementClient.from_connection_string(
                fake.connection_string, timeout=self.timeout
            )
        if self.connection_string:
            self.connection_settings()
            return ManagementClient.from_connection_string(
                self.connection_string, timeout=self.timeout
            )
        if self.namespace:
            return ManagementClient(self.namespace, _default_credential(), timeout=self.timeout)
        raise UsageProblem(
            "no namespace: pass --connection-string (or set SERVICEBUS_CONNECTION_STRING), "
            "--namespace with Entra ID, or --emulator"
        )

    def start_emulator(self) -> FakeNamespace:
        """Start the embedded fake namespace for the rest of this command."""
        from fakes import FakeNamespace

        return self._stack.enter_context(FakeNamespace())

    def close(self) -> None:
        """Close the client and stop the emulator, if they were opened."""
        self._client = None
        self._stack.close()


def _default_credential() -> object:
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise UsageProblem(
            "--namespace uses Entra ID through azure-identity: pip install 'sbmgmt[identity]'"
        ) from None
    credential: object = DefaultAzureCredential()
    return credential
