"""The fake's parts that :mod:`sbmgmt.testing` assembles into its in-memory mock: the one
module of ``fakes`` besides the package itself that ``sbmgmt`` may import (the contract
``The seam: sbmgmt and fakes import only each other's public modules`` in
``pyproject.toml``).

What is here is what the mock needs, and nothing else: the server, its store and entities,
the management node's request and reply, faults, limits and the clock.
"""

from __future__ import annotations

from ._addresses import entity_key
from ._clock import FakeClock
from ._entity import Entity
from ._entity_state import EntitySettings
from ._errors import FakeServiceError
from ._faults import Faults
from ._limits import Limits
from ._management import Reply, decode_request
from ._namespace import STANDARD_MAX_MESSAGE_SIZE
from ._server import Server
from ._store import Store

__all__ = [
    "STANDARD_MAX_MESSAGE_SIZE", "Entity", "EntitySettings", "FakeClock", "FakeServiceError",
    "Faults", "Limits", "Reply", "Server", "Store", "decode_request", "entity_key",
]
