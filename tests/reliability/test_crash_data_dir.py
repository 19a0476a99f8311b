"""A fake with a data directory killed with SIGKILL at random points, 20 times, under the
official SDK's senders and receivers on two queues and a session queue (docs/fake.md, "A
data directory"). After each restart, counted by MessageId and body: every acknowledged
send is there once unless a receiver completed it (a completion the kill cut before its
outcome came back may have happened, or not), no acknowledged completion comes back,
and a new sequence number is above every one a client saw.

Each round runs the fake's entry point (``python -m fakes``'s ``main``, with ``--data-dir``,
on 127.0.0.1 port 0) in a process of its own, lets the clients work for a random 0.2-0.9 s
(at most 25 batches of 4 messages a sender: some hundreds of messages a round), kills it with
SIGKILL, starts it again and counts. The seed is in the failure message. The processes are
forked from one that imported the fake once (``_Starter``): each is a process of its own,
killed as any, without the second of interpreter start and imports a fresh one pays
(``python -m fakes`` itself, a process refused by the directory's lock, is the second test's).
"""

from __future__ import annotations

import functools
import gc
import json
import os
import random
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from sbmgmt import ManagementClient
from sbmgmt.message import Message
from tests._waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 20
QUEUES = ("q1", "q2", "sq")
SESSION = "s"
_CONFIG = """{"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
  {"Name": "q1", "Properties": {"MaxDeliveryCount": 10}},
  {"Name": "q2", "Properties": {"MaxDeliveryCount": 10}},
  {"Name": "sq", "Properties": {"RequiresSession": true, "MaxDeliveryCount": 10}}],
  "Topics": []}], "Logging": {"Type": "Console"}}}"""


@dataclass
class Ledger:
    """What the clients were told, across every round."""

    sent: set[str] = field(default_factory=set)
    completed: set[str] = field(default_factory=set)
    #: Completions asked for: one the kill cut may have happened without the client's
    #: knowing (its outcome never came back), so the message may be gone, or not.
    completing: set[str] = field(default_factory=set)
    #: The highest sequence number a client saw on each queue.
    highest: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


#: The starter: imports the fake's entry point once, then per line read, forks a process
#: that runs it (``start``: its arguments, the directory it runs in, where its stdout and
#: stderr go) or kills one with SIGKILL and reaps it (``kill``), answering each on stdout.
_STARTER = """
import json, os, signal, sys
from fakes.__main__ import main
for line in sys.stdin:
    order = json.loads(line)
    if order["do"] == "start":
        pid = os.fork()
        if pid == 0:
            os.chdir(order["cwd"])
            for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                    (1, order["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, order["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)):
                os.dup2(os.open(path, flags, 0o644), fd)
            os._exit(main(order["argv"]))
    else:
        pid = order["pid"]
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print(pid, flush=True)
"""


class _Starter:
    """A process that has imported the fake, forking a fake process on demand."""

    def __init__(self, work: Path) -> None:
        (work / "Config.json").write_text(_CONFIG)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(work)}
        env.pop("CONFIG_PATH", None)
        env.pop("CONFIG_JSON", None)
        self.work = work
        self.process = subprocess.Popen([sys.executable, "-c", _STARTER], cwd=work, env=env,
                                        text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def order(self, **order: object) -> int:
        """Send one order; the pid it answers with."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(order) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, "the starter ended"
        return int(answer)

    def close(self) -> None:
        """End the starter (its stdin closed) and reap it."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(10)
        self.process.stdout.close()


class Fake:
    """The fake's ``main`` with a data directory, in a process the starter forks."""

    def __init__(self, directory: Path, starter: _Starter) -> None:
        self._starter = starter
        out, log = starter.work / "fake.out", starter.work / "fake.log"
        out.write_text("")  # not the last one's connection string
        self.pid: int | None = starter.order(
            do="start", cwd=str(starter.work), out=str(out), log=str(log),
            argv=["--config", "Config.json", "--host", "127.0.0.1", "--port", "0",
                  "--http-port", "0", "--log-level", "WARNING", "--data-dir", str(directory)])
        try:
            assert wait_until(lambda: "\n" in out.read_text(), 60), log.read_text()
        except BaseException:  # the test's time-out: the process must not outlive the test
            self.kill()
            raise
        self.connection_string = out.read_text().splitlines()[0]
        assert self.connection_string.startswith("Endpoint="), log.read_text()

    def kill(self) -> None:
        """SIGKILL, and reaped (nothing if it is gone already: a second call is harmless)."""
        if self.pid is not None:
            self._starter.order(do="kill", pid=self.pid)
            self.pid = None


def _message(message_id: str, queue: str) -> ServiceBusMessage:
    return ServiceBusMessage(f"body-{message_id}", message_id=message_id,
                             session_id=SESSION if queue == "sq" else None)


def _sender(client: ServiceBusClient, queue: str, round_: int, ledger: Ledger,
            stop: threading.Event) -> None:
    with client.get_queue_sender(queue) as sender:
        for batch in range(25):
            if stop.is_set():
                return
            ids = [f"{queue}-{round_}-{batch}-{n}" for n in range(4)]
            sender.send_messages([_message(i, queue) for i in ids])
            with ledger.lock:  # acknowledged: the send returned
                ledger.sent.update(ids)


def _receiver(client: ServiceBusClient, queue: str, ledger: Ledger,
              stop: threading.Event) -> None:
    receiver = client.get_queue_receiver(queue, session_id=SESSION if queue == "sq" else None,
                                         max_wait_time=0.3)
    with receiver:
        while not stop.is_set():
            for message in receiver.receive_messages(max_message_count=8, max_wait_time=0.3):
                with ledger.lock:
                    ledger.highest[queue] = max(ledger.highest[queue],
                                                message.sequence_number or 0)
                    ledger.completing.add(str(message.message_id))
                receiver.complete_message(message)
                with ledger.lock:  # acknowledged: the service's outcome came back
                    ledger.completed.add(str(message.message_id))


def _quietly(work: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            work()
        except Exception:  # the fake was killed under it: expected
            return
    return run


def _count(connection_string: str, ledger: Ledger) -> Counter[str]:
    """Every message the namespace holds, by MessageId (its body checked), dead-letter
    queues included (ten kills while a message is locked dead-letter it, as ten expired
    locks would); each queue's next sequence number checked against what clients saw.
    Read with sbmgmt's management client: one connection for it all, where each SDK
    receiver costs a second to open and close."""
    held: Counter[str] = Counter()
    with ManagementClient.from_connection_string(connection_string) as client:
        for queue in QUEUES:
            for path in (queue, f"{queue}/$deadletterqueue"):
                for message in client.entity(path).peek_all():
                    message_id = str(message.message_id)
                    assert message.body == f"body-{message_id}".encode()
                    held[message_id] += 1
                    if path == queue:
                        ledger.highest[queue] = max(ledger.highest[queue],
                                                    message.sequence_number or 0)
            entity = client.entity(queue)
            (number,) = entity.schedule_messages(
                [Message(body=b"probe", message_id=f"probe-{queue}",
                         session_id=SESSION if queue == "sq" else None)],
                datetime.now(timezone.utc) + timedelta(days=1))
            assert number > ledger.highest[queue], (queue, number, ledger.highest[queue])
            ledger.highest[queue] = number
            entity.cancel_scheduled_messages([number])
    return held


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    yield Ledger()


@pytest.fixture
def starter(tmp_path: Path) -> Iterator[_Starter]:
    started = _Starter(tmp_path)
    try:
        yield started
    finally:
        started.close()


@pytest.mark.realtime("20 kills at random moments of the official SDK's real-time work on one "
                      "directory (ten kills of a locked message dead-letter it): about a "
                      "second of sending, receiving and the SDK noticing the loss each")
# The SDK's connections cut by the kill leave sockets its threads never close.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning",
                            "ignore::ResourceWarning")
def test_nothing_acknowledged_is_lost_across_twenty_kills(tmp_path: Path, ledger: Ledger,
                                                          starter: _Starter) -> None:
    seed = random.randrange(1 << 30)
    chance = random.Random(seed)
    directory = tmp_path / "kept"
    fake = Fake(directory, starter)
    try:
        for round_ in range(ROUNDS):
            stop = threading.Event()
            with ServiceBusClient.from_connection_string(fake.connection_string,
                                                         retry_total=0) as client:
                workers = [threading.Thread(target=_quietly(functools.partial(
                    _sender, client, q, round_, ledger, stop))) for q in QUEUES]
                workers += [threading.Thread(target=_quietly(functools.partial(
                    _receiver, client, q, ledger, stop))) for q in QUEUES]
                for worker in workers:
                    worker.start()
                stop.wait(chance.uniform(0.2, 0.9))
                fake.kill()
                stop.set()
                for worker in workers:
                    worker.join(30)
                assert not any(worker.is_alive() for worker in workers)
            fake = Fake(directory, starter)
            held = _count(fake.connection_string, ledger)
            context = f"seed {seed}, round {round_}"
            lost = ledger.sent - ledger.completing - set(held)
            assert not lost, f"{context}: acknowledged sends lost: {sorted(lost)[:10]}"
            back = ledger.completed & set(held)
            assert not back, f"{context}: acknowledged completions back: {sorted(back)[:10]}"
            twice = [i for i, n in held.items() if n > 1]
            assert not twice, f"{context}: held more than once: {twice[:10]}"
    finally:  # also when an assertion or the time-out ends the test
        fake.kill()
    gc.collect()  # the cut connections' sockets, closed here (the warnings above)
    assert len(ledger.sent) > ROUNDS * 10 and len(ledger.completed) > ROUNDS


def test_a_second_fake_process_on_the_directory_is_refused_with_the_first_ones_pid(
        tmp_path: Path, starter: _Starter) -> None:
    first = Fake(tmp_path / "kept", starter)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "fakes", "--host", "127.0.0.1", "--port", "0",
             "--http-port", "0", "--data-dir", str(tmp_path / "kept")],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
            capture_output=True, timeout=60, check=False)
        assert second.returncode == 2
        assert (f"error: the data directory {tmp_path / 'kept'} is in use by another fake "
                f"(pid {first.pid})") in second.stderr
    finally:
        first.kill()
