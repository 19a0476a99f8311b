"""What the store tells a data directory of each change (:mod:`fakes._data_dir`).

An :class:`~fakes._entity.Entity` holds a :class:`Journal` and tells it of every message
whose state changed (:meth:`Journal.message`: a message stored, locked, settled, deferred,
dead-lettered, cancelled, expired, deleted) and of every other change of what it keeps
(:meth:`Journal.changed`: sequence numbers reserved, a session's state). The default
journal, :data:`NO_JOURNAL`, keeps nothing: a namespace without a data directory pays one
empty method call a change.
"""

from __future__ import annotations

from ._entity_state import StoredMessage

__all__ = ["NO_JOURNAL", "Journal"]


class Journal:
    """Told of each change under the namespace lock; this one forgets it."""

    __slots__ = ()

    def message(self, owner: object, stored: StoredMessage) -> None:
        """``stored``, a message of ``owner`` (an entity), changed (or is new, or gone)."""

    def changed(self, owner: object) -> None:
        """Something ``owner`` keeps other than a message changed."""


#: The journal of an entity in a namespace without a data directory.
NO_JOURNAL = Journal()
