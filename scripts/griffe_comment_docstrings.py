"""A griffe extension for the docs site: ``#:`` comments document the attribute below them.

The code documents module constants and type aliases the way Sphinx autodoc reads them,
with ``#:`` comment lines right above the assignment; griffe (mkdocstrings' loader) only
knows docstrings. This turns those comment lines into the attribute's docstring when it
has none. mkdocs.yml loads it through mkdocstrings' ``extensions`` option.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from griffe import Attribute, Docstring, Extension

_MARK = "#:"


class CommentDocstrings(Extension):
    """Reads the ``#:`` lines above an attribute's assignment as its docstring."""

    def on_attribute_instance(self, *, node: Any, attr: Attribute, **_: Any) -> None:
        """griffe hook: give a new attribute the ``#:`` comment above it as its docstring."""
        if attr.docstring is not None or not isinstance(node, ast.AST):
            return
        path, first = attr.filepath, getattr(node, "lineno", None)
        if not isinstance(path, Path) or path not in attr.lines_collection or first is None:
            return
        lines = attr.lines_collection[path]
        comment: list[str] = []
        index = first - 2  # the line above the assignment, 0-based
        while index >= 0 and lines[index].strip().startswith(_MARK):
            comment.insert(0, lines[index].strip()[len(_MARK):].strip())
            index -= 1
        if comment:
            attr.docstring = Docstring("\n".join(comment), lineno=index + 2, parent=attr)
