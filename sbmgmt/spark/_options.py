"""The data source's options: parsed and checked before any work starts.

Spark hands a data source its options as strings in a case-insensitive map. This
module turns them into :class:`ReadOptions` / :class:`WriteOptions` and raises
:class:`SparkOptionError` naming the option at fault. The connection string, keys
and signatures are kept in :class:`Connection`, whose repr masks them; no message
raised here ever quotes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from .._client.client_core import entity_path
from ..auth import SasKeyTokenProvider, SasTokenProvider, parse_connection_string
from ..client import ManagementClient

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_PAGES_IN_FLIGHT",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_PARTITIONS",
    "DEFAULT_TIMEOUT",
    "MAX_SEQUENCE_NUMBER",
    "Connection",
    "ReadOptions",
    "SparkOptionError",
    "Starting",
    "StreamOptions",
    "WriteOptions",
    "check_read_options",
    "read_options",
    "stream_options",
    "write_options",
]

DEFAULT_PARTITIONS = 1
DEFAULT_PAGE_SIZE = 250
DEFAULT_PAGES_IN_FLIGHT = 8
"""Peek requests one task keeps pending (``pagesInFlight``). Not the client's
:data:`sbmgmt._client.peek_pager.DEFAULT_PAGES_IN_FLIGHT` (32), on purpose: that one is
sized for one reader decoding as fast as a core can; a Spark task hands every message to
Spark as a row, and one pipelined task was measured at about 2,500 rows/s (docs/spark.md,
"Figures": bound by CPU, not by the 20 ms latency), while 8 pages of 250 at 20 ms a round
trip carry 100,000 messages/s. Each of ``partitions`` tasks holds its own pages, so 32
would multiply the memory and the requests pending on the namespace by four, with no
figure that shows a gain."""
DEFAULT_BATCH_SIZE = 100
DEFAULT_TIMEOUT = 60.0
MAX_SEQUENCE_NUMBER = 2**63 - 1
_MAX_INT32 = 2**31 - 1
_MASK = "***"

_CONNECTION_OPTIONS = (
    "connectionString", "namespace", "sharedAccessKeyName", "sharedAccessKey",
    "sharedAccessSignature", "credential", "timeout",
)
_SCAN_OPTIONS = (*_CONNECTION_OPTIONS, "entity", "partitions", "sessionId", "pageSize",
                 "pagesInFlight")
_BATCH_ONLY = ("fromSequenceNumber", "toSequenceNumber")
_STREAM_ONLY = ("startingSequenceNumber", "maxMessagesPerTrigger")
_READ_OPTIONS = (*_SCAN_OPTIONS, *_BATCH_ONLY)
_STREAM_OPTIONS = (*_SCAN_OPTIONS, *_STREAM_ONLY)
_WRITE_OPTIONS = (*_CONNECTION_OPTIONS, "entity", "batchSize", "duplicateDetection")
#: Options Spark itself adds to a streaming sink's options; the writer ignores them.
_SPARK_SINK_OPTIONS = ("checkpointLocation", "path", "queryName")

_T = TypeVar("_T")


class SparkOptionError(ValueError):
    """An option of the ``servicebus`` data source is missing, unknown or invalid."""


#: Where a new streaming query starts: ``"earliest"``, ``"latest"`` or a sequence number.
Starting = Literal["earliest", "latest"] | int


@dataclass(frozen=True)
class Connection:
    """How executors reach the namespace. The repr never shows a secret.

    Either ``connection_string``, or ``namespace`` with one of: a shared access key
    (``key_name`` + ``key``), a shared access signature, or ``credential="default"``
    (``azure.identity.DefaultAzureCredential``, the ``identity`` extra).
    """

    connection_string: str | None = field(default=None, repr=False)
    namespace: str | None = None
    key_name: str | None = None
    key: str | None = field(default=None, repr=False)
    signature: str | None = field(default=None, repr=False)
    credential: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def __repr__(self) -> str:
        secret = _MASK if (self.connection_string or self.key or self.signature) else None
        return (f"Connection(namespace={self.namespace!r}, key_name={self.key_name!r}, "
                f"credential={self.credential!r}, secret={secret!r}, timeout={self.timeout!r})")

    def open(self) -> ManagementClient:
        """A new client (each Spark task opens its own; close it when done)."""
        if self.connection_string is not None:
            return ManagementClient.from_connection_string(
                self.connection_string, timeout=self.timeout)
        assert self.namespace is not None
        return ManagementClient(self.namespace, self._credential(), timeout=self.timeout)

    def _credential(self) -> object:
        if self.key_name is not None and self.key is not None:
            return SasKeyTokenProvider(self.key_name, self.key)
        if self.signature is not None:
            return SasTokenProvider(self.signature)
        from azure.identity import DefaultAzureCredential

        return DefaultAzureCredential()


@dataclass(frozen=True)
class ReadOptions:
    """What ``spark.read.format("servicebus")`` reads, and how."""

    connection: Connection
    entity: str
    partitions: int = DEFAULT_PARTITIONS
    from_sequence_number: int = 0
    to_sequence_number: int = MAX_SEQUENCE_NUMBER
    session_id: str | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    pages_in_flight: int = DEFAULT_PAGES_IN_FLIGHT


@dataclass(frozen=True)
class StreamOptions:
    """What ``spark.readStream.format("servicebus")`` reads: the scan options of a batch
    read (its sequence bounds come from the stream's offsets), where a new query starts,
    and at most how many sequence numbers one micro-batch spans."""

    read: ReadOptions
    starting: Starting = "latest"
    max_messages_per_trigger: int | None = None


@dataclass(frozen=True)
class WriteOptions:
    """Where ``df.write.format("servicebus")`` schedules rows, and how."""

    connection: Connection
    entity: str
    batch_size: int = DEFAULT_BATCH_SIZE
    duplicate_detection: bool = False


class _Options:
    """Case-insensitive access to the raw strings, checking that every key is known."""

    def __init__(self, raw: Mapping[str, str], known: tuple[str, ...],
                 ignored: tuple[str, ...] = ()) -> None:
        by_lower = {name.lower(): name for name in known}
        skip = {name.lower() for name in ignored}
        self._values: dict[str, str] = {}
        unknown = []
        for key, value in raw.items():
            if key.lower() in skip:
                continue
            name = by_lower.get(key.lower())
            if name is None:
                unknown.append(key)
            elif value is not None:
                self._values[name] = str(value)
        if unknown:
            raise SparkOptionError(
                f"unknown servicebus option(s) {', '.join(sorted(unknown))}; "
                f"known options: {', '.join(known)}")

    def given(self, names: tuple[str, ...]) -> list[str]:
        """Which of ``names`` were given."""
        return [name for name in names if name in self._values]

    def text(self, name: str) -> str | None:
        value = self._values.get(name)
        if value is None:
            return None
        value = value.strip()
        if not value:
            raise SparkOptionError(f"option {name} is empty")
        return value

    def secret(self, name: str) -> str | None:
        value = self._values.get(name)
        if value is not None and not value.strip():
            raise SparkOptionError(f"option {name} is empty")
        return value

    def parsed(self, name: str, parse: Callable[[str], _T], default: _T, what: str) -> _T:
        value = self.text(name)
        if value is None:
            return default
        try:
            return parse(value)
        except ValueError:
            raise SparkOptionError(f"option {name} must be {what}, got {value!r}") from None


def _integer(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        number = int(text)
        if not low <= number <= high:
            raise ValueError(text)
        return number
    return parse


def _positive_float(text: str) -> float:
    number = float(text)
    if not number > 0:
        raise ValueError(text)
    return number


def _boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError(text)
    return lowered == "true"


def _connection(options: _Options) -> Connection:
    timeout = options.parsed("timeout", _positive_float, DEFAULT_TIMEOUT,
                             "a positive number of seconds")
    connection_string = options.secret("connectionString")
    namespace = options.text("namespace")
    key_name = options.text("sharedAccessKeyName")
    key = options.secret("sharedAccessKey")
    signature = options.secret("sharedAccessSignature")
    credential = options.text("credential")
    if connection_string is not None:
        if namespace or key_name or key or signature or credential:
            raise SparkOptionError(
                "give either connectionString or namespace with a credential, not both")
        try:
            parse_connection_string(connection_string)
        except ValueError as exc:
            raise SparkOptionError(f"option connectionString is invalid: {exc}") from None
        return Connection(connection_string=connection_string, timeout=timeout)
    if namespace is None:
        raise SparkOptionError("option connectionString (or namespace with a credential) "
                               "is required")
    chosen = [name for name, given in (
        ("sharedAccessKeyName/sharedAccessKey", key_name is not None or key is not None),
        ("sharedAccessSignature", signature is not None),
        ("credential", credential is not None),
    ) if given]
    if len(chosen) != 1:
        raise SparkOptionError(
            "with namespace give exactly one of sharedAccessKeyName+sharedAccessKey, "
            f"sharedAccessSignature or credential=default (got {', '.join(chosen) or 'none'})")
    if (key_name is None) != (key is None):
        raise SparkOptionError("sharedAccessKeyName and sharedAccessKey go together")
    if credential is not None and credential.lower() != "default":
        raise SparkOptionError(
            f"option credential must be 'default' (DefaultAzureCredential), got {credential!r}")
    return Connection(namespace=namespace, key_name=key_name, key=key, signature=signature,
                      credential=None if credential is None else "default", timeout=timeout)


def _entity(options: _Options) -> str:
    entity = options.text("entity")
    if entity is None:
        raise SparkOptionError(
            "option entity is required (a queue, topic/Subscriptions/sub, or a "
            ".../$DeadLetterQueue path)")
    try:
        return entity_path(entity)
    except ValueError as exc:
        raise SparkOptionError(f"option entity is invalid: {exc}") from None


def _scan(options: _Options, first: int = 0,
          last: int = MAX_SEQUENCE_NUMBER) -> ReadOptions:
    session_id = options.text("sessionId")
    if session_id is not None and len(session_id) > 128:
        raise SparkOptionError("option sessionId is longer than 128 characters")
    return ReadOptions(
        connection=_connection(options),
        entity=_entity(options),
        partitions=options.parsed("partitions", _integer(1, 10_000), DEFAULT_PARTITIONS,
                                  "an integer from 1 to 10000"),
        from_sequence_number=first,
        to_sequence_number=last,
        session_id=session_id,
        page_size=options.parsed("pageSize", _integer(1, _MAX_INT32), DEFAULT_PAGE_SIZE,
                                 "a positive integer"),
        pages_in_flight=options.parsed("pagesInFlight", _integer(1, 64),
                                       DEFAULT_PAGES_IN_FLIGHT, "an integer from 1 to 64"),
    )


def _batch(options: _Options) -> ReadOptions:
    sequence = _integer(0, MAX_SEQUENCE_NUMBER)
    first = options.parsed("fromSequenceNumber", sequence, 0,
                           "a sequence number (0 to 2**63-1)")
    last = options.parsed("toSequenceNumber", sequence, MAX_SEQUENCE_NUMBER,
                          "a sequence number (0 to 2**63-1)")
    if first > last:
        raise SparkOptionError(
            f"fromSequenceNumber ({first}) is greater than toSequenceNumber ({last})")
    return _scan(options, first, last)


def _starting(text: str) -> Starting:
    lowered = text.lower()
    if lowered == "earliest":
        return "earliest"
    if lowered == "latest":
        return "latest"
    return _integer(0, MAX_SEQUENCE_NUMBER)(text)


def _stream(options: _Options) -> StreamOptions:
    return StreamOptions(
        read=_scan(options),
        starting=options.parsed("startingSequenceNumber", _starting, "latest",
                                "earliest, latest or a sequence number (0 to 2**63-1)"),
        max_messages_per_trigger=options.parsed(
            "maxMessagesPerTrigger", _integer(1, MAX_SEQUENCE_NUMBER), None,
            "a positive integer"),
    )


def _wrong_mode(options: _Options, names: tuple[str, ...], usage: str) -> None:
    given = options.given(names)
    if given:
        raise SparkOptionError(f"option {given[0]} {usage}")


def read_options(raw: Mapping[str, str]) -> ReadOptions:
    """Parse and check the options of a batch read (``spark.read``)."""
    options = _Options(raw, (*_READ_OPTIONS, *_STREAM_ONLY))
    _wrong_mode(options, _STREAM_ONLY, "applies to spark.readStream only")
    return _batch(options)


def stream_options(raw: Mapping[str, str]) -> StreamOptions:
    """Parse and check the options of a streaming read (``spark.readStream``)."""
    options = _Options(raw, (*_STREAM_OPTIONS, *_BATCH_ONLY))
    _wrong_mode(options, _BATCH_ONLY, "applies to batch reads only; a stream starts at "
                "startingSequenceNumber and follows the entity's end")
    return _stream(options)


def check_read_options(raw: Mapping[str, str]) -> None:
    """Check a read's options when Spark does not yet say whether it is batch or stream
    (at ``load()``): every option value, and that batch-only and stream-only options are
    not mixed."""
    options = _Options(raw, (*_READ_OPTIONS, *_STREAM_ONLY))
    batch, stream = options.given(_BATCH_ONLY), options.given(_STREAM_ONLY)
    if batch and stream:
        raise SparkOptionError(
            f"options {', '.join(batch)} (batch reads) and {', '.join(stream)} "
            "(spark.readStream) do not go together")
    if stream:
        _stream(options)
    else:
        _batch(options)


def write_options(raw: Mapping[str, str], streaming: bool = False) -> WriteOptions:
    """Parse and check the writer's options (a stream's also carry Spark's sink options,
    such as ``checkpointLocation``, which are ignored)."""
    options = _Options(raw, _WRITE_OPTIONS, _SPARK_SINK_OPTIONS if streaming else ())
    return WriteOptions(
        connection=_connection(options),
        entity=_entity(options),
        batch_size=options.parsed("batchSize", _integer(1, 10_000), DEFAULT_BATCH_SIZE,
                                  "an integer from 1 to 10000"),
        duplicate_detection=options.parsed("duplicateDetection", _boolean, False,
                                           "true or false"),
    )
