"""Every node kind (fakes/_nodes/) holds the connection it serves the same way: its
``connection`` is the connection's record (fakes/_links.py), whose ``key`` a node passes
on where a key is wanted, never the key itself in some kinds and the record in others."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from fakes._links import ConnectionRecord
from fakes._nodes.cbs import CbsNode
from fakes._nodes.coordinator import CoordinatorNode
from fakes._nodes.entity import EntityNode
from fakes._nodes.management import ManagementRequests


@pytest.mark.parametrize("kind", [CbsNode, ManagementRequests, CoordinatorNode, EntityNode])
def test_each_node_kind_holds_its_connections_record(kind: type) -> None:
    assert "connection" in {field.name for field in dataclasses.fields(kind)}
    assert typing.get_type_hints(kind)["connection"] is ConnectionRecord
