"""Who may talk to the explorer: the token, the Host header, cross-site requests.

Theory of operation. The explorer listens on loopback, but any local user or any web page
open in the same browser can reach a loopback port, so three checks stand in front of
every route (an ASGI middleware, before Starlette sees the request):

1. **The Host header** must name the address the explorer serves (or ``localhost``,
   ``127.0.0.1``, ``[::1]`` on its port): a page on another site that re-resolves its own
   name to 127.0.0.1 (DNS rebinding) sends its own name, and is refused (400).
2. **The token**, random per run (as Jupyter's), is in the address ``sbmgmt explore``
   prints: ``/?token=...``. A request carrying it gets the token as a cookie (HttpOnly,
   SameSite=Strict, per port) and is redirected to the same address without it, so that
   the token leaves the address bar and the history; from then on the cookie is checked.
   A request with neither is refused (403) before any route runs.
3. **A request that changes something** (any method but GET and HEAD) is refused (403)
   when the browser says it comes from another site: ``Sec-Fetch-Site`` other than
   ``same-origin`` / ``none``, or an ``Origin`` that is not the explorer's own. SameSite
   already keeps the cookie off such requests; this holds even for a browser that sends
   cookies anyway.

Every answer also carries headers that keep the page to itself: a Content-Security-Policy
allowing only the explorer's own scripts and styles (no inline script, so even a value that
escaped escaping could not run), no framing, no sniffing, no referrer, no caching.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Guard", "SECURITY_HEADERS"]

_SAFE_METHODS = frozenset({"GET", "HEAD"})
_SAME_SITE = frozenset({"same-origin", "none"})

#: The headers every answer carries (Content-Security-Policy: the explorer's own files only).
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
     b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
)


class Guard:
    """The ASGI middleware of the three checks (see the module's docstring).

    Args:
        app: The explorer's routes.
        token: The run's random token.
        hosts: The ``host:port`` values the Host header may carry.
        port: The port served (it names the cookie: browsers share cookies across ports).
    """

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str], port: int) -> None:
        self._app = app
        self._token = token
        self._hosts = frozenset(host.lower() for host in hosts)
        self._cookie = f"sbmgmt_explorer_{port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1")
                   for key, value in scope["headers"]}
        host = headers.get("host", "").lower()
        if host not in self._hosts:
            await _refuse(send, 400, "this explorer answers only at its own address")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                          keep_blank_values=True)
        offered = next((value for key, value in query if key == "token"), None)
        if offered is not None and self._is_token(offered):
            await self._enter(scope, send, query)
            return
        if not self._is_token(_cookie(headers.get("cookie", ""), self._cookie)):
            await _refuse(send, 403, "this explorer needs its token: open the address "
                                     "`sbmgmt explore` printed")
            return
        if scope["method"] not in _SAFE_METHODS and _cross_site(headers, host):
            await _refuse(send, 403, "a request from another site may not change anything")
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self._app(scope, receive, secured)

    def _is_token(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(),
                                                           self._token.encode())

    async def _enter(self, scope: Scope, send: Send, query: list[tuple[str, str]]) -> None:
        """The token in the address: set the cookie, go to the same address without it."""
        rest = urlencode([(key, value) for key, value in query if key != "token"])
        location = scope["path"] + (f"?{rest}" if rest else "")
        cookie = (f"{self._cookie}={self._token}; Path=/; HttpOnly; SameSite=Strict")
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", location.encode("latin-1")),
                                (b"set-cookie", cookie.encode("latin-1")),
                                (b"content-length", b"0"), *SECURITY_HEADERS]})
        await send({"type": "http.response.body", "body": b""})


def _cookie(header: str, name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:  # a malformed Cookie header is no token
        return None
    morsel = jar.get(name)
    return None if morsel is None else morsel.value


def _cross_site(headers: dict[str, str], host: str) -> bool:
    """What the browser says of where the request comes from: another site?"""
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in _SAME_SITE:
        return True
    origin = headers.get("origin")
    return origin is not None and origin.lower() != f"http://{host}"


async def _refuse(send: Send, status: int, text: str) -> None:
    body = f"{text}\n".encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
