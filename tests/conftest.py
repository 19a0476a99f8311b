"""The suite's fake namespace and client (thin uses of the package's own pytest plugin,
``fakes.pytest_plugin``), and suite-wide checks.

``fake``: a started fake namespace holding :data:`SUITE_ENTITIES` (``q``, ``sq``, ``t``/``s``)
unless the test declares its own with the plugin's ``fake_namespace`` marker
(``@pytest.mark.fake_namespace(queues=["orders"])``, ``config=`` an emulator Config.json);
``client``: a ``ManagementClient`` on it. A folder or a module that needs another namespace
defines its own ``fake`` (tests/README.md says which fixture to use where).

No key, signature or token ever reaches a log record.

For the whole session the ``sbmgmt`` and ``fakes`` loggers are set to DEBUG and a
handler screens every record as it is emitted (its message and the text of any
exception chain) for the test keys and for the marks of a SAS token. Only the records
that match are kept (at most ``_MAX_KEPT``); they are fully formatted (tracebacks
included) and checked once, when the session ends, which fails if any holds a secret.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from fakes import FakeNamespace
from fakes.pytest_plugin import FakeEntities, declared

# The fake namespace's fixtures (the package's pytest11 entry point registers them too once
# installed; this import works from a plain checkout).
from fakes.pytest_plugin import fake_entities as fake_entities
from fakes.pytest_plugin import fake_namespace as fake_namespace
from fakes.pytest_plugin import fake_namespace_factory as fake_namespace_factory
from sbmgmt.client import ManagementClient

# The mock management node's fixture, for every test (the package's pytest11 entry point
# registers it too once installed; this import works from a plain checkout).
from sbmgmt.testing.pytest_plugin import sbmgmt_mock as sbmgmt_mock

# One Spark session per worker, shared by spark/ and docs/spark.md's examples.
from tests._spark import spark as spark

# No test depends on the machine's speed: hypothesis's per-example deadline (200 ms) fails a
# test whose example waited for a core (six workers share two; tests/README.md, "Time").
settings.register_profile("sbmgmt", deadline=None)
settings.load_profile("sbmgmt")



def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as at a terminal: a run started in the background by a shell without job
    control (``pytest ... &`` in a script; then every xdist worker) inherits SIGINT
    *ignored*, and so would every process a test starts, which keeps it ignored (as
    ``sbmgmt`` does: tests/cli/test_long.py); the tests that send Ctrl-C to a command
    would then wait for nothing."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _kind(item: pytest.Item) -> int:
    """0: waits in real time on purpose (``realtime``: long, mostly waiting); 1: uses Spark
    (the ``spark`` marker or fixture); 2: over 15 s for another reason (``slow``); 3: the
    rest."""
    if item.get_closest_marker("realtime") is not None:
        return 0
    if item.get_closest_marker("spark") is not None or "spark" in getattr(
            item, "fixturenames", ()):
        return 1
    return 2 if item.get_closest_marker("slow") is not None else 3


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order of the run. xdist's ``worksteal`` hands each worker a contiguous share of
    the collection and steals from the end of a share, so: the real-time tests, then those
    that use Spark, first (the first worker runs them: the run's one Spark session, where
    each worker would start a JVM of its own, about 70 CPU seconds more on two cores; and
    the longest waits, the Spark stream restart's 100 s, begin at once); the ``slow`` ones,
    a module's together, each at the head of another worker's share, so that none of them
    ends the run alone;
    the rest in their order (a module's tests together, for its fixtures)."""
    kinds: list[list[pytest.Item]] = [[], [], [], []]
    for item in items:
        kinds[_kind(item)].append(item)
    realtime, spark, slow, rest = kinds
    order = realtime + spark + rest
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    share = len(items) // workers
    by_module: dict[str, list[pytest.Item]] = {}
    for item in slow:  # a module's together: its module fixtures set up once
        by_module.setdefault(item.nodeid.split("::")[0], []).append(item)
    for index, module in enumerate(by_module.values()):
        at = share * (1 + index % (workers - 1)) if workers > 1 else len(realtime + spark)
        order[at:at] = module
    items[:] = order


def pytest_collection_finish(session: pytest.Session) -> None:
    """What imports and collection made (modules, functions, the tests' parameters) lives
    for the whole run: it is set aside from the garbage collector (``gc.freeze``), whose
    full collections otherwise walk all of it again, many times in a worker's run."""
    gc.collect()
    gc.freeze()


#: What the suite's ``fake`` holds unless a test declares otherwise.
SUITE_ENTITIES = FakeEntities(queues=("q",), session_queues=("sq",), topics={"t": ("s",)})


@pytest.fixture
def fake(request: pytest.FixtureRequest,
         fake_namespace_factory: Callable[..., FakeNamespace]) -> FakeNamespace:
    """A started fake namespace with what the test declares, by default :data:`SUITE_ENTITIES`."""
    return fake_namespace_factory(**declared(request, SUITE_ENTITIES))


@pytest.fixture
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    """A client on ``fake`` (10 s time-out)."""
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10) as c:
        yield c


_LOGGERS = ("sbmgmt", "fakes")

#: The keys the tests sign with (``SharedAccessKey=`` values and key constants in tests/).
TEST_KEYS = (
    "SAS_KEY_VALUE",
    "c2VjcmV0",                                       # "secret": the prefix of several keys
    "V3JvbmdLZXlWYWx1ZQ==",
    "V3JvbmdTZWN1cml0eUtleQ==",
    "d3Jvbmc=",
    "dGhpcy1pcy10aGUtc2VjcmV0LWtleS1zZW50aW5lbA==",
)
#: What every SAS token or signature contains.
TOKEN_MARKS = ("sig=", "SharedAccessSignature sr=")
SECRETS = TEST_KEYS + TOKEN_MARKS
_MAX_KEPT = 100
_MAX_CHAIN = 10


def _screened_text(record: logging.LogRecord) -> str | None:
    """The record's message and its exceptions' messages (cheap: no traceback formatting);
    ``None`` when the message cannot be formatted."""
    try:
        parts = [record.getMessage()]
    except Exception:  # kept: its raw msg is checked at the end
        return None
    error = record.exc_info[1] if record.exc_info else None
    for _ in range(_MAX_CHAIN):
        if error is None:
            break
        parts.append(str(error))
        error = error.__cause__ or error.__context__
    return "\n".join(parts)


def secrets_in(text: str) -> list[str]:
    """Which of :data:`SECRETS` occur in ``text``."""
    return [secret for secret in SECRETS if secret in text]


class SecretScreen(logging.Handler):
    """Keeps the log records that may hold a secret; :meth:`leaks` checks them in full."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.kept: list[logging.LogRecord] = []
        self.screened = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.screened += 1
        if len(self.kept) < _MAX_KEPT:
            text = _screened_text(record)
            if text is None or secrets_in(text):
                self.kept.append(record)

    def leaks(self) -> list[str]:
        """One line per kept record that holds a secret once formatted (the secret itself
        is not repeated: the line names the logger, the place and what was found)."""
        formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
        found = []
        for record in self.kept:
            try:
                text = formatter.format(record)
            except Exception as exc:  # check the raw msg instead
                text = f"{record.msg!r} (unformattable: {type(exc).__name__})"
            hits = secrets_in(text)
            if hits:
                what = ", ".join("a test key" if s in TEST_KEYS else repr(s) for s in hits)
                found.append(f"{record.name} {record.levelname} at "
                             f"{record.pathname}:{record.lineno}: {what}")
        return found


@pytest.fixture(scope="session", autouse=True)
def no_secrets_in_logs() -> Iterator[SecretScreen]:
    """Screen every ``sbmgmt`` / ``fakes`` log record of the session for keys and tokens."""
    screen = SecretScreen()
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(screen)
        logger.setLevel(logging.DEBUG)
    try:
        yield screen
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(screen)
            logger.setLevel(level)
    leaks = screen.leaks()
    if leaks:
        pytest.fail(f"{len(leaks)} of {screen.screened} log records hold a key or a token:\n"
                    + "\n".join(leaks), pytrace=False)


ROOT = Path(__file__).resolve().parents[1]
#: What tools keep in the working directory by their own defaults: hypothesis's example
#: database, pytest's cache (off in scripts/test.sh), the linters' caches.
TOOL_CACHES = {".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache",
               ".import_linter_cache"}


def _root_files() -> dict[str, int]:
    """The repository root's entries but the tools' caches, with each file's mtime."""
    return {entry.name: entry.stat().st_mtime_ns if entry.is_file() else 0
            for entry in os.scandir(ROOT) if entry.name not in TOOL_CACHES}


@pytest.fixture(scope="session", autouse=True)
def nothing_written_at_the_root() -> Iterator[None]:
    """No test, and no example a test runs, writes into the working directory (the
    repository's root, where the suite runs): what they make goes to ``tmp_path``."""
    before = _root_files()
    yield
    after = _root_files()
    changed = sorted(name for name, mtime in after.items() if before.get(name) != mtime)
    if changed:
        pytest.fail(f"the tests wrote into {ROOT}: {', '.join(changed)}", pytrace=False)
