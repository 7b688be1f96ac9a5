"""What a build in Docker may reach on the network, and the proxy that enforces it.

A build container has no network interface but loopback, like a test container. Its one way
out is an HTTP proxy: a relay inside the container (``socat`` on ``127.0.0.1:3128``) hands
each connection to a Unix socket mounted from the host, where an :class:`EgressProxy` (a
thread of the coevo process that runs the build) serves it. The proxy answers ``CONNECT``
(HTTPS) and plain-HTTP requests for the endpoints of the build's :class:`EgressPolicy` only,
and refuses any address of this host or of a loopback, private, link-local, shared or
multicast network, whatever name led there, so neither the Docker host nor its neighbours
are reachable through it.

The policy is a pure value: the package registries (PyPI, Maven Central), the indexes the
host is configured with (``PIP_INDEX_URL``, ``PIP_EXTRA_INDEX_URL``, ``$COEVO_EGRESS_ALLOW``),
and the hosts the revision itself declares (its poms' ``<repository>`` URLs, its Maven
wrapper's download URLs, URLs in its pip arguments and requirement files). A hostile
revision can therefore name its own host and reach it.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import logging
import os
import re
import selectors
import shutil
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tasks import InfrastructureError

from ..rendering import TEMPLATES
from .scratch import scratch_dir

log = logging.getLogger(__name__)

RELAY_PORT = 3128
"""Where the relay listens inside a build container (``127.0.0.1``); ``maven-settings.xml`` names it."""
PROXY_URL = f"http://127.0.0.1:{RELAY_PORT}"
SOCKET_DIR = "/run/coevo-egress"
"""Where the proxy's socket folder is mounted in a build container."""
SOCKET_NAME = "proxy.sock"
MAVEN_SETTINGS = TEMPLATES / "maven-settings.xml"
"""Maven's settings in a build container: every repository through the relay."""
ALLOW_ENV = "COEVO_EGRESS_ALLOW"
"""Extra endpoints builds may reach, trusted like a configured index (``host`` or ``host:port``,
comma-separated)."""

REGISTRIES = {
    "java": (("repo.maven.apache.org", 443), ("repo1.maven.org", 443)),
    "python": (("pypi.org", 443), ("files.pythonhosted.org", 443)),
}
"""The package registries builds of each language fetch from."""

_INDEX_ENV = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS")
_REFUSED_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/127",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    )
)
"""Where the host and its neighbours live (and cloud metadata services, at 169.254.169.254)."""
_URL = re.compile(r"""(?:git\+)?https?://[^\s"'<>]+""")
_HEAD_LIMIT = 64 * 1024
_CONNECT_TIMEOUT = 30.0
_IDLE_TIMEOUT = 600.0
_MAX_CONNECTIONS = 64


@dataclass(frozen=True)
class EgressPolicy:
    """The endpoints a build may connect to, and which of them the host's own configuration named."""

    allowed: frozenset[tuple[str, int]]
    """(host, port) pairs, host names lower-case."""
    trusted: frozenset[tuple[str, int]] = frozenset()
    """Endpoints the operator configured (package indexes): reached even at private addresses."""

    def permits(self, host: str, port: int) -> bool:
        return (host.lower().rstrip("."), port) in self.allowed


def egress_policy(
    language: str, declared_urls: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> EgressPolicy:
    """The policy of a build of ``language``: its registries, the host's indexes, ``declared_urls``.

    ``declared_urls`` are the revision's own (:func:`~runners.environments.envspec.maven_download_urls`,
    :func:`~runners.python.venvs.pip_urls`); ``environ`` defaults to this process's environment.
    """
    environ = os.environ if environ is None else environ
    allowed = set(REGISTRIES.get(language, ()))
    configured = [url for name in _INDEX_ENV for url in environ.get(name, "").split()]
    for item in filter(None, (part.strip() for part in environ.get(ALLOW_ENV, "").split(","))):
        configured.append(item if "://" in item else f"https://{item}")
    trusted = {found for url in configured if (found := endpoint(url))}
    allowed |= trusted | {found for url in declared_urls if (found := endpoint(url))}
    return EgressPolicy(frozenset(allowed), frozenset(trusted))


def endpoint(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of an ``http``/``https`` URL (``git+https`` too); None for anything else."""
    try:
        parts = urlsplit(url.strip().removeprefix("git+"))
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip("."), port or (443 if parts.scheme == "https" else 80)


def urls_in(text: str) -> list[str]:
    """The ``http(s)://`` URLs written in a text (requirement files, pip arguments)."""
    return [match.rstrip(".,;)") for match in _URL.findall(text)]


def refused_address(address: str) -> str | None:
    """Why the proxy will not connect to ``address``, or None when it may."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == network.version and ip in network for network in _REFUSED_NETWORKS):
        return f"{ip} is a loopback, private, link-local or multicast address"
    if _is_local(ip):
        return f"{ip} is an address of this host"
    return None


def _is_local(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``ip`` belongs to this host: only then can a socket bind to it."""
    family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((str(ip), 0))
        except OSError:
            return False
    return True


class EgressRefused(Exception):
    """The proxy will not open this connection; the message says why."""


class EgressProxy:
    """An HTTP proxy on a Unix socket that opens only what ``policy`` permits.

    :meth:`start` makes a fresh folder holding the socket (:attr:`folder`, mounted into the
    container); :meth:`close` stops serving and removes it. The proxy answers
    ``CONNECT host:port`` and absolute-form plain-HTTP requests; every refusal is logged and
    kept in :attr:`refused`. When this process has ``HTTPS_PROXY`` set, permitted connections
    go through that proxy (with ``CONNECT``) after the same checks.
    """

    def __init__(self, policy: EgressPolicy, environ: Mapping[str, str] | None = None) -> None:
        self.policy = policy
        self.folder: Path | None = None
        self.refused: list[str] = []
        environ = os.environ if environ is None else environ
        self._upstream = environ.get("HTTPS_PROXY") or environ.get("https_proxy") or None
        self._listener: socket.socket | None = None
        self._slots = threading.BoundedSemaphore(_MAX_CONNECTIONS)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> Path:
        """Starts serving; returns the folder holding the socket."""
        folder = self.folder = scratch_dir("egress-")
        os.chmod(folder, 0o755)  # the container's user connects, whatever its uid
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _bind(listener, folder)
        os.chmod(folder / SOCKET_NAME, 0o666)
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True, name="coevo-egress").start()
        return folder

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                _reply(client, 503, "too many connections")
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        remote: socket.socket | None = None
        self._track(client)
        try:
            client.settimeout(_CONNECT_TIMEOUT)
            head, rest = _read_head(client)
            method, target, version = _request_line(head)
            if method == "CONNECT":
                host, port = _host_port(target, 443)
                remote, early = self._open_to(host, port)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n" + early)
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    raise EgressRefused(f"not a proxy request: {method} {target[:100]}")
                host, port = parts.hostname, parts.port or 80
                remote, early = self._open_to(host, port)
                client.sendall(early)
                path = parts.path or "/"
                line = f"{method} {path}{'?' + parts.query if parts.query else ''} {version}"
                rest = line.encode() + head[head.index(b"\r\n") :] + rest
            if rest:
                remote.sendall(rest)
            self._track(remote)
        except EgressRefused as refusal:
            self.refused.append(str(refusal))
            log.warning("egress refused: %s", refusal)
            _reply(client, 403, str(refusal))
        except (OSError, ValueError) as exc:
            _reply(client, 502, str(exc) or type(exc).__name__)
        else:
            assert remote is not None
            _relay(client, remote)
        finally:
            for sock in (client, remote):
                if sock is not None:
                    self._untrack(sock)
                    sock.close()
            self._slots.release()

    def _open_to(self, host: str, port: int) -> tuple[socket.socket, bytes]:
        """A connection to ``host:port`` if the policy permits it, and what the far end already sent."""
        host = host.lower().rstrip(".")
        if not self.policy.permits(host, port):
            raise EgressRefused(f"{host}:{port} is not a registry or a host the revision declares")
        try:
            addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            if self._upstream:  # the upstream proxy may know names this host does not
                return self._through_upstream(host, port)
            raise EgressRefused(f"{host} does not resolve") from None
        if (host, port) not in self.policy.trusted:
            for *_, address in addresses:
                why = refused_address(str(address[0]))
                if why:
                    raise EgressRefused(f"{host}:{port}: {why}")
        if self._upstream:
            return self._through_upstream(host, port)
        error: OSError | None = None
        for family, kind, proto, _, address in addresses:
            sock = socket.socket(family, kind, proto)
            sock.settimeout(_CONNECT_TIMEOUT)
            try:
                sock.connect(address)  # the address checked above: no second lookup to rebind
            except OSError as exc:
                sock.close()
                error = exc
                continue
            return sock, b""
        raise error or OSError(f"cannot connect to {host}:{port}")

    def _through_upstream(self, host: str, port: int) -> tuple[socket.socket, bytes]:
        assert self._upstream is not None
        parts = urlsplit(self._upstream if "://" in self._upstream else f"http://{self._upstream}")
        sock = socket.create_connection((parts.hostname or "", parts.port or 80), timeout=_CONNECT_TIMEOUT)
        request = f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        if parts.username:
            credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            request += f"Proxy-Authorization: Basic {base64.b64encode(credentials.encode()).decode()}\r\n"
        sock.sendall((request + "\r\n").encode())
        head, rest = _read_head(sock)
        status = head.split(b"\r\n", 1)[0].split()
        if len(status) < 2 or status[1] != b"200":
            sock.close()
            raise OSError(f"the upstream proxy refused {host}:{port}: {head[:80]!r}")
        return sock, rest

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)


_SOCKET_PATH_LIMIT = 100
"""Bytes a Unix socket's path may have (the kernel's limit is 107, with its terminating zero)."""


def _bind(listener: socket.socket, folder: Path) -> None:
    """Binds ``listener`` to ``folder/proxy.sock``. When that path is too long for a socket (a
    deep ``$TMPDIR``), it binds through the folder's descriptor (``/proc/self/fd/N/proxy.sock``),
    so the socket is still in this process's scratch folder and removed with it after a kill."""
    path = folder / SOCKET_NAME
    if len(os.fsencode(path)) <= _SOCKET_PATH_LIMIT:
        listener.bind(str(path))
        return
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        listener.bind(f"/proc/self/fd/{descriptor}/{SOCKET_NAME}")
    except OSError as error:
        raise InfrastructureError(
            f"cannot make the egress proxy's socket in {folder} ({error}): set TMPDIR to a shorter folder"
        ) from error
    finally:
        os.close(descriptor)


def relay_command() -> list[str]:
    """A build container's main command: the relay from ``127.0.0.1:3128`` to the proxy's socket."""
    relay = (
        f"socat TCP-LISTEN:{RELAY_PORT},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:{SOCKET_DIR}/{SOCKET_NAME}"
    )
    return ["sh", "-c", f"{relay} & exec sleep infinity"]


RELAY_READY = [
    "timeout", "10", "sh", "-c", f"until grep -q ':{RELAY_PORT:04X} ' /proc/net/tcp; do sleep 0.05; done"
]  # fmt: skip
"""Returns once the relay listens (exit status 0), or fails after 10 s."""

PROXY_ENV = {
    **{name: PROXY_URL for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
    "NO_PROXY": "",
    "no_proxy": "",
    # The JVM's own HTTP clients (the Maven wrapper's downloader); Maven reads maven-settings.xml.
    "JAVA_TOOL_OPTIONS": " ".join(
        f"-D{scheme}.proxyHost=127.0.0.1 -D{scheme}.proxyPort={RELAY_PORT}" for scheme in ("http", "https")
    ),
}
"""What every command of a build container runs with, whatever it asks for."""


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """An HTTP head (up to the blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_LIMIT:
            raise ValueError("request head too long")
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("connection closed before the request head ended")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _request_line(head: bytes) -> tuple[str, str, str]:
    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(parts) != 3:
        raise ValueError("malformed request line")
    return parts[0].upper(), parts[1], parts[2]


def _host_port(target: str, default: int) -> tuple[str, int]:
    if target.startswith("["):  # [v6]:port
        host, _, port = target[1:].partition("]")
        return host, int(port.lstrip(":") or default)
    host, _, port = target.rpartition(":")
    return (host, int(port)) if host else (target, default)


def _reply(sock: socket.socket, status: int, reason: str) -> None:
    phrase = {403: "Forbidden", 502: "Bad Gateway", 503: "Service Unavailable"}.get(status, "Error")
    body = f"coevo egress: {reason}\n".encode()
    head = f"HTTP/1.1 {status} {phrase}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(OSError):
        sock.sendall(head.encode() + body)


def _relay(one: socket.socket, other: socket.socket) -> None:
    """Copies bytes both ways until both sides are done (or nothing moves for a long time)."""
    one.settimeout(None)
    other.settimeout(None)
    peers = {one: other, other: one}
    with selectors.DefaultSelector() as selector:
        for sock in peers:
            selector.register(sock, selectors.EVENT_READ)
        open_reads = 2
        while open_reads:
            ready = selector.select(_IDLE_TIMEOUT)
            if not ready:
                return
            for key, _ in ready:
                source = key.fileobj
                assert isinstance(source, socket.socket)
                try:
                    data = source.recv(65536)
                    if data:
                        peers[source].sendall(data)
                        continue
                except OSError:  # a reset, or the proxy closing: the connection is over
                    return
                selector.unregister(source)
                open_reads -= 1
                with contextlib.suppress(OSError):
                    peers[source].shutdown(socket.SHUT_WR)
