"""The administration API as a WSGI application, mounted on the fake's HTTP port.

A request goes: the ``api-version`` query parameter (every SDK sends one; without it the path
is not the administration API's and the port answers 404), the route (:mod:`._routes`), the
SAS token of its ``Authorization`` header (401 otherwise, as the service), for a PUT the
description in its ATOM entry and the tokens of the forwarding targets, then the operation
(:mod:`._operations`). Every refusal is the service's ``<Error>`` body with its status.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request, Response

from sbmgmt.auth import SasTokenError

from .._auth import verify_request_token
from .._errors import ArgumentError, FakeServiceError, InternalError, Unauthorized
from ._atom import ERROR_CONTENT_TYPE, error
from ._context import AdminNamespace
from ._descriptions import description_fields, forwarding_target
from ._operations import Call, Operations, Reply, description_of
from ._routes import route
from ._xml import parse_body

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

__all__ = ["AdminApi", "MAX_BODY_BYTES"]

_log = logging.getLogger("fakes.admin")

#: The largest request body read (a description is a few kilobytes).
MAX_BODY_BYTES = 1024 * 1024
#: The headers the SDKs send a token for a forwarding target in (``ForwardTo``, and
#: ``ForwardDeadLetteredMessagesTo``).
_SUPPLEMENTARY = (("ForwardTo", "ServiceBusSupplementaryAuthorization"),
                  ("ForwardDeadLetteredMessagesTo", "ServiceBusDlqSupplementaryAuthorization"))


class _TooLarge(FakeServiceError):
    status_code = 413
    condition = "amqp:resource-limit-exceeded"


class AdminApi:
    """The WSGI application of the administration API for one namespace."""

    def __init__(self, namespace: AdminNamespace) -> None:
        self._ns = namespace
        self._operations = Operations(namespace)

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        request.max_content_length = MAX_BODY_BYTES
        if "api-version" not in request.args:
            return Response("Not Found", status=404)(environ, start_response)
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
        raw_path = str(request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
                       or request.path)
        target = route(raw_path)
        hostname = urlsplit(f"//{request.host}").hostname or ""
        self._authorize(request.headers.get("Authorization"), hostname, request.path)
        description = None
        if request.method == "PUT":
            description = description_of(parse_body(_body(request)))
            self._authorize_forwarding(request, description, hostname)
        call = Call(method=request.method, target=target, base_url=request.host_url,
                    host=request.host, api_version=request.args["api-version"],
                    skip=_count(request, "$skip", 0), top=_count(request, "$top", 100),
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


def _body(request: Request) -> bytes:
    try:
        return request.get_data(cache=False)
    except RequestEntityTooLarge:
        raise _TooLarge(f"The request body is larger than {MAX_BODY_BYTES} bytes.") from None


def _count(request: Request, name: str, default: int) -> int:
    text = request.args.get(name)
    if text is None:
        return default
    if not text.isdigit():
        raise ArgumentError(f"{name} must be a whole number, not {text!r}.")
    return int(text)
