"""What the HTTP port's screen sees of a request before its body, and its refusal.

The port (:mod:`fakes._http`) asks its screen about each request once the request's
headers are in; the administration API's token check is one (:meth:`AdminApi.screen
<fakes._admin.AdminApi.screen>`). A refusal is answered with the service's ``<Error>`` body
and the request's body is never read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Refusal", "RequestHead", "Screen"]


@dataclass(frozen=True)
class RequestHead:
    """A request as far as its headers: what a :data:`Screen` decides on."""

    method: str
    #: The request target as sent (path and query, still percent-encoded).
    uri: str
    #: By upper-case name with ``_`` for ``-`` (``AUTHORIZATION``, ``CONTENT_LENGTH``).
    headers: Mapping[str, str]

    def header(self, name: str) -> str | None:
        """The value of the header ``name`` (any case), if sent."""
        return self.headers.get(name.upper().replace("-", "_"))


@dataclass(frozen=True)
class Refusal:
    """An answer given before the body is read: its status and the ``<Error>`` detail."""

    status: int
    detail: str


#: Decides on a request from its head: a :class:`Refusal` to answer it at once, None to read
#: its body and run the application. Runs on the port's loop thread: it must be quick.
Screen = Callable[[RequestHead], "Refusal | None"]
