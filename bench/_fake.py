"""The fake namespace in its own process, driven over a small control pipe.

The measured clients run in the bench's process; the fake runs in a ``spawn``-ed
child so its CPU never competes with theirs for one GIL. The parent asks the child
to create queues, fill them, lock messages (handing back their lock tokens), set the
injected reply latency and the network latency of new connections; each command answers
once it is done.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

__all__ = ["FakeProcess", "LatencyUnsupportedError"]

_START_TIMEOUT = 60.0
_COMMAND_TIMEOUT = 600.0
#: The service's longest LockDuration (5 minutes; the fake refuses more, as the service does):
#: every scenario renews or settles its locks well within it.
_LOCK_DURATION = timedelta(minutes=5)


class LatencyUnsupportedError(RuntimeError):
    """The fake in this checkout has no reply-latency injection (``fake.faults``)."""


@dataclass(frozen=True, slots=True)
class _Failure:
    kind: str
    text: str


def _serve(control: Connection) -> None:
    """The child's main: run a FakeNamespace and obey commands until ``stop``."""
    from fakes import PREMIUM, FakeNamespace
    from sbmgmt.message import Message

    # Premium: the purge scenario deletes PURGE_BATCH (4,000) messages a request, Premium's
    # batch-delete quota (Standard's, the fake's default tier, is 500).
    fake = FakeNamespace(log_level=_log_level(), tier=PREMIUM)
    fake.start()
    latency_handle: Any = None
    control.send(fake.connection_string)
    while True:
        command, args = control.recv()
        try:
            gc.freeze()  # what set-up made lives on: keep full collections off it
            if command == "stop":
                fake.stop()
                control.send(None)
                return
            if command == "queue":
                (name,) = args
                fake.add_queue(name, lock_duration=_LOCK_DURATION)
                control.send(None)
            elif command == "fill":
                name, count, size = args
                body = b"x" * size
                batch = [Message(body=body) for _ in range(min(count, 1000))]
                remaining = count
                while remaining > 0:
                    chunk = batch[: min(remaining, len(batch))]
                    fake.send(name, *chunk)
                    remaining -= len(chunk)
                control.send(None)
            elif command == "lock":
                name, count = args
                locked = fake.receive_and_lock(name, count)
                control.send([str(m.lock_token) for m in locked])
            elif command == "freeze":
                control.send(None)  # the freeze above is the command
            elif command == "network_latency":
                (seconds,) = args
                fake.network_latency = seconds
                control.send(None)
            elif command == "latency":
                (seconds,) = args
                faults = getattr(fake, "faults", None)
                if faults is None and seconds > 0:
                    control.send(_Failure("latency", "the fake has no fault injection"))
                    continue
                if faults is None:
                    control.send(None)
                    continue
                if latency_handle is not None:
                    latency_handle.remove()
                    latency_handle = None
                if seconds > 0:
                    latency_handle = faults.latency(seconds)
                control.send(None)
            else:
                control.send(_Failure("command", f"unknown command {command!r}"))
        except Exception as exc:  # report to the parent instead of dying silently
            control.send(_Failure("error", f"{type(exc).__name__}: {exc}"))


def _log_level() -> str | None:
    """``BENCH_FAKE_LOG_LEVEL`` (INFO, DEBUG...): the fake logs at that level to the file
    ``BENCH_FAKE_LOG_FILE`` names (default: os.devnull), to measure what its log costs
    (docs/fake.md, "The log"); unset: the fake writes no line, as embedded."""
    import logging

    level = os.environ.get("BENCH_FAKE_LOG_LEVEL") or None
    if level is not None:
        handler = logging.FileHandler(os.environ.get("BENCH_FAKE_LOG_FILE") or os.devnull)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: "
                                               "%(message)s"))
        logging.getLogger("fakes").addHandler(handler)
        logging.getLogger("fakes").propagate = False
    return level


class FakeProcess:
    """A FakeNamespace running in a child process; use it as a context manager."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._control, child_end = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child_end,), name="bench-fake", daemon=True
        )
        self._process.start()
        child_end.close()
        if not self._control.poll(_START_TIMEOUT):
            self._process.kill()
            raise RuntimeError("the fake namespace process did not start")
        self.connection_string: str = self._control.recv()

    @property
    def pid(self) -> int | None:
        """The child's process id (for profiling it)."""
        return self._process.pid

    @contextlib.contextmanager
    def apart(self) -> Iterator[str]:
        """While inside: the fake on a CPU of its own, this process (the measured clients,
        ours and the SDK's) on the others, where the OS allows it (Linux, at least two
        CPUs); what was done, in words. The fake stands in for a remote service, so it
        must not take the clients' CPU, nor they its; left to the scheduler, two busy
        processes on two CPUs share them differently from one run to the next."""
        mine = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if len(mine) < 2 or self.pid is None:
            yield "not pinned (fewer than two CPUs, or no sched_setaffinity)"
            return
        os.sched_setaffinity(self.pid, {mine[-1]})
        os.sched_setaffinity(0, set(mine[:-1]))
        try:
            yield f"the fake on CPU {mine[-1]}, the clients on CPU {','.join(map(str, mine[:-1]))}"
        finally:
            os.sched_setaffinity(0, set(mine))

    def _call(self, command: str, *args: Any) -> Any:
        self._control.send((command, args))
        if not self._control.poll(_COMMAND_TIMEOUT):
            raise RuntimeError(f"the fake did not answer {command!r}")
        answer = self._control.recv()
        if isinstance(answer, _Failure):
            if answer.kind == "latency":
                raise LatencyUnsupportedError(answer.text)
            raise RuntimeError(f"fake {command!r} failed: {answer.text}")
        return answer

    def new_queue(self, prefix: str) -> str:
        """Create a queue with a long lock duration; its name."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self._call("queue", name)
        return name

    def fill(self, queue: str, count: int, size: int) -> None:
        """Enqueue ``count`` messages whose bodies are ``size`` bytes."""
        self._call("fill", queue, count, size)

    def lock(self, queue: str, count: int) -> list[uuid.UUID]:
        """Lock ``count`` messages as a peek-lock receiver would; their lock tokens."""
        tokens: list[str] = self._call("lock", queue, count)
        return [uuid.UUID(t) for t in tokens]

    def freeze(self) -> None:
        """Keep what the fake holds now off its full garbage collections (``gc.freeze``,
        as every command does first): for set-up done through a client rather than a
        command, such as messages dead-lettered by ``update_disposition``."""
        self._call("freeze")

    def set_latency(self, seconds: float) -> None:
        """Delay every management reply by ``seconds`` (0 removes the delay)."""
        self._call("latency", seconds)

    def set_network_latency(self, seconds: float) -> None:
        """Add a round trip of ``seconds`` to the AMQP connections made from now on, held
        in the fake's own loop (``FakeNamespace.network_latency``; 0 removes it)."""
        self._call("network_latency", seconds)

    def close(self) -> None:
        """Stop the fake and reap the child."""
        if self._process.is_alive():
            with contextlib.suppress(OSError, EOFError, RuntimeError):
                self._call("stop")
            self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._control.close()

    def __enter__(self) -> FakeProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
