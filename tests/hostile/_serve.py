"""A fake namespace in its own process, for attacks that could kill the process (a crash
in proton-c) or that need a lowered descriptor limit.

``python -m tests.hostile._serve [NOFILE]`` prints the port, then answers each line
read from stdin: ``state`` prints ``<accepting> <connection sockets>``; ``stop`` ends.
"""

from __future__ import annotations

import resource
import sys

from fakes import FakeNamespace


def main() -> None:
    if len(sys.argv) > 1:
        limit = int(sys.argv[1])
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    with FakeNamespace() as fake:
        fake.add_queue("q")
        print(fake.port, flush=True)
        server = fake._server
        assert server is not None
        for line in sys.stdin:
            if line.strip() == "state":
                loop = server._loop
                print(loop.accepting, len(loop._sockets), flush=True)
            elif line.strip() == "stop":
                break


if __name__ == "__main__":
    main()
