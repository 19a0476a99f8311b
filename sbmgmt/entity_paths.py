"""An entity's sub-queue paths, in one place for every layer (the actions, the CLI, the
explorer, a script): the dead-letter queue's suffix and the path built with it.

A queue's or a subscription's dead-letter queue is the entity at its path followed by
``/$DeadLetterQueue``: the .NET SDK's ``EntityNameHelper.FormatDeadLetterPath`` ("Formats
the dead letter path for either a queue, or a subscription") and the Python SDK's
``DEAD_LETTER_QUEUE_SUFFIX`` (``azure/servicebus/_common/constants.py``) build it so. The
service's entity names are not case-sensitive, so a path is recognized in any case (as
``sbmgmt.actions.targets`` always has) and written as the SDKs write it.

Imports nothing of sbmgmt: the lowest public module, so every layer may use it.
"""

from __future__ import annotations

__all__ = ["DEAD_LETTER_SUFFIX", "dead_letter_path", "is_dead_letter_path"]

DEAD_LETTER_SUFFIX = "/$DeadLetterQueue"
"""The dead-letter sub-queue's path suffix."""


def is_dead_letter_path(path: str) -> bool:
    """Whether ``path`` is a dead-letter queue's (its suffix in any case).

    Args:
        path: An entity path (``q``, ``t/Subscriptions/s``, ``q/$DeadLetterQueue``).

    Returns:
        True for a dead-letter queue's path.

    Raises nothing.
    """
    return path.rstrip("/").lower().endswith(DEAD_LETTER_SUFFIX.lower())


def dead_letter_path(path: str) -> str:
    """The path of the dead-letter queue of the queue or subscription at ``path``.

    Args:
        path: A queue's or a subscription's path; a dead-letter queue's path is returned
            as it is.

    Returns:
        ``path`` with ``/$DeadLetterQueue`` (a trailing slash dropped first).

    Raises nothing.
    """
    if is_dead_letter_path(path):
        return path
    return path.rstrip("/") + DEAD_LETTER_SUFFIX
