"""mkdocs hooks for the docs site (mkdocs.yml names this file).

Four jobs:

- The guides and the docstrings name guides by path (``docs/errors.md``), which reads
  well in an editor, on GitHub and in help(); on the site each such path becomes a link to
  the page, and a path to a guide that does not exist fails the build.
- The docstrings are written for Python's help() and IDEs, with Sphinx roles
  (``:class:`X```) and reST literal-block markers (``::``); mkdocstrings renders them as
  Markdown, where both would show up as stray punctuation. The role prefixes in front of
  inline code are dropped and a paragraph-ending ``::`` becomes ``:``.
- A class's "Bases:" line names only what a reader can look up: a base of the project's
  that the reference does not document (a private helper such as ``ClientBase``, which
  mkdocstrings leaves unlinked) is dropped, and the line with it when none is left. The
  members such a base gives are documented on the class itself.
- The API reference must cover every public name (``__all__``) of the documented modules:
  the anchors of the rendered pages are collected, and the build fails naming any public
  name that no page documents (under its own module or the one that defines it).
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

#: The modules whose public names the API reference documents.
API_MODULES = ("sbmgmt", "sbmgmt.aio", "sbmgmt.errors", "sbmgmt.renewer", "sbmgmt.spark",
               "sbmgmt.testing", "fakes")

_ROOT = Path(__file__).resolve().parents[1]
_ROLE = re.compile(r":(?:class|meth|func|mod|attr|exc|data|obj|const):(?=<code>)")
_LITERAL_MARKER = re.compile(r"(?:<p>::</p>|::(?=</p>))")
_ANCHOR = re.compile(r'id="((?:sbmgmt|fakes)(?:\.\w+)*)"')
_GUIDE_PATH = re.compile(r"(?<![\w/.-])docs/([\w-]+\.md)\b")
_TAG = re.compile(r"(<[^>]*>)")
_BASES = re.compile(r'(<p class="doc doc-class-bases">\s*Bases: )(.*?)(</p>)', re.DOTALL)
_BASE = re.compile(r'<code>(?:(?!</code>).)*</code>', re.DOTALL)
_UNDOCUMENTED_BASE = re.compile(r'<code><span title="(?:sbmgmt|fakes)\.[\w.]+">\w+</span></code>')
_NO_LINKS_INSIDE = ("a", "pre", "script", "style")

# Under "mkdocs", so that --strict counts its warnings.
_log = logging.getLogger("mkdocs.hooks.sbmgmt")

_anchors: set[str] = set()


def tidy_docstring_html(html: str) -> str:
    """The HTML of a page with Sphinx roles and ``::`` markers removed."""
    html = _ROLE.sub("", html)
    return _LITERAL_MARKER.sub(lambda m: "" if m.group(0).startswith("<p>") else ":", html)


def drop_undocumented_bases(html: str) -> str:
    """The HTML with the project's undocumented (unlinked) classes removed from every
    "Bases:" line, and a line left empty removed."""
    def bases(match: re.Match[str]) -> str:
        kept = [b for b in _BASE.findall(match.group(2)) if not _UNDOCUMENTED_BASE.fullmatch(b)]
        return f"{match.group(1)}{', '.join(kept)}{match.group(3)}" if kept else ""

    return _BASES.sub(bases, html)


def link_guide_paths(html: str, link: Callable[[str], str | None]) -> str:
    """``docs/NAME.md`` in the text of ``html`` (not in tags, links or code blocks) as a
    link to ``link(NAME.md)``; a path ``link`` returns None for stays as it is."""
    parts = _TAG.split(html)
    open_elements: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:  # a tag
            name = part.strip("</>").split()[0].lower() if part.strip("</>") else ""
            if name in _NO_LINKS_INSIDE:
                if part.startswith("</"):
                    if name in open_elements:
                        open_elements.remove(name)
                elif not part.endswith("/>"):
                    open_elements.append(name)
            continue
        if open_elements:
            continue

        def replace(match: re.Match[str]) -> str:
            url = link(match.group(1))
            return match.group(0) if url is None else f'<a href="{url}">{match.group(0)}</a>'

        parts[index] = _GUIDE_PATH.sub(replace, part)
    return "".join(parts)


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


def on_page_content(html: str, *, page: Page, files: Files, **_: Any) -> str:
    """mkdocs hook: note the page's API anchors, tidy its docstring HTML, link guide paths."""
    _anchors.update(_ANCHOR.findall(html))

    def link(guide: str) -> str | None:
        target = files.get_file_from_path(guide)
        if target is None:
            _log.warning("%s names docs/%s, which does not exist", page.file.src_uri, guide)
            return None
        return target.url_relative_to(page.file)

    return link_guide_paths(tidy_docstring_html(html), link)


def on_post_page(output: str, **_: Any) -> str:
    """mkdocs hook: drop undocumented project bases, once autorefs has resolved the links
    (an unresolved one is then a ``<span title=...>``)."""
    return drop_undocumented_bases(output)


def on_post_build(**_: Any) -> None:
    """mkdocs hook: fail the build when the API reference misses a public name."""
    missing = undocumented(_anchors)
    if missing:
        raise PluginError("the API reference (docs/api/) does not document: "
                          + ", ".join(missing))
