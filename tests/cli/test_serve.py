"""``benchledger serve``: read-only HTTP (GET and HEAD only), a strict policy on every answer, live from the ledger."""

from __future__ import annotations

import http.client
import socket
import struct
import sys
import time
from urllib.parse import urlsplit

import pytest

from benchledger.cli.web.server import is_loopback
from tests.helpers import ingest_unguarded, invoke
from tests.report_helpers import DEMO, ingest_demo, running_serve

GOAL = "demo-db-wal-recovery"


def _request(base: str, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    where = urlsplit(base)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_serve_answers_the_report_pages_read_only(migrated_url):
    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, _):
        status, headers, body = _request(base, "GET", "/")
        assert status == 200 and GOAL.encode() in body
        policy = headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert headers["x-content-type-options"] == "nosniff"
        status, headers, body = _request(base, "GET", f"/goals/{GOAL}/index.html")
        assert status == 200 and b'id="figures"' in body
        status, headers, body = _request(base, "GET", f"/goals/{GOAL}/reviews/review-claim.json")
        assert status == 200 and headers["content-type"] == "application/json" and b'"projection": "review-claim"' in body
        status, headers, body = _request(base, "HEAD", "/index.html")
        assert status == 200 and body == b"" and int(headers["content-length"]) > 0
        for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
            status, headers, _ = _request(base, method, "/index.html")
            assert (status, headers["allow"]) == (405, "GET, HEAD"), method
        for missing in ("/goals/no-such-goal/index.html", "/goals/../index.html", "/assets/other.js", "/index-9.html", "/x/y"):
            assert _request(base, "GET", missing)[0] == 404, missing


def test_serve_takes_the_goals_to_show_with_goal(migrated_url):
    for goal in (GOAL, "second-goal", "hidden-goal"):
        ingest_demo(migrated_url, goal)
    with running_serve(migrated_url, "--goal", GOAL, "--goal", "second-goal") as (base, _):
        index = _request(base, "GET", "/")[2]
        assert GOAL.encode() in index and b"second-goal" in index and b"hidden-goal" not in index
        assert _request(base, "GET", "/goals/second-goal/index.html")[0] == 200
        assert _request(base, "GET", "/goals/hidden-goal/index.html")[0] == 404


def test_new_events_show_on_reload_while_serving(migrated_url):
    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, _):
        assert b"later-goal" not in _request(base, "GET", "/")[2]
        ingest_demo(migrated_url, "later-goal")
        assert b"later-goal" in _request(base, "GET", "/")[2]
        status, _, body = _request(base, "GET", "/goals/later-goal/index.html")
        assert status == 200 and b"budget_counted" in body


def test_the_index_shows_the_background_audit_and_its_digest(migrated_url):
    ingest_demo(migrated_url, GOAL)
    digest = invoke(migrated_url, "audit", "--format", "json").output.split('"digest": "')[1].split('"')[0]
    with running_serve(migrated_url) as (base, _):
        deadline = time.monotonic() + 30
        while digest.encode() not in (body := _request(base, "GET", "/")[2]):
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        assert b"clean" in body
        assert b"projections checked" in body and b"not refolded" not in body  # serve's audit is the full one, not report's history-only


def test_non_loopback_host_is_warned_about(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    assert invoke(url, "db", "upgrade").exit_code == 0  # (serve only reads: it creates no ledger)
    with running_serve(url, "--host", "0.0.0.0") as (_, process):
        process.terminate()
        assert "warning: serving on 0.0.0.0" in process.communicate(timeout=10)[1]


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("192.168.1.4", False), ("example.org", False),
    # issue 30 item 7: loopback is judged by the address, however it is spelled
    ("127.1", True), ("::ffff:127.0.0.1", True), ("127.0.0.2", True), ("::", False), ("::ffff:10.0.0.1", False),
])
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


def test_stored_nan_and_infinity_are_shown_not_answered_with_an_error(migrated_url, tmp_path):
    """A stored ``NaN``/``Infinity`` (an old ledger's event, a review computed from it) is a page, not an HTTP 500."""
    import json as json_module

    ingest_demo(migrated_url, GOAL)
    comparison = json_module.loads((DEMO / "06-comparison.json").read_text())
    run = json_module.loads((DEMO / "05-run-treatment.json").read_text())
    before_the_guard = "benchledger before the NaN guard"
    nan_pair = {**comparison, "comparison_id": "nan-pair", "official_task_score_delta": float("nan")}
    ingest_unguarded(migrated_url, GOAL, [("comparison", nan_pair)], source=before_the_guard)
    inf_run = {**run, "job_name": "inf-run", "official_task_score": {"value": float("inf"), "passed": True}}
    ingest_unguarded(migrated_url, GOAL, [("run", inf_run)], source=before_the_guard)
    with running_serve(migrated_url) as (base, process):
        for path in ("/", f"/goals/{GOAL}/index.html", f"/goals/{GOAL}/reviews/review-claim.html", f"/goals/{GOAL}/reviews/review-claim.json"):
            status, _, body = _request(base, "GET", path)
            assert status == 200, (path, body)
        page = _request(base, "GET", f"/goals/{GOAL}/index.html")[2].decode()
        assert "nan" in page.lower() and "codex-loopx" in page
        index = _request(base, "GET", "/")[2].decode()
        assert "2/2" in index  # the treatment arm: the demo's passing run and the one scored Infinity (passed)
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    assert (site / "goals" / GOAL / "index.html").is_file()


def test_a_forged_host_header_is_refused(migrated_url):
    """Issue 30 item 1 (DNS rebinding): a page on evil.example rebound to 127.0.0.1 sends ``Host: evil.example``."""
    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, _):
        port = urlsplit(base).port
        for path in ("/", f"/goals/{GOAL}/index.html", f"/goals/{GOAL}/reviews/review-claim.json"):
            for forged in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}", f"localhost:{port + 1}", ""):
                status, _, body = _request(base, "GET", path, {"Host": forged})
                assert status == 421 and GOAL.encode() not in body, (path, forged)
            for own in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
                assert _request(base, "GET", path, {"Host": own})[0] == 200, (path, own)


@pytest.mark.parametrize("path", [
    "/index-0.html", "/index-00.html", "/index-1.html", "/index-02.html", f"/index-{2**63}.html", f"/index-{2**64 + 1}.html",
    f"/goals/{GOAL}/attempts-0.html", f"/goals/{GOAL}/attempts-1.html", f"/goals/{GOAL}/attempts-{2**63}.html", f"/goals/{GOAL}/attempts-{10**30}.html",
])
def test_page_numbers_with_no_page_are_not_found_without_a_traceback(migrated_url, path):
    """Issue 30 item 7: these were a 500 with a traceback (PostgreSQL) or a page (SQLite)."""
    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, process):
        status, headers, _ = _request(base, "GET", path)
        assert status == 404
        assert headers["server"] == "benchledger"  # not Python's version
        process.terminate()
        log = process.communicate(timeout=10)[1]
    assert "Traceback" not in log and "Error" not in log, log


def test_a_client_that_disconnects_mid_answer_is_no_traceback(migrated_url):
    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, process):
        where = urlsplit(base)
        for _ in range(5):
            client = socket.create_connection((where.hostname, where.port), timeout=10)
            client.sendall(b"GET /assets/plotly.min.js HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % where.port)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset, not a clean close
            client.close()
        assert _request(base, "GET", "/")[0] == 200
        process.terminate()
        log = process.communicate(timeout=10)[1]
    assert "Traceback" not in log and "BrokenPipe" not in log and "ConnectionReset" not in log, log


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
def test_serve_binds_the_ipv6_loopback(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ingest_demo(url, GOAL)
    with running_serve(url, "--host", "::1") as (base, process):
        assert base.startswith("http://[::1]:")
        status, _, body = _request(base, "GET", "/")
        assert status == 200 and GOAL.encode() in body
        process.terminate()
        assert "warning" not in process.communicate(timeout=10)[1]


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
def test_silent_connections_neither_pin_threads_nor_block_a_real_request(migrated_url):
    """Issue 30 item 6: 300 connections that never send a request held 300 threads, none timed out."""
    from benchledger.cli.web.server import REQUEST_TIMEOUT, WORKER_THREADS

    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, process):
        where = urlsplit(base)
        idle = [socket.create_connection((where.hostname, where.port), timeout=30) for _ in range(300)]
        try:
            started = time.monotonic()
            assert _request(base, "GET", f"/goals/{GOAL}/index.html")[0] == 200
            assert time.monotonic() - started < 3
            # the workers, the one watching silent connections, the audit's, the main one: never one per connection
            assert _threads(process.pid) <= WORKER_THREADS + 4
            deadline = time.monotonic() + REQUEST_TIMEOUT + 10
            for client in idle:
                client.settimeout(max(deadline - time.monotonic(), 0.1))
                assert client.recv(1) == b""  # closed by the server, well before the deadline
            assert _request(base, "GET", "/")[0] == 200
        finally:
            for client in idle:
                client.close()
