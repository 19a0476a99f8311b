"""The ``sbmgmt`` console script: the CLI when its extra is installed, one line when not.

The command line needs typer and rich (the ``cli`` extra); the library does not.
Without them, ``sbmgmt`` says how to get them and exits 2 instead of a traceback.
"""

from __future__ import annotations

import sys

__all__ = ["CLI_EXTRA_HINT", "main"]

CLI_EXTRA_HINT = "sbmgmt: the command line needs its extra: pip install 'sbmgmt[cli]'"

#: The packages the ``cli`` extra brings (and their own imports that can go missing).
_CLI_PACKAGES = frozenset({"typer", "rich", "click"})


def main() -> None:
    """Run the ``sbmgmt`` command, or exit 2 naming the extra when it is not installed."""
    try:
        from .cli import main as run
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in _CLI_PACKAGES:
            raise
        print(CLI_EXTRA_HINT, file=sys.stderr)
        raise SystemExit(2) from None
    run()
