#!/usr/bin/env bash
# The main job, end to end: install benchledger into .venv (first run only), ingest the example
# artifacts of one Terminal-Bench attempt into the embedded default ledger the way a user would
# after each step of a run, and show the goal's lifecycle history. Safe to rerun: ingest is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/benchledger ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=strict
fi

bl=.venv/bin/benchledger
goal=demo-db-wal-recovery
demo=examples/demo

# Before the run: the no-run preflight, then the launch summary and the post-launch check.
$bl ingest --goal "$goal" --kind preflight "$demo/01-preflight.json"
$bl ingest --goal "$goal" --kind launch "$demo/02-launch.json"
$bl ingest --goal "$goal" --kind post-launch "$demo/03-post-launch.json"
# The baseline arm finished: its compact run.
$bl ingest --goal "$goal" "$demo/04-run-baseline.json"
# The treatment arm and the paired comparison, ingested with both runs as one batch
# (the baseline run is already stored: it is listed in the batch, not stored twice).
$bl ingest --goal "$goal" "$demo/04-run-baseline.json" "$demo/05-run-treatment.json" "$demo/06-comparison.json"

echo
$bl history --goal "$goal"
echo
# The baseline and treatment of the comparison, side by side (the runs of its own task and batch).
$bl runs --paired --goal "$goal"
echo
$bl audit --goal "$goal"
