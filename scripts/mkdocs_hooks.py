"""mkdocs hooks for the docs site (mkdocs.yml names this file).

Two jobs:

- The docstrings are written for Python's help() and IDEs, with Sphinx roles
  (``:class:`X```) and reST literal-block markers (``::``); mkdocstrings renders them as
  Markdown, where both would show up as stray punctuation. The role prefixes in front of
  inline code are dropped and a paragraph-ending ``::`` becomes ``:``.
- The API reference must cover every public name (``__all__``) of the documented modules:
  the anchors of the rendered pages are collected, and the build fails naming any public
  name that no page documents (under its own module or the one that defines it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

#: The modules whose public names the API reference documents.
API_MODULES = ("sbmgmt", "sbmgmt.aio", "sbmgmt.errors", "sbmgmt.renewer", "sbmgmt.spark",
               "fakes")

_ROOT = Path(__file__).resolve().parents[1]
_ROLE = re.compile(r":(?:class|meth|func|mod|attr|exc|data|obj|const):(?=<code>)")
_LITERAL_MARKER = re.compile(r"(?:<p>::</p>|::(?=</p>))")
_ANCHOR = re.compile(r'id="((?:sbmgmt|fakes)(?:\.\w+)*)"')

_anchors: set[str] = set()


def tidy_docstring_html(html: str) -> str:
    """The HTML of a page with Sphinx roles and ``::`` markers removed."""
    html = _ROLE.sub("", html)
    return _LITERAL_MARKER.sub(lambda m: "" if m.group(0).startswith("<p>") else ":", html)


def public_names(module: str) -> list[str]:
    """The names in a module's ``__all__``, read from its source (nothing is imported)."""
    base = _ROOT.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return [str(name) for name in ast.literal_eval(node.value)]
    raise PluginError(f"{path} has no __all__ for the API reference")


def undocumented(anchors: set[str]) -> list[str]:
    """The public names of :data:`API_MODULES` that no anchor in ``anchors`` documents."""
    return [
        f"{module}.{name}"
        for module in API_MODULES
        for name in public_names(module)
        if not any(f"{home}.{name}" in anchors for home in API_MODULES)
    ]


def on_pre_build(**_: Any) -> None:
    """mkdocs hook: forget the anchors of a previous build (``mkdocs serve`` rebuilds)."""
    _anchors.clear()


def on_page_content(html: str, **_: Any) -> str:
    """mkdocs hook: note the page's API anchors and tidy its docstring HTML."""
    _anchors.update(_ANCHOR.findall(html))
    return tidy_docstring_html(html)


def on_post_build(**_: Any) -> None:
    """mkdocs hook: fail the build when the API reference misses a public name."""
    missing = undocumented(_anchors)
    if missing:
        raise PluginError("the API reference (docs/api/) does not document: "
                          + ", ".join(missing))
