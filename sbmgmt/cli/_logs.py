"""Library logging during one command: silent by default, scrubbed on stderr with --debug."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ._exit import Scrubber

__all__ = ["capture_logs"]

_LOGGERS = ("sbmgmt", "fakes")


class _ScrubbingFormatter(logging.Formatter):
    def __init__(self, scrub: Scrubber) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self._scrub = scrub

    def format(self, record: logging.LogRecord) -> str:
        return self._scrub(super().format(record))


def capture_logs(debug: bool, scrub: Scrubber) -> Callable[[], None]:
    """Route the library's logs for this command; returns the function that undoes it.

    Without ``debug`` the logs are dropped (stderr keeps only the one-line error);
    with it, DEBUG and up go to stderr with secrets scrubbed.
    """
    handler: logging.Handler
    if debug:
        handler = logging.StreamHandler()
        handler.setFormatter(_ScrubbingFormatter(scrub))
    else:
        handler = logging.NullHandler()
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
        if debug:
            logger.setLevel(logging.DEBUG)

    def restore() -> None:
        for logger, (level, propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

    return restore
