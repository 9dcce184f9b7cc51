"""Reviews kept with --goal, as a user types them, on both backends (session 39, "kept reviews").

A review's inputs are kept through the storage guard, which judges each stored column beside the payload. The
``schema_version`` column copies the document's own ``$.schema_version``, so a secret there was refused twice in
one line ("preflight.json: schema_version holds a secret …; preflight.json: $.schema_version of this preflight
holds a secret …"): it is said once, at its JSON path; the column's width is still the column's to refuse.
"""

from __future__ import annotations

import json

from tests.helpers import invoke, row_counts

SECRET_RULE = "holds a secret of LoopX's filter (bearer …, access_key=…, sk-…, token=…) [loopx-secret]"
REFUSED = "nothing was written (what the ledger refuses: docs/privacy.md)"


def test_a_secret_schema_version_is_refused_once(migrated_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "preflight.json").write_text(json.dumps({"schema_version": "token=aaaaaaaaaaaa", "ready": True}))
    before = row_counts(migrated_url)

    review = invoke(migrated_url, "benchmark", "lifecycle-state", "--preflight-json", "preflight.json", "--goal", "g1", "--format", "json")
    assert (review.exit_code, review.stdout) == (1, "")
    assert review.stderr == f"benchledger: preflight.json: $.schema_version of this preflight {SECRET_RULE}; {REFUSED}\n"

    ingest = invoke(migrated_url, "ingest", "--goal", "g1", "--kind", "preflight", "preflight.json")
    assert ingest.exit_code == 1
    assert [line for line in ingest.stderr.splitlines() if line.startswith("error:")] == [
        f"error: preflight.json: $.schema_version of this preflight {SECRET_RULE}"
    ]
    assert row_counts(migrated_url) == before


def test_a_schema_version_wider_than_its_column_is_still_refused(migrated_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "launch.json").write_text(json.dumps({"schema_version": "a" * 200}))
    before = row_counts(migrated_url)

    review = invoke(migrated_url, "benchmark", "lifecycle-state", "--launch-json", "launch.json", "--goal", "g1", "--format", "json")
    assert (review.exit_code, review.stdout) == (1, "")
    assert review.stderr == f"benchledger: launch.json: schema_version is 200 characters, longer than the 128 the ledger stores; {REFUSED}\n"
    assert row_counts(migrated_url) == before
