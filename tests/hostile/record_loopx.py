"""Record what LoopX 0.4.8 does with every hostile file in every review input slot.

    python -m tests.hostile.record_loopx [FILE ...]     # all files, or only these (merged)

(LoopX 0.4.8 is $BENCHLEDGER_LOOPX, else ``loopx`` on PATH: ``tests/loopx.py``.)

LoopX is used as a black box: its exit code, and its stdout parsed as JSON
when it printed a payload, or ``"crash": true`` when it died with a traceback
(benchledger must then still answer with a clear message). The result is
``loopx-expected.json``, which ``tests/reliability/test_hostile_input.py`` reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from tests.hostile.slots import EXPECTED, FILES, SLOTS, argv, files
from tests.loopx import require_loopx


def record(loopx: str, slot: str, file: str) -> tuple[str, dict]:
    process = subprocess.run(
        [loopx, "benchmark", *argv(slot, file)], cwd=FILES, capture_output=True, stdin=subprocess.DEVNULL, timeout=120
    )
    outcome: dict = {"exit": process.returncode}
    try:
        outcome["payload"] = json.loads(process.stdout)
    except ValueError:
        outcome["crash"] = True
        outcome["stderr_tail"] = process.stderr.decode(errors="replace").strip().splitlines()[-1:]
    return f"{slot}/{file}", outcome


def main() -> None:
    loopx = require_loopx()
    only = sys.argv[1:]
    jobs = [(slot, file) for slot in SLOTS for file in (only or files())]
    results = json.loads(EXPECTED.read_text(encoding="utf-8")) if only and EXPECTED.exists() else {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        results.update(pool.map(lambda job: record(loopx, *job), jobs))
    EXPECTED.write_text(json.dumps(dict(sorted(results.items())), indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {len(results)} outcomes ({sum('crash' in r for r in results.values())} crashes) in {EXPECTED}")


if __name__ == "__main__":
    main()
