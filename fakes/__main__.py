"""``python -m fakes --config Config.json --port N``: run a fake namespace until SIGINT/SIGTERM.

The first line on stdout is the connection string.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from ._errors import ConfigError
from ._namespace import FakeNamespace

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the fake namespace in the foreground; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m fakes", description=__doc__)
    parser.add_argument("--config", help="an emulator Config.json")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--accept-any-token", action="store_true")
    args = parser.parse_args(argv)
    try:
        namespace = FakeNamespace(args.config, host=args.host, port=args.port,
                                  accept_any_token=args.accept_any_token)
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stopping = threading.Event()

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    with namespace:
        print(namespace.connection_string, flush=True)
        stopping.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
