"""Each ```python block of a guide runs as pasted after the guide's visible set-up (issue 40).

test_guide_examples.py runs a guide's blocks in order in one namespace; a reader often
pastes one example alone. So every name a block uses is defined by the block itself (its
imports, assignments, functions), by a builtin, or by one of the guide's set-up blocks: its
first block, and each block the text before it calls a set-up ("this set-up makes ...").
Checked statically, for every guide.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import re
from pathlib import Path

import pytest

from tests.docs.test_guide_examples import GUIDES_WITH_EXAMPLES, ROOT, Block, python_blocks

_SET_UP = re.compile(r"\bset-up\b")
_BUILTINS = set(dir(builtins))


def _defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _used(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _set_up_blocks(path: Path, found: list[Block]) -> list[Block]:
    """The guide's first block, and those the text just before calls a set-up."""
    text = path.read_text(encoding="utf-8").splitlines()
    chosen = found[:1]
    for previous, block in itertools.pairwise(found):
        between = "\n".join(text[previous.line:block.line - 1])
        paragraph = between.rstrip().rsplit("\n\n", 1)[-1]
        if _SET_UP.search(paragraph):
            chosen.append(block)
    return chosen


@pytest.mark.parametrize("path", GUIDES_WITH_EXAMPLES,
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_block_runs_after_the_set_up_alone(path: Path) -> None:
    found = [block for block in python_blocks(path) if block.not_run is None]
    set_up = _set_up_blocks(path, found)
    given = set().union(*(_defined(ast.parse(block.code)) for block in set_up))
    lacking = []
    for block in found:
        if block in set_up:
            continue
        tree = ast.parse(block.code)
        missing = _used(tree) - _defined(tree) - given - _BUILTINS
        if missing:
            lacking.append(f"{block.guide}:{block.line}: {', '.join(sorted(missing))}")
    assert not lacking, ("blocks that use names neither they nor the guide's set-up define "
                         "(import or make them in the block): " + "; ".join(lacking))


def test_the_set_up_is_found() -> None:
    guide = ROOT / "docs" / "spark.md"
    found = python_blocks(guide)
    assert [block.line for block in _set_up_blocks(guide, found)] == [
        found[0].line, found[1].line]
