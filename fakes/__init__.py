"""A fake Azure Service Bus namespace: a real AMQP 1.0 server for tests and demos.

The official ``azure-servicebus`` SDK and sbmgmt run against it unmodified. See
docs/fake.md for what it emulates and what it does not.
"""

from __future__ import annotations

import logging

from ._clock import FakeClock
from ._errors import ConfigError
from ._faults import FaultHandle, FaultKind, Faults
from ._limits import Limits
from ._namespace import FakeNamespace
from ._tiers import BASIC, PREMIUM, STANDARD, Tier

__all__ = [
    "BASIC", "PREMIUM", "STANDARD", "ConfigError", "FakeClock", "FakeNamespace", "FaultHandle",
    "FaultKind", "Faults", "Limits", "Tier",
]

# Logs go where the application sends them, never to stderr through logging's last resort.
logging.getLogger(__name__).addHandler(logging.NullHandler())
