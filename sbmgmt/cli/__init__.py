"""The ``sbmgmt`` command line (the ``cli`` extra: typer and rich).

Every management operation is a subcommand; results print as a table, JSON or
NDJSON (``--output``), and errors exit with the codes of :class:`ExitCode`. See
docs/cli.md.
"""

from __future__ import annotations

from ._app import app
from ._exit import ExitCode

__all__ = ["ExitCode", "app", "main"]


def main() -> None:
    """Run the ``sbmgmt`` command (the console script)."""
    app(prog_name="sbmgmt")
