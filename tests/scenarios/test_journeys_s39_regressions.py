"""Session 39's changes walked again on real data, on both backends, as a newcomer works: the journeys they broke.

The public LoopX run ledger's rows saved one file each (``tests.report_helpers.public_runs``) hold identical documents:
runs of one job with the same outcome. ``ingest --goal g runs/`` takes each such copy once and says so (010b78a); an
``ingest-batches`` file made of the same folder, a line per benchmark as a script writes it, was refused whole
(``raw.ndjson:1: artifacts[11]: the same document as artifacts[8] in this batch: … give it once``, exit 1), where before
this session it was taken.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import invoke
from tests.report_helpers import public_runs

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def _batches_of_the_public_runs(tmp_path: Path) -> tuple[Path, int]:
    """An ingest-batches file of the public runs saved one file each, a line per benchmark listing its files' documents (as
    ``for f in runs/*.json`` makes it), and how many of those documents repeat one listed before them on their line."""
    lines: dict[str, list[dict]] = defaultdict(list)
    for path in public_runs(tmp_path / "runs"):
        run = json.loads(path.read_text())
        lines[run["benchmark_id"]].append(run)
    batches = tmp_path / "runs.ndjson"
    batches.write_text("".join(json.dumps({"goal_id": "public-runs", "artifacts": runs}) + "\n" for runs in lines.values()))
    repeated = sum(len(runs) - len({json.dumps(run, sort_keys=True) for run in runs}) for runs in lines.values())
    return batches, repeated


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_ingest_batches_file_of_the_public_runs_takes_each_repeated_document_once_and_says_so(migrated_url, tmp_path, jobs):
    batches, repeated = _batches_of_the_public_runs(tmp_path)
    assert repeated > 0  # (the real data holds them: this is the journey)
    done = invoke(migrated_url, "ingest-batches", "--jobs", jobs, str(batches))
    assert done.exit_code == 0, done.output
    taken_once = [line for line in done.stdout.splitlines() if line.startswith("- taken once: ")]
    assert repeated > 20 and len(taken_once) == 21 and taken_once[-1] == f"- taken once: ... and {repeated - 20} more", done.stdout
    assert all(re.fullmatch(r"- taken once: line \d+: artifacts\[\d+\]: the same document as artifacts\[\d+\] in this batch", line) for line in taken_once[:-1]), taken_once
    assert "error" not in done.stderr, done.stderr

    # the same runs as `ingest --goal g runs/` appends: each document once
    folder = invoke(migrated_url, "ingest", "--goal", "public-folder", "--format", "json", str(tmp_path / "runs"))
    assert folder.exit_code == 0, folder.output
    report = json.loads(invoke(migrated_url, "ingest-batches", "--format", "json", str(batches)).stdout)
    assert report["ok"] and report["appended"] == 0 and report["artifacts"] == json.loads(folder.stdout)["appended_count"]
    assert report["taken_once_count"] == repeated == len(json.loads(folder.stdout)["taken_once"])
    first = report["taken_once"][0]
    assert f"- taken once: line {first['line']}: {first['source']}: {first['reason']}" == taken_once[0], (first, taken_once[0])



@pytest.mark.parametrize("command", ["ingest-batches", "import-ndjson", "merge"])
def test_a_file_of_json_lines_saved_as_utf16_is_refused_once_as_such(migrated_url, tmp_path, command):
    """PowerShell's ``benchledger export > backup.ndjson`` (or a batch file written the same way) writes UTF-16: ingest
    names such a file (01dd430), where the readers of JSON lines said it a line at a time, none saying what it is
    (import-ndjson: 'line 1: invalid JSON: 'utf-8' codec can't decode byte 0xff …', then 'line 2: invalid JSON:
    Expecting value …'; ingest-batches: 'line 1: is UTF-16 …', …, 'line 3: contains a NUL character')."""
    assert invoke(migrated_url, "ingest", "--goal", "demo", *(str(DEMO / name) for name in ("04-run-baseline.json", "05-run-treatment.json"))).exit_code == 0
    if command == "ingest-batches":
        text = json.dumps({"goal_id": "demo", "artifacts": [json.loads((DEMO / "06-comparison.json").read_text())]}) + "\n"
    else:
        text = invoke(migrated_url, "export", "--goal", "demo").stdout
    saved = tmp_path / "saved.ndjson"
    saved.write_bytes(text.encode("utf-16"))  # (with its byte-order mark, as Windows PowerShell 5.1's > writes it)
    target = f"sqlite:///{tmp_path / 'other.sqlite'}" if command != "ingest-batches" else migrated_url
    done = invoke(target, command, str(saved))
    assert done.exit_code in (1, 2), done.output
    said = f"{saved}: is UTF-16 or UTF-32 text (Windows PowerShell's > writes UTF-16), not UTF-8: save it as plain UTF-8"
    assert said in done.output and "line 2" not in done.output and "NUL" not in done.output, done.output
