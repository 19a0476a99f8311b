"""A griffe extension for the docs site: signatures show default values, not private names.

A parameter whose default is a module constant (``window: int = DEFAULT_WINDOW``, where
``DEFAULT_WINDOW`` lives in a private module) would render with a name the reference does
not document. This replaces such a default with the constant's literal value
(``window: int = 1024``; ``256 * 1024`` folded to ``262144``; a ``timedelta(seconds=NAME)``
with the name's value put in), and a sentinel (a constant that is ``object()``, meaning "the
owner's own default", explained in the parameter's docstring) with ``<default>``. An
expression that names such constants (``32 * _KB``, ``(*_SIZES, 10240)``, a class called with
them: ``Tier("Standard", max_message_size=256 * _KB)``) gets their values put in and its
arithmetic folded, wherever it is a parameter's default or an attribute's value (a
dataclass's field, whose value is its ``__init__`` parameter's default). Defaults that name
nothing, or a constant that is not a literal, stay as written. mkdocs.yml loads it through
mkdocstrings' ``extensions`` option.
"""

from __future__ import annotations

import ast
from typing import Any

from griffe import (
    AliasResolutionError,
    Attribute,
    Class,
    CyclicAliasError,
    Expr,
    ExprName,
    Extension,
    Function,
    Module,
    Object,
)

#: What a sentinel default (``_DEFAULT = object()``) renders as.
SENTINEL = "<default>"


def literal_default(default: object, lookup: Any, module: Object | None = None) -> str | None:
    """The text to show for ``default`` (a griffe expression written in ``module``), or None
    to keep it.

    ``lookup(path)`` returns the object at a canonical path (KeyError if unknown).
    """
    if isinstance(default, Expr) and not isinstance(default, ExprName):
        names = any(isinstance(part, ExprName) for part in default.iterate(flat=True))
        return expression_text(str(default), module, lookup) if names else None
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
#: What folds to one value: arithmetic and tuples of constants.
_FOLDABLE = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop, ast.Tuple,
             ast.Starred, ast.Load)


def constant_text(target: Attribute, lookup: Any, depth: int = 0) -> str | None:
    """A constant's value as source text, its names replaced by their values and its
    arithmetic folded; None when it is not made of constants (or nests too deep)."""
    if target.value is None:
        return None
    return expression_text(str(target.value), target.parent, lookup, depth, classes=False)


def expression_text(source: str, module: Object | None, lookup: Any, depth: int = 0,
                    classes: bool = True) -> str | None:
    """``source`` (an expression written in ``module``) with the constants it names replaced
    by their values and its arithmetic folded; None when a name is not a constant (or one
    nests too deep). With ``classes``, it may also call the classes it names."""
    if depth > 3:
        return None
    tree = ast.parse(source, mode="eval")
    kept: set[str] = set(_CALLS)

    class Substitute(ast.NodeTransformer):
        failed = False

        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in kept:
                return node
            member = module.members.get(node.id) if module is not None else None
            try:
                found = lookup(member.canonical_path) if member is not None else None
            except (KeyError, ValueError, AliasResolutionError, CyclicAliasError):
                found = None
            if classes and isinstance(found, Class):
                kept.add(node.id)
                return node
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
    tree = ast.fix_missing_locations(_Fold().visit(tree))
    if isinstance(tree.body, ast.Constant):
        return repr(tree.body.value)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    if calls and all(isinstance(c.func, ast.Name) and c.func.id in kept for c in calls):
        return ast.unparse(tree)
    return None


class _Fold(ast.NodeTransformer):
    """Replaces each expression made only of constants by its value."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        if (isinstance(node, ast.expr) and not isinstance(node, ast.Constant | ast.Starred)
                and all(isinstance(part, _FOLDABLE) for part in ast.walk(node))):
            expression = ast.fix_missing_locations(ast.Expression(node))
            value = eval(compile(expression, "<constant>", "eval"), {"__builtins__": {}})
            return ast.copy_location(ast.Constant(value), node)
        return node


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

        # Before griffe's dataclasses extension (always the last one) makes a dataclass's
        # __init__ from its fields' values.
        for member in _members(pkg):
            if isinstance(member, Function):
                for parameter in member.parameters:
                    text = literal_default(parameter.default, lookup, member.module)
                    if text is not None:
                        parameter.default = text
            else:
                text = literal_default(member.value, lookup, member.module)
                if text is not None:
                    member.value = text


def _members(obj: Module | Class) -> list[Function | Attribute]:
    found: list[Function | Attribute] = []
    for member in obj.members.values():
        if member.is_alias:
            continue
        if isinstance(member, Function | Attribute):
            found.append(member)
        elif isinstance(member, Module | Class):
            found.extend(_members(member))
    return found
