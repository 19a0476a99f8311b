"""The sync and async clients expose the same methods, with the same signatures and docs.

A method added to one client and forgotten on the other, a parameter that differs, or a
docstring that says something else on one side fails here. Only what is async by nature
differs: ``async def`` instead of ``def``, ``close`` awaited, and the async client's own
types (``AsyncTransaction`` for ``Transaction``, ``async with`` for ``with``).
"""

from __future__ import annotations

import inspect
import re

import pytest

from sbmgmt import AsyncEntityClient, AsyncManagementClient, EntityClient, ManagementClient

#: Methods whose async docstring says more than the sync one, and why; their first sentences
#: agree.
DOCS_THAT_DIFFER = {
    "submit": "on the async client it is not a coroutine and says how to await its future",
}
PAIRS = [(EntityClient, AsyncEntityClient), (ManagementClient, AsyncManagementClient)]


def _public(cls: type) -> dict[str, object]:
    return {name: member for name, member in inspect.getmembers(cls)
            if not name.startswith("_") and callable(member)}


def _sync_spelling(text: str) -> str:
    """``text`` with the async client's own names in their sync spelling
    (``AsyncTransaction`` -> ``Transaction``, ``async with`` -> ``with``, ``await x`` -> ``x``,
    a reference to ``sbmgmt.aio.X`` -> ``sbmgmt.X``)."""
    text = re.sub(r"\bAsync(?=[A-Z])", "", " ".join(text.split()))
    text = text.replace("sbmgmt.aio.", "sbmgmt.").replace("await ", "")
    return text.replace("async with", "with")


def _parameters(function: object) -> list[tuple[str, object, object, str]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default, _sync_spelling(str(p.annotation)))
            for p in signature.parameters.values()]


@pytest.mark.parametrize(("sync", "async_"), PAIRS, ids=lambda cls: cls.__name__)
def test_the_same_public_methods(sync: type, async_: type) -> None:
    assert sorted(_public(sync)) == sorted(_public(async_))


@pytest.mark.parametrize(("sync", "async_"), PAIRS, ids=lambda cls: cls.__name__)
def test_the_same_parameters_and_docstrings(sync: type, async_: type) -> None:
    sync_methods, async_methods = _public(sync), _public(async_)
    for name in sorted(set(sync_methods) & set(async_methods)):
        ours, theirs = sync_methods[name], async_methods[name]
        assert _parameters(ours) == _parameters(theirs), name
        ours_doc = " ".join((inspect.getdoc(ours) or "").split())
        theirs_doc = _sync_spelling(inspect.getdoc(theirs) or "")
        if name in DOCS_THAT_DIFFER:
            assert theirs_doc.startswith(ours_doc.split(". ")[0]), name
        else:
            assert ours_doc == theirs_doc, name
