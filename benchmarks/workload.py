"""A seeded, realistic benchledger workload built from the conformance corpus inputs.

Every document comes from a real input of ``tests/conformance/corpus`` (runs,
comparisons, claim reviews, learning ledgers, preflight / launch / post-launch
records). Each goal gets an ordinary lifecycle:

    preflight -> launch -> N attempts of (baseline run + treatment run + comparison)
    -> post-launch after most attempts -> now and then a learning ledger or claim review

Documents are made unique per goal and attempt (ids, job names, trial names)
and enriched with fields that survive LoopX's compaction (trials, CLI call
records, result references, an environment block on lifecycle records) so
that a stored artifact weighs about 2 KB, as the issue asks. Everything is
derived from ``random.Random(seed)``: the same seed gives the same bytes.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "conformance" / "corpus"

# case.json flag -> the kind ingest stores it as (None: detected from schema_version)
FLAG_KINDS = {
    "--benchmark-run-json": "run",
    "--benchmark-comparison-json": "comparison",
    "--claim-review-json": "claim-review",
    "--benchmark-learning-ledger-json": "learning-ledger",
    "--preflight-json": "preflight",
    "--launch-json": "launch",
    "--post-launch-json": "post-launch",
}
LIFECYCLE_KINDS = ("preflight", "launch", "post-launch")
MODES = ("hardened-codex", "codex-loopx", "claude-code", "claude-loopx", "openhands", "openhands-loopx")
EXCEPTIONS = ("AgentTimeoutError", "VerifierTimeoutError", "DockerComposeError", "RewardFileNotFoundError")
LABELS = (
    "verifier_platform_probe_failure",
    "agent_solution_incomplete",
    "environment_setup_failure",
    "verifier_timeout",
    "agent_timeout",
    "task_semantics_mismatch",
)
WORDS = (
    "alpha", "bravo", "cache", "delta", "ember", "fjord", "gamma", "harbor", "index", "jolt",
    "kilo", "lumen", "metric", "nexus", "orbit", "pylon", "quartz", "relay", "sigma", "tango",
)


@dataclass
class Batch:
    """One ``benchledger ingest`` call: its ``--kind`` (None: detected) and its documents (raw bytes)."""

    kind: str | None
    documents: list[bytes]


@dataclass
class Goal:
    goal_id: str
    batches: list[Batch] = field(default_factory=list)

    @property
    def artifact_count(self) -> int:
        return sum(len(b.documents) for b in self.batches)


@dataclass
class Templates:
    runs: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    claim_reviews: list[dict[str, Any]]
    ledgers: list[dict[str, Any]]
    preflights: list[dict[str, Any]]
    launches: list[dict[str, Any]]
    post_launches: list[dict[str, Any]]


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_templates() -> Templates:
    """Every well-formed input document of the corpus, by kind (deduplicated, in a stable order)."""
    from benchledger.ledger.service.intake.artifacts import to_artifact
    from benchledger.ledger.service.intake.files import parse_document
    from benchledger.ledger.storage.canonical import canonical_json
    from benchledger.ledger.storage.guard import payload_problems
    from benchledger.projections.artifacts import IntakeError
    from benchledger.projections.artifacts.kinds import detect_kind

    found: dict[str, dict[str, Any]] = {k: {} for k in ("run", "comparison", "claim-review", "learning-ledger", *LIFECYCLE_KINDS)}
    for case in sorted(CORPUS.glob("*/*/*/case.json")):
        spec = _load(case)
        if not isinstance(spec, dict) or spec.get("expected_exit") != 0:
            continue
        args = spec.get("args", [])
        for flag, value in zip(args, args[1:]):
            kind = FLAG_KINDS.get(flag)
            if kind is None:
                continue
            doc = _load(case.parent / value)
            if not isinstance(doc, dict):
                continue
            if kind not in LIFECYCLE_KINDS and detect_kind(doc) != kind:
                continue
            try:  # only documents ingest accepts and the store keeps (lifecycle records with local paths are refused)
                artifact = to_artifact(parse_document(_bytes(doc), value), None if kind not in LIFECYCLE_KINDS else kind)
            except IntakeError:
                continue
            if payload_problems(artifact.payload, canonical_json(artifact.payload)):
                continue
            found[kind].setdefault(json.dumps(doc, sort_keys=True), doc)
    pick = lambda k: list(found[k].values())  # noqa: E731
    return Templates(
        runs=pick("run"),
        comparisons=pick("comparison"),
        claim_reviews=pick("claim-review"),
        ledgers=pick("learning-ledger"),
        preflights=pick("preflight"),
        launches=pick("launch"),
        post_launches=pick("post-launch"),
    )


def _tag(rng: random.Random, n: int = 2) -> str:
    return "-".join(rng.choice(WORDS) for _ in range(n))


def _inner(doc: dict[str, Any], envelope: str) -> dict[str, Any]:
    nested = doc.get(envelope)
    return nested if isinstance(nested, dict) else doc


def _run(template: dict[str, Any], rng: random.Random, goal: str, attempt: int, role: str) -> dict[str, Any]:
    doc = copy.deepcopy(template)
    run = _inner(doc, "benchmark_run")
    mode = run.get("mode") if isinstance(run.get("mode"), str) else rng.choice(MODES)
    run["job_name"] = f"{goal}-{role}-a{attempt:03d}-{mode}"
    task = run.get("task_id") if isinstance(run.get("task_id"), str) else f"terminal-bench@2.0/{_tag(rng)}"
    if "trials" not in run:
        run["trials"] = [
            {
                "task_id": task,
                "trial_name": f"{goal}-{role}-a{attempt:03d}-t{t}",
                "source": "terminal-bench",
                "exception_type": rng.choice(EXCEPTIONS) if rng.random() < 0.3 else None,
                "worker_start_status": rng.choice(("started", "started", "not_started")),
                "agent_failure_attribution_labels": rng.sample(LABELS, 2),
                "reward": {"reward": rng.choice((0.0, 1.0)), "partial": round(rng.random(), 3)},
                "metrics": {
                    "input_tokens": rng.randrange(10_000, 900_000),
                    "cache_tokens": rng.randrange(0, 500_000),
                    "output_tokens": rng.randrange(1_000, 90_000),
                    "cost_usd": round(rng.uniform(0.05, 9.0), 4),
                },
                "trajectory_present": True,
                "verifier_reward_present": rng.random() < 0.8,
                "artifact_manifest_present": True,
                "trial_result_present": True,
            }
            for t in range(rng.randint(3, 5))
        ]
    counters = run.setdefault("interaction_counters", {})
    if isinstance(counters, dict) and "loopx_cli_calls" not in counters:
        counters["loopx_cli_calls"] = [
            {
                "round": r + 1,
                "command": rng.choice(("status", "next", "checkpoint", "review-claim", "learning-ledger")),
                "flags": [f"--{rng.choice(WORDS)}" for _ in range(rng.randint(1, 4))],
                "raw_title_copied": False,
                "raw_output_copied": False,
            }
            for r in range(rng.randint(4, 8))
        ]
        counters.setdefault("heartbeat_count", rng.randrange(1, 400))
        counters.setdefault("loopx_state_reads", rng.randrange(0, 60))
    return doc


def _comparison(template: dict[str, Any], rng: random.Random, goal: str, attempt: int) -> dict[str, Any]:
    doc = copy.deepcopy(template)
    comparison = _inner(doc, "benchmark_comparison")
    comparison["comparison_id"] = f"{goal}-a{attempt:03d}"
    task = comparison.get("task_id") if isinstance(comparison.get("task_id"), str) else f"terminal-bench@2.0/{_tag(rng)}"
    if "result_refs" not in comparison:
        comparison["result_refs"] = [
            {"scenario_id": rng.choice(MODES), "task_id": task, "result_id": f"{goal}-a{attempt:03d}-r{i}"}
            for i in range(rng.randint(3, 5))
        ]
    decision = comparison.setdefault("decision", {})
    if isinstance(decision, dict) and "why" not in decision:
        decision["why"] = " ".join(rng.choice(WORDS) for _ in range(30))[:240]
    return doc


def _lifecycle(template: dict[str, Any], rng: random.Random, goal: str, attempt: int) -> dict[str, Any]:
    doc = copy.deepcopy(template)
    # Lifecycle records are stored as given; real ones carry an environment description.
    doc["environment"] = {
        "goal": goal,
        "attempt": attempt,
        "runner": rng.choice(("harbor", "terminal-bench", "skillsbench")),
        "runner_version": f"{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "image_digest": "sha256:" + "".join(rng.choice("0123456789abcdef") for _ in range(64)),
        "host_class": rng.choice(("c2-standard-2", "m6i.large", "n2-highcpu-4")),
        "checks": {f"{rng.choice(WORDS)}_{i}_ok": rng.random() < 0.9 for i in range(rng.randint(16, 32))},
        "timings_s": {f"phase_{i}": round(rng.uniform(0.1, 600.0), 3) for i in range(rng.randint(12, 24))},
        "notes": " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))),
    }
    return doc


def _bytes(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def make_goal(templates: Templates, goal_id: str, rng: random.Random, attempts: int | None = None) -> Goal:
    """One goal's batches, in the order a team would ingest them."""
    goal = Goal(goal_id)
    t = templates
    goal.batches.append(Batch("preflight", [_bytes(_lifecycle(rng.choice(t.preflights), rng, goal_id, 0))]))
    goal.batches.append(Batch("launch", [_bytes(_lifecycle(rng.choice(t.launches), rng, goal_id, 0))]))
    for attempt in range(1, (attempts or rng.randint(4, 10)) + 1):
        docs = [
            _run(rng.choice(t.runs), rng, goal_id, attempt, "baseline"),
            _run(rng.choice(t.runs), rng, goal_id, attempt, "treatment"),
            _comparison(rng.choice(t.comparisons), rng, goal_id, attempt),
        ]
        goal.batches.append(Batch(None, [_bytes(d) for d in docs]))
        if rng.random() < 0.7:
            goal.batches.append(Batch("post-launch", [_bytes(_lifecycle(rng.choice(t.post_launches), rng, goal_id, attempt))]))
        roll = rng.random()
        if roll < 0.1 and t.ledgers:
            goal.batches.append(Batch(None, [_bytes(rng.choice(t.ledgers))]))
        elif roll < 0.2 and t.claim_reviews:
            goal.batches.append(Batch(None, [_bytes(rng.choice(t.claim_reviews))]))
    return goal


def make_workload(templates: Templates, goals: int, seed: int, prefix: str = "goal") -> list[Goal]:
    rng = random.Random(seed)
    return [make_goal(templates, f"{prefix}-{i:06d}", random.Random(rng.getrandbits(64))) for i in range(goals)]


def interleaved(goals: list[Goal]) -> list[tuple[Goal, Batch]]:
    """Batches in arrival order: round-robin over goals (many goals progress at once)."""
    order = []
    depth = max((len(g.batches) for g in goals), default=0)
    for r in range(depth):
        for goal in goals:
            if r < len(goal.batches):
                order.append((goal, goal.batches[r]))
    return order


def standalone_comparisons(templates: Templates, count: int, seed: int) -> list[bytes]:
    """Distinct comparison artifacts for the one-artifact, whole-process measurement."""
    rng = random.Random(seed)
    return [
        _bytes(_comparison(rng.choice(templates.comparisons), rng, f"single-{i:04d}", 999))
        for i in range(count)
    ]
