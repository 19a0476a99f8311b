"""The fake with a data directory beside the fake in memory (issue 61's targets).

    .venv/bin/python -m bench.data_dir --messages 20000 --rounds 3 --stored 200000
    .venv/bin/python -m bench.data_dir --sync full --stored 1000

- *throughput*: the official SDK sends ``--messages`` x 1 KB to a queue (batches of 100),
  then receives and completes them all (peek-lock, 100 a call), against ``python -m fakes``
  in memory and ``python -m fakes --data-dir`` (a fresh directory each round), the two
  interleaved round by round; the median of ``--rounds`` for each, and the ratio (target:
  the data directory keeps at least 70% of the in-memory rate); ``--sync`` is the
  directory's ``--data-dir-sync`` (normal: each commit written; full: synced too);
- *restart*: ``--stored`` 1 KB messages put in a directory (through the embedded
  ``FakeNamespace``), then ``python -m fakes --data-dir`` started on it, timed until its
  connection string is printed (it serves then; target: 1,000,000 in under 5 s), and the
  embedded namespace's read alone, in wall-clock and in CPU seconds (the machine is
  shared: CPU seconds tell what a run cost when others held the cores; the fake's are
  read from its rusage once it stopped, idle from serving on);
- *bytes*: the directory's files against the messages' own encoded bytes (target: at most
  1.5x).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from azure.servicebus import ServiceBusClient, ServiceBusMessage  # noqa: E402

from fakes import FakeNamespace  # noqa: E402
from sbmgmt.message import Message  # noqa: E402

BODY = b"x" * 1024
BATCH = 100
_CONFIG = ('{"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": '
           '[{"Name": "q"}], "Topics": []}], "Logging": {"Type": "Console"}}}')


def _fake(work: Path, data_dir: Path | None, sync: str = "normal") -> subprocess.Popen[str]:
    (work / "Config.json").write_text(_CONFIG)
    extra = [] if data_dir is None else ["--data-dir", str(data_dir), "--data-dir-sync", sync]
    env = {k: v for k, v in os.environ.items() if k not in ("CONFIG_PATH", "CONFIG_JSON")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "fakes", "--config", "Config.json", "--host", "127.0.0.1",
         "--port", "0", "--http-port", "0", "--log-level", "WARNING", *extra],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(30)
    if process.stdout is not None:
        process.stdout.close()


def throughput(messages: int, kept: bool, sync: str) -> float:
    """Messages a second through send and receive-complete, against a fresh fake."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        process = _fake(work, work / "kept" if kept else None, sync)
        try:
            assert process.stdout is not None
            connection = process.stdout.readline().strip()
            started = time.perf_counter()
            with ServiceBusClient.from_connection_string(connection) as client:
                with client.get_queue_sender("q") as sender:
                    for _ in range(messages // BATCH):
                        sender.send_messages([ServiceBusMessage(BODY) for _ in range(BATCH)])
                done = 0
                with client.get_queue_receiver("q", max_wait_time=5) as receiver:
                    while done < messages:
                        got = receiver.receive_messages(max_message_count=BATCH,
                                                        max_wait_time=5)
                        if not got:
                            raise RuntimeError(f"only {done} of {messages} came back")
                        for message in got:
                            receiver.complete_message(message)
                        done += len(got)
            return 2 * messages / (time.perf_counter() - started)  # sends + completions
        finally:
            _stop(process)


def _size(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())


def restart(stored: int) -> dict[str, float]:
    """Fill a directory with ``stored`` messages; time reading it back."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        kept = work / "kept"
        namespace = FakeNamespace(data_dir=kept)
        namespace.add_queue("q")
        message_bytes = 0
        for start in range(0, stored, 1000):
            batch = [Message(body=BODY, message_id=f"m{i}")
                     for i in range(start, min(stored, start + 1000))]
            namespace.send("q", *batch)
        namespace.stop()
        with FakeNamespace(data_dir=kept) as check:
            assert check.accounting("q")["active"] == stored
        import sqlite3

        with sqlite3.connect(kept / "namespace.sqlite3") as db:
            message_bytes = db.execute("SELECT sum(length(content)) FROM messages").fetchone()[0]
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        on_disk = _size(kept)
        started, cpu = time.perf_counter(), time.process_time()
        FakeNamespace(data_dir=kept).stop()
        embedded, embedded_cpu = time.perf_counter() - started, time.process_time() - cpu
        started = time.perf_counter()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = _fake(work, kept)
        assert process.stdout is not None
        process.stdout.readline()
        serving = time.perf_counter() - started
        _stop(process)  # idle once serving: its CPU time is its start's
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        serving_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
        return {"embedded read (s)": embedded, "embedded read (CPU s)": embedded_cpu,
                "python -m fakes serving (s)": serving,
                "python -m fakes serving (CPU s)": serving_cpu,
                "bytes on disk / message bytes": on_disk / message_bytes,
                "body bytes": float(stored * len(BODY)), "message bytes": float(message_bytes),
                "bytes on disk": float(on_disk)}


def _print_load(when: str) -> None:
    one, five, fifteen = os.getloadavg()
    print(f"load average (1, 5, 15 min) at the {when}: {one:.1f} {five:.1f} {fifteen:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.data_dir", description=__doc__)
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stored", type=int, default=100000)
    parser.add_argument("--sync", choices=("normal", "full"), default="normal")
    args = parser.parse_args(argv)
    _print_load("start")
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for kept in (False, True):
            rates[kept].append(throughput(args.messages, kept, args.sync))
    memory, disk = (statistics.median(rates[k]) for k in (False, True))
    print(f"throughput, {args.messages} x 1 KB sent then received and completed "
          f"(operations/s, median of {args.rounds}):")
    print(f"  in memory       {memory:8.0f}  ({min(rates[False]):.0f}-{max(rates[False]):.0f})")
    print(f"  data directory, --data-dir-sync {args.sync}:")
    print(f"                  {disk:8.0f}  ({min(rates[True]):.0f}-{max(rates[True]):.0f})"
          f"  = {disk / memory:.0%} of in memory (target >= 70%)")
    figures = restart(args.stored)
    print(f"restart with {args.stored} x 1 KB stored:")
    for name, value in figures.items():
        print(f"  {name:32s} {value:,.2f}")
    _print_load("end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
