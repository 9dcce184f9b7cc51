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
(``benchledger audit``, at a lower priority): in a thread of this process it
held the interpreter the pages need, and a 10^4-event goal's page took twice
as long while a 10^5-event ledger was being audited.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from benchledger.cli.web.pages import CONTENT_SECURITY_POLICY, Site
from benchledger.ledger.api import Ledger

ALLOWED_METHODS = ("GET", "HEAD")
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
        self._child: subprocess.Popen | None = None
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
        environment = {**os.environ, "BENCHLEDGER_DATABASE_URL": self.ledger.url}
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "benchledger", "audit", "--jobs", "1", "--format", "json"],
                env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
            os.setpriority(os.PRIO_PROCESS, child.pid, AUDIT_NICENESS)  # the pages come first
            with self._lock:
                self._child = child
                if self._stopped:
                    child.kill()
            output, _ = child.communicate()
            if child.returncode in (0, 1):  # clean, or problems found: either way the report
                report = json.loads(output)
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
    site: Site  # set on the subclass made by :func:`make_server`

    def parse_request(self) -> bool:
        if not super().parse_request():
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
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", with_body=with_body)
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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(site: Site, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"site": site})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve(ledger: Ledger, goal_ids: list[str] | None, host: str, port: int, announce: Callable[[str], Any]) -> None:
    """Serve the pages until interrupted; ``announce`` is told the URL once the socket listens."""
    tracker = AuditTracker(ledger)
    site = Site(ledger, goal_ids, tracker.current)
    site.warm_up()
    server = make_server(site, host, port)
    bound_host, bound_port = server.server_address[:2]
    shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
    announce(f"serving http://{shown}:{bound_port}/ read-only (Ctrl-C stops)")
    tracker.current()  # start the first audit now rather than on the first page view
    signal.signal(signal.SIGTERM, _interrupt)  # a terminated server ends its audit too
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        tracker.stop()
        server.server_close()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
