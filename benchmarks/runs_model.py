"""What building a goal's runs model costs (issue 31 item 1: the report builds it once, ``serve`` keeps it): checkouts side by side.

    .venv/bin/python -m benchmarks.runs_model --url sqlite:////tmp/runs-model/bench.sqlite --goal report-10000 \\
        --checkout /work/main --checkout . --repeat 5

The ledger is one that ``benchmarks.report_pages`` built (``--sqlite PATH`` keeps it); it is only read.
For each checkout given (its own ``.venv``: the code of that checkout, on the same ledger),
a child process reads the goal's run, comparison, batch and retraction events and
measures, in CPU time (the machine is shared; SQLite runs in the process):

* ``read``: reading them and decoding their payloads (``ledger.read.runs._model_events``, then each ``payload``);
* ``model``: building the runs model of those events (``projections.runs.runs_model``: run views, marks, pairs);
* ``compare``: ``compare`` over that model (``ledger.read.compare.compare_model``: per-task outcomes, bootstrap, Holm);
* ``read_wall``: the reading again in wall time (on PostgreSQL the server's share of it is in no CPU time here);

``--repeat`` rounds, the checkouts interleaved within each round (so load that
comes and goes falls on both), the median of each printed with its ratio to the
first checkout (the baseline). Each child also writes a digest (SHA-256) of the
model and the comparison as JSON, and the script fails when two checkouts' digests differ: same outputs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

# The child: run with a checkout's own interpreter, so it imports that checkout's benchledger.
CHILD = r"""
import gc, hashlib, json, sys, time
from benchledger.ledger import api
from benchledger.ledger.read import runs as read_runs
from benchledger.ledger.read.compare import compare_model
from benchledger.projections import runs

url, goal = sys.argv[1], sys.argv[2]
store = api.open(url)._store
with store.snapshot() as view:
    gc.disable()  # (as ledger.read.runs builds the model: the collector paused)
    start, wall = time.process_time(), time.perf_counter()
    events = read_runs._model_events(view, [goal])
    for event in events:
        event.payload
    read, read_wall = time.process_time() - start, time.perf_counter() - wall
    start = time.process_time()
    model = runs.runs_model(events)
    built = time.process_time() - start
    start = time.process_time()
    compared = compare_model(model, goal_ids=[goal])
    compare = time.process_time() - start
    gc.enable()
digest = hashlib.sha256(json.dumps([model.runs, model.pairs, compared], sort_keys=True).encode()).hexdigest()
print(json.dumps({"read": read, "read_wall": read_wall, "model": built, "compare": compare, "events": len(events), "digest": digest}))
"""

STAGES = ("read", "model", "compare", "read_wall")


def measure(checkout: Path, url: str, goal: str) -> dict[str, float | str]:
    python = checkout / ".venv" / "bin" / "python"
    done = subprocess.run([str(python), "-c", CHILD, url, goal], check=True, capture_output=True, text=True, cwd=checkout)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the ledger (built by benchmarks.report_pages)")
    parser.add_argument("--goal", default="report-10000")
    parser.add_argument("--checkout", action="append", type=Path, required=True, help="a checkout with its .venv; the first is the baseline")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    checkouts = [c.resolve() for c in args.checkout]
    rounds: dict[Path, list[dict[str, float | str]]] = {c: [] for c in checkouts}
    for _ in range(args.repeat):
        for checkout in checkouts:
            rounds[checkout].append(measure(checkout, args.url, args.goal))
    digests = {str(c): {r["digest"] for r in rounds[c]} for c in checkouts}
    print(f"goal {args.goal}: {rounds[checkouts[0]][0]['events']} events; median CPU seconds of {args.repeat} interleaved rounds\n")
    print("| checkout | " + " | ".join(STAGES) + " | model ÷ baseline's | read+model ÷ baseline's |")
    print("|---|" + "---:|" * (len(STAGES) + 2))
    medians = {c: {s: statistics.median(float(r[s]) for r in rounds[c]) for s in STAGES} for c in checkouts}
    base = medians[checkouts[0]]
    for checkout in checkouts:
        m = medians[checkout]
        print(
            f"| {checkout} | " + " | ".join(f"{m[s]:.3f}" for s in STAGES)
            + f" | {m['model'] / base['model']:.2f} | {(m['read'] + m['model']) / (base['read'] + base['model']):.2f} |"
        )
    if len({d for found in digests.values() for d in found}) != 1:
        print(f"\nOUTPUTS DIFFER: {digests}")
        return 1
    print("\nthe model and the comparison are the same in every checkout (one digest)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
