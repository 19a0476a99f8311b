"""The README's set-up claims hold: its two commands install what it says they install, and
every later step names an extra that holds what that step imports.

Cheap: it reads the README, the scripts and pyproject.toml, and follows the imports of each
step's code in the source tree (nothing is installed or run); the metadata of the installed
distributions says which distribution provides a module and what it requires.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
_OWN = {"sbmgmt", "fakes", "bench"}


def section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def script_extra(script: str) -> str:
    """The extras a script installs into .venv (its one ``pip install -e '.[X,Y]'``)."""
    text = (ROOT / "scripts" / script).read_text(encoding="utf-8")
    found = re.findall(r"pip install --quiet -e '\.\[([\w,]+)\]'", text)
    assert len(found) == 1, f"scripts/{script} installs {found}"
    return found[0]


def test_the_readme_has_exactly_two_set_up_commands_and_says_what_each_installs() -> None:
    block = re.search(r"```bash\n(.*?)```", section("The two commands"), re.DOTALL)
    assert block is not None
    lines = block.group(1).strip().splitlines()
    assert [line.split("#")[0].strip() for line in lines] == [
        "bash scripts/demo.sh", "bash scripts/test.sh"]
    for line in lines:
        script = line.split()[1].removeprefix("scripts/")
        said = re.search(r"# sbmgmt\[([\w,]+)\]", line)
        assert said is not None, f"the README does not say what {script} installs: {line}"
        assert said.group(1) == script_extra(script)


def test_the_test_extra_holds_every_other_extra() -> None:
    """So that after scripts/test.sh, .venv holds every step the README lists."""
    own = [Requirement(r) for r in EXTRAS["test"] if Requirement(r).name == "sbmgmt"]
    included = {extra for requirement in own for extra in requirement.extras}
    assert included == set(EXTRAS) - {"test", "identity"}


STEPS = {  # the README's bullet (a phrase of it) -> the code that step runs, and its extra
    "the admin CLI": ("sbmgmt/cli/_app.py", "cli"),
    'spark.read.format("servicebus")': ("sbmgmt/spark/__init__.py", "spark"),
    "python -m bench --quick": ("bench/__main__.py", "bench"),
    "sbmgmt_mock": ("sbmgmt/testing/pytest_plugin.py", "testing"),
}


@pytest.mark.parametrize("phrase", list(STEPS))
def test_each_step_names_the_extra_that_holds_what_it_imports(phrase: str) -> None:
    entry, extra = STEPS[phrase]
    bullets = section("Command line, lock renewal, Spark, benchmarks").split("\n- ")
    bullet = " ".join(next(b for b in bullets if phrase in b).split())
    assert f"extra `{extra}`" in bullet, bullet
    needed = third_party_modules(ROOT / entry)
    assert needed, entry
    provided = installable_modules([*PROJECT["dependencies"], *EXTRAS[extra]])
    assert needed <= provided, f"{entry} imports {sorted(needed - provided)}, not in `{extra}`"


def test_the_docs_step_installs_the_docs_extra() -> None:
    bullet = next(b for b in section("Command line, lock renewal, Spark, benchmarks")
                  .split("\n- ") if "scripts/docs.sh" in b)
    assert "`docs`" in bullet
    assert script_extra("docs.sh") == "docs"


def test_the_import_scan_sees_what_a_step_needs() -> None:
    assert {"typer", "rich"} <= third_party_modules(ROOT / "sbmgmt/cli/_app.py")
    assert "azure" in third_party_modules(ROOT / "bench/__main__.py")
    assert "pyspark" in third_party_modules(ROOT / "sbmgmt/spark/__init__.py")
    # The cli extra would not do for the bench: the README said so before issue 32.
    cli_only = installable_modules([*PROJECT["dependencies"], *EXTRAS["cli"]])
    assert "azure" not in cli_only


def third_party_modules(entry: Path) -> set[str]:
    """The top-level third-party modules that importing ``entry`` imports, following the
    project's own modules in the tree. Imports inside functions are not followed: those are
    the optional ones (``azure.identity`` for ``credential=default``, extra ``identity``)."""
    seen: set[Path] = set()
    found: set[str] = set()
    todo = [entry]
    while todo:
        path = todo.pop()
        if path in seen or not path.exists():
            continue
        seen.add(path)
        for name in imported_names(path):
            top = name.split(".")[0]
            if top in _OWN:
                todo.extend(source_files(name))
            elif top not in sys.stdlib_module_names:
                found.add(top)
    return found


def imported_names(path: Path) -> set[str]:
    """Absolute dotted names a file imports when it is imported (relative imports resolved;
    not those in functions or under ``if TYPE_CHECKING``)."""
    package = ".".join(path.relative_to(ROOT).parent.parts)
    names: set[str] = set()
    for node in module_level(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def module_level(statements: list[ast.stmt]) -> list[ast.stmt]:
    """The statements that run on import, inside ``if`` / ``try`` blocks too."""
    out: list[ast.stmt] = []
    for node in statements:
        if isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                out += module_level(node.body) + module_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += module_level(node.body + node.orelse + node.finalbody)
        else:
            out.append(node)
    return out


def source_files(name: str) -> list[Path]:
    base = ROOT.joinpath(*name.split("."))
    return [p for p in (base.with_suffix(".py"), base / "__init__.py") if p.exists()]


def installable_modules(requirements: list[str]) -> set[str]:
    """The top-level modules the distributions of ``requirements`` (and of what they require,
    as installed here) provide."""
    wanted: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in wanted or name == "sbmgmt":
            continue
        wanted.add(name)
        try:
            todo.extend(Requirement(r) for r in requires(name) or []
                        if "extra ==" not in r)
        except PackageNotFoundError:
            continue
    return {module for module, dists in packages_distributions().items()
            if any(canonicalize_name(dist) in wanted for dist in dists)}


@pytest.mark.parametrize("script", ["test.sh", "demo.sh", "docs.sh"])
def test_an_editable_install_does_not_print_setuptools_notice(script: str) -> None:
    """setuptools' "Editable installation" box (an informational warning at every editable
    install of a flat layout) is filtered on the install line, and only it (issue 40)."""
    text = (ROOT / "scripts" / script).read_text(encoding="utf-8")
    installs = [line for line in text.splitlines() if "pip install" in line and " -e " in line]
    assert installs and all(
        line.startswith('PYTHONWARNINGS="ignore:Editable installation" ') for line in installs)
    assert "export PYTHONWARNINGS" not in text
