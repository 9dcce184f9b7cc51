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
from tests.report_helpers import PUBLIC_LEDGER as PUBLIC

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
    # a volume holding other things (as / does) gets the refusal of any such folder, not the mount point's
    full = invoke(migrated_url, "report", "-o", str(volume))
    assert full.exit_code == 2 and "it is not empty and holds no earlier report" in full.stderr, full.stderr


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
        if fmt == "markdown":  # (under its title)
            title, out = out.split("\n\n", 1)
            assert title == "## Treatment against baseline, per benchmark"
        first = " ".join(out.split("\n\n")[0].split())
        assert first.startswith("Each arm's pass rate is the mean of its per-task pass rates over the tasks both arms ran"), out
        assert "`runs --summary`" in first
    csv_out = invoke(migrated_url, "compare", "--format", "csv").stdout
    assert csv_out.startswith("benchmark,"), csv_out


def _archived_pair_ledger(tmp_path: Path) -> Path:
    """A LoopX run ledger of one run group whose two runs were archived, the shape of the public ledger's SkillsBench rows."""
    row = {
        "benchmark_id": "skillsbench@1.1", "case_id": "3d-scan-calc", "run_group_id": "g-3d", "status": "completed",
        "official_task_score": {"passed": True, "value": 1.0}, "archived": True, "archived_at": "2026-06-30T21:12:48+08:00",
    }
    runs = [
        {**row, "run_id": "base1", "arm_id": "baseline", "recorded_at": "2026-06-16T07:33:42+08:00"},
        {**row, "run_id": "treat1", "arm_id": "codex_loopx_treatment", "recorded_at": "2026-06-16T07:33:43+08:00"},
    ]
    ledger = {"schema_version": "benchmark_run_ledger_v0", "benchmarks": {"skillsbench@1.1": {"cases": {"3d-scan-calc": {"runs": runs}}}}}
    path = tmp_path / "run-ledger.json"
    path.write_text(json.dumps(ledger))
    return path


def test_runs_paired_says_a_side_is_not_countable_as_compare_leaves_it_out(migrated_url, tmp_path):
    imported = invoke(migrated_url, "import-loopx", str(_archived_pair_ledger(tmp_path)), "--goal", "loopx")
    assert imported.exit_code == 0, imported.output
    paired = invoke(migrated_url, "runs", "--paired", "--wide")
    assert paired.exit_code == 0, paired.output
    row = next(line for line in paired.stdout.splitlines() if "3d-scan-calc" in line)
    assert "baseline not countable: archived; treatment not countable: archived" in row, paired.stdout
    # compare leaves the same pair out, saying why
    compared = invoke(migrated_url, "compare")
    assert "no paired tasks" in compared.stdout and "2 archived run(s) of these arms are left out" in compared.stdout, compared.stdout
    # and the JSON keeps what it said before (the note is the table's reading of `countable`)
    pair = json.loads(invoke(migrated_url, "runs", "--paired", "--format", "json").stdout)["pairs"][0]
    assert (pair["baseline"]["countable"], pair["baseline"]["not_countable_reason"]) == (False, "archived")


def test_the_public_loopx_ledger_reads_the_same_in_runs_summary_compare_and_paired(migrated_url):
    """The real data: imported as the docs say, its archived SkillsBench pairs are marked in `runs --paired` as compare leaves them out."""
    assert invoke(migrated_url, "import-loopx", str(PUBLIC), "--goal", "loopx-public").exit_code == 0
    summary = json.loads(invoke(migrated_url, "runs", "--summary", "--format", "json").stdout)
    archived = {(r["benchmark_id"], r["arm"]): r["archived"] for r in summary["pass_rates"]}
    compared = json.loads(invoke(migrated_url, "compare", "--format", "json").stdout)["comparisons"]
    for c in compared:
        if c["tasks"] == 0 and c["benchmark_id"] == "skillsbench@1.1":
            assert archived[(c["benchmark_id"], c["baseline_arm"])] + archived[(c["benchmark_id"], c["treatment_arm"])] > 0
    table = invoke(migrated_url, "runs", "--paired", "--benchmark", "skillsbench@1.1", "--wide").stdout.splitlines()[2:]
    assert table and all("not countable: archived" in line for line in table), table[:3]


def test_the_reports_pass_rate_cells_say_every_run_runs_summary_leaves_out(migrated_url, tmp_path):
    """Each pass-rate cell of the goal's page says what `runs --summary` counts beside the rate: its unscored runs and every
    run left out, by why. The cells named only the archived ones: '29 % (11/38)' where the summary has 3 unscored and
    4 not countable, '67 % (2/3; 31 archived left out)' beside 10 not countable."""
    import html
    import re

    assert invoke(migrated_url, "import-loopx", str(PUBLIC), "--goal", "loopx-public").exit_code == 0
    summary = json.loads(invoke(migrated_url, "runs", "--summary", "--format", "json").stdout)["pass_rates"]
    assert invoke(migrated_url, "report", "--goal", "loopx-public", "-o", str(tmp_path / "site")).exit_code == 0
    page = (tmp_path / "site" / "goals" / "loopx-public" / "index.html").read_text()
    shown = [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r'<div class="rate">(.*?)</div>', page)]
    cells = {(b, a): note for b, a, note in (re.fullmatch(r"(\S+) · (\S+) (?:\d+ %|—) \((.*)\)", cell).groups() for cell in shown)}
    why = (("archived", "archived"), ("superseded", "superseded"), ("retracted", "retracted"), ("not_countable", "not countable"))
    for rate in summary:
        if not (rate["runs"] or any(rate[key] for key, _ in why)):
            continue
        out = ", ".join(f"{rate[key]} {word}" for key, word in why if rate[key])
        unscored = f"; {rate['unscored']} unscored" if rate["unscored"] else ""
        want = f"{rate['passed']}/{rate['passed'] + rate['failed']}{unscored}" + (f"; left out: {out}" if out else "")
        assert cells[(rate["benchmark_id"], rate["arm"])] == want
    assert cells[("terminal-bench@2.0", "codex-goal-mode-baseline")] == "11/38; 3 unscored; left out: 4 not countable"
    assert cells[("skillsbench@1.1", "codex-app-server-goal-baseline")] == "2/3; left out: 27 archived, 14 not countable"


def test_an_empty_listing_says_so_on_stderr_and_keeps_stdout_the_listing(migrated_url):
    for args, says in (
        (["goals"], "no goals in this ledger (`benchledger info` names it)"),
        (["runs"], "no run matches here"),
        (["runs", "--paired"], "no run matches here"),
        (["checkpoints"], "no checkpoint has been signed in this ledger"),
    ):
        result = invoke(migrated_url, *args)
        assert result.exit_code == 0, (args, result.output)
        assert result.stdout.splitlines()[0].split()[0] in ("goal", "number"), result.stdout
        assert f"benchledger: note: {says}" in result.stderr, (args, result.stderr)
        for fmt in ("csv", "json") if args != ["checkpoints"] else ("json",):
            assert invoke(migrated_url, *args, "--format", fmt).stderr == "", (args, fmt)
    _quickstart(migrated_url)
    window = invoke(migrated_url, "history", "--goal", GOAL, "--since", "999999")
    assert window.exit_code == 0
    assert f"benchledger: note: no history entry of goal '{GOAL}' matches --since 999999" in window.stderr
    assert invoke(migrated_url, "history", "--goal", GOAL).stderr == ""
    paged = invoke(migrated_url, "goals", "--after", GOAL)
    assert f"no goals after '{GOAL}' in this ledger" in paged.stderr


def test_an_export_given_to_ingest_is_refused_not_stored_as_a_preflight_of_nulls(migrated_url, tmp_path):
    """`benchledger export > backup.ndjson`, then `ingest backup.ndjson` by mistake: its preflight line declares the
    preflight schema, and was stored as a preflight whose every field was null."""
    _quickstart(migrated_url)
    backup = tmp_path / "backup.ndjson"
    backup.write_text(invoke(migrated_url, "export", "--goal", GOAL).stdout)
    first = tmp_path / "first-line.ndjson"
    first.write_text(backup.read_text().splitlines()[0] + "\n")
    before = row_counts(migrated_url)
    for args in (["--goal", "restored", "--new-goal", str(backup)], ["--goal", "restored", "--new-goal", str(first)],
                 ["--goal", "restored", "--new-goal", "--kind", "preflight", str(first)], ["--goal", GOAL, str(first)]):
        result = invoke(migrated_url, "ingest", *args)
        assert result.exit_code == 1, (args, result.output)
        assert "this is a line of `benchledger export` (an event with its chain), not an artifact" in result.stderr, result.stderr
        assert "`benchledger import-ndjson FILE`" in result.stderr and "Traceback" not in result.output
    assert row_counts(migrated_url) == before
    skipped = invoke(migrated_url, "ingest", "--goal", "restored", "--new-goal", "--skip-unknown", str(backup))
    assert skipped.exit_code == 2 and "no artifact to ingest" in skipped.stderr
    assert row_counts(migrated_url) == before


def test_the_wrong_file_given_to_import_ndjson_or_merge_is_named_for_what_it_is(migrated_url, tmp_path):
    """A LoopX run ledger (pretty JSON: one 'invalid JSON' problem per line, 18,054 of them on the public file), an empty
    file ('no export trailer: the file is cut short'), one artifact, a folder (an internal error, exit 70)."""
    run_ledger = tmp_path / "run-ledger.json"
    run_ledger.write_text(json.dumps({"schema_version": "benchmark_run_ledger_v0", "benchmarks": {}}, indent=2))
    (tmp_path / "empty.ndjson").write_text("")
    (tmp_path / "folder").mkdir()
    cases = (
        (run_ledger, 1, "this is a LoopX run ledger (benchmark_run_ledger_v0), not an export: bring it in with `benchledger import-loopx FILE --goal GOAL`"),
        (tmp_path / "empty.ndjson", 1, "the file is empty: an export holds at least its trailer line"),
        (DEMO / "01-preflight.json", 1, "this is one JSON document over many lines, not an export (one event a line"),
        (tmp_path / "folder", 2, "folder: is a folder, not a file"),
    )
    for command in ("import-ndjson", "merge"):
        for path, code, says in cases:
            result = invoke(migrated_url, command, str(path))
            assert result.exit_code == code, (command, path, result.output)
            assert says in result.stderr, (command, path, result.stderr)
            assert "invalid JSON" not in result.output and "Traceback" not in result.output
    # a real export still goes in
    source = tmp_path / "source.sqlite"
    _quickstart(f"sqlite:///{source}")
    (tmp_path / "export.ndjson").write_text(invoke(f"sqlite:///{source}", "export").stdout)
    assert invoke(migrated_url, "import-ndjson", str(tmp_path / "export.ndjson")).exit_code == 0


def test_an_empty_file_or_a_folder_given_where_a_file_is_read(migrated_url, tmp_path):
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "blank.json").write_text("  \n")
    (tmp_path / "folder").mkdir()
    before = row_counts(migrated_url)
    for name in ("empty.json", "blank.json"):
        result = invoke(migrated_url, "ingest", "--goal", GOAL, "--new-goal", str(tmp_path / name))
        assert result.exit_code == 1 and f"{name}: invalid JSON: the file is empty or blank, no document in it" in result.stderr, result.output
        assert "Expecting value" not in result.output
    batches = invoke(migrated_url, "ingest-batches", str(tmp_path / "folder"))
    assert batches.exit_code == 1 and "folder: is a folder, not a file" in batches.stderr, batches.output
    assert row_counts(migrated_url) == before


def test_serve_on_an_address_it_cannot_listen_on_is_refused_without_saying_it_serves(migrated_url):
    pytest.importorskip("jinja2", reason="the report extra (pip install 'benchledger[report]')")
    result = invoke(migrated_url, "serve", "--host", "192.0.2.1", "--port", "0")  # TEST-NET-1: no interface of this host has it
    assert result.exit_code == 2, result.output
    assert "benchledger: cannot listen on 192.0.2.1:0" in result.stderr, result.stderr
    assert "serving on" not in result.stderr, result.stderr


def test_info_of_a_ledger_read_in_place_as_the_read_only_refusal_advises(tmp_path):
    """`--database-url 'sqlite:///file:PATH?immutable=1&uri=true'`, what the refusal of a read-only folder tells a user
    to type: goals and audit read it, and `info` said 'internal error (FileNotFoundError: … file:PATH)'."""
    ledger = tmp_path / "ledger.sqlite"
    _quickstart(f"sqlite:///{ledger}")
    in_place = f"sqlite:///file:{ledger}?immutable=1&uri=true"
    assert GOAL in invoke(in_place, "goals").stdout
    facts = json.loads(invoke(in_place, "info", "--format", "json").stdout)
    assert (facts["url"], facts["events"], facts["file_bytes"]) == (in_place, 11, ledger.stat().st_size)
    assert f"{ledger.stat().st_size} bytes" in invoke(in_place, "info").stdout


def test_a_mistyped_ledger_url_is_explained_and_nothing_is_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    demo = str(DEMO / "01-preflight.json")
    # a slash short: SQLAlchemy read 'tmp' as a host, dropped it, and a write made ./x.sqlite here
    for args in (["goals"], ["ingest", "--goal", "g", "--kind", "preflight", demo]):
        short = invoke("sqlite://tmp/x.sqlite", *args)
        assert short.exit_code == 2, short.output
        assert "sqlite://tmp/x.sqlite: a SQLite URL names no host, and this one names 'tmp'" in short.stderr, short.stderr
        assert "sqlite:////tmp/x.sqlite for /tmp/x.sqlite" in short.stderr
    assert list(tmp_path.iterdir()) == []
    # a path given as the URL
    ledger = tmp_path / "ledger.sqlite"
    _quickstart(f"sqlite:///{ledger}")
    bare = invoke(str(ledger), "goals")
    assert bare.exit_code == 2 and f"for the file {ledger}: sqlite:///{ledger}" in bare.stderr, bare.stderr
    # psycopg 3 named: the postgres extra (psycopg2) would not help
    other_driver = invoke("postgresql+psycopg://me@127.0.0.1/none", "goals")
    assert other_driver.exit_code == 2
    if "driver is not installed" in other_driver.stderr:  # (where psycopg 3 is installed, the server answers instead)
        assert "benchledger[postgres]" not in other_driver.stderr and "write postgresql:// for psycopg2" in other_driver.stderr


def test_ingest_counts_add_up_to_what_goals_and_history_count(migrated_url):
    """The quickstart's five ingests said 'appended: 1, 1, 1, 1, 2 event(s)'; `goals` then counted 11 events, and history
    numbered them #1, #3, #5: each new batch is an ingest_batch event more, which the report now says."""
    import re

    said = 0
    for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json")):
        out = invoke(migrated_url, "ingest", "--goal", GOAL, "--kind", kind, str(DEMO / name)).stdout
        assert "appended: 1 event(s); duplicates: 0 (artifacts; +1 ingest_batch event(s) grouping them)" in out, out
        said += sum(int(n) for n in re.findall(r"appended: (\d+) event\(s\)", out)) + 1
    again = invoke(migrated_url, "ingest", "--goal", GOAL, "--kind", "launch", str(DEMO / "02-launch.json")).stdout
    assert "appended: 0 event(s); duplicates: 1\n" in again  # (no batch appended: nothing more to say)
    goals = json.loads(invoke(migrated_url, "goals", "--format", "json").stdout)["goals"]
    assert goals[0]["event_count"] == said == 4


def test_keygen_refused_half_way_leaves_no_key_and_says_what_it_wrote(tmp_path):
    pytest.importorskip("cryptography", reason="the sign extra (pip install 'benchledger[sign]')")
    (tmp_path / "team.pub").write_text("someone else's public key\n")
    refused = invoke("sqlite://", "keygen", "--name", "example.org/walk", "--output", str(tmp_path / "team"))
    assert refused.exit_code == 2
    assert f"{tmp_path / 'team.pub'}: cannot be created (it exists: keygen never overwrites a key); nothing was written" in refused.stderr
    # the .key it had written is gone: it would sign what the .pub beside it does not verify
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.pub"]
    assert (tmp_path / "team.pub").read_text() == "someone else's public key\n"
    made = invoke("sqlite://", "keygen", "--name", "example.org/walk", "--output", str(tmp_path / "fresh"))
    assert made.exit_code == 0 and made.stdout.startswith("example.org/walk+")
    assert f"wrote {tmp_path / 'fresh'}.key (the signing key: keep it secret) and {tmp_path / 'fresh'}.pub" in made.stderr
    missing = invoke("sqlite://", "keygen", "--name", "x", "--output", str(tmp_path / "no" / "k"))
    assert missing.exit_code == 2 and "(No such file or directory); nothing was written" in missing.stderr


def test_history_attempt_takes_what_ingest_attempt_takes(migrated_url):
    """`ingest --attempt abc` is refused as no attempt id; `history --attempt abc` printed an empty table, exit 0."""
    _quickstart(migrated_url)
    for command in (["history", "--goal", GOAL], ["ingest", "--goal", GOAL, str(DEMO / "01-preflight.json")]):
        for typo in ("abc", "0", "01", "-1"):
            result = invoke(migrated_url, *command, "--attempt", typo)
            assert result.exit_code == 2, (command, typo, result.output)
            assert f"Invalid value for '--attempt': '{typo}' is not an attempt id" in result.stderr, result.stderr
    assert "preflight" in invoke(migrated_url, "history", "--goal", GOAL, "--attempt", "1").stdout


def test_a_goal_without_comparisons_says_so_instead_of_an_empty_table(migrated_url, tmp_path):
    """The Comparisons section of a goal that holds none said '0 comparison(s)' over a table of headers alone."""
    assert invoke(migrated_url, "ingest", "--goal", "only-preflight", str(DEMO / "01-preflight.json")).exit_code == 0
    assert invoke(migrated_url, "ingest", "--goal", "demo", str(DEMO)).exit_code == 0
    assert invoke(migrated_url, "report", "-o", str(tmp_path / "site")).exit_code == 0
    empty = (tmp_path / "site" / "goals" / "only-preflight" / "index.html").read_text()
    assert "No comparison in this goal yet" in empty and '<table class="batches">' not in empty and "0 comparison(s)" not in empty
    held = (tmp_path / "site" / "goals" / "demo" / "index.html").read_text()
    assert "1 comparison(s)" in held and '<table class="batches">' in held and "No comparison in this goal yet" not in held
