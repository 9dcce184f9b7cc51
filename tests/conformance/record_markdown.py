"""Record the reference's markdown output for every conformance case.

The corpus holds only JSON expectations; the markdown views must agree too.
This script runs LoopX 0.4.8 (as a black box, from a scratch virtualenv) on
every case without ``--format`` (markdown is the default) and stores stdout and
the exit code under ``tests/conformance/markdown/<command>/<case>.md``.

    python -m tests.conformance.record_markdown     # LoopX 0.4.8: $BENCHLEDGER_LOOPX, else loopx on PATH
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.loopx import require_loopx

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
OUT = HERE / "markdown"


def main() -> None:
    loopx = require_loopx()
    for case_json in sorted(CORPUS.glob("*/*/*/case.json")):
        case_dir = case_json.parent
        case = json.loads(case_json.read_text())
        proc = subprocess.run(
            [loopx, "benchmark", case["command"], *case["args"]],
            cwd=case_dir, stdin=subprocess.DEVNULL, capture_output=True,
        )
        target = OUT / case["command"] / f"{case_dir.parent.parent.name}--{case_dir.name}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(proc.stdout)
        (target.with_suffix(".exit")).write_text(f"{proc.returncode}\n")


if __name__ == "__main__":
    main()
