"""The ``sbmgmt`` command line (the ``cli`` extra: typer and rich).

Every management operation is a subcommand; results print as a table, JSON or
NDJSON (``--output``), and errors exit with the codes of :class:`ExitCode`. See
docs/cli.md.

``app`` and ``main`` are imported on first use: without the extra, importing this
package still works, and ``python -m sbmgmt.cli`` says what to install (as the
``sbmgmt`` console script does) instead of a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._exit import ExitCode

if TYPE_CHECKING:
    from ._app import app, main

__all__ = ["ExitCode", "app", "main"]


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        from . import _app

        return getattr(_app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
