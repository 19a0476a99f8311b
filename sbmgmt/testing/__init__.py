"""Test helpers for code that uses sbmgmt: a mock of the management node.

:class:`MockManagementNode` answers ``<entity>/$management`` requests with the replies
a test registers (a response, an error, a raw status, a callback) and records every
request as its typed ``Request`` model. The real client runs against it unchanged
(validation, encoding, dispatcher, error mapping, retries, timeouts), either in
memory with only the socket replaced (``with MockManagementNode() as mock:``, or the
``sbmgmt_mock`` pytest fixture, with ``pip install 'sbmgmt[testing]'``) or over AMQP
([serve][sbmgmt.testing.MockManagementNode.serve], for code that builds its own client or
uses an official SDK). See docs/testing.md.
"""

from __future__ import annotations

from ._calls import Call
from ._mock import MockManagementNode
from ._registry import Registration

__all__ = ["Call", "MockManagementNode", "Registration"]
