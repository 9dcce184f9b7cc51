"""Record LoopX 0.4.8's answers to the cases a differential fuzz (session 39) found benchledger printing otherwise.

Each case is a folder of ``tests/conformance/fuzz_s39/``: its input files and
``case.json`` naming the ``command`` and, per format, the whole argv after it
(``"json"`` and ``"markdown"``: where ``--format`` goes is part of some cases),
with an optional ``stdin`` file. This script runs LoopX as a black box in the
folder (``loopx benchmark <command> <argv...>``) and stores what it printed,
byte for byte, and its exit status: ``<format>.stdout`` and ``<format>.exit``.
``tests/conformance/test_fuzz_s39.py`` holds benchledger to them.

    python -m tests.conformance.record_fuzz_s39      # LoopX 0.4.8: $BENCHLEDGER_LOOPX, else loopx on PATH
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.loopx import require_loopx

FUZZ_CASES = Path(__file__).parent / "fuzz_s39"


def record(case: Path, loopx: str) -> None:
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    stdin = (case / spec["stdin"]).read_bytes() if spec.get("stdin") else b""
    for fmt, argv in spec["argv"].items():
        answer = subprocess.run([loopx, "benchmark", spec["command"], *argv], cwd=case, input=stdin, capture_output=True, timeout=120)
        (case / f"{fmt}.stdout").write_bytes(answer.stdout)
        (case / f"{fmt}.exit").write_text(f"{answer.returncode}\n")


def main() -> None:
    loopx = require_loopx()
    for case in sorted(path for path in FUZZ_CASES.iterdir() if (path / "case.json").is_file()):
        record(case, loopx)
        print(case.name)


if __name__ == "__main__":
    main()
