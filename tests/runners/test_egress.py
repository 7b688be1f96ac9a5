"""The egress policy is a pure value; the proxy opens what it permits and nothing of this host."""

from __future__ import annotations

import http.server
import os
import socket
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runners import EnvSpec, FolderTree
from runners.environments.envspec import maven_download_urls
from runners.python.venvs import pip_urls
from runners.sandbox.egress import (
    MAVEN_SETTINGS,
    RELAY_PORT,
    SOCKET_NAME,
    EgressPolicy,
    EgressProxy,
    egress_policy,
    endpoint,
    refused_address,
)
from runners.sandbox.scratch import owned_folder
from tests.runners import python_projects

POM_WITH_REPOSITORIES = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo</groupId><artifactId>demo</artifactId><version>1</version>
  <repositories>
    <repository><id>spring</id><url>https://repo.spring.io/release</url></repository>
    <repository><id>computed</id><url>${repo.url}</url></repository>
  </repositories>
  <profiles><profile><id>p</id>
    <pluginRepositories>
      <pluginRepository><id>jitpack</id><url>https://jitpack.io:8443/</url></pluginRepository>
    </pluginRepositories>
  </profile></profiles>
  <distributionManagement>
    <snapshotRepository><id>deploy</id><url>https://deploy.example.org/</url></snapshotRepository>
  </distributionManagement>
</project>
"""


def test_a_policy_allows_the_registries_the_hosts_indexes_and_what_the_revision_declares() -> None:
    environ = {
        "PIP_INDEX_URL": "https://mirror.corp.example/simple",
        "PIP_EXTRA_INDEX_URL": "http://10.1.2.3:8080/simple https://extra.example/simple",
        "PIP_FIND_LINKS": "/opt/wheels",
        "COEVO_EGRESS_ALLOW": "artifacts.corp.example, cache.corp.example:8081",
    }
    policy = egress_policy("python", ["git+https://github.com/org/lib.git@v1"], environ)
    assert policy.allowed == {
        ("pypi.org", 443),
        ("files.pythonhosted.org", 443),
        ("mirror.corp.example", 443),
        ("10.1.2.3", 8080),
        ("extra.example", 443),
        ("artifacts.corp.example", 443),
        ("cache.corp.example", 8081),
        ("github.com", 443),
    }
    registries_and_declared = {("pypi.org", 443), ("files.pythonhosted.org", 443), ("github.com", 443)}
    assert policy.trusted == policy.allowed - registries_and_declared
    assert policy.permits("PyPI.org.", 443) and not policy.permits("pypi.org", 80)
    java = egress_policy("java", [], {})
    assert java.allowed == {("repo.maven.apache.org", 443), ("repo1.maven.org", 443)} and not java.trusted


def test_endpoints_of_urls() -> None:
    assert endpoint("https://Repo.Example.org/maven2/") == ("repo.example.org", 443)
    assert endpoint("http://host:8080/x") == ("host", 8080)
    assert endpoint("git+https://github.com/a/b") == ("github.com", 443)
    assert endpoint("file:///opt/wheels") is None
    assert endpoint("/opt/wheels") is None
    assert endpoint("https://host:notaport/") is None


def test_a_revision_declares_its_repositories_wrapper_and_pip_urls(tmp_path: Path) -> None:
    java = python_projects.write(
        tmp_path / "java",
        {
            "pom.xml": POM_WITH_REPOSITORIES,
            ".mvn/wrapper/maven-wrapper.properties": "distributionUrl=https\\://dist.example.net/maven.zip\n",
        },
    )
    spec = EnvSpec("java", "17", "maven-wrapper", modules=("",))
    assert maven_download_urls(FolderTree(java), spec) == [
        "https://repo.spring.io/release",
        "https://jitpack.io:8443/",
        "https://dist.example.net/maven.zip",
    ]  # property-built URLs and deployment targets are not downloads
    python = python_projects.write(
        tmp_path / "python",
        {
            "requirements.txt": "-r more.txt\n--extra-index-url https://download.pytorch.org/whl/cpu\nsix\n",
            "more.txt": "lib @ https://files.example.com/lib-1.0.tar.gz\n",
            "setup.py": "# https://homepage.example.com is not a download\n",
        },
    )
    install = (("-r", "requirements.txt"), (".", "--find-links", "https://wheels.example.com/"))
    urls = pip_urls(EnvSpec("python", "3.11", "pip", install=install), FolderTree(python))
    assert sorted(urls) == [
        "https://download.pytorch.org/whl/cpu",
        "https://files.example.com/lib-1.0.tar.gz",
        "https://wheels.example.com/",
    ]


def _primary_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("203.0.113.1", 9))  # no packet is sent: this only picks the route's source
        return str(probe.getsockname()[0])


def test_the_host_and_private_networks_are_refused_public_addresses_are_not() -> None:
    for address in ("127.0.0.1", "10.0.0.5", "172.17.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                    "0.0.0.0", "224.0.0.1", "::1", "::ffff:127.0.0.1", "fe80::1", "fd00::1"):  # fmt: skip
        assert refused_address(address), address
    assert refused_address(_primary_address())  # an address of this host, whatever network it is on
    assert refused_address("8.8.8.8") is None
    assert refused_address("2001:4860:4860::8888") is None


def test_the_maven_settings_name_the_relay() -> None:
    settings = MAVEN_SETTINGS.read_text()
    assert f"<port>{RELAY_PORT}</port>" in settings and "<host>127.0.0.1</host>" in settings


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


def _ask(proxy: EgressProxy, request: bytes, address: str | None = None) -> bytes:
    assert proxy.folder is not None
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(10)
        client.connect(address or str(proxy.folder / SOCKET_NAME))
        client.sendall(request)
        data = b""
        while chunk := client.recv(65536):
            data += chunk
            if b"hello" in data or b"coevo egress" in data:
                break
        return data


def test_the_proxy_tunnels_to_permitted_hosts_only_and_never_to_this_host(server: int) -> None:
    allowed = {("localhost", server), ("127.0.0.1", server), ("localhost", server + 1)}
    permitted = EgressPolicy(frozenset(allowed), frozenset({("localhost", server)}))
    proxy = EgressProxy(permitted, environ={})
    folder = proxy.start()
    try:
        # A configured (trusted) host: tunnelled, then plain HTTP inside the tunnel.
        tunnel = _ask(proxy, f"CONNECT localhost:{server} HTTP/1.1\r\n\r\nGET /t HTTP/1.0\r\n\r\n".encode())
        assert tunnel.startswith(b"HTTP/1.1 200 Connection established") and b"hello /t" in tunnel
        plain = _ask(proxy, f"GET http://localhost:{server}/p?q=1 HTTP/1.0\r\n\r\n".encode())
        assert b"hello /p?q=1" in plain
        # Permitted by name but not trusted: this host's address is refused.
        refused = _ask(proxy, f"CONNECT 127.0.0.1:{server} HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403") and b"loopback" in refused
        # Trust is for the configured endpoint: another port of that host is checked like any other.
        other_port = _ask(proxy, f"CONNECT localhost:{server + 1} HTTP/1.1\r\n\r\n".encode())
        assert other_port.startswith(b"HTTP/1.1 403") and b"loopback" in other_port
        # Not permitted at all, whatever it is.
        assert _ask(proxy, b"CONNECT example.com:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert _ask(proxy, f"CONNECT localhost:{server + 2} HTTP/1.1\r\n\r\n".encode()).startswith(
            b"HTTP/1.1 403"
        )
        assert len(proxy.refused) == 4
    finally:
        proxy.close()
    assert not folder.exists()


def test_a_temporary_folder_too_deep_for_a_socket_path_still_serves_from_the_scratch_folder(
    server: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    proxy = EgressProxy(
        EgressPolicy(frozenset({("localhost", server)}), frozenset({("localhost", server)})), environ={}
    )
    folder = proxy.start()
    try:
        assert len(os.fsencode(folder / SOCKET_NAME)) > 108  # too long to bind or connect to by its path
        assert folder.parent == owned_folder() and (folder / SOCKET_NAME).is_socket()
        monkeypatch.chdir(folder)  # the relay in a container reaches it by a path of its own
        assert b"hello /deep" in _ask(
            proxy, f"GET http://localhost:{server}/deep HTTP/1.0\r\n\r\n".encode(), SOCKET_NAME
        )
    finally:
        proxy.close()
    assert not folder.exists()


def test_behind_an_upstream_proxy_permitted_connections_go_through_it() -> None:
    heads: list[bytes] = []

    class Upstream(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data = b""
            while b"\r\n\r\n" not in data:
                data += self.request.recv(4096)
            heads.append(data)
            self.request.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
            self.request.sendall(b"hello through the upstream")

    upstream = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    policy = EgressPolicy(frozenset({("registry.invalid", 443), ("localhost", 443)}))
    proxy = EgressProxy(
        policy, environ={"HTTPS_PROXY": f"http://me:s%40cret@127.0.0.1:{upstream.server_address[1]}"}
    )
    proxy.start()
    try:
        tunnel = _ask(proxy, b"CONNECT registry.invalid:443 HTTP/1.1\r\n\r\n")
        assert tunnel.startswith(b"HTTP/1.1 200") and b"hello through the upstream" in tunnel
        assert heads[0].startswith(b"CONNECT registry.invalid:443 HTTP/1.1\r\n")
        assert b"Proxy-Authorization: Basic bWU6c0BjcmV0\r\n" in heads[0]  # me:s@cret
        # A name this host resolves to itself is refused before the upstream hears of it.
        assert _ask(proxy, b"CONNECT localhost:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
        assert len(heads) == 1
    finally:
        proxy.close()
        upstream.shutdown()
        upstream.server_close()
