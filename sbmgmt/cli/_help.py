"""Help texts as paragraphs: a docstring's line breaks are the source's, not the help's.

typer (0.29, rich markup) keeps every newline of a command's help after its first
paragraph, so a docstring wrapped at the source's 100 columns printed ragged at 80 ("...
Without a terminal on stdin it" / "refuses unless ..."). :func:`reflow_help` joins the lines
of each paragraph of every command's help once, before the app is built; rich then wraps
them at the terminal's width. A paragraph starting with ``\\b`` (click's "keep as is") and
lines indented under a paragraph (an example block) keep their breaks.
"""

from __future__ import annotations

import inspect

import typer

__all__ = ["paragraphs", "reflow_help"]


def paragraphs(text: str) -> str:
    """``text`` with the single line breaks inside each paragraph made spaces."""
    kept = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        lines = paragraph.split("\n")
        if paragraph.startswith("\b") or any(line.startswith(" ") for line in lines[1:]):
            kept.append(paragraph)
        else:
            kept.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(kept)


def reflow_help(app: typer.Typer) -> None:
    """Reflow the help of ``app``'s commands and groups, and of theirs (see the module)."""
    for info in app.registered_commands:
        text = info.help or inspect.getdoc(info.callback)
        if text:
            info.help = paragraphs(text)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
