"""The scenarios, run against one fake namespace process, ours and the SDK's side by side.

Each scenario gives one or more :class:`Row`: our figure, the figure it is compared
with (the SDK's, or the bare proton loop's), the ratio and the issue's target.
Every scenario runs at each injected reply latency; the fake's capacity runs once; the
"kept" scenario (:mod:`bench._kept`) interleaves the latencies itself. The table's
"kept at latency" column is a row's figure over the same scenario's at 0 ms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from proton import Message, int32, uint

from . import _ours, _sdk
from ._bare import DRIVERS, run_bare_loop
from ._deferred import DeferredSizes, deferred_rows
from ._delay import delayed
from ._fake import FakeProcess, LatencyUnsupportedError
from ._kept import KeptSizes, kept_rows
from ._measure import Figure, cpu_seconds, repeat

__all__ = ["FULL", "QUICK", "SCENARIOS", "Row", "Sizes", "run"]

_PEEK = "com.microsoft:peek-message"
_SMALL_BODY = 256
_PEEK_BODY = 1024
_CAPACITY_WINDOW = 256


@dataclass(frozen=True, slots=True)
class Sizes:
    """How much work each scenario does (the SDK's share may be a smaller sample)."""

    locks: int = 10_000
    sdk_locks: int = 1_000
    requests: int = 2_000
    sdk_requests: int = 300
    peek_messages: int = 100_000
    sdk_peek_messages: int = 25_000
    page: int = 250
    capacity_requests: int = 20_000
    kept_locks: int = 50_000
    small_read: int = 2_000
    purge_messages: int = 100_000
    sdk_purge_messages: int = 20_000
    deferred: int = 1_000
    sustained_deferred: int = 10_000
    sdk_deferred: int = 300
    find_among: int = 100_000
    reps: int = 5


FULL = Sizes()
QUICK = Sizes(locks=10_000, sdk_locks=300, requests=2_000, sdk_requests=300,
              peek_messages=10_000, sdk_peek_messages=5_000, capacity_requests=5_000,
              kept_locks=20_000, purge_messages=20_000, sdk_purge_messages=5_000,
              sustained_deferred=5_000, sdk_deferred=100, find_among=20_000, reps=5)


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table."""

    scenario: str
    latency_ms: float
    unit: str
    ours: Figure | None
    other: Figure | None
    other_name: str
    target: float | None
    note: str = ""
    kept_target: float | None = None

    @property
    def ratio(self) -> float | None:
        """Ours over the other figure (higher is better for us); for capacity, None."""
        if self.ours is None or self.other is None:
            return None
        return self.ours.median / self.other.median

    @property
    def met(self) -> bool | None:
        """Whether the target was reached (None when there is no target or no figure)."""
        if self.target is None or self.ours is None:
            return None
        if self.other_name == "absolute":
            return self.ours.median >= self.target
        ratio = self.ratio
        return None if ratio is None else ratio >= self.target


@dataclass(frozen=True, slots=True)
class _Context:
    fake: FakeProcess
    sizes: Sizes
    latency_ms: float
    say: Callable[[str], None]

    @property
    def conn_str(self) -> str:
        return self.fake.connection_string


def _peek_request(start: int, count: int, stride: int) -> Callable[[int], Message]:
    """A bare-proton request factory: request ``i`` peeks ``count`` from ``start + i * stride``."""

    def make(i: int) -> Message:
        return Message(
            properties={"operation": _PEEK, "com.microsoft:server-timeout": uint(29_500)},
            body={"from-sequence-number": start + i * stride, "message-count": int32(count)},
        )

    return make


_BARE_NAMES = {"container": "bare proton loop (Container)",
               "engine": "bare proton loop (our engine loop)"}


def _bare(ctx: _Context, queue: str, count: int, make: Callable[[int], Message],
          driver: str) -> Figure:
    def once() -> float:
        result = run_bare_loop(ctx.conn_str, queue, count, make, driver=driver)
        if result.failed:
            raise RuntimeError(f"the bare loop had {result.failed} failed requests")
        return result.ok / result.seconds

    ctx.say(f"{count} requests: {_BARE_NAMES[driver]}")
    return repeat(ctx.sizes.reps, once)


def _bare_rows(ctx: _Context, name: str, unit: str, ours: Figure,
               bares: dict[str, Figure]) -> list[Row]:
    return [Row(f"{name} vs {_BARE_NAMES[driver]}", ctx.latency_ms, unit, ours, figure, "bare",
                0.8) for driver, figure in bares.items()]


def _renew(ctx: _Context) -> list[Row]:
    sizes = ctx.sizes
    queue = ctx.fake.new_queue("renew")
    ctx.fake.fill(queue, sizes.locks + 2 * sizes.sdk_locks, 64)
    tokens = ctx.fake.lock(queue, sizes.locks)
    ctx.say(f"renew {sizes.locks} locks: ours (batches of {_ours.RENEW_BATCH}, pipelined)")
    ours = Figure.of(_ours.renew_batched(ctx.conn_str, queue, tokens, sizes.reps))
    ctx.say(f"renew: SDK sequential ({sizes.sdk_locks} locks)")
    sequential = Figure.of(_sdk.renew_sequential(ctx.conn_str, queue, sizes.sdk_locks,
                                                 sizes.reps))
    ctx.say(f"renew: SDK 10 threads ({sizes.sdk_locks} locks)")
    pool = Figure.of(_sdk.renew_pool(ctx.conn_str, queue, sizes.sdk_locks, sizes.reps))
    target = 50.0 if ctx.latency_ms == 0 else 200.0
    name = f"renew {sizes.locks:,} locks"
    return [
        Row(f"{name} vs SDK sequential", ctx.latency_ms, "locks/s", ours, sequential, "sdk",
            target),
        Row(f"{name} vs SDK 10 threads", ctx.latency_ms, "locks/s", ours, pool, "sdk", target),
    ]


def _independent(ctx: _Context) -> list[Row]:
    sizes = ctx.sizes
    queue = ctx.fake.new_queue("independent")
    ctx.fake.fill(queue, max(sizes.requests, sizes.sdk_requests), _SMALL_BODY)
    ctx.say(f"{sizes.requests} single-message peeks, ours, repetition by repetition: "
            f"pipelined submit, asyncio gather of peek_messages, {_ours.THREADS} threads on "
            f"peek_messages, submit with a window of {_ours.THREADS}")
    ours, natural, threads, as_many = _interleaved(sizes.reps, (
        lambda: _ours.peek_singles(ctx.conn_str, queue, sizes.requests, 1),
        lambda: _ours.peek_singles_gather(ctx.conn_str, queue, sizes.requests, 1),
        lambda: _ours.peek_singles_threads(ctx.conn_str, queue, sizes.requests, 1),
        lambda: _ours.peek_singles(ctx.conn_str, queue, sizes.requests, 1,
                                   window=_ours.THREADS),
    ))
    bares = {driver: _bare(ctx, queue, sizes.requests, _peek_request(1, 1, 1), driver)
             for driver in DRIVERS}
    ctx.say(f"single-message peeks: SDK sequential ({sizes.sdk_requests})")
    sequential = Figure.of(_sdk.peek_singles_sequential(ctx.conn_str, queue, sizes.sdk_requests,
                                                        sizes.reps))
    ctx.say(f"single-message peeks: SDK asyncio gather ({sizes.sdk_requests})")
    gathered = Figure.of(_sdk.peek_singles_gather(ctx.conn_str, queue, sizes.sdk_requests,
                                                  sizes.reps))
    target = 3.0 if ctx.latency_ms == 0 else 30.0
    name = f"{sizes.requests:,} single-message peeks"
    return [
        Row(f"{name} vs SDK sequential", ctx.latency_ms, "requests/s", ours, sequential, "sdk",
            target),
        Row(f"{name} vs SDK asyncio gather", ctx.latency_ms, "requests/s", ours, gathered,
            "sdk", target),
        Row(f"{name}, asyncio gather of peek_messages vs SDK sequential", ctx.latency_ms,
            "requests/s", natural, sequential, "sdk", target),
        Row(f"{name}, asyncio gather of peek_messages vs our submit", ctx.latency_ms,
            "requests/s", natural, ours, "submit", 0.9),
        Row(f"{name}, {_ours.THREADS} threads on peek_messages vs our submit",
            ctx.latency_ms, "requests/s", threads, ours, "submit", 0.8,
            _in_flight_bound(_ours.THREADS, ctx.latency_ms)),
        Row(f"{name}, {_ours.THREADS} threads on peek_messages vs our submit with as many "
            f"in flight (window {_ours.THREADS})", ctx.latency_ms, "requests/s", threads,
            as_many, "submit", None, "what the blocking calls cost, concurrency aside"),
        *_bare_rows(ctx, name, "requests/s", ours, bares),
    ]


def _interleaved(reps: int, measures: tuple[Callable[[], list[float]], ...]
                 ) -> list[Figure]:
    """Each measure once per repetition, in turn (A B C A B C ...), so that the ratios
    between them do not depend on when the machine was busier; their figures."""
    samples: list[list[float]] = [[] for _ in measures]
    for _ in range(reps):
        for taken, measure in zip(samples, measures, strict=True):
            taken.extend(measure())
    return [Figure.of(taken) for taken in samples]


def _in_flight_bound(callers: int, latency_ms: float) -> str:
    """What blocking callers cannot exceed: each has one request in flight."""
    if not latency_ms:
        return ""
    return (f"{callers} blocking callers keep at most {callers} requests in flight: at most "
            f"{callers * 1000 / latency_ms:,.0f} requests/s at {latency_ms:g} ms")


def _page_bound(page: int, latency_ms: float) -> str:
    """What a reader waiting for each page before asking for the next cannot exceed."""
    if not latency_ms:
        return ""
    return (f"one page of {page} per round trip: at most {page * 1000 / latency_ms:,.0f} "
            f"messages/s at {latency_ms:g} ms")


def _peek(ctx: _Context, queue: str) -> list[Row]:
    sizes = ctx.sizes
    count, page = sizes.peek_messages, sizes.page
    ctx.say(f"peek {count} x 1 KB: ours, pages in sequence")
    paged = Figure.of(_ours.peek_pages(ctx.conn_str, queue, count, page, sizes.reps))
    ctx.say(f"peek {count} x 1 KB: ours, parallel sequence ranges")
    parallel = Figure.of(_ours.peek_parallel(ctx.conn_str, queue, count, page, sizes.reps))
    ctx.say(f"peek x 1 KB: SDK pages of {page} ({sizes.sdk_peek_messages})")
    sdk = Figure.of(_sdk.peek_pages(ctx.conn_str, queue, sizes.sdk_peek_messages, page,
                                    sizes.reps))
    pages = -(-count // page)
    bares = {}
    for driver in DRIVERS:
        bare_pages = _bare(ctx, queue, pages, _peek_request(1, page, page), driver)
        bares[driver] = Figure.of([value * page for value in bare_pages.samples])
    name = f"peek {count:,} x 1 KB"
    return [
        # The target is at 0 ms; with latency, each page waits a round trip.
        Row(f"{name}, pages in sequence vs SDK", ctx.latency_ms, "messages/s", paged, sdk,
            "sdk", None if ctx.latency_ms else 2.0, _page_bound(page, ctx.latency_ms)),
        Row(f"{name}, parallel ranges vs SDK", ctx.latency_ms, "messages/s", parallel, sdk,
            "sdk", 2.0),
        *_bare_rows(ctx, f"{name}, parallel ranges", "messages/s", parallel, bares),
    ]


def _purge(fake: FakeProcess, sizes: Sizes, latencies_ms: list[float],
           say: Callable[[str], None]) -> list[Row]:
    """Purge a queue of 1 KB messages: our ``purge_messages`` against the SDK's
    receive-and-delete loop, both through :mod:`bench._delay` (the latency delays every
    round trip, a receive link's included: the fake's own injection delays management
    replies only). Repetitions interleave the latencies (0, 5, 20, 0, 5, 20...), so that
    "kept at latency" compares runs of the same moments of a shared machine. Each of the
    ``sizes.reps`` repetitions fills the queues again."""
    fake.set_latency(0)
    ours: dict[float, list[float]] = {latency: [] for latency in latencies_ms}
    sdk: dict[float, list[float]] = {latency: [] for latency in latencies_ms}
    for _ in range(sizes.reps):
        for latency in latencies_ms:
            with delayed(fake.connection_string, latency) as conn_str:
                queue = fake.new_queue("purge")
                fake.fill(queue, sizes.purge_messages, _PEEK_BODY)
                say(f"purge {sizes.purge_messages} x 1 KB at {latency:g} ms: ours (batches "
                    f"of {_ours.PURGE_BATCH})")
                ours[latency].append(_ours.purge(conn_str, queue, sizes.purge_messages))
                queue = fake.new_queue("purge-sdk")
                fake.fill(queue, sizes.sdk_purge_messages, _PEEK_BODY)
                say(f"purge x 1 KB at {latency:g} ms: SDK receive-and-delete loop "
                    f"({sizes.sdk_purge_messages})")
                sdk[latency].append(_sdk.receive_and_delete(conn_str, queue,
                                                            sizes.sdk_purge_messages))
    return [Row(f"purge {sizes.purge_messages:,} x 1 KB vs SDK receive-and-delete loop",
                latency, "messages/s", Figure.of(ours[latency]), Figure.of(sdk[latency]),
                "sdk", 10.0 if latency == 0 else 30.0,
                f"latency on every round trip (a proxy); SDK: receive_messages("
                f"{_sdk.PURGE_PAGE}) in a loop, timed to its last message", kept_target=0.8)
            for latency in latencies_ms]


def _capacity(ctx: _Context) -> list[Row]:
    """What the fake answers: single-message peeks from our client with a wide window,
    as seen by the client (a lower bound: the client shares the machine) and per
    CPU-second of the fake's own process."""
    sizes = ctx.sizes
    queue = ctx.fake.new_queue("capacity")
    ctx.fake.fill(queue, 1, _SMALL_BODY)
    ctx.say(f"fake capacity: {sizes.capacity_requests} peeks, window {_CAPACITY_WINDOW}")
    pid = ctx.fake.pid
    if pid is None:
        raise RuntimeError("the fake namespace process is not running")
    per_cpu: list[float] = []

    def once() -> float:
        before = cpu_seconds(pid)
        seen = _ours.peek_singles(ctx.conn_str, queue, sizes.capacity_requests, 1,
                                  window=_CAPACITY_WINDOW, stride=0)[0]
        # The client's connection, CBS and warm-up request count in the fake's CPU time.
        per_cpu.append(sizes.capacity_requests / max(cpu_seconds(pid) - before, 1e-9))
        return seen

    wall = repeat(sizes.reps, once)
    return [
        Row("fake namespace capacity, as seen by our client", ctx.latency_ms, "requests/s",
            wall, None, "absolute", 5000.0, "a lower bound: the client shares the 2 cores"),
        Row("fake namespace capacity, per CPU-second of the fake", ctx.latency_ms,
            "requests/s", Figure.of(per_cpu), None, "absolute", 5000.0,
            "the fake's own CPU time (/proc), whatever else runs"),
    ]


def _kept(fake: FakeProcess, sizes: Sizes, latencies_ms: list[float],
          say: Callable[[str], None]) -> list[Row]:
    """The API people call at every latency, interleaved (:mod:`bench._kept`); the
    issue's target: at 5 and 20 ms, 80% of the same at 0 ms, and reads 4x the SDK's
    page loop at 5 ms."""
    kept = KeptSizes(sizes.requests, sizes.kept_locks, sizes.small_read, sizes.peek_messages,
                     sizes.sdk_peek_messages)
    return [
        Row(name, latency, unit, ours, other, "sdk" if other is not None else "kept", target,
            note, kept_target=0.8)
        for name, latency, unit, ours, other, target, note
        in kept_rows(fake, kept, latencies_ms, sizes.reps, say)
    ]


def _deferred(fake: FakeProcess, sizes: Sizes, latencies_ms: list[float],
              say: Callable[[str], None]) -> list[Row]:
    """Deferred messages found and completed (:mod:`bench._deferred`), the latencies
    interleaved; issue 42's targets: >= 5,000 messages/s at 0 ms, 80% kept at 5 and 20 ms,
    finding as long as ``peek_all``."""
    chosen = DeferredSizes(sizes.deferred, sizes.sustained_deferred, sizes.sdk_deferred,
                           sizes.find_among)
    return [Row(name, latency, unit, ours, other, other_name, target, note, kept_target)
            for name, latency, unit, ours, other, other_name, target, note, kept_target
            in deferred_rows(fake, chosen, latencies_ms, sizes.reps, say)]


SCENARIOS = ("renew", "independent", "peek", "purge", "kept", "deferred", "capacity")
"""Scenario names, in the order they run (``--only`` picks among them)."""


def run(sizes: Sizes, latencies_ms: list[float], only: set[str],
        say: Callable[[str], None]) -> tuple[list[Row], str]:
    """Start the fake, run the chosen scenarios at each latency; every row, and which
    CPUs the fake and the clients ran on."""
    rows: list[Row] = []
    with FakeProcess() as fake, fake.apart() as pinning:
        say(f"CPUs: {pinning}")
        peek_queue = None
        if "peek" in only:
            say(f"filling {sizes.peek_messages} x 1 KB messages for the peek scenario")
            peek_queue = fake.new_queue("peek")
            filled = max(sizes.peek_messages, sizes.sdk_peek_messages)
            fake.fill(peek_queue, filled, _PEEK_BODY)
            # The fake encodes a message once, when it is first peeked, and keeps the
            # bytes: one untimed pass, so that no client's figure pays for that.
            _ours.peek_parallel(fake.connection_string, peek_queue, filled, sizes.page, 1)
        for latency in latencies_ms:
            ctx = _Context(fake, sizes, latency, say)
            try:
                fake.set_latency(latency / 1000)
            except LatencyUnsupportedError as exc:
                say(f"skipping {latency:g} ms: {exc}")
                continue
            say(f"--- {latency:g} ms injected reply latency")
            if "renew" in only:
                rows.extend(_renew(ctx))
            if "independent" in only:
                rows.extend(_independent(ctx))
            if peek_queue is not None:
                rows.extend(_peek(ctx, peek_queue))
        if "purge" in only:
            rows.extend(_purge(fake, sizes, [0.0, *(x for x in latencies_ms if x)], say))
        if "kept" in only:
            rows.extend(_kept(fake, sizes, [0.0, *(x for x in latencies_ms if x)], say))
        if "deferred" in only:
            rows.extend(_deferred(fake, sizes, [0.0, *(x for x in latencies_ms if x)], say))
        if "capacity" in only:
            fake.set_latency(0)
            rows.extend(_capacity(_Context(fake, sizes, 0.0, say)))
    return rows, pinning
