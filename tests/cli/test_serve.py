"""``benchledger serve``: read-only HTTP (GET and HEAD only), a strict policy on every answer, live from the ledger."""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

import pytest

from benchledger.cli.web.server import is_loopback
from tests.helpers import ingest_unguarded, invoke
from tests.report_helpers import DEMO, ingest_demo, running_serve

GOAL = "demo-db-wal-recovery"


def _request(base: str, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    where = urlsplit(base)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        connection.request(method, path)
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


def test_non_loopback_host_is_warned_about(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    with running_serve(url, "--host", "0.0.0.0") as (_, process):
        process.terminate()
        assert "warning: serving on 0.0.0.0" in process.communicate(timeout=10)[1]


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("192.168.1.4", False), ("example.org", False)])
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
