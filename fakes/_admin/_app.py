"""The administration API as a WSGI application, mounted on the fake's HTTP port.

A request goes: the ``api-version`` query parameter (every SDK sends one; without it the path
is not the administration API's and the port answers 404), the route (:mod:`._routes`), the
SAS token of its ``Authorization`` header (401 otherwise, as the service), for a PUT the
description in its ATOM entry and the tokens of the forwarding targets, then the operation
(:mod:`._operations`). Every refusal is the service's ``<Error>`` body with its status.

The token check runs twice: first as the port's screen (:meth:`AdminApi.screen`, on the
request's head, so that a refused request's body is never read), then again in the
application, which so stands on its own. Both read the same three things of the request:
its raw target, its ``Host`` and its ``Authorization``.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

from werkzeug.wrappers import Request, Response

from sbmgmt.auth import SasTokenError, canonical_host

from .._auth import verify_request_token
from .._errors import ArgumentError, FakeServiceError, InternalError, Unauthorized
from .._request_head import Refusal, RequestHead
from ._atom import ERROR_CONTENT_TYPE, error
from ._context import AdminNamespace
from ._descriptions import description_fields, forwarding_target
from ._operations import Call, Operations, Reply, description_of
from ._routes import route
from ._xml import parse_body

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

__all__ = ["AdminApi"]

_log = logging.getLogger("fakes.admin")

#: The headers the SDKs send a token for a forwarding target in (``ForwardTo``, and
#: ``ForwardDeadLetteredMessagesTo``).
_SUPPLEMENTARY = (("ForwardTo", "ServiceBusSupplementaryAuthorization"),
                  ("ForwardDeadLetteredMessagesTo", "ServiceBusDlqSupplementaryAuthorization"))
#: The most digits a ``$skip`` or ``$top`` may have (the service's are 32-bit integers).
_COUNT_DIGITS = 9


class AdminApi:
    """The WSGI application of the administration API for one namespace."""

    def __init__(self, namespace: AdminNamespace) -> None:
        self._ns = namespace
        self._operations = Operations(namespace)

    def screen(self, head: RequestHead) -> Refusal | None:
        """The token check of a request from its head, before its body is read.

        Args:
            head: the request's method, target and headers.

        Returns:
            A 401 :class:`~fakes._http.Refusal` for an administration request without a
            valid token, else None (the request goes on to :meth:`__call__`).
        """
        if "api-version" not in _query(head.uri):
            return None
        try:
            self._authorize(head.header("Authorization"), _hostname(head.header("Host")),
                            _path(head.uri))
        except FakeServiceError as exc:
            return Refusal(exc.status_code, exc.description)
        return None

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        if "api-version" not in request.args:
            reply = Reply(404, error(404, "Not Found"), ERROR_CONTENT_TYPE)
        else:
            try:
                reply = self._answer(request)
            except FakeServiceError as exc:
                reply = Reply(exc.status_code, error(exc.status_code, exc.description),
                              ERROR_CONTENT_TYPE)
            except Exception:
                _log.exception("the administration request %s %s failed", request.method,
                               request.path)
                failure = InternalError("The fake namespace failed on this request.")
                reply = Reply(500, error(500, failure.description), ERROR_CONTENT_TYPE)
        response = Response(reply.body, status=reply.status,
                            content_type=reply.content_type if reply.body else None)
        return response(environ, start_response)

    def _answer(self, request: Request) -> Reply:
        raw_uri = _raw_uri(request)
        target = route(_raw_path(raw_uri))
        hostname = _hostname(request.headers.get("Host"))
        self._authorize(request.headers.get("Authorization"), hostname, _path(raw_uri))
        description = None
        if request.method == "PUT":
            description = description_of(parse_body(request.get_data(cache=False)))
            self._authorize_forwarding(request, description, hostname)
        call = Call(method=request.method, target=target, base_url=request.host_url,
                    host=request.host, api_version=request.args["api-version"],
                    skip=_count(request, "$skip", 0, 0), top=_count(request, "$top", 100, 1),
                    update="If-Match" in request.headers, description=description)
        return self._operations.handle(call)

    def _authorize(self, header: str | None, hostname: str, path: str) -> None:
        """A valid SAS token for the namespace or for ``path`` (401 otherwise)."""
        if self._ns.accept_any_token:
            return
        if not header:
            raise Unauthorized("MissingToken: The authorization header was not found.")
        try:
            verify_request_token(header, self._ns.keys, hostname, path, self._ns.now())
        except SasTokenError as exc:
            raise Unauthorized(f"InvalidSignature: {exc}.") from None

    def _authorize_forwarding(self, request: Request, description: ET.Element,
                              hostname: str) -> None:
        """A forwarding target needs a token of its own (the supplementary header the SDKs
        send), or the request's token must cover it."""
        fields = description_fields(description)
        for field, header in _SUPPLEMENTARY:
            target = forwarding_target(fields, field)
            if target is not None:
                token = request.headers.get(header) or request.headers.get("Authorization")
                self._authorize(token, hostname, target)


def _raw_uri(request: Request) -> str:
    """The request target as sent (waitress's ``REQUEST_URI``; the path when absent)."""
    return str(request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI")
               or request.path)


def _raw_path(uri: str) -> str:
    """The still percent-encoded path of a request target (origin or absolute form)."""
    path = uri.split("?", 1)[0].split("#", 1)[0]
    if "://" in path:  # absolute form: http://host:port/path
        path = "/" + path.split("://", 1)[1].partition("/")[2]
    return path


def _path(uri: str) -> str:
    """The decoded path a token must cover."""
    return unquote(_raw_path(uri))


def _query(uri: str) -> dict[str, list[str]]:
    return parse_qs(uri.partition("?")[2], keep_blank_values=True)


def _hostname(host: str | None) -> str:
    """The host of a ``Host`` header (``name:port``, ``[v6]:port``) as tokens name it;
    "" when there is none or it is malformed (no token then matches)."""
    if not host:
        return ""
    try:
        return canonical_host(urlsplit(f"//{host.strip()}").hostname or "")
    except ValueError:
        return ""


def _count(request: Request, name: str, default: int, least: int) -> int:
    """``$skip`` / ``$top``: ASCII digits only (``int()`` takes other scripts' digits and
    any length), at most a 32-bit integer, at least ``least``; else 400."""
    text = request.args.get(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit() and len(text) <= _COUNT_DIGITS):
        raise ArgumentError(f"{name} must be a whole number of at most {_COUNT_DIGITS} "
                            f"digits, not {text[:40]!r}.")
    value = int(text)
    if value < least:
        raise ArgumentError(f"{name} must be at least {least}, not {value}.")
    return value
