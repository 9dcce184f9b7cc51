"""The ``--jobs`` benchmark runs end to end on a small ledger and prints every row it promises (benchmarks/README.md, issue 31)."""

from __future__ import annotations

from benchmarks import jobs


def test_jobs_benchmark_prints_audit_and_replay_for_each_jobs_value(capsys):
    assert jobs.main(["--events", "3000", "--jobs", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    for command in ("audit", "replay"):
        for n in (1, 2):
            assert f"| `{command}` | {n} |" in out
    assert "(target >= 1.7x: " in out and "caller CPU" in out
    assert "The audit's check of the events and the Merkle log, one task in one worker beside the folds, takes" in out
