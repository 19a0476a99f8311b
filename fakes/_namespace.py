"""``FakeNamespace``: the public face of the fake — entities, the server thread, test helpers."""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Iterable
from datetime import timedelta
from types import TracebackType

from sbmgmt.auth import AMQP_PORT, ConnectionString, format_connection_string
from sbmgmt.message import Message, ReceivedMessage
from sbmgmt.rules import RuleDescription

from ._addresses import entity_key
from ._admin import AdminApi, AdminNamespace
from ._clock import FakeClock
from ._config import EmulatorConfig, apply_config, load_config
from ._data_dir import DataDir
from ._duplicates import DEFAULT_WINDOW
from ._entity_rules import StoredRule
from ._entity_state import EntitySettings, SessionOwner
from ._faults import Faults
from ._http import HttpPort
from ._limits import Limits
from ._log import FakeLog
from ._loopback import listen_addresses
from ._management import ManagementNode
from ._metrics import metrics_page
from ._rules import default_rule
from ._server import Server
from ._store import Store
from ._throttle import Throttle
from ._tiers import STANDARD, Tier, tier_named
from ._validation import check_settings, check_topic_settings, dated

__all__ = ["FakeNamespace"]

_DIRECT = SessionOwner(connection=0, link=0)
#: The Standard tier's message size limit (fakes._tiers; Premium: 100 MB).
STANDARD_MAX_MESSAGE_SIZE = STANDARD.max_message_size


#: The service's default ``DuplicateDetectionHistoryTimeWindow``.
DEFAULT_DUPLICATE_WINDOW = timedelta(seconds=DEFAULT_WINDOW)


def _seconds(value: timedelta | None) -> float | None:
    """A time to live in seconds as the store keeps it (None: never, also past what the
    fake dates)."""
    return None if value is None else dated(value.total_seconds())


class FakeNamespace:
    """A Service Bus namespace on loopback that the official SDKs and sbmgmt talk to.

    Use it as a context manager (or :meth:`start` / :meth:`stop`). Entities can be
    added before or after start; every method is thread-safe.

    renew-session-lock and get/set-session-state apply, as on the service, only to a
    session locked by the receiver link named in the request's ``associated-link-name``
    on the same connection. ``relaxed_session_locks=True`` lets them apply to a session
    locked by anyone (a session receiver elsewhere, or :meth:`receive_and_lock`): not
    the service's behaviour, for tests that do not lock sessions as a client would.

    ``tier`` is ``"basic"``, ``"standard"`` (the default, or Config.json's
    ``UserConfig.Namespaces[0].Tier``) or ``"premium"``, or a :class:`fakes.Tier` of one's
    own (``dataclasses.replace(fakes.STANDARD, max_entities=3)``): the namespace refuses what
    that tier of the service refuses, in its words (its quotas and features: docs/fake.md,
    "Tiers"). ``max_message_size`` (bytes) overrides the tier's message size.
    ``transactions=False`` makes a namespace that refuses every transaction, as a Basic-tier
    one does (each declare is rejected with ``amqp:not-allowed``). ``throttle=True`` throttles
    the namespace as the Standard tier does: the tier's credits a second (1,000; a message
    1, a management operation 10), then ``com.microsoft:server-busy`` (docs/fake.md,
    "Throttling"); off by default.

    ``network_latency`` adds a round trip (seconds) to every AMQP connection, half each way
    (:attr:`network_latency`; docs/fake.md, "Network latency").

    ``http_port`` opens the emulator's plain-HTTP side too (``GET /health``; 0 picks a free
    port, None, the default, opens none). ``host="localhost"`` listens on 127.0.0.1 and ::1
    (the same port on both; 127.0.0.1 alone where the machine has no IPv6 loopback), as
    programs written for the emulator reach it by that name.

    ``log_level`` (``"INFO"``, ``"DEBUG"``...) makes the namespace tell what it does, one
    line per connection, link, put-token, management operation, HTTP request and refusal
    (each message too at DEBUG), through the ``fakes.*`` loggers (docs/fake.md, "The
    log"); the ``fakes`` logger is set to that level if it would drop those lines. The
    default, None, writes no line (the counts of ``/metrics`` are kept all the same).

    ``data_dir`` keeps the namespace in that directory (SQLite) and reads it back at the
    next start: entities, messages in every state, session states, sequence numbers,
    duplicate-detection history; what a client was told succeeded is on disk first
    (docs/fake.md, "A data directory"). None, the default, keeps it in memory only.
    ``data_dir_sync``: ``"normal"`` (the default) waits for each commit to reach the
    directory's files, which outlives a kill of the fake; ``"full"`` for it to be synced to
    the disk too, which outlives a power cut, at a lower rate.
    """

    def __init__(
        self,
        config: object | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        key_name: str = "RootManageSharedAccessKey",
        key: str = "SAS_KEY_VALUE",
        accept_any_token: bool = False,
        clock: FakeClock | None = None,
        max_message_size: int | None = None,
        limits: Limits | None = None,
        relaxed_session_locks: bool = False,
        http_port: int | None = None,
        transactions: bool = True,
        network_latency: float = 0.0,
        tier: str | Tier | None = None,
        throttle: bool = False,
        log_level: int | str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        data_dir_sync: str = "normal",
    ) -> None:
        loaded = None if config is None else (
            config if isinstance(config, EmulatorConfig) else load_config(config))  # type: ignore[arg-type]
        named = None if loaded is None else loaded.UserConfig.Namespaces[0].Tier
        #: The service tier whose quotas and features the namespace keeps.
        self.tier = tier_named(tier if tier is not None else named or "standard")
        if max_message_size is None:
            max_message_size = self.tier.max_message_size
        if isinstance(max_message_size, bool) or not isinstance(max_message_size, int) or (
                max_message_size < 1):
            raise ValueError(f"max_message_size must be a positive number of bytes, "
                             f"not {max_message_size!r}")
        #: The largest transfer the links accept (advertised as their max-message-size).
        self.max_message_size = max_message_size
        self.host = host
        self._requested_port = port
        self.key_name = key_name
        self._key = key
        self._accept_any_token = accept_any_token
        self._relaxed_session_locks = relaxed_session_locks
        self._transactions = transactions
        self.clock = clock or FakeClock()
        #: What the namespace did: its log lines and the counts ``/metrics`` shows.
        self.log = FakeLog(log_level, secrets=[key])
        if self.log.level is not None and not logging.getLogger("fakes").isEnabledFor(
                self.log.level):
            logging.getLogger("fakes").setLevel(self.log.level)
        #: What one client may hold (time-outs, connections, buffered replies).
        self.limits = limits or Limits()
        self._lock = threading.RLock()
        self._store = Store(self.clock.now, self.tier, Throttle(
            self.tier.credits_per_second if throttle else None))
        self._server: Server | None = None
        self._requested_http_port = http_port
        self._http: HttpPort | None = None
        #: Fault injection (see docs/reliability.md); works before and after start.
        self.faults = Faults()
        self._network_latency = 0.0
        self.network_latency = network_latency
        if loaded is not None:
            apply_config(self, loaded, self.clock.now())
        #: Where the namespace is kept (None: in memory only; docs/fake.md, "A data directory").
        self.data_dir = None if data_dir is None else os.fspath(data_dir)
        self._kept: DataDir | None = None
        self._data_dir_sync = data_dir_sync
        self._open_data_dir()

    def _open_data_dir(self) -> None:
        """Read the data directory back (and keep it) unless it is open or there is none."""
        if self.data_dir is not None and self._kept is None:
            with self._lock:
                self._kept = DataDir(self.data_dir, self._store, self.clock.now(),
                                     self._data_dir_sync)

    def __repr__(self) -> str:
        state = "running" if self._server else "stopped"
        return f"FakeNamespace(host={self.host!r}, port={self.port!r}, {state})"

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> FakeNamespace:
        """Listen and serve on a background thread (idempotent)."""
        if self._server is None:
            self._open_data_dir()
            self._server = Server(self._store, self.clock, self._lock, host=self.host,
                                  port=self._requested_port, keys={self.key_name: self._key},
                                  accept_any_token=self._accept_any_token,
                                  faults=self.faults, max_message_size=self.max_message_size,
                                  limits=self.limits,
                                  relaxed_session_locks=self._relaxed_session_locks,
                                  transactions=self._transactions and self.tier.transactions,
                                  network_latency=lambda: self._network_latency,
                                  log=self.log,
                                  commit=None if self._kept is None else self._kept.commit)
            self._server.start()
        if self._requested_http_port is not None and self._http is None:
            api = self._administration_api()
            self._http = HttpPort(listen_addresses(self.host), self._requested_http_port,
                                  ready=lambda: self._server is not None, mounted=api,
                                  screen=api.screen, limits=self.limits, log=self.log,
                                  metrics=lambda: metrics_page(
                                      self._store, self.log.counts, self._lock, self.clock.now,
                                      None if self.data_dir is None
                                      else (os.path.abspath(self.data_dir),
                                            self._data_dir_sync)))
            try:
                self._http.start()
            except BaseException:
                self._http = None
                self.stop()
                raise
        return self

    def stop(self) -> None:
        """Close every connection, stop listening and join the server thread."""
        http, self._http = self._http, None
        if http is not None:
            http.stop()
        server, self._server = self._server, None
        if server is not None:
            server.stop()
        kept, self._kept = self._kept, None
        if kept is not None:
            with self._lock:
                kept.close()

    def __enter__(self) -> FakeNamespace:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def network_latency(self) -> float:
        """The round trip (seconds) added to each AMQP connection made from now on, half
        each way: every byte is held by timers in the fake's own loop, with no proxy
        process between the peers (0: none). Set it at any time; a connection keeps the
        latency it was accepted with."""
        return self._network_latency

    @network_latency.setter
    def network_latency(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (
                0 <= seconds < math.inf):
            raise ValueError(f"network_latency must be a number of seconds, 0 or more, "
                             f"not {seconds!r}")
        self._network_latency = float(seconds)

    @property
    def throttled(self) -> int:
        """How many requests the namespace's throttle refused (server-busy) since it began."""
        return self._store.throttle.throttled

    @property
    def relaxed_session_locks(self) -> bool:
        """Whether session requests apply to a session locked by anyone (see the class)."""
        return self._relaxed_session_locks

    @relaxed_session_locks.setter
    def relaxed_session_locks(self, relaxed: bool) -> None:
        self._relaxed_session_locks = relaxed
        server = self._server
        if server is not None and isinstance(server.management, ManagementNode):
            with self._lock:
                server.management.relaxed_session_locks = relaxed

    @property
    def port(self) -> int:
        """The bound port (the real one when port 0 was asked for)."""
        return self._server.port if self._server is not None else self._requested_port

    @property
    def http_port(self) -> int | None:
        """The HTTP port (``/health``; the real one when 0 was asked for), None without one."""
        if self._http is not None:
            return self._http.port
        return self._requested_http_port

    @property
    def connection_string(self) -> str:
        """An emulator connection string for this namespace (plain AMQP); on AMQP's own
        port 5672 the emulator's string exactly, without the port."""
        if self.port == AMQP_PORT:  # the emulator writes its string with a trailing ";"
            return self._connection_string(None) + ";"
        return self._connection_string(self.port)

    def _connection_string(self, port: int | None) -> str:
        """This namespace's emulator connection string with its endpoint on ``port``."""
        return format_connection_string(ConnectionString(
            self.host, port, shared_access_key_name=self.key_name, shared_access_key=self._key,
            use_development_emulator=True))

    def _changed(self) -> None:
        if self._kept is not None:  # on disk before the caller is answered
            with self._lock:
                self._kept.commit()
        if self._server is not None:
            self._server.wake()

    # --- entities ----------------------------------------------------------------------

    def add_queue(
        self,
        name: str,
        *,
        requires_session: bool = False,
        lock_duration: timedelta = timedelta(seconds=60),
        max_delivery_count: int = 10,
        default_ttl: timedelta | None = None,
        dead_lettering_on_expiration: bool = False,
        forward_to: str | None = None,
        forward_dead_lettered_messages_to: str | None = None,
        requires_duplicate_detection: bool = False,
        duplicate_detection_history_time_window: timedelta = DEFAULT_DUPLICATE_WINDOW,
        auto_delete_on_idle: timedelta | None = None,
    ) -> None:
        """Create a queue (the options are the emulator's Config.json properties; see
        docs/fake.md; ``auto_delete_on_idle``: deleted once idle that long, any positive
        duration here)."""
        settings = _settings(requires_session, lock_duration, max_delivery_count, default_ttl,
                             dead_lettering_on_expiration, forward_to,
                             forward_dead_lettered_messages_to, requires_duplicate_detection,
                             duplicate_detection_history_time_window)
        idle = _idle_seconds(auto_delete_on_idle)
        with self._lock:
            self._store.add_queue(name, settings)
            self._store.set_auto_delete(name, idle)

    def add_topic(
        self,
        name: str,
        *,
        requires_duplicate_detection: bool = False,
        duplicate_detection_history_time_window: timedelta = DEFAULT_DUPLICATE_WINDOW,
        default_ttl: timedelta | None = None,
        auto_delete_on_idle: timedelta | None = None,
    ) -> None:
        """Create a topic (with duplicate detection, a message-id seen within the window
        reaches no subscription; ``default_ttl`` caps the time to live of what it fans out)."""
        window = _duplicate_window(requires_duplicate_detection,
                                   duplicate_detection_history_time_window)
        check_topic_settings(window, _seconds(default_ttl), short=True)
        idle = _idle_seconds(auto_delete_on_idle)
        with self._lock:
            self._store.add_topic(name, window, _seconds(default_ttl))
            self._store.set_auto_delete(name, idle)

    def add_subscription(
        self,
        topic: str,
        name: str,
        *,
        requires_session: bool = False,
        lock_duration: timedelta = timedelta(seconds=60),
        max_delivery_count: int = 10,
        default_ttl: timedelta | None = None,
        dead_lettering_on_expiration: bool = False,
        forward_to: str | None = None,
        forward_dead_lettered_messages_to: str | None = None,
        rules: Iterable[RuleDescription] | None = None,
        auto_delete_on_idle: timedelta | None = None,
    ) -> None:
        """Create a subscription; without ``rules`` it gets the ``$Default`` true rule.
        Every rule gets its creation time (now, on the namespace's clock) unless it has one."""
        settings = _settings(requires_session, lock_duration, max_delivery_count, default_ttl,
                             dead_lettering_on_expiration, forward_to,
                             forward_dead_lettered_messages_to)
        with self._lock:
            now = self.clock.now()
            dated = [StoredRule(r).dated(now)
                     for r in (rules if rules is not None else [default_rule()])]
            subscription = self._store.add_subscription(topic, name, settings, dated)
            self._store.set_auto_delete(subscription.path, _idle_seconds(auto_delete_on_idle))

    def describe(self, path: str, properties: dict[str, str]) -> None:
        """Keep properties of a queue, topic or subscription that the fake reports but does
        not act on (the administration API's element names and texts: ``MaxSizeInMegabytes``
        ``"2048"``, ``Status`` ``"Disabled"``...), as a create through that API keeps them;
        the Config.json's ``x-sbmgmt`` objects come here (docs/topology.md)."""
        with self._lock:
            store = self._store
            holder = store.topic(path) if store.is_topic(path) else store.entity(path)
            holder.described.update(properties)

    # --- acting on the store directly ---------------------------------------------------

    def send(self, entity: str, *messages: Message) -> None:
        """Enqueue messages as a sender would (topics fan out)."""
        with self._lock:
            now = self.clock.now()
            for message in messages:
                self._store.send(entity, message, now)
        self._changed()

    def receive_and_lock(self, entity: str, count: int,
                         session_id: str | None = None) -> list[ReceivedMessage]:
        """Lock up to ``count`` messages (with lock tokens), as a peek-lock receiver would.

        On a session entity ``session_id`` is required and the session is locked
        for this namespace's own (direct) client.
        """
        with self._lock:
            now = self.clock.now()
            target = self._store.entity(entity)
            self._store.process_due(now)
            if target.settings.requires_session:
                if session_id is None:
                    raise ValueError(f"{entity!r} requires sessions: pass session_id")
                target.lock_session(session_id, _DIRECT, now)
            out = []
            for _ in range(count):
                stored = target.take(now, session_id, peek_lock=True)
                if stored is None:
                    break
                out.append(stored.render())
        self._changed()
        return out

    def applied(self, entity: str, operation: str) -> int:
        """How many ``operation`` requests to ``entity``'s management node were applied.

        Counts requests answered with success since start; refused ones (4xx, 5xx,
        injected 503s) are not counted, dropped or delayed replies are.
        """
        with self._lock:
            if self._server is None:
                return 0
            return self._server.management.applied[(entity_key(entity), operation)]

    def accounting(self, entity: str) -> dict[str, int]:
        """How many accepted messages are in each state (see docs/fake.md)."""
        with self._lock:
            self._store.process_due(self.clock.now())
            return self._store.accounting(entity)

    @property
    def http_connection_string(self) -> str | None:
        """The connection string the administration client takes: the emulator's form, on
        the HTTP port (None without one)."""
        if self.http_port is None:
            return None
        return self._connection_string(self.http_port)

    def _administration_api(self) -> AdminApi:
        """The administration API on the HTTP port, over this namespace's store and lock."""
        name = self.host if self.host[:1].isdigit() or ":" in self.host else (
            self.host.split(".")[0])
        return AdminApi(AdminNamespace(
            store=self._store, lock=self._lock, now=self.clock.now,
            keys={self.key_name: self._key}, name=name,
            accept_any_token=self._accept_any_token, changed=self._changed,
            detach=self._detach_deleted))

    def _detach_deleted(self, paths: list[str]) -> None:
        server = self._server
        if server is not None:
            server.detach_deleted(paths)


def _settings(requires_session: bool, lock_duration: timedelta, max_delivery_count: int,
              default_ttl: timedelta | None, dead_lettering_on_expiration: bool,
              forward_to: str | None, forward_dead_lettered_messages_to: str | None,
              requires_duplicate_detection: bool = False,
              duplicate_window: timedelta = DEFAULT_DUPLICATE_WINDOW) -> EntitySettings:
    """The store's settings for a queue or subscription, from the public arguments, within
    the service's ranges but for shorter durations (:mod:`fakes._validation`)."""
    settings = EntitySettings(requires_session, lock_duration.total_seconds(),
                              max_delivery_count, _seconds(default_ttl),
                              dead_lettering_on_expiration, forward_to,
                              forward_dead_lettered_messages_to,
                              _duplicate_window(requires_duplicate_detection, duplicate_window))
    check_settings(settings, short=True)
    return settings


def _idle_seconds(value: timedelta | None) -> float | None:
    """An ``auto_delete_on_idle`` in seconds (None: never); any positive duration (the
    service's least is 5 minutes: the test-facing API takes shorter ones)."""
    if value is None:
        return None
    if value <= timedelta(0):
        raise ValueError(f"auto_delete_on_idle must be positive, not {value}")
    return dated(value.total_seconds())


def _duplicate_window(required: bool, window: timedelta) -> float | None:
    """The history window in seconds when duplicate detection is on, else ``None``."""
    if not required:
        return None
    if window <= timedelta(0):
        raise ValueError("duplicate_detection_history_time_window must be positive")
    return window.total_seconds()
