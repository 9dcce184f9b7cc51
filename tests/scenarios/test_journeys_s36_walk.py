"""A demanding newcomer's afternoon (session 36), walked as typed, on both backends where the backend matters.

The README's main job, then the leftovers such a walk meets: a replay of a
ledger with nothing in it, a refused `--jobs` that does not say where its
limit comes from, a PostgreSQL URL shown in the driver's spelling rather than
the user's, a report aimed at a mount point, paging through `goals`, and
`compare`'s pass rates that differ from `runs --summary` without a word.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchledger.cli.common import CPUS, JOBS_PER_CPU
from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
GOAL = "demo-db-wal-recovery"


def _quickstart(url: str) -> None:
    """examples/quickstart.sh's ingests, as it types them."""
    for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json"), ("post-launch", "03-post-launch.json")):
        assert invoke(url, "ingest", "--goal", GOAL, "--kind", kind, str(DEMO / name)).exit_code == 0
    assert invoke(url, "ingest", "--goal", GOAL, str(DEMO / "04-run-baseline.json")).exit_code == 0
    runs = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
    assert invoke(url, "ingest", "--goal", GOAL, *runs).exit_code == 0


def test_replay_of_an_empty_ledger_says_there_was_nothing_not_a_rate_of_nothing(migrated_url):
    result = invoke(migrated_url, "replay")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "nothing to replay: the ledger holds no events"
    assert "events/s" not in result.stdout
    _quickstart(migrated_url)
    replayed = invoke(migrated_url, "replay").stdout
    assert replayed.startswith("replayed 11 events of 1 goal(s)") and " events/s)" in replayed


@pytest.mark.parametrize("command", [["replay"], ["audit"], ["ingest-batches", "-"]])
def test_a_refused_jobs_count_says_its_limit_is_four_times_the_cpus(migrated_url, command):
    too_many = str(JOBS_PER_CPU * CPUS + 1)
    result = invoke(migrated_url, *command, "--jobs", too_many, input="")
    assert result.exit_code == 2
    says = f"{too_many} is not in the range 1<=x<={JOBS_PER_CPU * CPUS}, at most {JOBS_PER_CPU}x the CPU count ({CPUS} CPU(s)"
    assert says in result.stderr, result.stderr
    assert "abc' is not a valid integer" in invoke(migrated_url, *command, "--jobs", "abc", input="").stderr
    # --help says the same limit once, with the default
    help_text = " ".join(invoke(migrated_url, *command[:1], "--help").stdout.split())
    assert help_text.count("at most 4x the CPU count") == 1, help_text


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)  # (a SQLite URL has no driver to spell)
def test_a_postgresql_url_is_shown_as_typed_not_in_the_drivers_spelling(ledger_url):
    """The URL a user typed (postgresql://…) in the refusal of an empty database and in `info`, never postgresql+psycopg2://."""
    ledger_url = ledger_url.replace("postgresql+psycopg2://", "postgresql://", 1)  # (the fixture's URL names the driver)
    refused = invoke(ledger_url, "goals")
    assert refused.exit_code == 2
    assert f"the ledger at {ledger_url} is not initialized" in refused.stderr, refused.stderr
    assert invoke(ledger_url, "db", "upgrade").exit_code == 0
    info = json.loads(invoke(ledger_url, "info", "--format", "json").stdout)
    assert info["url"] == ledger_url
    table = invoke(ledger_url, "info").stdout
    assert ledger_url in table and "psycopg2" not in table


def test_a_password_stays_hidden_in_the_users_spelling(tmp_path):
    from sqlalchemy import make_url

    from benchledger.ledger.storage.engine import shown_url

    assert shown_url(make_url("postgresql+psycopg2://me:secret@db.example/team")) == "postgresql://me:***@db.example/team"
    assert shown_url(make_url("postgresql+psycopg://me:secret@db.example/team")) == "postgresql+psycopg://me:***@db.example/team"
    assert shown_url(f"sqlite:///{tmp_path}/ledger.sqlite") == f"sqlite:///{tmp_path}/ledger.sqlite"


def test_report_onto_a_mount_point_is_one_clear_line_and_nothing_built(migrated_url, tmp_path, monkeypatch):
    pytest.importorskip("jinja2", reason="the report extra (pip install 'benchledger[report]')")
    _quickstart(migrated_url)
    volume = tmp_path / "mnt"
    volume.mkdir()
    real_ismount = os.path.ismount
    # An empty volume mounted at mnt/ (what `mount` would make; the test cannot mount one itself).
    monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == volume or real_ismount(path))
    result = invoke(migrated_url, "report", "-o", str(volume))
    assert result.exit_code == 2
    assert f"cannot write the report into {volume}: it is a mount point" in result.stderr, result.stderr
    assert f"name a folder inside it, e.g. {volume / 'report'}" in result.stderr
    assert "Device or resource busy" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.sqlite", "mnt"] or migrated_url.startswith("postgresql")
    assert not list(volume.iterdir())
    # the folder it suggests works
    made = invoke(migrated_url, "report", "-o", str(volume / "report"))
    assert made.exit_code == 0 and (volume / "report" / "index.html").is_file()


def test_report_when_the_final_move_is_busy_says_so_in_words(migrated_url, tmp_path, monkeypatch):
    """A folder mounted on after the check (or one the system holds): the rename's EBUSY, in the same words."""
    import errno

    pytest.importorskip("jinja2", reason="the report extra (pip install 'benchledger[report]')")
    _quickstart(migrated_url)
    target = tmp_path / "site"
    target.mkdir()
    real_rename = os.rename

    def busy(source, destination, *args, **kwargs):
        if Path(destination) == target:
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(source))
        return real_rename(source, destination, *args, **kwargs)

    monkeypatch.setattr(os, "rename", busy)
    result = invoke(migrated_url, "report", "-o", str(target))
    assert result.exit_code == 2
    assert f"cannot write the report into {target}: it is a mount point (or a folder the system holds)" in result.stderr, result.stderr
    assert "Device or resource busy" not in result.output
    assert [p.name for p in tmp_path.iterdir() if "benchledger-build" in p.name] == []


def test_goals_pages_with_limit_and_after(migrated_url):
    doc = (DEMO / "01-preflight.json").read_text()
    for goal in ("alpha", "bravo", "charlie", "delta", "echo"):
        assert invoke(migrated_url, "ingest", "--goal", goal, "--new-goal", "--kind", "preflight", "-", input=doc).exit_code == 0

    def page(*args: str) -> list[str]:
        result = invoke(migrated_url, "goals", "--format", "json", *args)
        assert result.exit_code == 0, result.output
        return [g["goal_id"] for g in json.loads(result.stdout)["goals"]]

    first = page("--limit", "2")
    second = page("--limit", "2", "--after", first[-1])
    third = page("--limit", "2", "--after", second[-1])
    assert (first, second, third) == (["alpha", "bravo"], ["charlie", "delta"], ["echo"])
    assert page("--after", "echo") == [] and page("--after", "c") == ["charlie", "delta", "echo"]
    table = invoke(migrated_url, "goals", "--after", "delta").stdout
    assert "echo" in table and "alpha" not in table
    assert "--after GOAL" in invoke(migrated_url, "goals", "--help").stdout
    before = row_counts(migrated_url)
    assert invoke(migrated_url, "goals", "--after", "zzz", "--limit", "1").exit_code == 0
    assert row_counts(migrated_url) == before


def test_compare_says_its_rates_are_per_task_means_over_paired_tasks(migrated_url):
    _quickstart(migrated_url)
    for fmt in ("table", "markdown"):
        out = invoke(migrated_url, "compare", "--format", fmt).stdout
        first = " ".join(out.split("\n\n")[0].split())
        assert first.startswith("Each arm's pass rate is the mean of its per-task pass rates over the tasks both arms ran"), out
        assert "`runs --summary`" in first
    csv_out = invoke(migrated_url, "compare", "--format", "csv").stdout
    assert csv_out.startswith("benchmark,"), csv_out
