"""Record LoopX 0.4.8 on conformance cases whose modes are respelled as aliases.

A mode reaches a review under many spellings of one arm (``codex-goal-mode``,
``codex_goal_mode``, ``CODEX-GOAL-MODE``, LoopX's own ``codex_cli_goal_mode``):
D-MODE (spec, common inputs §6) compares lower-cased, ``_`` read as ``-``,
while identifiers such as baseline-failure-gate's ``comparison_id`` keep the
labelled value. This script takes corpus cases that carry a mode, rewrites
every mode-like value (the fields in :data:`MODE_KEYS`, the flags in
:data:`MODE_FLAGS`) with each respelling in :data:`RESPELLINGS`, runs LoopX as
a black box on the result (``--format json`` and markdown), and stores the
case beside its answers:

    tests/conformance/aliases/<command>/<case>/   case.json, expected.json, inputs
    tests/conformance/markdown/<command>/aliases--<case>.md / .exit

``tests/conformance/test_payloads_match_loopx.py`` holds benchledger to them like any corpus case.

    python -m tests.conformance.record_aliases      # LoopX 0.4.8: $BENCHLEDGER_LOOPX, else loopx on PATH
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.conformance.cases import ALIASES, CORPUS, MARKDOWN
from tests.loopx import require_loopx

MODE_KEYS = frozenset({"mode", "job_name", "scenario_id", "baseline_scenario_id", "treatment_scenario_id", "baseline_mode", "mode_pair"})
MODE_FLAGS = frozenset({"--baseline-mode", "--treatment-scenario-id"})
# LoopX's spelling of the goal-mode arm and the run ledger's.
NAMED_ALIASES = {"codex-goal-mode": "codex_cli_goal_mode", "codex_cli_goal_mode": "codex-goal-mode"}
RESPELLINGS: dict[str, Callable[[str], str]] = {
    "underscores": lambda mode: mode.replace("-", "_"),
    "hyphens": lambda mode: mode.replace("_", "-"),
    "upper": str.upper,
    "named-alias": lambda mode: NAMED_ALIASES.get(mode.lower(), mode),
}
CASES_PER_COMMAND = 6
NAMED_CASES_PER_COMMAND = 3


def respelled(value: Any, respell: Callable[[str], str], key: str | None = None) -> Any:
    """``value`` with every string under a mode-like key respelled (lists of modes too)."""
    if isinstance(value, dict):
        return {k: respelled(v, respell, k) for k, v in value.items()}
    if isinstance(value, list):
        return [respelled(v, respell, key) for v in value]
    if isinstance(value, str) and key in MODE_KEYS:
        return respell(value)
    return value


def respelled_args(args: list[str], respell: Callable[[str], str]) -> list[str]:
    out = list(args)
    for index, arg in enumerate(args[:-1]):
        if arg in MODE_FLAGS:
            out[index + 1] = respell(args[index + 1])
    for index, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if equals and flag in MODE_FLAGS:
            out[index] = f"{flag}={respell(value)}"
    return out


def _json_inputs(case_dir: Path) -> dict[str, Any]:
    inputs = {}
    for path in sorted(case_dir.iterdir()):
        if path.name in ("case.json", "expected.json") or path.suffix != ".json":
            continue
        try:
            inputs[path.name] = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
    return inputs


def variants(case_dir: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(respelling name, case.json, changed inputs) for each respelling that changes something."""
    spec = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    inputs = _json_inputs(case_dir)
    found = []
    for name, respell in RESPELLINGS.items():
        changed = {file: new for file, old in inputs.items() if (new := respelled(old, respell)) != old}
        args = respelled_args(spec["args"], respell)
        if changed or args != spec["args"]:
            found.append((name, {**spec, "args": args, "origin": "alias", "covers": f"{name}|{spec['covers']}"}, changed))
    return found


def _run(loopx: str, args: list[str], cwd: Path) -> tuple[bytes, int]:
    process = subprocess.run([loopx, "benchmark", *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    return process.stdout, process.returncode


def record(loopx: str, source: Path, name: str, spec: dict[str, Any], changed: dict[str, Any]) -> str:
    target = ALIASES / spec["command"] / f"{source.parent.parent.name}-{source.name}--{name}"
    shutil.copytree(source, target)
    (target / "expected.json").unlink()
    for file, document in changed.items():
        (target / file).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    stdout, code = _run(loopx, [spec["command"], *spec["args"], "--format", "json"], target)
    spec["expected_exit"] = code
    (target / "case.json").write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (target / "expected.json").write_bytes(stdout)
    markdown, markdown_code = _run(loopx, [spec["command"], *spec["args"]], target)
    base = MARKDOWN / spec["command"] / f"aliases--{target.name}"
    base.with_suffix(".md").write_bytes(markdown)
    base.with_suffix(".exit").write_text(f"{markdown_code}\n")
    return target.name


def main() -> None:
    loopx = require_loopx()
    shutil.rmtree(ALIASES, ignore_errors=True)
    for stale in MARKDOWN.glob("*/aliases--*"):
        stale.unlink()
    jobs = []
    for command in sorted({case_dir.parent.name for case_dir in CORPUS.glob("*/*/*")}):
        sources = [case_dir for case_dir in sorted(CORPUS.glob(f"*/{command}/*")) if variants(case_dir)]
        step = max(1, len(sources) // CASES_PER_COMMAND)
        sampled = sources[::step][:CASES_PER_COMMAND]
        # and a few that LoopX's own goal-mode spelling reaches
        named = [case_dir for case_dir in sources if any(v[0] == "named-alias" for v in variants(case_dir))]
        for case_dir in sampled + [case_dir for case_dir in named if case_dir not in sampled][:NAMED_CASES_PER_COMMAND]:
            jobs.extend((case_dir, *variant) for variant in variants(case_dir))
    with ThreadPoolExecutor(max_workers=2) as pool:
        names = list(pool.map(lambda job: record(loopx, *job), jobs))
    print(f"recorded {len(names)} alias cases in {ALIASES}")


if __name__ == "__main__":
    main()
