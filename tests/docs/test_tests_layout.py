"""tests/README.md, the map of the suite, and the tree agree: its folder table names every
folder that holds tests and no other, every folder is a package but the one it names, the
fixtures and the slow tests it names exist, and every ``realtime`` marker says why."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tests.conftest as suite

TESTS = Path(__file__).resolve().parents[1]
README = (TESTS / "README.md").read_text(encoding="utf-8")
#: The folders that are not packages, as the map says ("but `unit/`").
NOT_PACKAGES = {"unit"}


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start:] if end < 0 else README[start:end]


def _folders_with_tests() -> set[str]:
    return {path.name for path in TESTS.iterdir()
            if path.is_dir() and any(path.glob("test_*.py"))}


def test_the_folder_table_names_every_folder_with_tests() -> None:
    table = re.findall(r"^\| `([a-z_]+)/` \|", _section("The folders"), flags=re.MULTILINE)
    assert len(table) == len(set(table)), "a folder is named twice"
    assert set(table) == _folders_with_tests()


def test_every_folder_is_a_package_but_the_ones_the_map_names() -> None:
    without = {name for name in _folders_with_tests()
               if not (TESTS / name / "__init__.py").exists()}
    assert without == NOT_PACKAGES
    assert "but " + ", ".join(f"`{name}/`" for name in sorted(NOT_PACKAGES)) in README


def test_the_fixtures_the_map_names_are_the_suites() -> None:
    named = re.findall(r"^- `([a-z_]+)`:", _section("The fixtures"), flags=re.MULTILINE)
    assert named == ["fake", "client", "fake_namespace", "fake_namespace_factory",
                     "sbmgmt_mock"]
    for name in named:
        assert hasattr(getattr(suite, name), "_pytestfixturefunction") or hasattr(
            getattr(suite, name), "_fixture_function"), name


def test_the_slow_tests_the_map_names_exist() -> None:
    files = re.findall(r"^\| `([a-z_/]+\.py)", _section("Time: waiting, real time, what is slow"),
                       flags=re.MULTILINE)
    assert files
    for name in files:
        assert (TESTS / name).is_file(), name


def _realtime_markers() -> list[tuple[Path, int, ast.Call]]:
    found = []
    for path in TESTS.rglob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        if "node_modules" in path.parts or ".realtime(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "realtime"):
                found.append((path, node.lineno, node))
    return found


def test_every_realtime_marker_says_why() -> None:
    markers = _realtime_markers()
    assert len(markers) >= 3
    for path, line, call in markers:
        reason = call.args[0] if call.args else None
        text = ast.literal_eval(reason) if reason is not None else ""
        assert isinstance(text, str) and len(text) > 20, f"{path}:{line}: say why"
