"""``benchledger serve``: the report's pages over HTTP, live from the ledger, read-only.

The standard library's threading HTTP server is enough: the pages are a
handful of GET routes over one :class:`~benchledger.cli.web.pages.Site`, and
it adds no dependency to secure or keep up to date. Only GET and HEAD are
answered (any other method is 405, so nothing can write), every response
carries the restrictive Content-Security-Policy, and pages are rendered per
request from the ledger, so a reload shows what ingests committed meanwhile.

The full audit reads every event, too slow for a page; :class:`AuditTracker`
runs it in the background whenever the ledger grew and the index shows the
latest result, saying when it is being re-checked. It runs as a child process
(:class:`~benchledger.cli.web.audit_child.AuditChild`, at a lower priority),
as ``report``'s does.
"""

from __future__ import annotations

import ipaddress
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from benchledger.cli.common import standby_lag_text
from benchledger.cli.web.audit_child import AuditChild
from benchledger.cli.web.pages import CONTENT_SECURITY_POLICY, Site
from benchledger.errors import WorkerDied
from benchledger.ledger.api import Ledger

ALLOWED_METHODS = ("GET", "HEAD")
# The names a browser may use for a loopback server besides the --host given (a Host header naming
# anything else is a page on another site that rebound its own name to this address: answered 421).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
# Threads that answer requests: a page is rendered per request, so more would only contend for the ledger.
WORKER_THREADS = 8
# Seconds a connection may take to send its request (and each later read): a silent one is closed, not waited on.
REQUEST_TIMEOUT = 5.0
# Connections accepted but still silent; past this the oldest is closed (each holds a file descriptor).
MAX_WAITING_CONNECTIONS = 512
# How much lower the background audit's priority is than the server's (os.setpriority: 0 normal .. 19 lowest).
AUDIT_NICENESS = 10
# Added to the page's own policy: only an HTTP header can forbid framing.
HEADER_POLICY = CONTENT_SECURITY_POLICY + "; frame-ancestors 'none'"
SECURITY_HEADERS = {
    "Content-Security-Policy": HEADER_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class AuditTracker:
    """The ledger's latest audit, re-run in a background thread whenever the ledger's last position moved."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._lock = threading.Lock()
        self._result: dict[str, Any] | None = None
        self._checking: int | None = None  # the last position an audit is running for
        self._child: AuditChild | None = None
        self._stopped = False

    def current(self) -> Mapping[str, Any] | None:
        """The latest finished audit (``stale`` when events arrived since), starting a new one when needed."""
        position = self.ledger.last_position()
        with self._lock:
            result = self._result
            checked = None if result is None else result["position"]
            if checked != position and self._checking is None and not self._stopped:
                self._checking = position
                threading.Thread(target=self._run, args=(position,), daemon=True, name="benchledger-audit").start()
        return None if result is None else {**result, "stale": result["position"] != position}

    def _run(self, position: int) -> None:
        try:
            with self._lock:
                if self._stopped:
                    return
                child = self._child = AuditChild(self.ledger.url, niceness=AUDIT_NICENESS)  # the pages come first
            try:
                report = child.result()
            except WorkerDied:  # no result this time (killed as the server stops, or the database failed): the next page view retries
                return
            stamped = {**report, "position": position, "checked_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
            with self._lock:
                self._result = stamped
        finally:
            with self._lock:
                self._checking, self._child = None, None

    def stop(self) -> None:
        """End a running audit, and start none (the server stops)."""
        with self._lock:
            self._stopped = True
            child = self._child
        if child is not None:
            child.kill()


class _Handler(BaseHTTPRequestHandler):
    server_version = "benchledger"
    timeout = REQUEST_TIMEOUT  # each read of the request: a client that stops sending is dropped
    site: Site  # set on the subclass made by :func:`make_server`
    server: BoundedHTTPServer

    def version_string(self) -> str:
        return self.server_version  # not Python's version: nothing for a prober to match known bugs against

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if not self.server.accepts_host(self.headers.get("Host")):
            self._send(HTTPStatus.MISDIRECTED_REQUEST, b"this server answers only for its own address\n", "text/plain; charset=utf-8")
            return False
        if self.command not in ALLOWED_METHODS:
            self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"only GET and HEAD: this server is read-only\n", "text/plain; charset=utf-8",
                       extra={"Allow": ", ".join(ALLOWED_METHODS)})
            return False
        return True

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _answer(self, *, with_body: bool) -> None:
        path = unquote(urlsplit(self.path).path).lstrip("/")
        if path == "" or path.endswith("/"):
            path += "index.html"
        if path == "favicon.ico":  # browsers ask for it beside any page (the JSON ones too): there is none
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon", with_body=False)
            return
        if any(part in ("", ".", "..") for part in path.split("/")):
            page = None
        else:
            try:
                page = self.site.render(path)
            except Exception as exc:  # one failed page must not stop the server; the reason goes to its log
                self.log_error("%s: %s: %s", path, type(exc).__name__, exc)
                self._send(HTTPStatus.INTERNAL_SERVER_ERROR, b"internal error; see the server's log\n", "text/plain; charset=utf-8", with_body=with_body)
                return
        if page is None:
            if self.site.is_folder(path):
                # /goals/G names the goal's folder: its pages link relatively, so they must be read from /goals/G/
                location = "/" + quote(path) + "/"
                self._send(HTTPStatus.MOVED_PERMANENTLY, b"", "text/plain; charset=utf-8", extra={"Location": location}, with_body=False)
                return
            missing = self.site.not_found("/" + path)
            self._send(HTTPStatus.NOT_FOUND, missing.body, missing.content_type, with_body=with_body)
            return
        cache = "no-store" if page.content_type.startswith(("text/html", "application/json")) else "max-age=3600"
        self._send(HTTPStatus.OK, page.body, page.content_type, extra={"Cache-Control": cache}, with_body=with_body)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str, *, extra: Mapping[str, str] | None = None, with_body: bool = True) -> None:
        self.send_response(status)
        for name, value in {**SECURITY_HEADERS, **(extra or {}), "Content-Type": content_type, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        if with_body:
            self.wfile.write(body)


def _addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses ``host`` names when it is an address in any form the system takes (``127.1``, ``::ffff:127.0.0.1``); none for a name."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return []
    return [ipaddress.ip_address(str(entry[4][0]).split("%")[0]) for entry in found]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only: ``localhost``, or an address (any spelling) in a loopback range."""
    if host.lower() == "localhost":
        return True
    addresses = _addresses(host)

    def loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        mapped = getattr(address, "ipv4_mapped", None)
        return address.is_loopback or (mapped is not None and mapped.is_loopback)

    return bool(addresses) and all(map(loopback, addresses))


class BoundedHTTPServer(HTTPServer):
    """An HTTP server with :data:`WORKER_THREADS` threads that never waits on a silent client.

    The standard threading server starts a thread per connection, and that
    thread waits for the request: a few hundred connections that send nothing
    hold as many threads, forever. Here an accepted connection waits in a
    selector, watched by one thread, until it has something to read (then a
    worker answers it) or :data:`REQUEST_TIMEOUT` passed (then it is closed).
    """

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        # (bound once its members exist: a port that is taken makes the base class close the server, which needs them)
        super().__init__((host, port), handler, bind_and_activate=False)
        self.bound_host = host
        self._workers = ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="benchledger-serve")
        self._selector = selectors.DefaultSelector()
        self._deadlines: dict[socket.socket, float] = {}  # insertion order: the oldest first
        self._lock = threading.Lock()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._selector.register(self._wake_reader, selectors.EVENT_READ)
        self._closed = False
        try:
            self.server_bind()
            self.server_activate()
        except BaseException:
            self.server_close()
            raise
        threading.Thread(target=self._watch, daemon=True, name="benchledger-serve-waiting").start()

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:  # "::" serves IPv4 too, as "0.0.0.0" would
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()

    def accepts_host(self, header: str | None) -> bool:
        """Whether a request's ``Host`` names this server: a loopback name, the --host given, or an address, with the port.

        An address (``192.168.1.4:8765``) cannot be rebound by another site, only
        a name can; a request without a Host (HTTP/1.0 tools) comes from no browser.
        """
        if header is None:
            return True
        try:
            where = urlsplit("//" + header)
            port = where.port
        except ValueError:
            return False
        name = where.hostname or ""
        if port != self.server_address[1] and not (port is None and self.server_address[1] == 80):
            return False
        return name in (*LOOPBACK_NAMES, self.bound_host.strip("[]").lower()) or bool(_addresses(name))

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            if len(self._deadlines) >= MAX_WAITING_CONNECTIONS:
                oldest = next(iter(self._deadlines))
                self._forget(oldest)
                self.shutdown_request(oldest)
            self._deadlines[request] = time.monotonic() + REQUEST_TIMEOUT
            self._selector.register(request, selectors.EVENT_READ, client_address)
        self._wake_writer.send(b"\0")

    def _forget(self, request: socket.socket) -> None:
        del self._deadlines[request]
        self._selector.unregister(request)

    def _watch(self) -> None:
        while not self._closed:
            with self._lock:
                now = time.monotonic()
                for request in [r for r, deadline in self._deadlines.items() if deadline <= now]:
                    self._forget(request)
                    self.shutdown_request(request)
                wait = min(self._deadlines.values(), default=now + REQUEST_TIMEOUT) - now
            try:
                ready = self._selector.select(max(wait, 0.05))
            except (OSError, ValueError):  # the selector was closed: the server stops
                return
            for key, _ in ready:
                if key.fileobj is self._wake_reader:
                    self._wake_reader.recv(4096)
                    continue
                with self._lock:
                    if key.fileobj not in self._deadlines:
                        continue
                    self._forget(key.fileobj)
                self._workers.submit(self._answer, key.fileobj, key.data)

    def _answer(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, no traceback (it would print local paths); a client that went away is not an error."""
        error = sys.exc_info()[1]
        if isinstance(error, (BrokenPipeError, ConnectionResetError, TimeoutError)):
            return
        host = client_address[0] if client_address else "?"
        print(f"benchledger serve: {host}: {type(error).__name__}: {error}", file=sys.stderr)

    def server_close(self) -> None:
        self._closed = True
        super().server_close()
        self._workers.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            for request in list(self._deadlines):
                self._forget(request)
                self.shutdown_request(request)
        self._wake_writer.send(b"\0")


def make_server(site: Site, host: str, port: int) -> BoundedHTTPServer:
    handler = type("Handler", (_Handler,), {"site": site})
    return BoundedHTTPServer(host, port, handler)


def serve(
    ledger: Ledger, goal_ids: list[str] | None, host: str, port: int, announce: Callable[[str], Any], *, include_archived: bool = False
) -> None:
    """Serve the pages until interrupted; ``announce`` is told the URL once the socket listens."""
    tracker = AuditTracker(ledger)
    site = Site(ledger, goal_ids, tracker.current, include_archived=include_archived)
    site.warm_up()
    server = make_server(site, host, port)
    bound_host, bound_port = server.server_address[:2]
    shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
    signal.signal(signal.SIGTERM, _interrupt)  # a terminated server ends its audit too
    try:  # (from the line saying Ctrl-C stops it: a Ctrl-C right after it is the same normal end)
        announce(f"serving http://{shown}:{bound_port}/ read-only (Ctrl-C stops)")
        standby = ledger.standby()
        if standby is not None:
            announce(f"reading a replica (a PostgreSQL hot standby): {standby_lag_text(standby.replayed_at, standby.lag_seconds)}; the index page says it again on every load")
        tracker.current()  # start the first audit now rather than on the first page view
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        tracker.stop()
        server.server_close()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
