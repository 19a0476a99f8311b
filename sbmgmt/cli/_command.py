"""The command class every subcommand uses: one place turns errors into exit codes, and
takes the global options after the subcommand too."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from ._exit import describe_error, exit_code_for
from ._logs import capture_logs
from ._state import GLOBAL_OPTIONS, CliState

__all__ = ["HandledCommand", "HelpfulGroup", "command", "group"]

F = TypeVar("F", bound=Callable[..., Any])


# typer's click (a vendored copy in recent typer) is reached through its objects only.
Parameter = Any


def _given_on_the_command_line(ctx: Any, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _for_help(params: list[Parameter]) -> list[Parameter]:
    """Names as the help should show them: a flag takes no value, so no ``<bool>`` after
    it; an argument in capitals (``ENTITY``, as docs/cli.md writes it)."""
    for param in params:  # typer's parameters are click Parameters, not Options
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif param.param_type_name == "argument" and param.metavar is None and param.name:
            param.metavar = param.name.upper()
    return params


class HelpfulGroup(TyperGroup):
    """The root command and each group: their help names flags and arguments plainly."""

    def get_params(self, ctx: Any) -> list[Parameter]:
        return _for_help(super().get_params(ctx))


_GLOBAL_PANEL = "Global options (before or after the command)"


def _global_options(ctx: Any) -> list[Parameter]:
    """The root's global options, for a subcommand to accept too (``sbmgmt peek q -o json``
    as well as ``sbmgmt -o json peek q``). The environment is read by the root alone."""
    options = []
    for param in ctx.find_root().command.params:
        if param.name in GLOBAL_OPTIONS:
            option = copy.copy(param)
            option.envvar = None
            option.show_envvar = False
            option.rich_help_panel = _GLOBAL_PANEL
            options.append(option)
    return options


class HandledCommand(TyperCommand):
    """Runs a subcommand; any error becomes one scrubbed line on stderr and an exit code.

    ``--debug`` adds the (scrubbed) traceback. The client and the emulator the command
    opened are closed before the process exits, whatever happened. The global options
    are accepted after the subcommand too; given there, they win over the root's.
    """

    def get_params(self, ctx: Any) -> list[Parameter]:
        return _for_help([*super().get_params(ctx), *_global_options(ctx)])

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """The usage line without hidden arguments (an old spelling kept for a release)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not getattr(param, "hidden", False):
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def invoke(self, ctx: Any) -> Any:
        state = CliState.of(ctx)
        given = {name: ctx.params[name] for name in GLOBAL_OPTIONS
                 if name in ctx.params and _given_on_the_command_line(ctx, name)}
        for name in GLOBAL_OPTIONS:
            ctx.params.pop(name, None)
        state.update(given)
        if given.get("debug"):
            ctx.call_on_close(capture_logs(True, state.scrub))
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
            hint = state.hint(error)
            text = describe_error(error) + ("" if hint is None else f" ({hint})")
            stderr.print(f"[red]error:[/] {escape(state.scrub(text))}")
            raise typer.Exit(int(exit_code_for(error))) from None


def command(app: typer.Typer, name: str) -> Callable[[F], F]:
    """Register a subcommand of ``app`` that uses :class:`HandledCommand`."""
    return app.command(name, cls=HandledCommand)


def group(name: str, help_text: str) -> typer.Typer:
    """A group of subcommands (``sbmgmt deferred ...``)."""
    return typer.Typer(name=name, help=help_text, no_args_is_help=True,
                       pretty_exceptions_enable=False, cls=HelpfulGroup)
