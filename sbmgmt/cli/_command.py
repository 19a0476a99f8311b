"""The command class every subcommand uses: one place turns errors into exit codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand

from ._exit import describe_error, exit_code_for
from ._state import CliState

__all__ = ["HandledCommand", "command", "group"]

F = TypeVar("F", bound=Callable[..., Any])


class HandledCommand(TyperCommand):
    """Runs a subcommand; any error becomes one scrubbed line on stderr and an exit code.

    ``--debug`` adds the (scrubbed) traceback. The client and the emulator the command
    opened are closed before the process exits, whatever happened.
    """

    def invoke(self, ctx: Any) -> Any:
        state = CliState.of(ctx)
        try:
            try:
                return super().invoke(ctx)
            finally:
                state.close()
        except (typer.Exit, typer.Abort):
            raise
        except (Exception, KeyboardInterrupt) as error:
            stderr = Console(stderr=True, highlight=False, soft_wrap=True)
            if state.debug:
                stderr.out(state.scrub.traceback(error), end="")
            stderr.print(f"[red]error:[/] {escape(state.scrub(describe_error(error)))}")
            raise typer.Exit(int(exit_code_for(error))) from None


def command(app: typer.Typer, name: str) -> Callable[[F], F]:
    """Register a subcommand of ``app`` that uses :class:`HandledCommand`."""
    return app.command(name, cls=HandledCommand)


def group(name: str, help_text: str) -> typer.Typer:
    """A group of subcommands (``sbmgmt deferred ...``)."""
    return typer.Typer(name=name, help=help_text, no_args_is_help=True,
                       pretty_exceptions_enable=False)
