"""Every ```python block of the README and of the guides (docs/*.md) runs as written.

A guide's blocks run in order in one namespace, as a reader pastes them into one session,
in a fresh working directory. The names a block uses come from the guide itself: a guide
whose examples need a namespace, a client or a Spark session starts them with a visible
set-up block (a fake namespace on 127.0.0.1, port 0, and what the examples use); a Spark
guide's ``getOrCreate()`` gets the worker's session (the suite's ``spark`` fixture). A block
that defines ``test_`` functions is a test module, as the reader would save it: it runs
under pytest (pytester) with sbmgmt's pytest plugins, and all its tests must pass. After
the guide, what it left open (fake namespaces, clients, Spark queries, a Spark session it
started) is closed.

What is not Python to run is fenced with another language: ``bash`` for shell lines,
``text`` for signatures and output. A Python block that must not run in a test process
(it sets the process's global OpenTelemetry providers, or serves on a fixed port) follows
a line ``<!-- not run: the reason -->``: it is still parsed, and the reason is required.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import re
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests._peers import missing_peer

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$",
                    flags=re.MULTILINE | re.DOTALL)
_TEST_FUNCTION = re.compile(r"^def test_", flags=re.MULTILINE)
_NOT_RUN = re.compile(r"<!-- not run:(?P<reason>[^>]*)-->\s*$")
#: The plugins a test-module block may use (pytester runs without autoloading the rest).
_PLUGINS = ("pytest_mock", "sbmgmt.testing.pytest_plugin", "fakes.pytest_plugin")


@dataclass(frozen=True)
class Block:
    """One fenced block of a guide."""

    guide: str
    line: int
    language: str
    code: str
    #: Why the block is not run (``<!-- not run: ... -->`` on the line before), or None.
    not_run: str | None = None

    @property
    def is_test_module(self) -> bool:
        return bool(_TEST_FUNCTION.search(self.code))


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _NOT_RUN.search(before)
        found.append(Block(path.relative_to(ROOT).as_posix(),
                           text.count("\n", 0, m.start()) + 1, m.group("lang"), m.group("code"),
                           None if marker is None else marker.group("reason").strip()))
    return found


def python_blocks(path: Path) -> list[Block]:
    return [block for block in blocks(path) if block.language == "python"]


GUIDES_WITH_EXAMPLES = [path for path in GUIDES if python_blocks(path)]


def test_the_extractor_finds_the_examples() -> None:
    found = {path.relative_to(ROOT).as_posix(): len(python_blocks(path))
             for path in GUIDES_WITH_EXAMPLES}
    assert found["README.md"] >= 2
    assert found["docs/testing.md"] >= 5
    assert found["docs/spark.md"] >= 4
    assert sum(found.values()) >= 25


@pytest.mark.parametrize("path", GUIDES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_python_block_is_python(path: Path) -> None:
    """A ```python block that is not Python (a pip line, a signature) says so at once."""
    for block in python_blocks(path):
        try:
            ast.parse(block.code)
        except SyntaxError as exc:
            pytest.fail(f"{block.guide}:{block.line + (exc.lineno or 0)}: a ```python block "
                        f"that is not Python ({exc.msg}); fence shell lines as ```bash and "
                        f"signatures or output as ```text")


def _needs_spark(path: Path) -> bool:
    return any("pyspark" in block.code for block in python_blocks(path))


#: Guides whose examples do not run yet, and why: each one fails its test until it is fixed
#: (strict xfail), and then fails until it is removed from here.
NOT_YET: dict[str, str] = {}


def _params() -> list[Any]:
    params = []
    for path in GUIDES_WITH_EXAMPLES:
        name = path.relative_to(ROOT).as_posix()
        marks = [pytest.mark.timeout(600), pytest.mark.spark] if _needs_spark(path) else []
        if name in NOT_YET:
            marks.append(pytest.mark.xfail(reason=NOT_YET[name], strict=True))
        params.append(pytest.param(path, marks=marks, id=name))
    return params


@pytest.mark.parametrize("path", _params())
def test_the_guide_examples_run_as_written(
        path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    if _needs_spark(path):
        _check_spark_peers()
        # Spark's driver and UI listen on loopback only, as every server a test starts.
        monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        # The worker's one Spark session (tests/_spark.py): the guide's getOrCreate()
        # returns it, as in a notebook that has one, rather than starting a JVM of its own.
        work = _spark_working_directory(request.getfixturevalue("spark"))
    else:
        work = tmp_path / "work"
        work.mkdir()
    monkeypatch.chdir(work)
    namespace: dict[str, Any] = {"__name__": "__guide__"}
    _drop_forgotten_submodules()
    with _closing(namespace):
        for block in python_blocks(path):
            if block.not_run is not None:
                assert block.not_run, f"{block.guide}:{block.line}: say why it is not run"
                continue
            if block.is_test_module:
                # Only here: pytester forgets the modules first imported while it is set
                # up (numpy, pyspark, the SDK), and a second import of numpy fails.
                _run_test_module(block, request.getfixturevalue("pytester"), monkeypatch)
                continue
            code = compile(block.code, f"{block.guide}:{block.line}", "exec")
            exec(code, namespace)


def _drop_forgotten_submodules() -> None:
    """Remove from each package the submodules pytester made ``sys.modules`` forget.

    pytester forgets the modules first imported in its runs and while it is set up, but a
    forgotten submodule stays its package's attribute: ``from http import cookiejar`` (the
    SDK's requests, imported again by a later guide) would then take the old module while
    ``import http.cookiejar`` loads a new one, and requests refuses its own cookies.
    """
    for name, module in list(sys.modules.items()):
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            if (isinstance(value, ModuleType) and value.__name__ == f"{name}.{attribute}"
                    and value.__name__ not in sys.modules):
                delattr(module, attribute)


def _run_test_module(block: Block, pytester: pytest.Pytester,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        patch.chdir(pytester.path)
        # Only the plugins the examples need (loading every installed one costs a second).
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        pytester.makepyfile(**{f"test_example_line_{block.line}": block.code})
        plugins = [arg for name in _PLUGINS for arg in ("-p", name)]
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *plugins, "-q",
                                              f"test_example_line_{block.line}.py")
    _drop_forgotten_submodules()
    tests = len(_TEST_FUNCTION.findall(block.code))
    assert result.ret == 0 and result.parseoutcomes().get("passed") == tests, (
        f"{block.guide}:{block.line}: " + "\n".join(result.outlines[-30:]))


def _check_spark_peers() -> None:
    if importlib.util.find_spec("pyspark") is None:
        missing_peer("pyspark is not installed: pip install -e '.[spark]'")
    if shutil.which("java") is None:
        missing_peer("Spark needs Java (java on PATH)")


@contextlib.contextmanager
def _closing(namespace: dict[str, Any]) -> Iterator[None]:
    """Close what a guide's examples left open once it has run (or failed): its Spark
    queries (the session is the worker's, the ``spark`` fixture's), namespaces, clients."""
    try:
        yield
    finally:
        spark = _active_spark_session()
        if spark is not None:
            for query in spark.streams.active:
                query.stop()
        for value in namespace.values():
            _close(value)


def _spark_working_directory(spark: Any) -> Path:
    """The working directory of the session's JVM: Spark reads and writes a guide's
    relative paths there, so the guide's Python must run there too; never the repository's
    root."""
    directory = Path(spark.sparkContext._jvm.java.lang.System.getProperty("user.dir"))
    assert directory != ROOT, "a Spark JVM was started in the repository's root"
    return directory


def _active_spark_session() -> Any:
    if importlib.util.find_spec("pyspark") is None:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def _close(value: object) -> None:
    from fakes import FakeNamespace
    from sbmgmt import ManagementClient

    if isinstance(value, FakeNamespace):
        value.stop()
    elif isinstance(value, ManagementClient):
        value.close()
