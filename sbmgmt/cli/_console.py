"""The ``sbmgmt`` console script: the CLI when its extra is installed, a short answer when not.

The command line needs typer and rich (the ``cli`` extra); the library does not.
Without them, ``sbmgmt --version`` still prints the version, ``sbmgmt --help`` says
first what to install (then what works without it), and any other command says how to
get the extra and exits 2 instead of a traceback.
"""

from __future__ import annotations

import sys

__all__ = ["CLI_EXTRA_HINT", "HELP_WITHOUT_EXTRA", "main"]

CLI_EXTRA_HINT = "sbmgmt: the command line needs its extra: pip install 'sbmgmt[cli]'"

#: ``sbmgmt --help`` without the extra: what to install comes first.
HELP_WITHOUT_EXTRA = f"""\
{CLI_EXTRA_HINT}

Usage: sbmgmt [OPTIONS] COMMAND [ARGS]...

  Azure Service Bus management operations over AMQP 1.0. The commands (peek,
  schedule, sessions, rules, ...) need the cli extra; without it only these work:

  --version   Print the version and exit.
  --help      Show this message and exit.

  The library itself (import sbmgmt) needs no extra.
"""

#: The packages the ``cli`` extra brings (and their own imports that can go missing).
_CLI_PACKAGES = frozenset({"typer", "rich", "click"})


def main() -> None:
    """Run the ``sbmgmt`` command, or answer ``--version`` / ``--help`` without the extra
    and exit 2 naming the extra for anything else."""
    try:
        from . import main as run
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in _CLI_PACKAGES:
            raise
        _without_extra(sys.argv[1:])
    else:
        run()


def _without_extra(arguments: list[str]) -> None:
    if arguments == ["--version"]:
        from .. import __version__

        print(f"sbmgmt {__version__}")
        raise SystemExit(0)
    if arguments == ["--help"]:
        print(HELP_WITHOUT_EXTRA, end="")
        raise SystemExit(0)
    print(CLI_EXTRA_HINT, file=sys.stderr)
    raise SystemExit(2)
