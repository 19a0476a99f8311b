"""The docs site's build hooks (scripts/mkdocs_hooks.py): docstring tidying and the check
that the API reference covers every public name. The strict build itself runs in
scripts/test.sh; these pin what the hooks do on their own."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mkdocs_hooks",
                                                  ROOT / "scripts" / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_and_literal_markers_are_dropped() -> None:
    hooks = load_hooks()
    html = ("<p>See :class:<code>ManagementClient</code> and :meth:<code>close</code>.</p>"
            "<p>Then::</p><p>::</p><pre>code</pre><p>a :b: c</p>")
    assert hooks.tidy_docstring_html(html) == (
        "<p>See <code>ManagementClient</code> and <code>close</code>.</p>"
        "<p>Then:</p><pre>code</pre><p>a :b: c</p>")


def test_public_names_come_from_all() -> None:
    hooks = load_hooks()
    assert "ManagementClient" in hooks.public_names("sbmgmt")
    assert hooks.public_names("fakes") == [
        "BASIC", "PREMIUM", "STANDARD", "ConfigError", "FakeClock", "FakeNamespace",
        "FaultHandle", "FaultKind", "Faults", "Limits", "Tier"]


def test_a_public_name_without_an_anchor_is_reported() -> None:
    hooks = load_hooks()
    every = {f"{module}.{name}" for module in hooks.API_MODULES
             for name in hooks.public_names(module)}
    assert hooks.undocumented(every) == []
    # A re-export counts as documented where it is defined (sbmgmt.aio here).
    assert hooks.undocumented(every - {"sbmgmt.AsyncManagementClient"}) == []
    assert hooks.undocumented(every - {"sbmgmt.aio.AsyncManagementClient",
                                       "sbmgmt.AsyncManagementClient"}) == [
        "sbmgmt.AsyncManagementClient", "sbmgmt.aio.AsyncManagementClient"]
    assert hooks.undocumented(every - {"fakes.FakeClock"}) == ["fakes.FakeClock"]


def test_guide_paths_become_links_outside_tags_links_and_code_blocks() -> None:
    hooks = load_hooks()
    guides = {"errors.md": "../errors/", "cli.md": "../cli/"}
    html = ('<p>See docs/errors.md and <code>docs/cli.md</code>.</p>'
            '<p><a href="docs/errors.md">docs/errors.md</a></p>'
            '<pre><code>cat docs/errors.md</code></pre>'
            '<p>not a guide: my-docs/errors.md, docs/missing.md</p>')
    assert hooks.link_guide_paths(html, guides.get) == (
        '<p>See <a href="../errors/">docs/errors.md</a> and '
        '<code><a href="../cli/">docs/cli.md</a></code>.</p>'
        '<p><a href="docs/errors.md">docs/errors.md</a></p>'
        '<pre><code>cat docs/errors.md</code></pre>'
        '<p>not a guide: my-docs/errors.md, docs/missing.md</p>')


def test_undocumented_project_bases_are_dropped_and_others_kept() -> None:
    hooks = load_hooks()
    private = '<code><span title="sbmgmt.client.ClientBase">ClientBase</span></code>'
    linked = '<code><a class="autorefs" href="#sbmgmt.Message">Message</a></code>'
    foreign = '<code><span title="pydantic.BaseModel">BaseModel</span></code>'
    line = '<p class="doc doc-class-bases">\n  Bases: {}</p>'
    assert hooks.drop_undocumented_bases(line.format(private)) == ""
    assert hooks.drop_undocumented_bases(line.format(f"{private}, {linked}")) == line.format(
        linked)
    assert hooks.drop_undocumented_bases(line.format(foreign)) == line.format(foreign)
