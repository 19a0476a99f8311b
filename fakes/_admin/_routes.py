"""Which resource an administration request names, from its raw URL path.

The paths the SDKs use (azure-servicebus's generated operations, @azure/service-bus's
``getUrl``): ``/$namespaceinfo``, ``/$Resources/queues`` and ``/$Resources/topics`` for the
listings, ``/<queue or topic>``, ``/<topic>/Subscriptions[/<subscription>]`` and
``.../Rules[/<rule>]``. Queue and topic names may contain ``/``: the Python SDK sends them
percent-encoded (``a%2Fb``), the JavaScript SDK as they are, so the path is split on its raw
slashes first and each segment decoded after; ``Subscriptions`` and ``Rules`` match in any
case (the Python SDK writes them in lower case).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from urllib.parse import unquote

from .._errors import EntityNotFound

__all__ = ["Kind", "Target", "route"]


class Kind(enum.Enum):
    """What a path names."""

    NAMESPACE = "namespace"
    QUEUES = "queues"
    TOPICS = "topics"
    ENTITY = "entity"
    SUBSCRIPTIONS = "subscriptions"
    SUBSCRIPTION = "subscription"
    RULES = "rules"
    RULE = "rule"


@dataclass(frozen=True)
class Target:
    """A resource: ``entity`` is the queue or topic (the topic of a subscription or rule)."""

    kind: Kind
    entity: str = ""
    subscription: str = ""
    rule: str = ""

    @property
    def path(self) -> str:
        """The resource's path as the service writes it in an entry's URL."""
        if self.kind in (Kind.NAMESPACE, Kind.QUEUES, Kind.TOPICS):
            return {Kind.NAMESPACE: "$namespaceinfo", Kind.QUEUES: "$Resources/queues",
                    Kind.TOPICS: "$Resources/topics"}[self.kind]
        path = self.entity
        if self.kind is not Kind.ENTITY:
            path += "/Subscriptions"
        if self.kind in (Kind.SUBSCRIPTION, Kind.RULES, Kind.RULE):
            path += f"/{self.subscription}"
        if self.kind in (Kind.RULES, Kind.RULE):
            path += "/Rules"
        if self.kind is Kind.RULE:
            path += f"/{self.rule}"
        return path


def route(raw_path: str) -> Target:
    """The resource of a raw (still percent-encoded) URL path; 404 for an empty one."""
    raw = [segment for segment in raw_path.split("?", 1)[0].split("/") if segment]
    lower = [unquote(segment).lower() for segment in raw]
    if not raw:
        raise EntityNotFound("No entity is named by the path '/'.")
    if lower == ["$namespaceinfo"]:
        return Target(Kind.NAMESPACE)
    if len(lower) == 2 and lower[0] == "$resources" and lower[1] in ("queues", "topics"):
        return Target(Kind.QUEUES if lower[1] == "queues" else Kind.TOPICS)
    marks = [index for index, segment in enumerate(raw) if segment.lower() == "subscriptions"]
    if marks and marks[-1] > 0:
        at = marks[-1]
        topic = unquote("/".join(raw[:at]))
        tail = [unquote(segment) for segment in raw[at + 1:]]
        if not tail:
            return Target(Kind.SUBSCRIPTIONS, topic)
        if len(tail) == 1:
            return Target(Kind.SUBSCRIPTION, topic, tail[0])
        if tail[1].lower() == "rules" and len(tail) in (2, 3):
            rule = tail[2] if len(tail) == 3 else ""
            return Target(Kind.RULE if rule else Kind.RULES, topic, tail[0], rule)
    return Target(Kind.ENTITY, unquote("/".join(raw)))
