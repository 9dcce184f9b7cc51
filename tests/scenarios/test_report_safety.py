"""Issue 28 items 8 and 10: where ``report --output`` may write, and ``serve``'s answers for a folder and for no page.

``report`` wrote 86 files into ``/`` and left other goals' pages behind in a
reused folder: it now writes only a new folder, an empty one, or one holding an
earlier report (its ``.benchledger-report`` file), which it replaces whole; it
refuses anything else with one line naming the folder and why (exit 2, nothing
written). ``serve`` answered ``/goals/G`` (no slash) with a 404, and its 404 was
a bare line of text.
"""

from __future__ import annotations

import http.client
import os
import stat
from urllib.parse import urlsplit

import pytest

from benchledger.cli.web import pages
from tests.helpers import invoke
from tests.report_helpers import ingest_demo, running_serve

GOAL = "demo-db-wal-recovery"
MARKER = ".benchledger-report"


def _tree(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def _no_build_left(parent):
    return [p.name for p in parent.iterdir() if ".benchledger-" in p.name] == []


def test_a_folder_holding_other_files_is_refused_and_left_as_it_was(migrated_url, tmp_path):
    ingest_demo(migrated_url, GOAL)
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    (home / "notes.txt").write_text("mine\n")
    result = invoke(migrated_url, "report", "--output", str(home))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"benchledger: refusing to write the report into {home}: it is not empty and holds no earlier report "
        f"(no {MARKER} file): choose a new or empty folder\n"
    )
    assert _tree(home) == ["notes.txt", "project"] and _no_build_left(tmp_path)


def test_the_root_folder_is_refused_before_anything_is_written(migrated_url):
    """What the issue saw: ``report --output /`` wrote index.html, assets/ and goals/ into ``/``."""
    ingest_demo(migrated_url, GOAL)
    before = sorted(os.listdir("/"))
    result = invoke(migrated_url, "report", "--output", "/")
    assert result.exit_code == 2
    assert result.stderr == f"benchledger: refusing to write the report into /: it is not empty and holds no earlier report (no {MARKER} file): choose a new or empty folder\n"
    assert sorted(os.listdir("/")) == before


def test_a_new_report_replaces_the_earlier_one_whole(migrated_url, tmp_path):
    """A goal no longer reported (here: --goal names another) leaves no page behind."""
    ingest_demo(migrated_url, GOAL)
    ingest_demo(migrated_url, "second-goal")
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    assert sorted(p.name for p in (site / "goals").iterdir()) == [GOAL, "second-goal"]
    assert (site / MARKER).is_file() and "benchledger report" in (site / MARKER).read_text()
    again = invoke(migrated_url, "report", "--goal", "second-goal", "--output", str(site))
    assert again.exit_code == 0, again.output
    assert [p.name for p in (site / "goals").iterdir()] == ["second-goal"]
    assert GOAL not in (site / "index.html").read_text()
    assert (site / MARKER).is_file() and _no_build_left(tmp_path)
    # the count printed is every file now in the folder (the marker included)
    assert again.stdout.startswith(f"wrote {sum(1 for p in site.rglob('*') if p.is_file())} files into {site}")


def test_an_empty_folder_is_used_and_keeps_its_permissions(migrated_url, tmp_path):
    ingest_demo(migrated_url, GOAL)
    site = tmp_path / "www"
    site.mkdir()
    site.chmod(0o750)
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    assert stat.S_IMODE(site.stat().st_mode) == 0o750
    assert (site / "index.html").is_file() and (site / "goals" / GOAL / "index.html").is_file()


def test_an_earlier_report_holding_a_file_it_did_not_write_is_refused(migrated_url, tmp_path):
    ingest_demo(migrated_url, GOAL)
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    (site / "todo.txt").write_text("mine\n")
    before = _tree(site)
    result = invoke(migrated_url, "report", "--output", str(site))
    assert result.exit_code == 2
    assert result.stderr == (
        f"benchledger: refusing to write the report into {site}: {site / 'todo.txt'} is not part of the earlier report "
        "(move it out, or choose another folder)\n"
    )
    assert _tree(site) == before


def test_a_link_to_a_folder_and_a_file_are_refused(migrated_url, tmp_path):
    ingest_demo(migrated_url, GOAL)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    result = invoke(migrated_url, "report", "--output", str(tmp_path / "link"))
    assert result.exit_code == 2
    assert result.stderr == f"benchledger: refusing to write the report into {tmp_path / 'link'}: it is a symbolic link (name the folder it points to)\n"
    assert list((tmp_path / "real").iterdir()) == []
    (tmp_path / "file").write_text("x")
    assert invoke(migrated_url, "report", "--output", str(tmp_path / "file")).exit_code == 2
    assert (tmp_path / "file").read_text() == "x" and _no_build_left(tmp_path)


def test_a_report_that_fails_midway_leaves_the_earlier_one_whole(migrated_url, tmp_path, monkeypatch):
    ingest_demo(migrated_url, GOAL)
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    before = {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    render = pages.Site.render

    def fail_on_the_goal_page(self, path):
        if path.startswith("goals/"):
            raise OSError(28, "No space left on device", path)
        return render(self, path)

    monkeypatch.setattr(pages.Site, "render", fail_on_the_goal_page)
    result = invoke(migrated_url, "report", "--output", str(site))
    assert result.exit_code == 2 and "No space left on device" in result.stderr
    assert {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()} == before
    assert _no_build_left(tmp_path)


def _get(base, path, method="GET"):
    where = urlsplit(base)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_serve_redirects_a_goal_without_its_slash_and_its_404_links_home(migrated_url):
    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, _):
        status, headers, _ = _get(base, f"/goals/{GOAL}")
        assert (status, headers["location"]) == (301, f"/goals/{GOAL}/")
        status, _, body = _get(base, headers["location"])
        assert status == 200 and b'href="reviews/review-claim.html"' in body
        for missing in ("/goals/no-such-goal", "/goals/no-such-goal/", "/nothing/here", f"/goals/{GOAL}/reviews"):
            status, headers, body = _get(base, missing)
            assert status == 404 and headers["content-type"] == "text/html; charset=utf-8", missing
            assert b'<a class="home-link" href="/index.html">' in body and b"/assets/report.css" in body
        status, headers, body = _get(base, "/<script>x</script>")
        assert status == 404 and b"<script>x" not in body and b"&lt;script&gt;x" in body
        status, _, body = _get(base, "/goals/nope", method="HEAD")
        assert status == 404 and body == b""


@pytest.mark.parametrize("path", ["/goals", "/assets", "//goals/x"])
def test_serve_redirects_only_a_goal_folder(migrated_url, path):
    ingest_demo(migrated_url, GOAL)
    with running_serve(migrated_url) as (base, _):
        assert _get(base, path)[0] == 404
