"""Secrets never leak into the ledger, on every backend.

Artifacts of every kind are filled with local paths and secret-like tokens
(each pattern of common-inputs.md §2.2) in every text field, in keys, in
identifiers and in review flags, and pushed through ``benchledger ingest`` and
``benchledger benchmark <review> --goal``. Some are stored (compacted), some
are refused; none of the planted strings may be stored anywhere:

* SQLite: the raw bytes of the database file, its ``-wal`` (scanned while a
  reader keeps it from being checkpointed away) and ``-shm``, then the file
  again after a checkpoint;
* PostgreSQL: every row of every table of the ledger's schema, as text;
* both: every stored string, matched against the spec's own patterns.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import create_engine, text

from benchledger.cli.main import cli
from benchledger.ledger.store import normalize_url
from tests.conformance.cases import CORPUS

CASES = CORPUS / "cases"

# common-inputs.md §2.2, written out here (the test does not trust the code it checks)
LOCAL_PATH = re.compile(r"(?<!<)/(?:Users|Volumes|var/folders|tmp|private/tmp)/[^\s`'\"<>]+")
SECRET_LIKE = re.compile(
    r"\bbearer\s+[a-z0-9._~+/=-]{16,}"
    r"|\b(?:access|secret)[_-]?key\s*[=:]\s*[^\s`'\"<>]+"
    r"|\b(?:ak|sk)\s*[=:]\s*[^\s`'\"<>]+"
    r"|(?<![a-z0-9_])(?:ak|sk)[-_=:][a-z0-9_=-]{10,}"
    r"|\btoken\s*[=:]\s*[^\s`'\"<>]{12,}",
    re.IGNORECASE,
)

# One planted string per pattern (and per path root); the MARK part is what the scans look for.
SECRETS = {
    "LEAKMARKA1": "/Users/LEAKMARKA1/private/run-7/log.txt",
    "LEAKMARKA2": "/Volumes/LEAKMARKA2/jobs/x",
    "LEAKMARKA3": "/var/folders/LEAKMARKA3/T/tmp.x",
    "LEAKMARKA4": "/tmp/LEAKMARKA4/job",
    "LEAKMARKA5": "/private/tmp/LEAKMARKA5/job",
    "LEAKMARKB1": "Authorization: Bearer LEAKMARKB1abcdefghijkl",
    "LEAKMARKB2": "access_key=LEAKMARKB2",
    "LEAKMARKB3": "secret-key: LEAKMARKB3",
    "LEAKMARKB4": "sk = LEAKMARKB4",
    "LEAKMARKB5": "sk-LEAKMARKB5abcdef",
    "LEAKMARKB6": "AK_LEAKMARKB6xyz",
    "LEAKMARKB7": "token=LEAKMARKB7abcdefgh",
}
for mark, planted in SECRETS.items():
    assert mark in planted and (LOCAL_PATH.search(planted) or SECRET_LIKE.search(planted)), planted
MARKS = [m.encode() for m in SECRETS] + [m.lower().encode() for m in SECRETS]
IDENTIFIERS = ("schema_version", "task_id", "comparison_id", "goal_id")


# One counter for every call, so consecutive plants cycle through all the secrets.
_PLANT_COUNTER = itertools.count()


def plant(value, counter=_PLANT_COUNTER, *, keep=IDENTIFIERS, replace=False):
    """Every string (but ``keep``'s) gets a planted secret appended (or is replaced by one); objects get a secret key."""
    secrets = list(SECRETS.values())

    def walk(node, key=None):
        if isinstance(node, str) and key not in keep:
            secret = secrets[next(counter) % len(secrets)]
            return secret if replace else f"{node} {secret}"
        if isinstance(node, dict):
            out = {k: walk(v, k) for k, v in node.items()}
            out.setdefault("notes", " ".join(secrets))
            return out
        if isinstance(node, list):
            return [walk(v, key) for v in node]
        return node

    return walk(value)


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _write(folder: Path, name: str, value) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


SOURCES = {
    # name: (file, --kind or None)
    "comparison": (CASES / "review-claim/claim-review-01/comparison.json", None),
    "run-1": (CASES / "review-claim/claim-review-01/run-1.json", None),
    "run-2": (CASES / "review-claim/claim-review-01/run-2.json", None),
    "result": (CASES / "baseline-failure-gate/baseline-gate-01/baseline-result.json", None),
    "learning-ledger": (CASES / "attempt-learning-gate/attempt-gate-03/ledger.json", None),
    "claim-review": (CASES / "lifecycle-state/lifecycle-04/claim-review.json", None),
    "preflight": (CASES / "lifecycle-state/core-adapter-01/preflight.json", "preflight"),
    "launch": (CASES / "lifecycle-state/core-adapter-01/launch.json", "launch"),
    "post-launch": (CASES / "lifecycle-state/core-adapter-01/post-launch.json", "post-launch"),
    "adapter-invocation": (CASES / "review-adapter-kwargs/adapter-kwargs-03/command.json", "adapter-invocation"),
}


def run_everything(url: str, folder: Path) -> list[tuple[list[str], int, str]]:
    """Every way in: ingest of each kind (appended / replaced / in keys / in identifiers) and reviews with --goal."""
    calls: list[list[str]] = []
    for name, (source, kind) in SOURCES.items():
        original = _load(source)
        variants = {
            "appended": plant(original),
            "replaced": plant(original, replace=True),
            "identifiers": plant(original, keep=("schema_version",)),
        }
        if isinstance(original, dict):
            variants["keys"] = {**original, **{secret: 1 for secret in SECRETS.values()}}
        for variant, value in variants.items():
            path = _write(folder / variant, f"{name}.json", value)
            calls.append(["ingest", "--goal", f"ingest-{variant}", *(["--kind", kind] if kind else []), path])
        # the same content as NDJSON (one artifact a line)
        ndjson = folder / "ndjson" / f"{name}.ndjson"
        ndjson.parent.mkdir(parents=True, exist_ok=True)
        ndjson.write_text(json.dumps(variants["appended"]) + "\n" + json.dumps(variants["replaced"]) + "\n", encoding="utf-8")
        calls.append(["ingest", "--goal", "ndjson", *(["--kind", kind] if kind else []), str(ndjson)])

    planted = {name: _write(folder / "review", f"{name}.json", plant(_load(source))) for name, (source, _) in SOURCES.items()}
    secret = SECRETS["LEAKMARKA1"]
    calls += [
        ["benchmark", "review-claim", "--goal", "review", "--benchmark-comparison-json", planted["comparison"],
         "--benchmark-run-json", planted["run-1"], "--benchmark-run-json", planted["run-2"]],
        ["benchmark", "learning-ledger", "--goal", "review", "--benchmark-comparison-json", planted["comparison"],
         "--benchmark-run-json", planted["run-1"], "--benchmark-run-json", planted["run-2"]],
        ["benchmark", "review-verifier-attribution", "--goal", "review", "--benchmark-run-json", planted["run-1"]],
        ["benchmark", "review-runner-invariants", "--goal", "review", "--benchmark-run-json", planted["run-2"]],
        ["benchmark", "review-runner-invariants", "--goal", "review", "--benchmark-run-json", planted["run-2"],
         "--runner-label", secret],
        ["benchmark", "attempt-learning-gate", "--goal", "review", "--benchmark-run-json", planted["run-1"],
         "--benchmark-learning-ledger-json", planted["learning-ledger"]],
        ["benchmark", "lifecycle-state", "--goal", "review", "--preflight-json", planted["preflight"],
         "--launch-json", planted["launch"], "--post-launch-json", planted["post-launch"],
         "--claim-review-json", planted["claim-review"]],
        ["benchmark", "review-adapter-kwargs", "--goal", "review", "--adapter-label", "lbl",
         "--command-json", planted["adapter-invocation"],
         *[arg for s in SECRETS.values() for arg in ("--agent-kwarg", f"loopx_scan_path={s}")]],
        ["benchmark", "review-adapter-kwargs", "--goal", "review", "--adapter-label", secret,
         "--agent-kwarg", "loopx_mode=codex_loopx"],
    ]
    outcomes = []
    for args in calls:
        result = CliRunner().invoke(cli, ["--database-url", url, *args])
        outcomes.append((args, result.exit_code, result.output))
    return outcomes


def _strings_of_all_tables(url: str) -> list[str]:
    engine = create_engine(normalize_url(url))
    found: list[str] = []
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            tables = [r[0] for r in connection.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                for row in connection.exec_driver_sql(f'SELECT * FROM "{table}"'):
                    found += [str(v) for v in row if v is not None]
        else:
            tables = [r[0] for r in connection.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"))]
            assert {"events", "stream_heads", "projection_rows"} <= set(tables)
            for table in tables:
                found += [r[0] for r in connection.execute(text(f'SELECT t::text FROM "{table}" t'))]
    engine.dispose()
    return found


def _leaks_in(data: bytes) -> list[str]:
    return sorted({m.decode() for m in MARKS if m in data})


def test_planted_paths_and_tokens_are_never_stored(ledger, ledger_url, tmp_path):
    sqlite_path = Path(ledger.engine.url.database) if ledger.dialect == "sqlite" else None
    keeper = None
    if sqlite_path is not None:
        # a reader that stays open keeps the -wal from being checkpointed and removed
        keeper = sqlite3.connect(sqlite_path)
        keeper.execute("SELECT count(*) FROM events").fetchone()

    outcomes = run_everything(ledger_url, tmp_path / "inputs")
    for args, code, output in outcomes:
        assert code in (0, 1), (args, code, output)
        assert "Traceback" not in output
    stored_ok = [a for a, c, _ in outcomes if c == 0]
    refused = [a for a, c, _ in outcomes if c == 1]
    assert len(stored_ok) >= 15 and len(refused) >= 5  # both paths exercised
    assert ledger.event_count() > 20

    # every stored string, against the spec's patterns
    strings = _strings_of_all_tables(ledger_url)
    offending = [s for s in strings if LOCAL_PATH.search(s) or SECRET_LIKE.search(s) or _leaks_in(s.encode())]
    assert offending == []

    if sqlite_path is not None:
        files = [p for p in (sqlite_path, Path(f"{sqlite_path}-wal"), Path(f"{sqlite_path}-shm")) if p.exists()]
        assert Path(f"{sqlite_path}-wal") in files and Path(f"{sqlite_path}-wal").stat().st_size > 0
        for path in files:
            assert _leaks_in(path.read_bytes()) == [], path
        keeper.close()
        ledger.close()
        with sqlite3.connect(sqlite_path) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert _leaks_in(sqlite_path.read_bytes()) == []
