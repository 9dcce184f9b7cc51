"""Where a hostile file is fed to the review commands: one argv template per input slot.

Shared by ``record_loopx.py`` (which records what LoopX 0.4.8 does) and
``tests/reliability/test_hostile_input.py`` (which checks that benchledger does the
same). Arguments are relative to ``files/``, where both programs run, so the
recorded payloads never depend on where the repository is checked out.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
FILES = HERE / "files"
EXPECTED = HERE / "loopx-expected.json"
FILE = "{file}"

SLOTS: dict[str, list[str]] = {
    "claim-comparison": [
        "review-claim", "--benchmark-comparison-json", FILE,
        "--benchmark-run-json", "../valid/run-1.json", "--benchmark-run-json", "../valid/run-2.json",
    ],
    "claim-run": [
        "review-claim", "--benchmark-comparison-json", "../valid/comparison.json",
        "--benchmark-run-json", "../valid/run-1.json", "--benchmark-run-json", FILE,
    ],
    "learning-ledger-comparison": [
        "learning-ledger", "--benchmark-comparison-json", FILE, "--benchmark-run-json", "../valid/run-1.json",
    ],
    "runner-invariants-run": ["review-runner-invariants", "--benchmark-run-json", FILE],
    "verifier-attribution-run": ["review-verifier-attribution", "--benchmark-run-json", FILE],
    "attempt-gate-ledger": [
        "attempt-learning-gate", "--benchmark-run-json", "../valid/run-1.json", "--benchmark-learning-ledger-json", FILE,
    ],
    "lifecycle-preflight": ["lifecycle-state", "--preflight-json", FILE, "--benchmark-run-json", "../valid/run-1.json"],
    "lifecycle-claim-review": ["lifecycle-state", "--claim-review-json", FILE],
    "baseline-gate-result": [
        "baseline-failure-gate", "--benchmark-id", "terminal-bench@2.0", "--baseline-result-json", FILE,
        "--failure-phase", "writeback", "--failure-class", "worker_trace_without_benchmark_run_writeback",
        "--failure-attribution-label", "worker_trace_without_benchmark_run_writeback",
        "--control-plane-addressable", "--same-task-semantics", "--same-runner-protocol",
        "--trace-publicness-verified", "--minimum-next-evidence", "run treatment", "--no-global-sync",
    ],
    "adapter-command": ["review-adapter-kwargs", "--adapter-label", "lbl", "--command-json", FILE],
}


def argv(slot: str, file: str) -> list[str]:
    return [file if a == FILE else a for a in SLOTS[slot]] + ["--format", "json"]


def files() -> list[str]:
    return sorted(p.name for p in FILES.iterdir() if p.is_file())
