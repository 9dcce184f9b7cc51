"""benchmarks.bulk_jobs runs end to end on a tiny workload and prints what it promises (benchmarks/README.md,
"`ingest-batches --jobs`"): each --jobs's rate and CPU time per process, the ratios to --jobs 1 and to the serial
ceiling, and stage costs that add up to the instrumented run."""

from __future__ import annotations

import json

from benchmarks import bulk_jobs


def test_bulk_jobs_compares_jobs_with_one_job_and_the_ceiling_and_prints_the_stages(tmp_path, capsys, monkeypatch):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "CHUNK_BYTES", 4096)  # (a tiny workload still makes chunks for the workers)
    results = tmp_path / "results.json"

    assert bulk_jobs.main(["--goals", "3", "--rounds", "2", "--json", str(results)]) == 0

    out = capsys.readouterr().out
    assert "| `--jobs 1` |" in out and "| `--jobs 2` |" in out and "`--jobs 2` / `--jobs 1`: **" in out
    assert "`--jobs 1` / serial ceiling" in out and "| append: the projections' fold |" in out
    measured = json.loads(results.read_text())["backends"]["sqlite"]
    one, two = measured["runs"]["1"], measured["runs"]["2"]
    assert len(one) == len(two) == 2
    assert all(run["cpu_children"] == 0 for run in one) and all(run["cpu_children"] > 0 for run in two)  # (the workers' share)
    for stages in (measured["stages"]["wall"], measured["stages"]["cpu"]):
        assert {stage for _, _, stage in bulk_jobs.STAGES} <= stages.keys() and bulk_jobs.ROOT_STAGE in stages
    assert all(seconds > 0 for seconds in measured["stages"]["wall"].values())
    # the re-rendered tables are those printed
    assert bulk_jobs.main(["--render", str(results)]) == 0
    assert capsys.readouterr().out == out
