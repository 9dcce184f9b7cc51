"""Small things that teach a user not to trust a tool (issue #28, items 7, 14-17), as a user types them, on both backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")

NOT_READY = {"schema_version": "benchmark_preflight_fixture_v0", "ready": False, "first_blocker": "docker_daemon_unreachable"}
READY = {"schema_version": "benchmark_preflight_fixture_v0", "ready": True, "first_blocker": "ready_for_private_managed_no_upload_pilot_review"}


def _ok(url: str, *args: str, env: dict | None = None) -> str:
    result = invoke(url, *args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(url: str, *args: str) -> dict:
    return json.loads(_ok(url, *args, "--format", "json"))


def _write(path: Path, document) -> Path:
    path.write_text(json.dumps(document, indent=2))
    return path


def _history(url: str, goal: str, *args: str) -> list[dict]:
    return _json(url, "history", "--goal", goal, *args)["entries"]


# -- 17. `cmd | head` ----------------------------------------------------------------------------------------------


def _many_preflights(url: str, tmp_path: Path, count: int) -> None:
    """One goal ``big`` of ``count`` preflights: more output than a pipe holds (64 KiB)."""
    artifacts = [{**NOT_READY, "generated_at": f"2026-11-23T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"} for i in range(count)]
    lines = tmp_path / "big.ndjson"
    lines.write_text(json.dumps({"goal_id": "big", "kind": None, "artifacts": artifacts}) + "\n")
    _ok(url, "ingest-batches", str(lines))


def _piped_to_head(url: str, command: str) -> subprocess.CompletedProcess:
    """``set -o pipefail; benchledger … COMMAND | head -n 2`` in a real shell: the status is benchledger's."""
    env = {k: v for k, v in os.environ.items() if k != "BENCHLEDGER_DEBUG"}
    script = f"set -o pipefail; '{BENCHLEDGER}' --database-url '{url}' {command} | head -n 2 > /dev/null"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=300)


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly_with_141_as_git_and_grep_do(migrated_url, tmp_path):
    _many_preflights(migrated_url, tmp_path, 1500)
    for command in ("export", "history --goal big", "history --goal big --format csv", "history --goal big --format json"):
        piped = _piped_to_head(migrated_url, command)
        assert (piped.returncode, piped.stderr) == (141, ""), command
    # the whole output still reaches a reader that reads it all
    whole = subprocess.run(
        ["bash", "-c", f"set -o pipefail; '{BENCHLEDGER}' --database-url '{migrated_url}' history --goal big --format csv | wc -l"],
        capture_output=True, text=True, timeout=300,
    )
    assert (whole.returncode, whole.stdout.strip(), whole.stderr) == (0, "1502", "")


def test_a_committed_ingest_whose_reader_closed_the_pipe_still_exits_0_quietly(migrated_url, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(1500):
        _write(folder / f"p{i:04d}.json", {**NOT_READY, "generated_at": f"2026-11-23T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"})
    piped = _piped_to_head(migrated_url, f"ingest --goal many --format json '{folder}'")
    assert (piped.returncode, piped.stderr) == (0, "")
    assert row_counts(migrated_url)["events"] == 1501


# -- 16. show --key, --as-of precision -----------------------------------------------------------------------------


def test_show_of_a_key_no_row_has_exits_2_naming_it(migrated_url):
    _ok(migrated_url, "ingest", "--goal", "demo", str(DEMO))
    result = invoke(migrated_url, "show", "--goal", "demo", "--projection", "review-claim", "--key", "nope")
    assert result.exit_code == 2
    assert result.stderr.startswith("benchledger: no row 'nope' in projection review-claim of goal 'demo'"), result.stderr
    assert result.stdout == ""
    (row,) = _json(migrated_url, "show", "--goal", "demo", "--projection", "lifecycle-state", "--key", "current")["projections"]["lifecycle-state"]
    assert row["key"] == "current"
    replayed = invoke(migrated_url, "show", "--goal", "demo", "--as-of", "2", "--projection", "review-claim", "--key", "nope")
    assert replayed.exit_code == 2 and "no row 'nope'" in replayed.stderr and "as of position 2" in replayed.stderr


def test_a_time_without_a_fraction_takes_in_the_whole_day_minute_or_second_it_names_and_says_so(migrated_url):
    _ok(migrated_url, "ingest", "--goal", "demo", str(DEMO))
    entries = _history(migrated_url, "demo")
    recorded = entries[-1]["recorded_at"]  # e.g. 2026-12-04T23:25:15.123456Z
    day, minute, second = recorded[:10], recorded[:16], recorded[:19]
    last = entries[-1]["position"]
    for given, period, instant in (
        (day, "day", f"{day}T23:59:59.999999Z"),
        (minute, "minute", f"{minute}:59.999999Z"),
        (second, "second", f"{second}.999999Z"),
        (second + "Z", "second", f"{second}.999999Z"),
    ):
        view = _json(migrated_url, "history", "--goal", "demo", "--as-of", given)
        assert (view["as_of_position"], view["as_of_time"], view["as_of_period"]) == (last, instant, period), given
        first_line = _ok(migrated_url, "history", "--goal", "demo", "--as-of", given).splitlines()[0]
        assert first_line == (
            f"as of position {last}: the events the ledger recorded (recorded_at, UTC) at or before {instant} "
            f"(--as-of {given} takes in that whole {period})"
        )
        shown = _json(migrated_url, "show", "--goal", "demo", "--as-of", given)
        assert (shown["as_of_position"], shown["as_of_time"], shown["as_of_period"]) == (last, instant, period)
        # --until the same value ends at the same instant; --since it starts at the period's first instant
        assert [e["position"] for e in _history(migrated_url, "demo", "--until", given)] == [e["position"] for e in entries]
        assert [e["position"] for e in _history(migrated_url, "demo", "--since", given, "--until", given)] == [e["position"] for e in entries]
    # a time to the fraction is that instant, not a period
    view = _json(migrated_url, "history", "--goal", "demo", "--as-of", recorded)
    assert (view["as_of_time"], view["as_of_period"]) == (recorded, None)
    first_line = _ok(migrated_url, "history", "--goal", "demo", "--as-of", recorded).splitlines()[0]
    assert first_line == f"as of position {last}: the events the ledger recorded (recorded_at, UTC) at or before {recorded}"
    # the day before holds nothing; a position is a position
    before = _json(migrated_url, "history", "--goal", "demo", "--as-of", "2000-01-01")
    assert (before["as_of_position"], before["as_of_time"], before["entries"]) == (0, "2000-01-01T23:59:59.999999Z", [])
    assert _json(migrated_url, "history", "--goal", "demo", "--as-of", "3")["as_of_time"] is None


# -- 15. audit --expect-digest -------------------------------------------------------------------------------------


def test_audit_says_the_expected_digest_was_verified_and_a_mismatch_blames_no_goal(migrated_url, tmp_path):
    _ok(migrated_url, "ingest", "--goal", "a", str(_write(tmp_path / "a1.json", NOT_READY)))
    _ok(migrated_url, "ingest", "--goal", "b", str(_write(tmp_path / "b1.json", READY)))
    digest = _json(migrated_url, "audit")["digest"]
    _ok(migrated_url, "ingest", "--goal", "a", str(_write(tmp_path / "a2.json", READY)))

    kept = _json(migrated_url, "audit", "--expect-digest", digest)
    assert (kept["ok"], kept["expected_digest"], kept["expected_digest_verified"]) == (True, digest, True)
    assert f"- expected digest `{digest}`: verified: the history up to position 4 is unchanged" in _ok(
        migrated_url, "audit", "--expect-digest", digest
    ).splitlines()
    assert _json(migrated_url, "audit")["expected_digest_verified"] is None  # none expected, none claimed

    # The same evidence ingested into another ledger is other history (other times, other chains):
    # position 4 is goal b's batch there, but nothing says b was tampered with.
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    _ok(other, "ingest", "--goal", "a", str(tmp_path / "a1.json"))
    _ok(other, "ingest", "--goal", "b", str(tmp_path / "b1.json"))
    result = invoke(other, "audit", "--expect-digest", digest, "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["expected_digest"], report["expected_digest_verified"]) == (digest, False)
    (problem,) = report["problems"]
    actual = report["digest"]
    assert (problem["kind"], problem["goal_id"], problem["position"]) == ("digest_mismatch", None, 4)
    assert f"has digest {actual}, not the expected {digest}" in problem["detail"]
    text = invoke(other, "audit", "--expect-digest", digest).stdout.splitlines()
    assert f"- expected digest `{digest}`: NOT verified (below)" in text
    (line,) = [line for line in text if line.startswith("- digest_mismatch")]
    assert line.startswith("- digest_mismatch (position 4): history up to position 4 of the ledger has digest") and "goal" not in line


# -- 7. retraction a person can use --------------------------------------------------------------------------------


def _two_preflights(url: str, tmp_path: Path) -> list[dict]:
    _ok(url, "ingest", "--goal", "w", str(_write(tmp_path / "p1.json", NOT_READY)))
    _ok(url, "ingest", "--goal", "w", str(_write(tmp_path / "p2.json", READY)))
    return [e for e in _history(url, "w") if e["kind"] == "preflight"]


def test_history_shows_event_ids_where_retract_needs_them(migrated_url, tmp_path):
    first, second = _two_preflights(migrated_url, tmp_path)
    wide = _ok(migrated_url, "history", "--goal", "w", "--wide").splitlines()
    assert "event id" in wide[0].split("  ")
    assert any(first["event_id"] in line for line in wide) and any(second["event_id"] in line for line in wide)
    csv_lines = _ok(migrated_url, "history", "--goal", "w", "--format", "csv").splitlines()
    assert csv_lines[0].split(",")[3] == "event id" and csv_lines[1].split(",")[3] == first["event_id"]
    assert first["event_id"] in _ok(migrated_url, "history", "--goal", "w", "--format", "markdown")
    help_text = " ".join(_ok(migrated_url, "retract", "--help").split())
    assert "@POSITION" in help_text and "history --wide" in help_text


def test_retract_takes_a_unique_prefix_or_a_position_and_a_dry_run_writes_nothing(migrated_url, tmp_path):
    first, second = _two_preflights(migrated_url, tmp_path)
    before = row_counts(migrated_url)

    dry = _json(migrated_url, "retract", second["event_id"][:8], "--reason", "wrong host", "--dry-run")
    assert (dry["dry_run"], dry["retracts"], dry["reason"]) == (True, [second["event_id"]], "wrong host")
    assert [(e["event_id"], e["position"], e["kind"]) for e in dry["events"]] == [(second["event_id"], second["position"], "preflight")]
    assert dry["lifecycle_before"]["first_blocker"] != dry["lifecycle_after"]["first_blocker"] == "preflight_not_ready"
    text = _ok(migrated_url, "retract", f"@{second['position']}", "--reason", "wrong host", "--dry-run")
    assert text.startswith("# would retract 1 event(s) of goal `w` (dry run: nothing was written)")
    assert f"- @{second['position']} preflight {second['event_id']}: " in text
    assert "first blocker preflight_not_ready" in text.splitlines()[-1]
    assert row_counts(migrated_url) == before  # nothing written

    done = _json(migrated_url, "retract", f"@{second['position']}", "--reason", "wrong host")
    assert (done["dry_run"], done["retracts"]) == (False, [second["event_id"]])
    assert (done["event_id"], done["position"], done["lifecycle_after"]) == (dry["event_id"], dry["position"], dry["lifecycle_after"])
    assert _json(migrated_url, "show", "--goal", "w")["projections"]["lifecycle-state"][0]["payload"]["first_blocker"] == "preflight_not_ready"
    # a position of another goal's event, with --goal, and one past the end are refused by name
    _ok(migrated_url, "ingest", "--goal", "other", str(_write(tmp_path / "o.json", NOT_READY)))
    other = invoke(migrated_url, "retract", "@1", "--goal", "other", "--reason", "x")
    assert other.exit_code == 2 and "@1: no event at position 1 of goal 'other'" in other.stderr
    assert "no event at position 999" in invoke(migrated_url, "retract", "@999", "--reason", "x").stderr
    short = invoke(migrated_url, "retract", "3", "--reason", "x")
    assert short.exit_code == 2 and "(position 3: @3)" in short.stderr


def test_an_ambiguous_prefix_is_refused_listing_the_candidates(migrated_url, tmp_path):
    _many_preflights(migrated_url, tmp_path, 1500)
    ids = sorted(e["event_id"] for e in _history(migrated_url, "big"))
    shared = next(a[:4] for a, b in zip(ids, ids[1:]) if a[:4] == b[:4])  # 1,500 ids, 16 bits of prefix: some share one (ids are content hashes: the same on every run)
    candidates = [i for i in ids if i.startswith(shared)]
    before = row_counts(migrated_url)
    result = invoke(migrated_url, "retract", shared, "--reason", "x")
    assert result.exit_code == 2
    assert f"{shared}: {len(candidates)} events start with it, give more of the id: " in result.stderr
    assert all(f"{i} (goal big, position " in result.stderr for i in candidates)
    assert row_counts(migrated_url) == before
    longer = next(i for i in candidates)[:13]
    assert _json(migrated_url, "retract", longer, "--reason", "x", "--dry-run")["retracts"] == [candidates[0]]


def test_retracted_events_are_marked_in_history_and_in_the_report(migrated_url, tmp_path):
    first, second = _two_preflights(migrated_url, tmp_path)
    done = _json(migrated_url, "retract", second["event_id"], "--reason", "preflight of the wrong host")
    entries = {e["event_id"]: e for e in _history(migrated_url, "w")}
    assert entries[second["event_id"]]["retracted_by"] == {"event_id": done["event_id"], "position": done["position"], "reason": "preflight of the wrong host"}
    assert entries[first["event_id"]]["retracted_by"] is None
    # as of before the retraction, nothing was retracted yet
    old = {e["event_id"]: e for e in _history(migrated_url, "w", "--as-of", str(done["position"] - 1))}
    assert old[second["event_id"]]["retracted_by"] is None
    # a table, CSV and markdown mark it with the retraction's position
    table = _ok(migrated_url, "history", "--goal", "w").splitlines()
    assert "retracted" in table[0]
    (marked,) = [line for line in table if f"by @{done['position']}" in line]
    assert marked.split()[1] == str(second["position"])
    rows = _ok(migrated_url, "history", "--goal", "w", "--format", "csv").splitlines()
    header = rows[0].split(",")
    by_id = {row.split(",")[3]: row.split(",")[header.index("retracted")] for row in rows[1:]}
    assert (by_id[second["event_id"]], by_id[first["event_id"]]) == (f"by @{done['position']}", "")
    assert f"| by @{done['position']} |" in _ok(migrated_url, "history", "--goal", "w", "--format", "markdown")

    site = tmp_path / "site"
    _ok(migrated_url, "report", "--goal", "w", "--output", str(site))
    page = (site / "goals" / "w" / "index.html").read_text()
    retractions = page[page.index('<section id="retractions">') :]
    assert "preflight of the wrong host" in retractions[: retractions.index("</section>")]
    assert second["event_id"] in retractions[: retractions.index("</section>")]
    opened = page.index('<table class="timeline">')
    timeline = page[opened : page.index("</table>", opened)]
    (row,) = [r for r in timeline.split("<tr>") if f'<td class="num">{second["position"]}</td>' in r]
    assert f"retracted at position {done['position']}" in row


# -- 14. tables at 80-120 columns ----------------------------------------------------------------------------------


def _table(text: str) -> list[dict[str, str]]:
    """A printed table's rows as {header: cell}, the columns read off its rule line."""
    lines = text.splitlines()
    spans, start = [], 0
    for dashes in lines[1].split("  "):
        if dashes:
            spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    spans[-1] = (spans[-1][0], None)  # (the last column's cells run to the end of the line)
    headers = [lines[0][a:b].strip() for a, b in spans]
    return [{h: line[a:b].strip() for h, (a, b) in zip(headers, spans)} for line in lines[2:]]


def _abbreviates(cell: str, value: str) -> bool:
    """Whether ``cell`` is ``value`` with parts left out as ``…`` (its pieces are the value's, in order)."""
    first, *middle, last = cell.split("…") if "…" in cell else (cell, cell)
    if "…" not in cell:
        return cell == value
    rest = value[len(first):] if value.startswith(first) else None
    for piece in middle:
        if rest is None or piece not in rest:
            return False
        rest = rest[rest.index(piece) + len(piece):]
    return rest is not None and rest.endswith(last)


def test_narrow_tables_keep_ids_and_times_whole_and_tell_two_arms_apart(migrated_url, tmp_path):
    run = json.loads((DEMO / "04-run-baseline.json").read_text())
    arms = ["skillsbench-raw-codex-autonomous-max5-baseline", "skillsbench-raw-codex-autonomous-max5-loopx-treatment"]
    files = [
        _write(tmp_path / f"run-{i}.json", {**run, "benchmark_id": "skillsbench@1.1", "mode": arm, "job_name": f"skillsbench-ada-bathroom-{arm}"})
        for i, arm in enumerate(arms)
    ]
    _ok(migrated_url, "ingest", "--goal", "skills", *map(str, files))
    runs = _json(migrated_url, "runs")["runs"]
    history = _history(migrated_url, "skills")
    for columns in ("80", "100", "120"):
        narrow = {"COLUMNS": columns}
        rows = _table(_ok(migrated_url, "runs", env=narrow))
        assert {r["run"] for r in rows} == {r["run_id"] for r in runs}, columns  # ids whole
        assert {r["recorded (UTC)"] for r in rows} == {r["recorded_at"][:19] + "Z" for r in runs}, columns  # times whole
        arm_of = {r["run_id"]: r["arm"] for r in runs}
        assert len({r["arm"] for r in rows}) == 2, (columns, rows)  # two arms, two different cells
        assert all(_abbreviates(r["arm"], arm_of[r["run"]]) for r in rows), (columns, rows)
        # history: the empty "artifact time" column goes first; positions and times stay whole
        table = _ok(migrated_url, "history", "--goal", "skills", env=narrow)
        entries = _table(table)
        assert "artifact time" not in table.splitlines()[0], columns
        assert [(e["pos"], e["recorded"]) for e in entries] == [(str(h["position"]), h["recorded_at"][:19] + "Z") for h in history], columns
        assert all(len(line) <= int(columns) for line in table.splitlines()), columns
    # --wide still prints every column, every cell whole
    wide = _table(_ok(migrated_url, "history", "--goal", "skills", "--wide", env={"COLUMNS": "80"}))
    assert "artifact time" in wide[0] and [e["event id"] for e in wide] == [h["event_id"] for h in history]
