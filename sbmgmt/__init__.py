"""sbmgmt: Azure Service Bus management operations over AMQP 1.0.

The public API: [ManagementClient][sbmgmt.ManagementClient] and its asyncio twin
[AsyncManagementClient][sbmgmt.aio.AsyncManagementClient], whose ``entity(path)`` gives the
operations ([EntityClient][sbmgmt.EntityClient]); the message models
([Message][sbmgmt.Message], [ReceivedMessage][sbmgmt.ReceivedMessage]) and the rule models;
session locks ([SessionLock][sbmgmt.SessionLock]), transactions
([Transaction][sbmgmt.Transaction]) and retries ([RetryPolicy][sbmgmt.RetryPolicy]); the lock
renewers ([LockRenewer][sbmgmt.renewer.LockRenewer]); and the error tree in
[sbmgmt.errors][]. Every operation is also reachable low-level through [sbmgmt.ops][] and
``EntityClient.send_request``.

```python
from sbmgmt import ManagementClient

with ManagementClient.from_connection_string(conn_str) as client:
    for message in client.entity("myqueue").peek_messages(max_count=10):
        print(message.sequence_number, message.body)
```

The guides are in docs/ (the README lists them).
"""

import logging

from . import errors, ops
from ._client.message_link import (
    AsyncMessageReceiver,
    AsyncMessageSender,
    MessageReceiver,
    MessageSender,
)
from ._client.session_lock import AsyncSessionLock, SessionLock
from ._protocol.retry import RetryPolicy
from ._version import __version__ as __version__
from .aio import AsyncEntityClient, AsyncManagementClient, AsyncTransaction
from .client import DispositionStatus, EntityClient, ManagementClient, Transaction
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
    "AsyncMessageReceiver",
    "AsyncMessageSender",
    "AsyncSessionLock",
    "AsyncTransaction",
    "CorrelationFilter",
    "DispositionStatus",
    "EntityClient",
    "FalseFilter",
    "LockRenewer",
    "LossReason",
    "ManagementClient",
    "Message",
    "MessageReceiver",
    "MessageSender",
    "MessageState",
    "ReceivedMessage",
    "RetryPolicy",
    "RuleDescription",
    "RuleFilter",
    "SessionLock",
    "SqlFilter",
    "SqlRuleAction",
    "Transaction",
    "TrueFilter",
    "errors",
    "ops",
]
# The library's logs go where the application sends them, and nowhere without a handler:
# never to stderr through logging's last resort (an I/O thread's warning would print
# there before the error it explains reaches the caller).
logging.getLogger(__name__).addHandler(logging.NullHandler())
