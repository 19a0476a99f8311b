"""sbmgmt: Azure Service Bus management operations over AMQP 1.0.

The public API (DESIGN §3): :class:`ManagementClient` / :class:`AsyncManagementClient`,
their entity clients, the message and rule models, and the error tree in
:mod:`sbmgmt.errors`. Every operation is also reachable low-level through
:mod:`sbmgmt.ops` and ``EntityClient.send_request``.
"""

from . import errors, ops
from ._retry import RetryPolicy
from ._session import AsyncSessionLock, SessionLock
from .aio import AsyncEntityClient, AsyncManagementClient
from .client import DispositionStatus, EntityClient, ManagementClient
from .message import Message, MessageState, ReceivedMessage
from .renewer import AsyncLockRenewer, LockRenewer, LossReason
from .rules import (
    CorrelationFilter,
    FalseFilter,
    RuleDescription,
    RuleFilter,
    SqlFilter,
    SqlRuleAction,
    TrueFilter,
)

__all__ = [
    "AsyncEntityClient",
    "AsyncLockRenewer",
    "AsyncManagementClient",
    "AsyncSessionLock",
    "CorrelationFilter",
    "DispositionStatus",
    "EntityClient",
    "FalseFilter",
    "LockRenewer",
    "LossReason",
    "ManagementClient",
    "Message",
    "MessageState",
    "ReceivedMessage",
    "RetryPolicy",
    "RuleDescription",
    "RuleFilter",
    "SessionLock",
    "SqlFilter",
    "SqlRuleAction",
    "TrueFilter",
    "errors",
    "ops",
]
__version__ = "0.1.0"
