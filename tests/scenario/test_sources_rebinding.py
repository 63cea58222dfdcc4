"""A synced source's name that resolves to a public address when it is checked and to a private
one when it is connected (DNS rebinding), or to both at once, reaches nothing on the internal
network: a website, a wiki API and a Git repository over HTTP, each at every redirect.

The resolver stand-in is the system's own `socket.getaddrinfo`, answering for the test's names
(first a public address, then a private one) and passing every other name through; the code
that fetches resolves and connects as in production. The "internet" is a NAT stand-in: a public
address is dialed at a local server on 127.0.0.1, and any other public address is refused
without dialing out. The internal network is a real server on 127.0.0.1 counting its requests:
nothing may reach it."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
import wsgiref.simple_server
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from storage.ingestion.sources.addresses import AddressGuard, GuardedTransport, not_public
from storage.ingestion.sources.base import SourceFailed, SourceSpec
from storage.ingestion.sources.fetch import Fetcher, FetchError
from storage.ingestion.sources.git import GitConnector
from storage.ingestion.sources.wikis import ApiTransport, api_client

PUBLIC = "93.184.216.34"  # a public address; never dialed for real (see `Internet`)
PUBLIC_V6 = "2606:4700::1111"


class Recorder(ThreadingHTTPServer):
    """A server on 127.0.0.1 answering every GET with `body` (or a redirect), recording each
    request's path and Host header."""

    daemon_threads = True

    def __init__(self, body: bytes = b"<html><body><p>internal secret</p></body></html>",
                 redirect: str = "", port: int = 0) -> None:
        self.body, self.redirect = body, redirect
        self.seen: list[tuple[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.seen.append((self.path, self.headers.get("Host", "")))
                if server.redirect:
                    self.send_response(302)
                    self.send_header("Location", server.redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                self.wfile.write(server.body)

        super().__init__(("127.0.0.1", port), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@contextmanager
def servers(*made: Recorder) -> Iterator[None]:
    try:
        yield
    finally:
        for s in made:
            s.close()


class Resolver:
    """`socket.getaddrinfo` for the test's names: each call the next of its answers (the last
    one repeated); every other name is resolved by the real resolver."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[list[str]]]) -> None:
        self.answers = {name: list(a) for name, a in answers.items()}
        self.calls: list[str] = []
        self.real = socket.getaddrinfo
        monkeypatch.setattr(socket, "getaddrinfo", self.getaddrinfo)

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in self.answers:
            return self.real(host, port, *args, **kwargs)
        self.calls.append(name)
        queue = self.answers[name]
        addresses = queue.pop(0) if len(queue) > 1 else queue[0]
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, int(port or 0), 0, 0) if ":" in a else (a, int(port or 0))) for a in addresses]


class Internet:
    """The guard's `reach`: a public address dialed at the local server standing for it; another
    public address is refused (never dialed out); a private one is dialed as it is."""

    def __init__(self, sites: dict[str, int]) -> None:
        self.sites = sites  # public address -> port of the local server standing for it
        self.dialed: list[tuple[str, int]] = []

    def __call__(self, address: str, port: int) -> tuple[str, int]:
        self.dialed.append((address, port))
        if not not_public(address):
            if address not in self.sites:
                raise ConnectionRefusedError(f"{address} is the internet; the test does not dial out")
            return "127.0.0.1", self.sites[address]
        return address, port


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1",
                                     "fe80::1%eth0", "fd00::7", "::ffff:127.0.0.1", "::ffff:10.0.0.7",
                                     "::7f00:1", "64:ff9b::a00:7", "2002:a00:7::1", "2001:db8::1"])
def test_private_addresses_in_every_form_are_refused(address: str) -> None:
    assert not_public(address), address


@pytest.mark.parametrize("address", [PUBLIC, PUBLIC_V6, "::ffff:93.184.216.34", "64:ff9b::5db8:d822"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert not_public(address) == ""


def test_a_name_that_rebinds_after_the_check_fetches_nothing_from_the_private_address(
        monkeypatch: pytest.MonkeyPatch) -> None:
    internal = Recorder()
    site = Recorder(b"<html><body><p>the public page</p></body></html>")
    with servers(internal, site):
        # the page is asked for at the internal server's port: a name that rebinds reaches it
        dns = Resolver(monkeypatch, {"docs.example.test": [[PUBLIC], ["127.0.0.1"]]})
        internet = Internet({PUBLIC: site.port})
        fetcher = Fetcher(guard=AddressGuard(reach=internet), requests_per_second=100)
        got = fetcher.get(f"http://docs.example.test:{internal.port}/guide/")
        assert got.status == 200 and b"the public page" in got.body
        assert internal.seen == []  # nothing was fetched from the private address
        assert dns.calls == ["docs.example.test"]  # resolved once, and connected to what was checked
        assert site.seen == [("/guide/", f"docs.example.test:{internal.port}")]  # the name stays the Host
        fetcher.close()
        # a new connection resolves again: now to the private address, refused before connecting
        fresh = Fetcher(guard=AddressGuard(reach=internet), requests_per_second=100)
        with pytest.raises(FetchError, match="resolves to 127.0.0.1, a private or loopback address"):
            fresh.get(f"http://docs.example.test:{internal.port}/guide/")
        fresh.close()
        assert internal.seen == [] and internet.dialed == [(PUBLIC, internal.port)]


@pytest.mark.parametrize("answer", [[PUBLIC, "127.0.0.1"], [PUBLIC_V6, "::ffff:127.0.0.1"], ["::1"]])
def test_a_redirect_to_a_name_with_any_private_address_is_refused_at_that_hop(
        monkeypatch: pytest.MonkeyPatch, answer: list[str]) -> None:
    internal = Recorder()
    site = Recorder(redirect="")
    with servers(internal, site):
        site.redirect = f"http://intranet.example.test:{internal.port}/admin"
        Resolver(monkeypatch, {"docs.example.test": [[PUBLIC]], "intranet.example.test": [answer]})
        fetcher = Fetcher(guard=AddressGuard(reach=Internet({PUBLIC: site.port})), requests_per_second=100)
        with pytest.raises(FetchError, match=r"intranet\.example\.test.*private or loopback"):
            fetcher.get(f"http://docs.example.test:{site.port}/")
        fetcher.close()
        assert len(site.seen) == 1 and internal.seen == []


def _tls_files(root: Path, name: str) -> tuple[Path, Path, Path]:
    """A test CA and a certificate for `name` it signed: (ca.pem, cert.pem, key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "groundbot test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = root / "ca.pem", root / "cert.pem", root / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def test_https_to_the_checked_address_keeps_the_name_for_sni_the_certificate_and_host(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ca, cert, key = _tls_files(tmp_path, "docs.example.test")
    site = Recorder(b"<html><body><p>over TLS</p></body></html>")
    sni: list[str | None] = []
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server_ctx.sni_callback = lambda _sock, name, _ctx: sni.append(name)  # type: ignore[assignment,misc]
    site.socket = server_ctx.wrap_socket(site.socket, server_side=True)
    with servers(site):
        Resolver(monkeypatch, {"docs.example.test": [[PUBLIC]]})
        guard = AddressGuard(reach=Internet({PUBLIC: site.port}))
        transport = GuardedTransport(guard, verify=ssl.create_default_context(cafile=str(ca)))
        fetcher = Fetcher(guard=guard, transport=transport, requests_per_second=100)
        got = fetcher.get("https://docs.example.test/guide/")  # verified against the name, not the address
        fetcher.close()
        assert got.status == 200 and b"over TLS" in got.body
        assert sni == ["docs.example.test"] and site.seen == [("/guide/", "docs.example.test")]


def test_a_wiki_api_whose_name_rebinds_is_not_called_at_the_private_address(monkeypatch: pytest.MonkeyPatch) -> None:
    internal = Recorder(b'{"results": []}')
    api = Recorder(b'{"results": [], "public": true}')
    with servers(internal, api):
        Resolver(monkeypatch, {"wiki.example.test": [[PUBLIC], ["10.0.0.7", PUBLIC]]})
        internet = Internet({PUBLIC: api.port, "10.0.0.7": internal.port})
        spec = SourceSpec("wiki", "confluence", f"http://wiki.example.test:{internal.port}", requests_per_second=100)
        with api_client(ApiTransport(spec, AddressGuard(reach=internet))) as client:
            assert client.get(f"http://wiki.example.test:{internal.port}/rest/api/space").json()["public"]
        with (api_client(ApiTransport(spec, AddressGuard(reach=internet))) as client,  # a new connection
              pytest.raises(FetchError, match="resolves to 10.0.0.7")):
            client.get(f"http://wiki.example.test:{internal.port}/rest/api/space")
        assert internal.seen == [] and len(api.seen) == 1


class _GitServer:
    """dulwich's smart HTTP server (its WSGI app) over one repository, on 127.0.0.1, recording the
    Host header of every request."""

    def __init__(self, repo: Path) -> None:
        from dulwich.repo import Repo
        from dulwich.server import DictBackend
        from dulwich.web import make_wsgi_chain

        git = make_wsgi_chain(DictBackend({"/handbook": Repo(str(repo))}))  # type: ignore[arg-type]
        self.hosts: list[str] = []

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            self.hosts.append(environ.get("HTTP_HOST", ""))
            return git(environ, start_response)

        class Quiet(wsgiref.simple_server.WSGIRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

        self.server = wsgiref.simple_server.make_server("127.0.0.1", 0, app, handler_class=Quiet)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_git_repository_over_http_is_fetched_from_the_checked_address_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dulwich import porcelain
    from dulwich.repo import Repo

    repo = tmp_path / "handbook"
    Repo.init(str(repo), mkdir=True)
    (repo / "lamps.md").write_text("# Lamps\n\nThe lamp is changed every ninety days.\n", encoding="utf-8")
    porcelain.add(str(repo), paths=[str(repo / "lamps.md")])
    porcelain.commit(str(repo), message=b"first", author=b"K <k@example.com>", committer=b"K <k@example.com>")
    git, internal = _GitServer(repo), Recorder()
    try:
        Resolver(monkeypatch, {"git.example.test": [[PUBLIC]], "rebinds.example.test": [[PUBLIC], ["127.0.0.1"]]})
        internet = Internet({PUBLIC: git.port})
        url = f"http://git.example.test:{internal.port}/handbook"  # the internal server's port, the public address
        connector = GitConnector(SourceSpec("h", "git", url), tmp_path / "mirror", guard=AddressGuard(reach=internet))
        collected = connector.collect({})
        assert [d.doc_id for d in collected.docs] == ["h:lamps.md"]
        assert git.hosts and set(git.hosts) == {f"git.example.test:{internal.port}"}  # the name stays the Host
        url = f"http://rebinds.example.test:{internal.port}/handbook"  # checked public, then connected private
        connector = GitConnector(SourceSpec("r", "git", url), tmp_path / "mirror-r", guard=AddressGuard(reach=internet))
        with pytest.raises(SourceFailed, match="private or loopback"):
            connector.collect({})
        assert internal.seen == []
    finally:
        git.close()
        internal.close()
