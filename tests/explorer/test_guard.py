"""Who may talk to the explorer: nothing answers without the token, the token becomes a
cookie and leaves the address, another Host is refused, a cross-site POST is refused, and
the pages carry a Content-Security-Policy; the connection's key never reaches a page."""

from __future__ import annotations

import urllib.request
from typing import Any
from urllib.error import HTTPError

import pytest

from .conftest import Served


def _status(url: str, *, method: str = "GET", headers: dict[str, str] | None = None,
            data: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except HTTPError as error:
        return error.code, error.read().decode()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _cookie(page: Any) -> str:
    (cookie,) = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    return f"{cookie['name']}={cookie['value']}"


def test_a_request_without_the_token_is_refused(page: Any, served: Served) -> None:
    for path in ("/", "/entities", "/messages?path=orders", "/static/htmx.min.js"):
        status, body = _status(served.base_url + path)
        assert status == 403, path
        assert "needs its token" in body
    assert _status(served.base_url + "/?token=wrong")[0] == 403
    assert _status(served.base_url + "/", headers={"Cookie": _cookie(page) + "x"})[0] == 403
    assert _status(served.base_url + "/", headers={"Cookie": _cookie(page)})[0] == 200


def test_the_token_becomes_a_cookie_and_leaves_the_address(
        browser: Any, served: Served) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(served.url)
    assert page.url == served.base_url + "/"
    assert page.locator("table.entities").count() == 1
    blank = browser.new_context().new_page()
    blank.goto(served.base_url + "/")
    assert "needs its token" in blank.content()
    context.close()
    blank.context.close()


def test_another_host_header_is_refused(page: Any, served: Served) -> None:
    port = served.base_url.rsplit(":", 1)[1]
    cookie = _cookie(page)
    for host in (f"evil.example:{port}", "127.0.0.1", f"localhost:{int(port) + 1}"):
        status, _ = _status(served.base_url + "/", headers={"Host": host, "Cookie": cookie})
        assert status == 400, host
    assert _status(served.base_url + "/", headers={"Host": f"localhost:{port}",
                                                     "Cookie": cookie})[0] == 200


@pytest.mark.parametrize("headers", [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
], ids=["sec-fetch-site-cross-site", "sec-fetch-site-same-site", "origin", "origin-null"])
def test_a_cross_site_post_is_refused(page: Any, served: Served,
                                      headers: dict[str, str]) -> None:
    cookie = _cookie(page)
    form = b"path=actions&body=from-elsewhere"
    before = served.client.entity("actions").peek_messages(1, 250)
    status, body = _status(served.base_url + "/send", method="POST", data=form,
                           headers={"Cookie": cookie, **headers,
                                    "Content-Type": "application/x-www-form-urlencoded"})
    assert (status, body.strip()) == (403, "a request from another site may not change "
                                           "anything")
    assert served.client.entity("actions").peek_messages(1, 250) == before


def test_a_same_origin_post_is_taken(page: Any, served: Served) -> None:
    origin = served.base_url
    status, body = _status(origin + "/send", method="POST",
                           data=b"path=actions&body=same-site",
                           headers={"Cookie": _cookie(page), "Origin": origin,
                                    "Sec-Fetch-Site": "same-origin",
                                    "Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200 and "sent message" in body


def test_a_cross_site_form_in_the_browser_is_refused(browser: Any, page: Any,
                                                     served: Served) -> None:
    """A page of another origin (another loopback port) that posts a form to the explorer,
    in the browser that holds the cookie: the explorer refuses it."""
    import http.server
    import threading

    target = f"{served.base_url}/send"
    html = (f"<form id=f method=post action='{target}'><input name=path value=actions>"
            f"<input name=body value=attack></form>").encode()

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args: Any) -> None:
            pass

    evil = http.server.HTTPServer(("127.0.0.1", 0), Evil)
    thread = threading.Thread(target=evil.serve_forever, daemon=True)
    thread.start()
    try:
        attacker = page.context.new_page()
        attacker.goto(f"http://localhost:{evil.server_address[1]}/")
        with attacker.expect_navigation():
            attacker.evaluate("document.getElementById('f').submit()")
        assert "needs its token" in attacker.content() or "another site" in attacker.content()
    finally:
        evil.shutdown()
        evil.server_close()
    bodies = [m.body_bytes() for m in served.client.entity("actions").peek_messages(1, 250)]
    assert b"attack" not in bodies


def test_pages_carry_a_content_security_policy_and_no_secret(page: Any,
                                                              served: Served) -> None:
    response = page.goto(served.base_url + "/entity?path=orders")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    for path in ("/", "/entity?path=orders", "/messages?path=orders"):
        page.goto(served.base_url + path)
        assert "SAS_KEY_VALUE" not in page.content()
        assert "SharedAccessKey" not in page.content()
