"""TLS: certificates are verified against the trust store and the host name is checked.

A TLS-terminating relay (test-only, 127.0.0.1, port 0) with a self-signed certificate for
``localhost`` sits in front of the fake namespace. The client trusts that certificate only
when ``SSL_CERT_FILE`` names it (the system trust store's override).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes import FakeNamespace
from sbmgmt._client.client_core import ClientCore
from sbmgmt._drivers.io_thread import Endpoint, IOThread
from sbmgmt.auth import SasKeyTokenProvider
from sbmgmt.client import EntityClient
from sbmgmt.errors import TransportError


class TlsRelay:
    """Accepts TLS on 127.0.0.1 and relays the plain bytes to a backend port."""

    def __init__(self, cert: Path, key: Path, backend_port: int) -> None:
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(cert, key)
        self._backend_port = backend_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accept = threading.Thread(target=self._accept_loop, name="tls-relay")
        self._accept.start()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                raw, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._spawn(self._serve, raw)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self._context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()  # the client refused our certificate
            return
        backend = socket.create_connection(("127.0.0.1", self._backend_port))
        self._sockets += [tls, backend]
        self._spawn(self._pipe, tls, backend)
        self._pipe(backend, tls)

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, target):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()
        for s in self._sockets:
            s.close()
        self._accept.join(5)
        for thread in self._threads:
            thread.join(5)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


@pytest.fixture
def relay(certificate: tuple[Path, Path]) -> Iterator[TlsRelay]:
    with FakeNamespace(accept_any_token=True) as fake:
        fake.add_queue("q")
        server = TlsRelay(*certificate, backend_port=fake.port)
        try:
            yield server
        finally:
            server.stop()


def _peek(host: str, port: int) -> object:
    tokens = SasKeyTokenProvider("RootManageSharedAccessKey", "SAS_KEY_VALUE")
    core = ClientCore(Endpoint(host, port, tls=True), tokens, timeout=5, window=8, retry=None,
                      driver=IOThread)
    try:
        return EntityClient(core, "q").peek_messages()
    finally:
        core.close()


def test_trusted_certificate_for_the_host_connects(
    relay: TlsRelay, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    assert _peek("localhost", relay.port) == []


def test_untrusted_certificate_is_refused(relay: TlsRelay, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-trust-store.pem"))
    with pytest.raises(TransportError, match="certificate verify failed"):
        _peek("localhost", relay.port)


def test_certificate_for_another_host_name_is_refused(
    relay: TlsRelay, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    with pytest.raises(TransportError, match="certificate verify failed"):
        _peek("127.0.0.1", relay.port)  # the certificate names localhost only
