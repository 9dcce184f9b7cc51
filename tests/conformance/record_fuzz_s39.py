"""Record LoopX 0.4.8's answers to the cases a differential fuzz (session 39) found benchledger printing otherwise.

Each case is a folder of ``tests/conformance/fuzz_s39/``: its input files and
``case.json`` naming the ``command`` and, per format, the whole argv after it
(``"json"`` and ``"markdown"``: where ``--format`` goes is part of some cases;
an item ``{"repeat": [...], "times": N}`` stands for its arguments N times),
with an optional ``stdin`` file. This script runs LoopX as a black box in the
folder (``loopx benchmark <command> <argv...>``, in the :data:`LOCALE` both
tools are run in) and stores what it printed, byte for byte, and its exit
status: ``<format>.stdout`` and ``<format>.exit``.
``tests/conformance/test_fuzz_s39.py`` holds benchledger to them.

    python -m tests.conformance.record_fuzz_s39      # LoopX 0.4.8: $BENCHLEDGER_LOOPX, else loopx on PATH
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.loopx import require_loopx

FUZZ_CASES = Path(__file__).parent / "fuzz_s39"
# Python reads standard input and writes standard output with the locale's error handler (surrogateescape under
# C.UTF-8, the locale of the machines the fuzz ran on; strict under, say, en_US.UTF-8), so a case holding a byte no
# UTF-8 holds, or a lone surrogate, is answered in one locale, by both tools alike.
LOCALE = {"LC_ALL": "C.UTF-8"}


def environment() -> dict[str, str]:
    """This process's environment in :data:`LOCALE`, without the variables that would override the locale's streams."""
    inherited = {key: value for key, value in os.environ.items() if key not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    return {**inherited, **LOCALE}


def expanded(argv: list[Any]) -> list[str]:
    """``argv`` with each ``{"repeat": [...], "times": N}`` item written out."""
    return [arg for item in argv for arg in (item["repeat"] * item["times"] if isinstance(item, dict) else [item])]


def record(case: Path, loopx: str) -> None:
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    stdin = (case / spec["stdin"]).read_bytes() if spec.get("stdin") else b""
    for fmt, argv in spec["argv"].items():
        answer = subprocess.run(
            [loopx, "benchmark", spec["command"], *expanded(argv)], cwd=case, input=stdin, capture_output=True, timeout=120, env=environment()
        )
        (case / f"{fmt}.stdout").write_bytes(answer.stdout)
        (case / f"{fmt}.exit").write_text(f"{answer.returncode}\n")


def main() -> None:
    loopx = require_loopx()
    for case in sorted(path for path in FUZZ_CASES.iterdir() if (path / "case.json").is_file()):
        record(case, loopx)
        print(case.name)


if __name__ == "__main__":
    main()
