"""The keywords ``repair`` took before the actions' contract (issue 57), kept one release:
``progress(done, planned)`` for ``on_progress``, and a :class:`threading.Event` for
``cancel``. Each warns (:class:`DeprecationWarning`) and is turned into its new form."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable

from ..contract import CancelToken, OnProgress, Progress

__all__ = ["LegacyProgress", "contract_keywords"]

LegacyProgress = Callable[[int, int], None]
"""The old progress callback: (messages done, messages planned)."""


class _EventToken(CancelToken):
    """A :class:`CancelToken` over a caller's :class:`threading.Event`."""

    __slots__ = ()

    def __init__(self, event: threading.Event) -> None:
        self._event = event


def contract_keywords(on_progress: OnProgress | None,
                      cancel: CancelToken | threading.Event | None,
                      progress: LegacyProgress | None) -> tuple[OnProgress | None,
                                                                 CancelToken | None]:
    """``on_progress`` and ``cancel`` in the contract's types, the old forms warned of.

    Raises:
        TypeError: Both ``on_progress`` and ``progress`` are given.
    """
    if progress is not None:
        if on_progress is not None:
            raise TypeError("give on_progress or progress (deprecated), not both")
        warnings.warn("repair(progress=...) is deprecated: pass on_progress, called with a "
                      "sbmgmt.actions.contract.Progress", DeprecationWarning, stacklevel=3)
        old = progress

        def on_progress(record: Progress) -> None:
            old(record.done, record.total or 0)
    if isinstance(cancel, threading.Event):
        warnings.warn("repair(cancel=threading.Event()) is deprecated: pass a "
                      "sbmgmt.actions.contract.CancelToken", DeprecationWarning, stacklevel=3)
        cancel = _EventToken(cancel)
    return on_progress, cancel
