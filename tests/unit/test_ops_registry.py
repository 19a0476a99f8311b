"""The operation registry is the one list of operations; everything else is held to it.

A module of ``sbmgmt/ops/`` is an operation by being there: these tests fail when one
is not a proper operation module (its ``Request`` an ``OpRequest`` of its ``Response``,
its class variables those of the module), when the fake has no handler for it, or when
docs/protocol.md does not list it (and ``tests/unit/test_encode.py`` fails when the
round-trip tests have no request strategy for it).
"""

from __future__ import annotations

import pathlib
import re
from types import ModuleType

import pytest

import fakes._management as management
from sbmgmt import ops
from sbmgmt.ops._base import OpModel, OpRequest, TransactionalRequest
from sbmgmt.testing._mock import _operation_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULES = list(ops.OPERATIONS.values())
ids = [module.__name__.rsplit(".", 1)[1] for module in MODULES]


def test_every_public_module_of_the_package_is_registered() -> None:
    files = {path.stem for path in (ROOT / "sbmgmt" / "ops").glob("*.py")
             if not path.stem.startswith("_")}
    assert set(ops.NAMES) == files
    assert {module.__name__.rsplit(".", 1)[1] for module in MODULES} == files
    assert set(ops.MODULE_BY_REQUEST.values()) == set(MODULES)


def response_type(request: type[OpRequest[OpModel]], module: ModuleType) -> object:
    """The ``R`` of ``OpRequest[R]`` that ``request`` subclasses, resolved in ``module``."""
    for base in request.__mro__:
        metadata = getattr(base, "__pydantic_generic_metadata__", None)
        if metadata and metadata["origin"] in (OpRequest, TransactionalRequest):
            (argument,) = metadata["args"]
            return getattr(module, argument) if isinstance(argument, str) else argument
    raise AssertionError(f"{request} is not an OpRequest[...]")


@pytest.mark.parametrize("module", MODULES, ids=ids)
def test_each_module_is_an_operation(module: ModuleType) -> None:
    assert issubclass(module.Request, OpRequest)
    assert issubclass(module.Response, OpModel)
    assert module.Request.OPERATION == module.OPERATION
    assert module.Request.IDEMPOTENT is module.IDEMPOTENT
    assert isinstance(module.IDEMPOTENT, bool)
    assert response_type(module.Request, module) is module.Response
    for function in ("encode", "decode", "decode_request", "encode_response"):
        assert callable(getattr(module, function)), function
    assert ops.operation(module.OPERATION) is module


def test_the_fake_handles_every_operation_once() -> None:
    plain, encoding = set(management._HANDLERS), set(management._ENCODING_HANDLERS)
    assert not plain & encoding
    assert plain | encoding == set(ops.OPERATIONS)


def test_the_fake_stages_exactly_the_transactional_operations() -> None:
    transactional = {name for name, module in ops.OPERATIONS.items()
                     if issubclass(module.Request, TransactionalRequest)}
    assert set(management._TRANSACTIONAL_HANDLERS) == transactional


def test_the_mock_takes_every_operation_by_name_and_module() -> None:
    for module in MODULES:
        assert _operation_module(module.OPERATION) is module
        assert _operation_module(module) is module


def test_docs_protocol_table_lists_the_registry() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `([\w.:-]+)`[^|]* \| (yes|no) \|$", text, re.M)
    assert sorted(rows) == sorted(
        (module.__name__.rsplit(".", 1)[1], module.OPERATION,
         "yes" if module.IDEMPOTENT else "no")
        for module in MODULES
    )

