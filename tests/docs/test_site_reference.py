"""The API reference as a reader meets it: the built site (``mkdocs build --strict``, into a
temporary directory) shows no raw cross-reference text, no private module or name, and
signatures and "Bases:" lines that name only what the reference documents; ``help(sbmgmt)``
points at nothing outside the repository.
"""

from __future__ import annotations

import html
import importlib.util
import os
import pydoc
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sbmgmt
from tests._peers import missing_peer

ROOT = Path(__file__).resolve().parents[2]
_TAG = re.compile(r"<[^>]+>")
# Sphinx roles and "~" paths, Markdown references left unresolved ([Name][path], in the text or
# a table's type column), and documents outside the repository.
_RAW_REFERENCE = re.compile(
    r"~(?:sbmgmt|fakes)\.|:(?:class|meth|func|mod|attr|exc|data|obj):|\]\[|DESIGN\s*§")
_PRIVATE_PATH = re.compile(r"\b(?:sbmgmt|fakes)(?:\.\w+)*\._\w")
# An unresolved reference (autorefs leaves a <span title=PATH>) to a private project name.
_UNRESOLVED_PRIVATE = re.compile(r'<span title="((?:sbmgmt|fakes)(?:\.\w+)*\._[\w.()]*)">')
_SIGNATURE = re.compile(r'<div class="doc-signature highlight">(.*?)</div>', re.DOTALL)
_BASES = re.compile(r'<p class="doc doc-class-bases">(.*?)</p>', re.DOTALL)
_PRIVATE_IDENTIFIER = re.compile(r"(?<![\w.])_[A-Za-z]\w*")


def visible(markup: str) -> str:
    return html.unescape(_TAG.sub("", markup))


pytestmark = pytest.mark.slow("builds the documentation site (mkdocs, the API pages by griffe) "
                              "once for the module: 15-30 s of the first test's set-up")


@pytest.fixture(scope="module")
def api_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if importlib.util.find_spec("mkdocs") is None:
        missing_peer("mkdocs is not installed: pip install -e '.[docs]'")
    site = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True,
        text=True, timeout=600, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    pages = {page.parent.name: page.read_text(encoding="utf-8")
             for page in sorted((site / "api").glob("*/index.html"))}
    assert {"sbmgmt", "aio", "errors", "renewer", "spark", "testing", "fakes"} <= set(pages)
    return pages


def test_no_raw_cross_reference_text(api_pages: dict[str, str]) -> None:
    found = {name: sorted(set(_RAW_REFERENCE.findall(visible(page))))
             for name, page in api_pages.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_no_private_module_or_name_is_shown(api_pages: dict[str, str]) -> None:
    found = {name: sorted(set(_PRIVATE_PATH.findall(visible(page)))
                          | set(_UNRESOLVED_PRIVATE.findall(page)))
             for name, page in api_pages.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_signatures_name_no_private_names(api_pages: dict[str, str]) -> None:
    found = {name: sorted({hit for signature in _SIGNATURE.findall(page)
                           for hit in _PRIVATE_IDENTIFIER.findall(visible(signature))})
             for name, page in api_pages.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}
    client = next(visible(s) for s in _SIGNATURE.findall(api_pages["sbmgmt"])
                  if "fully_qualified_namespace" in visible(s))
    assert "window: int = 1024" in client  # a constant's value, not its private name
    assert "-> Self" in visible(api_pages["sbmgmt"])  # from_connection_string


def test_bases_name_only_documented_classes(api_pages: dict[str, str]) -> None:
    bases = {name: [visible(b).split(":", 1)[1].strip() for b in _BASES.findall(page)
                    if "<span title=" in b and re.search(r'<span title="(?:sbmgmt|fakes)\.', b)]
             for name, page in api_pages.items()}
    assert {name: b for name, b in bases.items() if b} == {}
    assert "ClientBase" not in visible(api_pages["sbmgmt"])


def test_help_names_no_document_outside_the_repository() -> None:
    text = pydoc.render_doc(sbmgmt, renderer=pydoc.plaintext)
    assert "DESIGN" not in text
    assert "ManagementClient" in text
