"""Session locks under load (issue 65, item 6): the official asyncio SDK's session receivers,
many at once in one event loop against one embedded fake, and how long each held its lock.

    .venv/bin/python -m bench.session_locks --clients 12 --lock 10 --hold 8
    .venv/bin/python -m bench.session_locks --clients 12 --lock 30 --sdk-test --sleep 2

- default: each client locks a session of its own (receive-and-delete), receives and sends
  for ``--hold`` seconds (less than ``--lock``); a session lock lost before ``--lock``
  seconds would be the fake's fault, since nothing renews it and nothing should expire it.
- ``--sdk-test``: the shape of azure-sdk-for-python's
  ``test_async_session_by_queue_client_conn_str_receive_handler_receiveanddelete``: send 10,
  drain receive-and-delete, close, the test's *blocking* ``time.sleep`` (``--sleep``), a
  second receiver that must find nothing. Every client's blocking sleep stalls every other
  client's receivers for that long: a receiver open across enough of them outlives its lock
  in real time, as it would against the service.

Prints each client's outcome and the locks lost, with how long the receiver had held them.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from datetime import timedelta

from azure.servicebus import ServiceBusMessage, ServiceBusReceiveMode
from azure.servicebus.aio import ServiceBusClient
from azure.servicebus.exceptions import SessionLockLostError

from fakes import FakeNamespace

QUEUE = "sessions"
DELETE = ServiceBusReceiveMode.RECEIVE_AND_DELETE


async def _hold(connection_string: str, hold: float) -> str:
    """Lock a session, receive and send for ``hold`` seconds; what happened."""
    session = str(uuid.uuid4())
    async with ServiceBusClient.from_connection_string(connection_string) as client, \
            client.get_queue_sender(QUEUE) as sender:
        await sender.send_messages([ServiceBusMessage(f"{k}", session_id=session)
                                    for k in range(5)])
        start = time.monotonic()
        try:
            async with client.get_queue_receiver(QUEUE, session_id=session,
                                                 receive_mode=DELETE) as receiver:
                while time.monotonic() - start < hold:
                    await receiver.receive_messages(max_message_count=2, max_wait_time=0.5)
                    await sender.send_messages(ServiceBusMessage("more", session_id=session))
        except SessionLockLostError:
            return f"lost after {time.monotonic() - start:.1f} s"
    return f"held {hold:g} s"


async def _sdk_test(connection_string: str, sleep: float) -> str:
    """The SDK test's steps; what happened."""
    session = str(uuid.uuid4())
    async with ServiceBusClient.from_connection_string(connection_string) as client:
        async with client.get_queue_sender(QUEUE) as sender:
            for k in range(10):
                await sender.send_messages(ServiceBusMessage(f"{k}", session_id=session))
        start = time.monotonic()
        try:
            receiver = client.get_queue_receiver(QUEUE, session_id=session,
                                                 receive_mode=DELETE, max_wait_time=3)
            drained = [message async for message in receiver]
            await receiver.close()
            time.sleep(sleep)  # blocking, as the SDK's test does: the whole loop stops
            async with client.get_queue_receiver(QUEUE, session_id=session, receive_mode=DELETE,
                                                 max_wait_time=3) as again:
                left = [message async for message in again]
        except SessionLockLostError:
            return f"lost after {time.monotonic() - start:.1f} s"
    return f"drained {len(drained)}, then {len(left)} left"


async def _run(args: argparse.Namespace) -> None:
    with FakeNamespace() as fake:
        fake.add_queue(QUEUE, requires_session=True,
                       lock_duration=timedelta(seconds=args.lock))
        start = time.monotonic()
        outcomes = await asyncio.gather(*(
            _sdk_test(fake.connection_string, args.sleep) if args.sdk_test
            else _hold(fake.connection_string, args.hold) for _ in range(args.clients)))
        took = time.monotonic() - start
    lost = [outcome for outcome in outcomes if outcome.startswith("lost")]
    print(f"{args.clients} clients, lock {args.lock:g} s, {took:.1f} s: {len(lost)} locks lost")
    for index, outcome in enumerate(outcomes):
        print(f"  client {index}: {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--lock", type=float, default=10.0, help="LockDuration, seconds")
    parser.add_argument("--hold", type=float, default=8.0,
                        help="how long each client holds its session (default scenario)")
    parser.add_argument("--sdk-test", action="store_true",
                        help="the SDK test's shape instead (a blocking sleep between receivers)")
    parser.add_argument("--sleep", type=float, default=10.0,
                        help="the SDK test's blocking sleep, seconds")
    asyncio.run(_run(parser.parse_args()))


if __name__ == "__main__":
    main()
