"""``python -m fakes``: run a fake namespace until SIGINT/SIGTERM, where the emulator would be.

With no arguments it stands in for the Service Bus emulator's container: AMQP on 5672 and HTTP
(``GET /health``) on 5300 of ``localhost`` (127.0.0.1 and ::1), the entities of ``--config``, of
the ``CONFIG_JSON`` environment variable (the file's text) or of the file ``CONFIG_PATH`` names,
the ports overridable by flags or by the emulator's variables ``EMULATOR_AMQP_PORT`` /
``EMULATOR_HTTP_PORT`` (0 picks a free one).
The first stdout line is the connection string, the second the base URL of the HTTP port. Fault
flags (``--latency-ms``, ``--server-busy`` ...) inject faults into management replies from the
start, scoped by ``--fault-entity`` / ``--fault-operation`` (see docs/reliability.md).
It logs what it does at INFO (``--log-level``) where Config.json's ``Logging.Type`` says:
``Console`` (stderr, the default without a file), ``File`` (:data:`LOG_FILE`, or
``--log-file``), or both (docs/fake.md, "The log").
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
import threading
from types import FrameType

import json5

from sbmgmt.auth import AMQP_PORT, url_host

from ._config import load_config
from ._errors import ConfigError
from ._faults import Faults
from ._limits import Limits
from ._log import parse_level
from ._namespace import FakeNamespace

_DEFAULTS = Limits()
#: The emulator's HTTP port (health check, administration API).
HTTP_PORT = 5300
#: The help's description: plain text (argparse prints it as it is).
_DESCRIPTION = (
    "Run a fake Service Bus namespace until Ctrl-C or SIGTERM. With no arguments it stands in "
    "for the emulator's container: AMQP on 5672 and HTTP (GET /health) on 5300 of localhost "
    "(127.0.0.1 and ::1), the entities of --config, of CONFIG_JSON (the file's text) or of the "
    "file CONFIG_PATH names. The first "
    "stdout line is the connection string, the second the base URL of the HTTP port.")

#: Where Config.json's ``"Logging": {"Type": "File"}`` writes unless ``--log-file`` names
#: another file: ``fake-servicebus.log`` in the system's temporary directory (``$TMPDIR``,
#: else ``/tmp``), never the current one (the emulator writes inside its container), appended.
LOG_FILE = os.path.join(tempfile.gettempdir(), "fake-servicebus.log")
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

__all__ = ["LOG_FILE", "main"]


def _config(given: str | None) -> object:
    """The Config.json to load: ``--config``, else ``CONFIG_JSON`` (the file's text in the
    variable, as the emulator's users ask in its installer's issue 108), else the file
    ``CONFIG_PATH`` names; None without any. ConfigError when both variables are set or
    ``CONFIG_JSON`` is not JSON."""
    if given is not None:
        return given
    text, path = os.environ.get("CONFIG_JSON") or None, os.environ.get("CONFIG_PATH") or None
    if text is not None and path is not None:
        raise ConfigError("CONFIG_JSON and CONFIG_PATH are both set: set one of them (or pass "
                          "--config)")
    if text is None:
        return path
    try:
        return json5.loads(text)
    except ValueError as exc:
        raise ConfigError(f"CONFIG_JSON is not JSON: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    """Run the fake namespace in the foreground; returns the exit status."""
    try:
        amqp_port = _env_port("EMULATOR_AMQP_PORT", AMQP_PORT)
        http_port = _env_port("EMULATOR_HTTP_PORT", HTTP_PORT)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="python -m fakes", description=_DESCRIPTION)
    parser.add_argument("--config", help="an emulator Config.json (default: the text of "
                        "$CONFIG_JSON, or the file $CONFIG_PATH names)")
    parser.add_argument("--host", default="localhost",
                        help="the address to listen on; localhost (the default) is 127.0.0.1 "
                        "and ::1")
    parser.add_argument("--port", type=_port, default=amqp_port,
                        help="the AMQP port (default: $EMULATOR_AMQP_PORT or 5672; 0 picks a "
                        "free port)")
    parser.add_argument("--http-port", type=_port,
                        default=http_port,
                        help="the HTTP port of GET /health and the administration API (default: "
                        "$EMULATOR_HTTP_PORT or "
                        "5300; 0 picks a free port)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="keep the namespace in DIR and read it back at the next start "
                        "(entities, messages, session states; default: in memory only, as the "
                        "emulator; docs/fake.md, 'A data directory')")
    parser.add_argument("--data-dir-sync", choices=("normal", "full"), default="normal",
                        help="normal: each change reaches the data directory's files before "
                        "the client is told (it outlives a kill of the fake); full: it is "
                        "synced to the disk too (it outlives a power cut; slower)")
    parser.add_argument("--accept-any-token", action="store_true",
                        help="accept any CBS token without checking its signature (for "
                        "clients that cannot sign with the fake's key)")
    parser.add_argument("--tier", choices=("basic", "standard", "premium"),
                        help="the service tier whose quotas and features the namespace keeps "
                        "(default: Config.json's Tier, else standard; docs/fake.md, Tiers)")
    parser.add_argument("--throttle", action="store_true",
                        help="throttle as the Standard tier does: 1,000 credits a second, then "
                        "server-busy (docs/fake.md, Throttling)")
    parser.add_argument("--max-message-size", type=int, metavar="BYTES",
                        help="the links' max-message-size (default: the tier's, 262144 for "
                        "Standard, 104857600 for Premium)")
    parser.add_argument("--no-transactions", action="store_true",
                        help="refuse every transaction (each declare: amqp:not-allowed), as a "
                        "Basic-tier namespace does")
    limits = parser.add_argument_group("limits (docs/fake.md)")
    limits.add_argument("--handshake-timeout", type=float, default=_DEFAULTS.handshake_timeout,
                        help="close a connection not opened within this many seconds")
    limits.add_argument("--idle-timeout", type=float, default=_DEFAULTS.idle_timeout,
                        help="close a connection silent for this many seconds")
    limits.add_argument("--max-connections", type=int, default=_DEFAULTS.max_connections,
                        help="refuse connections beyond this many")
    limits.add_argument("--link-idle-timeout", type=float,
                        default=_DEFAULTS.link_idle_timeout,
                        help="detach an entity link idle this many seconds "
                        "(amqp:link:detach-forced; the service's 600)")
    limits.add_argument("--linkless-timeout", type=float, default=_DEFAULTS.linkless_timeout,
                        help="close a connection left without links this many seconds "
                        "(amqp:connection:forced; the service's 300)")
    limits.add_argument("--first-link-timeout", type=float,
                        default=_DEFAULTS.first_link_timeout,
                        help="close a new connection that attaches no link within this many "
                        "seconds (the service's 60)")
    limits.add_argument("--http-header-timeout", type=float,
                        default=_DEFAULTS.http_header_timeout,
                        help="HTTP: answer 408 to a request line and headers not in within "
                        "this many seconds")
    limits.add_argument("--http-body-timeout", type=float, default=_DEFAULTS.http_body_timeout,
                        help="HTTP: answer 408 to a body not in within this many seconds")
    limits.add_argument("--http-max-connections", type=int,
                        default=_DEFAULTS.http_max_connections,
                        help="HTTP: answer 503 to connections beyond this many")
    parser.add_argument("--network-latency-ms", type=float, default=0.0,
                        help="add this round trip to every AMQP connection, half each way "
                        "(held in the fake's own loop; --latency-ms delays management "
                        "replies only)")
    logs = parser.add_argument_group("the log (docs/fake.md)")
    logs.add_argument("--log-level", type=_level, default=logging.INFO, metavar="LEVEL",
                      help="DEBUG (each message too), INFO (the default: connections, links, "
                      "management operations, HTTP requests, refusals), WARNING, ERROR or OFF")
    logs.add_argument("--log-file", metavar="PATH",
                      help=f"write the log to this file too (Config.json's Logging.Type File "
                      f"writes to {LOG_FILE})")
    faults = parser.add_argument_group("fault injection (management replies)")
    faults.add_argument("--latency-ms", type=float, default=0.0,
                        help="delay every reply by this many milliseconds")
    faults.add_argument("--jitter-ms", type=float, default=0.0,
                        help="plus a uniform random delay of up to this many milliseconds")
    faults.add_argument("--server-busy", type=int, metavar="N",
                        help="answer the first N requests 503 server-busy (not applied)")
    faults.add_argument("--drop-replies", type=int, metavar="N",
                        help="apply the first N requests but send no reply")
    faults.add_argument("--duplicate-replies", type=int, metavar="N",
                        help="send the first N replies twice")
    faults.add_argument("--wrong-correlation-id", type=int, metavar="N",
                        help="send the first N replies with a correlation-id nobody asked for")
    faults.add_argument("--fault-entity", help="limit the faults to this entity path")
    faults.add_argument("--fault-operation",
                        help="limit the faults to this operation (com.microsoft:renew-lock)")
    args = parser.parse_args(argv)
    try:
        config = _config(args.config)
        _start_log(args.log_level, config, args.log_file)
        namespace = FakeNamespace(config, host=args.host, port=args.port,
                                  http_port=args.http_port,
                                  accept_any_token=args.accept_any_token,
                                  max_message_size=args.max_message_size,
                                  tier=args.tier, throttle=args.throttle,
                                  transactions=not args.no_transactions,
                                  log_level=args.log_level,
                                  network_latency=args.network_latency_ms / 1000,
                                  data_dir=args.data_dir,
                                  data_dir_sync=args.data_dir_sync,
                                  limits=Limits(handshake_timeout=args.handshake_timeout,
                                                idle_timeout=args.idle_timeout,
                                                max_connections=args.max_connections,
                                                link_idle_timeout=args.link_idle_timeout,
                                                linkless_timeout=args.linkless_timeout,
                                                first_link_timeout=args.first_link_timeout,
                                                http_header_timeout=args.http_header_timeout,
                                                http_body_timeout=args.http_body_timeout,
                                                http_max_connections=args.http_max_connections))
        _inject(namespace.faults, args)
        namespace.start()
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stopping = threading.Event()

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    with namespace:
        print(namespace.connection_string, flush=True)
        print(f"http://{url_host(args.host)}:{namespace.http_port}", flush=True)
        if namespace.http_port != HTTP_PORT:
            print(f"the HTTP port is {namespace.http_port}, not the emulator's {HTTP_PORT}: "
                  f"give it to sbmgmt as `sbmgmt entities --http-port {namespace.http_port}` "
                  f"or EMULATOR_HTTP_PORT={namespace.http_port}", file=sys.stderr, flush=True)
        if namespace.data_dir is not None:
            print(f"the namespace is kept in {namespace.data_dir}", file=sys.stderr, flush=True)
        stopping.wait()
    return 0


def _level(text: str) -> int | None:
    """``--log-level``: a level's name (None for OFF); argparse prints the error's text."""
    try:
        return parse_level(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _start_log(level: int | None, config: object, log_file: str | None) -> None:
    """Send the ``fakes`` loggers' lines at ``level`` and up where ``config``'s
    ``Logging.Type`` says (Console: stderr; File: :data:`LOG_FILE`; stderr without a
    config), and to ``log_file`` too if given. OSError if the file cannot be opened."""
    kinds = {"Console"}
    if isinstance(config, (str, dict)):  # a path, the file's text, or the parsed file
        kinds = {kind.strip() for kind in load_config(config).UserConfig.Logging.Type.split(",")}
    handlers: list[logging.Handler] = []
    if "Console" in kinds:
        handlers.append(logging.StreamHandler(sys.stderr))
    if "File" in kinds or log_file is not None:
        handlers.append(logging.FileHandler(log_file or LOG_FILE, encoding="utf-8"))
    logger = logging.getLogger("fakes")
    logger.setLevel(logging.CRITICAL + 1 if level is None else level)
    logger.propagate = False
    for handler in handlers:
        handler.setFormatter(logging.Formatter(_LOG_FORMAT))
        logger.addHandler(handler)


def _port(text: str) -> int:
    """A TCP port number (0: any free port); argparse prints the error's text as it is."""
    port = int(text) if text.strip().isdigit() else -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port number (0 to 65535; 0 picks a free port)")
    return port


def _env_port(name: str, default: int) -> int:
    """The port an emulator environment variable sets, else ``default``."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return _port(text)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"{name}={exc}") from None


def _inject(faults: Faults, args: argparse.Namespace) -> None:
    """Add the faults the command line asks for."""
    scope = {"entity": args.fault_entity, "operation": args.fault_operation}
    if args.latency_ms or args.jitter_ms:
        faults.latency(args.latency_ms / 1000, args.jitter_ms / 1000, **scope)
    if args.server_busy is not None:
        faults.server_busy(args.server_busy, **scope)
    if args.drop_replies is not None:
        faults.drop_replies(args.drop_replies, **scope)
    if args.duplicate_replies is not None:
        faults.duplicate_replies(args.duplicate_replies, **scope)
    if args.wrong_correlation_id is not None:
        faults.wrong_correlation_id(args.wrong_correlation_id, **scope)


if __name__ == "__main__":
    sys.exit(main())
