"""The API reference is written so that a user can code from it alone: every public function
and method of the client API has a Google-style docstring (the style mkdocs.yml renders)
with an ``Args`` section naming exactly its parameters, a ``Returns`` (or ``Yields``)
section when it returns something, and a ``Raises`` section when it takes arguments (each
can be wrong) or else a sentence that says it "Raises nothing". A class takes its
constructor's ``Args`` in its own docstring (``merge_init_into_class``), unless it says
what makes it ("Made by [...]"). griffe, the loader mkdocstrings uses, parses the
docstrings exactly as the site does, and any warning it gives (a section it cannot read, a
documented parameter that does not exist) fails too.

Not checked here: what a method inherits from another library's class (pyspark's
``DataSource`` API, pydantic, ``Exception``), documented there; and ``fakes`` (the fake
namespace's reference, see docs/fake.md), whose methods document their arguments inline.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import griffe
import pytest
import yaml

#: The modules whose public names (``__all__``) the check covers.
MODULES = ("sbmgmt", "sbmgmt.aio", "sbmgmt.errors", "sbmgmt.ops", "sbmgmt.renewer",
           "sbmgmt.spark", "sbmgmt.testing", "sbmgmt.actions.deferred",
           "sbmgmt.actions.contract")
_OURS = ("sbmgmt", "fakes")
def _site_options() -> dict[str, object]:
    """The docstring parser's options as mkdocs.yml gives them to mkdocstrings."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    plugin = next(p["mkdocstrings"] for p in config["plugins"]
                  if isinstance(p, dict) and "mkdocstrings" in p)
    options = plugin["handlers"]["python"]["options"]
    assert options["docstring_style"] == "google"
    return dict(options.get("docstring_options", {}))


ROOT = Path(__file__).resolve().parents[2]
_SITE_OPTIONS = _site_options()
#: What a docstring whose callable returns something describes it with.
_RESULT_SECTIONS = {"returns", "yields"}


@dataclass(frozen=True)
class Documented:
    """A public callable and the docstring that documents its parameters."""

    path: str
    function: griffe.Function
    docstring: griffe.Docstring | None


@functools.cache
def _load() -> dict[str, griffe.Object]:
    """The covered modules, from one load of the package: griffe visits a whole package for
    each ``load`` of one of its submodules, so the package is loaded once and its modules
    looked up in it (once per process: collection and the tests share it)."""
    loader = griffe.GriffeLoader(docstring_parser=griffe.Parser.google)
    package = loader.load("sbmgmt")
    loader.resolve_aliases(external=False, implicit=False)
    return {name: package if name == "sbmgmt" else package[name.removeprefix("sbmgmt.")]
            for name in MODULES}


def _target(obj: griffe.Object | griffe.Alias) -> griffe.Object | None:
    try:
        target = obj.final_target if isinstance(obj, griffe.Alias) else obj
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None  # another library's object, re-exported
    return target if target.path.split(".")[0] in _OURS else None


def _project_members(cls: griffe.Class) -> Iterator[tuple[str, griffe.Object]]:
    """The public members of a class and of its project bases (not another library's)."""
    seen: set[str] = set()
    for klass in [cls, *cls.mro()]:
        if klass.path.split(".")[0] not in _OURS:
            continue
        for name, member in klass.members.items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            target = _target(member)
            if target is not None:
                yield name, target


def _overrides_foreign(cls: griffe.Class, name: str) -> bool:
    """Whether ``name`` implements a method of another library's base class."""
    for base in cls.mro():
        if base.path.split(".")[0] not in _OURS and name in base.members:
            return True
    return any(str(expr).split(".")[-1] in {"DataSource", "DataSourceReader",
                                            "DataSourceStreamReader", "DataSourceWriter",
                                            "DataSourceStreamWriter", "InputPartition",
                                            "WriterCommitMessage"}
               and name in _PYSPARK_API for expr in cls.bases)


#: The methods pyspark's Python data source API calls (its base classes are not loaded).
_PYSPARK_API = frozenset({
    "name", "schema", "reader", "writer", "streamReader", "streamWriter", "partitions",
    "read", "initialOffset", "latestOffset", "getDefaultReadLimit",
    "prepareForTriggerAvailableNow", "commit", "stop", "write", "abort",
})


def _constructor(cls: griffe.Class, exported: set[str]) -> griffe.Object | None:
    """The ``__init__`` a class's docstring must document: its own, or one it inherits
    from a base the reference does not document (``ClientBase``); one inherited from a
    public base (an exception's from ``ServiceBusManagementError``) is documented there.
    None for a class whose docstring says what makes it ("Made by [EntityClient.session]"):
    its constructor is the library's own."""
    if cls.docstring is not None and "Made by [" in cls.docstring.value:
        return None
    for klass in [cls, *cls.mro()]:
        if "__init__" in klass.members:
            if klass is not cls and (klass.path in exported
                                     or klass.path.split(".")[0] not in _OURS):
                return None
            return klass.members["__init__"]
    return None


def public_callables() -> list[Documented]:
    found: dict[str, Documented] = {}
    modules = _load()
    exported = {target.path for module in modules.values() for name in module.exports or []
                if (member := module.members.get(str(name))) is not None
                and (target := _target(member)) is not None}
    for module in modules.values():
        for name in module.exports or []:
            member = module.members.get(str(name))
            target = _target(member) if member is not None else None
            if target is None:
                continue
            if isinstance(target, griffe.Function):
                found.setdefault(target.path, Documented(target.path, target, target.docstring))
            elif isinstance(target, griffe.Class):
                for member_name, obj in _project_members(target):
                    if not isinstance(obj, griffe.Function) or "property" in obj.labels:
                        continue
                    if _overrides_foreign(target, member_name):
                        continue
                    path = f"{target.path}.{member_name}"
                    found.setdefault(path, Documented(path, obj, obj.docstring))
                init = _constructor(target, exported)
                if isinstance(init, griffe.Function) and not _generated(target):
                    found.setdefault(target.path, Documented(
                        target.path, init, target.docstring or init.docstring))
    return sorted(found.values(), key=lambda d: d.path)


def _generated(cls: griffe.Class) -> bool:
    """A constructor written by a library (dataclass, pydantic, an exception's)."""
    if "dataclass" in cls.labels or "pydantic-model" in cls.labels:
        return True
    return any(str(base).split(".")[-1] in {"BaseModel", "NamedTuple", "Enum", "IntEnum",
                                            "Protocol", "TypedDict"} for base in cls.bases)


def _parameters(function: griffe.Function) -> list[str]:
    return [p.name for p in function.parameters
            if p.name not in ("self", "cls") and not p.name.startswith("_")]


def _returns_something(function: griffe.Function) -> bool:
    returns = str(function.returns) if function.returns is not None else "None"
    return function.name != "__init__" and returns not in ("None", "NoReturn")


def problems(documented: Documented) -> list[str]:
    """What the docstring of one public callable lacks."""
    if documented.docstring is None or not documented.docstring.value.strip():
        return ["no docstring"]
    warnings: list[str] = []
    handler = _Collect(warnings)
    logger = logging.getLogger("griffe")
    logger.addHandler(handler)
    try:
        sections = documented.docstring.parse(griffe.Parser.google, **_SITE_OPTIONS)
    finally:
        logger.removeHandler(handler)
    kinds = {section.kind.value: section for section in sections}
    out = [f"griffe: {warning}" for warning in warnings]
    parameters = _parameters(documented.function)
    if parameters:
        section = kinds.get("parameters")
        named = [p.name.lstrip("*") for p in section.value] if section is not None else []
        if named != parameters:
            out.append(f"Args names {named}, the signature {parameters}")
        if "raises" not in kinds and "Raises nothing" not in documented.docstring.value:
            out.append("no Raises section")
    if _returns_something(documented.function) and not _RESULT_SECTIONS & set(kinds):
        out.append("no Returns section")
    for kind in _RESULT_SECTIONS & set(kinds):
        named = [item.name for item in kinds[kind].value if item.name]
        if named:  # "Word: ..." on its first line reads as a name, and renders as one
            out.append(f"{kind} read as named values {named}: reword its first line")
    return out


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


CALLABLES = public_callables()


def test_the_check_sees_the_client_api() -> None:
    paths = {d.path for d in CALLABLES}
    assert {"sbmgmt.client.EntityClient.get_session_state", "sbmgmt.client.ManagementClient",
            "sbmgmt.aio.AsyncEntityClient.peek_messages",
            "sbmgmt._client.session_lock.SessionLock.get_state",
            "sbmgmt.spark.register"} <= paths
    assert len(paths) > 80


@pytest.mark.parametrize("documented", CALLABLES, ids=lambda d: d.path)
def test_a_public_callable_documents_its_args_returns_and_raises(
        documented: Documented) -> None:
    assert problems(documented) == []


def test_the_check_fails_a_one_line_docstring() -> None:
    function = griffe.Function("f", parameters=griffe.Parameters(
        griffe.Parameter("x", annotation="int")), returns="int")
    one_line = griffe.Docstring("Do it.", parent=function)
    assert problems(Documented("f", function, one_line)) == [
        "Args names [], the signature ['x']", "no Raises section", "no Returns section"]
    full = griffe.Docstring("Do it.\n\nArgs:\n    x: The input.\n\nReturns:\n    The output."
                            "\n\nRaises:\n    ValueError: x is negative.", parent=function)
    assert problems(Documented("f", function, full)) == []


def test_session_state_says_the_session_must_be_locked_first() -> None:
    by_path = {d.path: d for d in CALLABLES}
    for path in ("sbmgmt.client.EntityClient.get_session_state",
                 "sbmgmt.aio.AsyncEntityClient.get_session_state"):
        docstring = by_path[path].docstring
        assert docstring is not None
        assert "q.session(" in docstring.value and "410" in docstring.value
        assert "SessionLockLostError" in docstring.value


def model_classes() -> list[griffe.Class]:
    """The public data classes of the covered modules (pydantic models, dataclasses)."""
    found: dict[str, griffe.Class] = {}
    for module in _load().values():
        for name in module.exports or []:
            member = module.members.get(str(name))
            target = _target(member) if member is not None else None
            if isinstance(target, griffe.Class) and _is_model(target):
                found.setdefault(target.path, target)
    return sorted(found.values(), key=lambda c: c.path)


def undocumented_fields(cls: griffe.Class) -> list[str]:
    """The public fields of a data class that neither its docstring's ``Attributes``
    section (its own or a project base's) nor a docstring of their own describes."""
    described: set[str] = set()
    fields: list[str] = []
    for klass in [cls, *cls.mro()]:
        if klass.path.split(".")[0] not in _OURS:
            continue
        if klass.docstring is not None:
            for section in klass.docstring.parse(griffe.Parser.google, **_SITE_OPTIONS):
                if section.kind.value == "attributes":
                    described.update(item.name for item in section.value)
        for name, member in klass.members.items():
            if (isinstance(member, griffe.Attribute) and not name.startswith("_")
                    and name != "model_config" and member.docstring is None
                    and not str(member.annotation).startswith("ClassVar")
                    and name not in fields):
                fields.append(name)
    return [name for name in fields if name not in described]


def _is_model(cls: griffe.Class) -> bool:
    """A pydantic model or a dataclass (its fields are its constructor's arguments)."""
    return any("dataclass" in klass.labels
               or any(str(base).split(".")[-1] == "BaseModel" for base in klass.bases)
               for klass in [cls, *cls.mro()] if klass.path.split(".")[0] in _OURS)


MODELS = model_classes()


def test_the_model_check_sees_the_messages() -> None:
    assert {"sbmgmt.message.Message", "sbmgmt.message.ReceivedMessage",
            "sbmgmt.rules._models.CorrelationFilter"} <= {c.path for c in MODELS}


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.path)
def test_a_public_model_documents_its_fields(cls: griffe.Class) -> None:
    assert undocumented_fields(cls) == []
