"""The per-goal lifecycle history: what each event was, and the lifecycle state after it.

Pure helpers used by the linking rules (to record the lifecycle after each
event when a history is asked for) and by the ``history`` query (to mark where
the phase or a gate changed).
"""

from __future__ import annotations

from typing import Any

from benchledger.projections import adapter_kwargs_review, goal_archive, lifecycle, retraction, runs

SUMMARY_FIELDS = ("current_phase", "first_blocker", "next_required_transition", "gates")
# Where an artifact states its own time (a LoopX run-ledger row's recorded_at); compact runs keep none.
ARTIFACT_TIME_FIELDS = ("recorded_at", "generated_at", "finished_at", "started_at")
# The kinds that have an outcome (pass/fail and a score).
SCORED_KINDS = (runs.RUN_KIND, "result", runs.ROW_KIND)


def lifecycle_summary(state: dict[str, Any] | None) -> dict[str, Any]:
    """The part of a ``lifecycle-state`` payload that the history shows after every event."""
    state = state or {}
    return {name: state.get(name) for name in SUMMARY_FIELDS}


def stored_summary(payload: dict[str, Any]) -> dict[str, Any]:
    """A summary read back from a stored ``lifecycle-step`` payload, in :func:`lifecycle_summary`'s order.

    Stored JSON is canonical (keys sorted); the history prints the fields and
    the gates in the order the lifecycle reducer gives them.
    """
    summary = {name: payload.get(name) for name in SUMMARY_FIELDS}
    gates = summary["gates"]
    if isinstance(gates, dict):
        ordered = {g: gates[g] for g in lifecycle.GATES if g in gates}
        summary["gates"] = {**ordered, **{g: v for g, v in gates.items() if g not in ordered}}
    return summary


def changes(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """Whether the phase changed and which gates changed between two summaries."""
    if before is None:  # the goal's first event: compare with a lifecycle that has nothing open
        before = {"current_phase": None, "gates": {}}
    before_gates, after_gates = before.get("gates") or {}, after.get("gates") or {}
    return {
        "phase_changed": before.get("current_phase") != after.get("current_phase"),
        "gates_changed": [g for g in lifecycle.GATES if bool(before_gates.get(g)) != bool(after_gates.get(g))],
    }


def _first(payload: Any, *names: str) -> Any:
    if isinstance(payload, dict):
        for name in names:
            value = payload.get(name)
            if value not in (None, "", [], {}):
                return value
    return None


def artifact_time(payload: Any) -> str | None:
    """The time the artifact itself states (first of :data:`ARTIFACT_TIME_FIELDS` with a UTC offset), as written."""
    if isinstance(payload, dict):
        for name in ARTIFACT_TIME_FIELDS:
            value = payload.get(name)
            if isinstance(value, str) and runs.utc_instant(value) is not None:
                return value
    return None


def event_outcome(kind: str, payload: Any) -> dict[str, Any] | None:
    """A run's or result's outcome, ``{"score_status", "score"}`` as ``runs`` derives them; ``None`` for other kinds."""
    if kind not in SCORED_KINDS or not isinstance(payload, dict):
        return None
    score_status, score, _ = runs.run_outcome(kind, payload)
    return {"score_status": score_status, "score": score}


def event_summary(kind: str, payload: Any) -> str:
    """One line saying what an event holds, from its public-safe payload (a run's outcome first)."""
    if kind == "ingest_batch":
        members = payload.get("members", [])
        kinds: dict[str, int] = {}
        for member in members:
            kinds[member["kind"]] = kinds.get(member["kind"], 0) + 1
        text = f"batch of {len(members)}: " + ", ".join(f"{n} {k}" for k, n in kinds.items())
        review = payload.get("review")
        return text + (f" (via benchmark {review['command']})" if review else "")
    if kind == retraction.KIND:
        ids = payload.get("retracts", [])
        return f"retracts {len(ids)} event(s) ({', '.join(ids)}): {payload.get('reason')}"
    if kind in goal_archive.KINDS:
        return "goal archived (hidden from `goals` and the report)" if kind == goal_archive.ARCHIVE else "goal unarchived"
    parts = []
    outcome = event_outcome(kind, payload)
    if outcome is not None:
        parts.append(runs.score_text(outcome["score_status"], outcome["score"]))
    identity = _first(payload, "task_id", "comparison_id", "case_id", "benchmark_id")
    if identity is not None:
        parts.append(str(identity))
    mode = _first(payload, "mode", "job_name")
    if mode is not None:
        parts.append(f"mode={mode}")
    if kind == "comparison":
        for arm in ("baseline_scenario_id", "treatment_scenario_id"):
            if _first(payload, arm) is not None:
                parts.append(f"{arm.split('_')[0]}={payload[arm]}")
    for name in ("official_score", "official_task_score_delta", "claim_strength", "learning_status", "status", "first_blocker"):
        if name == "official_score" and outcome is not None:
            continue
        value = _first(payload, name)
        if value is not None and not isinstance(value, (dict, list)):
            parts.append(f"{name}={value}")
    if kind == adapter_kwargs_review.KIND:
        # The count the review reports (generated loopx_* kwargs), not the payload's own keys.
        parts.append(f"{len(adapter_kwargs_review.generated_keys([payload]))} generated loopx kwargs")
    return " ".join(parts) if parts else kind
