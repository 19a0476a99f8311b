"""A griffe extension for the docs site: signatures show default values, not private names.

A parameter whose default is a module constant (``window: int = DEFAULT_WINDOW``, where
``DEFAULT_WINDOW`` lives in a private module) would render with a name the reference does
not document. This replaces such a default with the constant's literal value
(``window: int = 1024``; ``256 * 1024`` folded to ``262144``; a ``timedelta(seconds=NAME)``
with the name's value put in), and a sentinel (a constant that is ``object()``, meaning "the
owner's own default", explained in the parameter's docstring) with ``<default>``. Defaults
that are not a name, or whose constant is not a literal, stay as written. mkdocs.yml loads
it through mkdocstrings' ``extensions`` option.
"""

from __future__ import annotations

import ast
from typing import Any

from griffe import (
    AliasResolutionError,
    Attribute,
    Class,
    CyclicAliasError,
    ExprName,
    Extension,
    Function,
    Module,
    Object,
)

#: What a sentinel default (``_DEFAULT = object()``) renders as.
SENTINEL = "<default>"


def literal_default(default: object, lookup: Any) -> str | None:
    """The text to show for ``default`` (a griffe expression), or None to keep it.

    ``lookup(path)`` returns the object at a canonical path (KeyError if unknown).
    """
    if not isinstance(default, ExprName):
        return None
    try:
        target = lookup(default.canonical_path)
    except (KeyError, ValueError, AliasResolutionError, CyclicAliasError):
        return None
    if not isinstance(target, Attribute) or target.value is None:
        return None
    if str(target.value) == "object()":
        return SENTINEL
    return constant_text(target, lookup)


#: The calls a constant's value may hold and still be shown (by their source text).
_CALLS = frozenset({"timedelta"})
_ARITHMETIC = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator,
               ast.unaryop)


def constant_text(target: Attribute, lookup: Any, depth: int = 0) -> str | None:
    """A constant's value as source text, its names replaced by their values and its
    arithmetic folded; None when it is not made of constants (or nests too deep)."""
    if depth > 3 or target.value is None:
        return None
    tree = ast.parse(str(target.value), mode="eval")
    module = target.parent

    class Substitute(ast.NodeTransformer):
        failed = False

        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in _CALLS:
                return node
            member = module.members.get(node.id) if module is not None else None
            try:
                found = lookup(member.canonical_path) if member is not None else None
            except (KeyError, ValueError, AliasResolutionError, CyclicAliasError):
                found = None
            text = (constant_text(found, lookup, depth + 1)
                    if isinstance(found, Attribute) else None)
            if text is None:
                self.failed = True
                return node
            return ast.parse(text, mode="eval").body

    substitute = Substitute()
    tree = substitute.visit(tree)
    if substitute.failed:
        return None
    if all(isinstance(node, _ARITHMETIC) for node in ast.walk(tree)):
        value = eval(compile(tree, "<constant>", "eval"), {"__builtins__": {}})
        return repr(value)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    if calls and all(isinstance(c.func, ast.Name) and c.func.id in _CALLS for c in calls):
        return ast.unparse(tree)
    return None


class PublicDefaults(Extension):
    """Shows a constant default's value in place of its (possibly private) name."""

    def on_package(self, *, pkg: Module, loader: Any, **_: Any) -> None:
        """griffe hook: rewrite the defaults of every function of a loaded package."""
        collection = loader.modules_collection

        def lookup(path: str) -> Object:
            found = collection.get_member(path)
            if found is None:
                raise KeyError(path)
            return found  # type: ignore[no-any-return]

        for function in _functions(pkg):
            for parameter in function.parameters:
                text = literal_default(parameter.default, lookup)
                if text is not None:
                    parameter.default = text


def _functions(obj: Module | Class) -> list[Function]:
    found: list[Function] = []
    for member in obj.members.values():
        if member.is_alias:
            continue
        if isinstance(member, Function):
            found.append(member)
        elif isinstance(member, Module | Class):
            found.extend(_functions(member))
    return found
