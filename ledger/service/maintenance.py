"""Store maintenance: replay (rebuild the projections from the events), status and audit."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from benchledger.errors import InvalidInput
from benchledger.ledger.service import fold_jobs, folding
from benchledger.ledger.service.folding import FoldedGoal
from benchledger.ledger.storage import merkle_log, shared_snapshot
from benchledger.ledger.storage.shared_snapshot import SharedSnapshot
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.ledger.storage.transaction import Transaction
from benchledger.ledger.storage.verification import ChainReport, Problem, count_problems, verify_events
from benchledger.projections import catalog


def replay(
    ledger: Store,
    *,
    goal_id: str | None = None,
    projection: str | None = None,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """Rebuild stored projections from the events, atomically (readers see old rows or new rows).

    Every row is recomputed; only those that differ from the stored ones are
    written or deleted (``rows_changed``), and each goal's stored row counts
    recounted (``counts_repaired``: those that were wrong); the stream heads are rebuilt from the
    goals' last events first (``heads_repaired``: those edited, deleted or invented outside benchledger),
    and, replaying every goal, the Merkle log from the events (``log_nodes_repaired``: its nodes that differed). A reducer that raises marks its row faulted instead of aborting
    the replay. ``jobs`` worker processes fold the goals and compare their rows
    (``ledger.service.fold_jobs``); this process writes what differs, all in one
    transaction. ``progress`` is called with the number of events folded for
    each step of goals.
    """
    if projection is not None and projection not in catalog.projection_versions():
        known = ", ".join(sorted(catalog.projection_versions()))
        raise InvalidInput(f"--projection {projection!r} is not a projection; known: {known}")
    if goal_id is not None:
        ledger.require_goal(goal_id)
    report: dict[str, Any] = {}

    def rebuild() -> None:
        report.update(goals=0, events=0, rows=0, rows_changed=0, counts_repaired=0, heads_repaired=0, log_nodes_repaired=0, faulted=[])
        with ledger.transaction(write=True) as tx:
            # (first: the goals folded are those the events hold; an append refuses a goal whose head is not its last event)
            report["heads_repaired"] = tx.rebuild_heads(goal_id)
            if goal_id is None:  # (the log is the whole ledger's: a replay of one goal leaves it)
                report["log_nodes_repaired"] = merkle_log.rebuild(tx)
            # (under the append lock: the goals, their events and their rows are what the rebuild writes over)
            heads = [h for h in tx.heads() if goal_id in (None, h["goal_id"])]
            # Rows of a goal without events nor head are folded too: its fold makes none, so they go (not a goal of the ledger: not counted).
            unheaded = set(tx.goals_without_head()) if goal_id is None else set()
            heads = sorted(heads + [{"goal_id": g, "last_version": 0} for g in unheaded], key=lambda h: h["goal_id"])
            steps = fold_jobs.steps_of(heads, jobs=jobs)
            for step in fold_jobs.folded_steps(ledger, tx, steps, jobs=jobs, upto_position=tx.last_position(), projection=projection):
                report["counts_repaired"] += tx.write_projection_rows_diff([goal.goal_id for goal in step.folded], step.changed, step.unwanted)
                report["rows_changed"] += step.rows_changed
                for goal in step.folded:
                    report["goals"] += goal.goal_id not in unheaded
                    report["events"] += goal.events
                    report["rows"] += goal.row_count
                    report["faulted"] += goal.faulted
                if progress is not None:
                    progress(sum(goal.events for goal in step.folded))

    ledger.retrying_when_locked(rebuild)
    return report


@one_snapshot
def status(ledger: Store) -> dict[str, Any]:
    """What ``replay`` would change that an upgrade explains: rows stored by other versions, goals folded by a build
    with other projection versions or before a projection existed, faulted rows, and goals whose projections lag their events.

    Read as counts per projection and version, the faulted rows, each goal's
    latest covered position and each goal's projector checkpoint (the versions
    of the build that folded the goal: one small row per goal), never the
    reviews' payloads. A goal whose checkpoint records this code's versions was
    folded by this code whole (an ingest resumes only from such a checkpoint),
    so a replay changes nothing of it unless something changed it outside benchledger.
    """
    code_versions = catalog.projection_versions()
    stats = ledger.projection_stats()
    stale = [
        {"projection": name, "stored_version": version, "code_version": code_versions.get(name), "rows": count}
        for (name, version), count in sorted(stats.rows_by_version.items())
        if version != code_versions.get(name)
    ]
    heads = ledger.heads()
    # Every goal has lifecycle steps (its first event is one) and a checkpoint; a ledger stored before they existed has none.
    missing = [
        {"projection": name, "goals": len(heads) - stats.goals_by_projection.get(name, 0)}
        for name in (catalog.STEP, catalog.CHECKPOINT)
        if len(heads) > stats.goals_by_projection.get(name, 0)
    ]
    lagging = [
        {"goal_id": head["goal_id"], "reflects_position": stats.covered.get(head["goal_id"]), "head_position": head["last_position"]}
        for head in heads
        if stats.covered.get(head["goal_id"], 0) < head["last_position"]
    ]
    folded_by_other_versions = _folds_by_other_versions(ledger)
    return {
        "ok": not stale and not missing and not stats.faulted and not lagging and not folded_by_other_versions,
        "stale": stale,
        "folded_by_other_versions": folded_by_other_versions,
        "missing": missing,
        "faulted": stats.faulted,
        "lagging_goals": lagging,
    }


def _folds_by_other_versions(ledger: Store) -> list[dict[str, Any]]:
    """The goals whose checkpoint records other projection versions than this code's, grouped by what differs.

    (A checkpoint that records no readable versions is no build's: audit names it as changed outside benchledger.)
    """
    groups: dict[str, dict[str, Any]] = {}
    for goal, payload in ledger.current_payloads(catalog.CHECKPOINT):
        recorded = recorded_versions(payload)
        if recorded is None or not (differing := catalog.versions_differing(recorded)):
            continue
        differences = [{"projection": name, "folded_version": was, "code_version": now} for name, (was, now) in differing.items()]
        group = groups.setdefault(json.dumps(differences), {"goals": 0, "first_goal": goal, "differences": differences})
        group["goals"] += 1
    return list(groups.values())


def recorded_versions(checkpoint_payload: str | None) -> dict[str, Any] | None:
    """The projection versions a stored checkpoint records (the build that folded its goal), or None when it records none readable."""
    try:
        versions = json.loads(checkpoint_payload)["versions"] if checkpoint_payload is not None else None
    except (ValueError, TypeError, KeyError):
        return None
    return versions if isinstance(versions, dict) else None


def audit(
    ledger: Store,
    *,
    goal_id: str | None = None,
    expect_digest: str | None = None,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
    projections: bool = True,
) -> dict[str, Any]:
    """Prove the ledger: hashes, chains, versions, positions, digest, the Merkle log (of one goal: its events' inclusion), and every projection against a replay.

    ``projections=False`` checks the history alone (everything above but the
    projections: no goal is folded again, ``projections_checked`` is 0 and
    ``projections`` says ``"not checked"``): it costs one reading of the events,
    where refolding them is most of a full audit's cost.

    Everything is read in one snapshot: a ledger that writers change meanwhile
    is proved as it was when the audit began, never a mix of two moments
    (``jobs`` worker processes fold the goals from the events up to the
    snapshot's last position, which are exactly the snapshot's events, and
    compare their rows with the stored rows only when they read the
    snapshot itself: ``ledger.service.fold_jobs``). ``progress`` is called
    with the number of events folded for each step of goals. The report is
    the same whatever ``jobs`` is.
    """
    if goal_id is not None:
        ledger.require_goal(goal_id)
    if not projections:
        with ledger.snapshot() as view:
            return _audit_history(view, goal_id=goal_id, expect_digest=expect_digest, progress=progress)
    if jobs > 1 and ledger.persistent:
        with shared_snapshot.sharing(ledger) as (view, shared):
            return _audit(view, shared, goal_id=goal_id, expect_digest=expect_digest, jobs=jobs, progress=progress)
    with ledger.snapshot() as view:
        return _audit(view, None, goal_id=goal_id, expect_digest=expect_digest, jobs=jobs, progress=progress)


def _audit(
    ledger: Store,
    shared: SharedSnapshot | None,
    *,
    goal_id: str | None,
    expect_digest: str | None,
    jobs: int,
    progress: Callable[[int], None] | None,
) -> dict[str, Any]:
    """:func:`audit` in the snapshot ``ledger`` (a view), which ``shared`` lets workers read."""
    heads = ledger.heads()
    with ledger.reading() as connection:
        read = Transaction(connection)
        upto_position = read.last_position()
        versions = {h["goal_id"]: h["last_version"] for h in heads if goal_id in (None, h["goal_id"])}
        # (a goal holding rows without events nor head is folded too: every row it holds is one no replay makes)
        goals = sorted(versions.keys() | set(read.goals_without_head() if goal_id is None else []))
        steps = fold_jobs.steps_of([{"goal_id": g, "last_version": versions.get(g, 0)} for g in goals], jobs=jobs)
        chain = fold_jobs.Beside(functools.partial(checked_chain, heads=heads, goal_id=goal_id, expect_digest=expect_digest))
        goal_problems: dict[str, list[Problem]] = {}
        projections_checked = 0
        folded = fold_jobs.folded_steps(ledger, read, steps, jobs=jobs, upto_position=upto_position, audit=True, shared=shared, beside=chain)
        for step in folded:
            for goal in step.folded:
                projections_checked += _audit_goal(goal, goal_problems)
            if progress is not None:
                progress(sum(goal.events for goal in step.folded))
        report, log_problems = chain.result
        # Goals whose events have no stream head (the chain check names them), folded once it did.
        headless = sorted(report.goals - set(goals))
        if headless:
            step = folding.fold_step(read, headless, upto_position, mode=folding.FoldMode.AUDIT)
            for goal in step.folded:
                projections_checked += _audit_goal(goal, goal_problems)
            if progress is not None:
                progress(sum(goal.events for goal in step.folded))
    problems = report.problems + log_problems + [problem for goal in sorted(goal_problems) for problem in goal_problems[goal]]
    return _audit_report(report, problems, goals_checked=len(report.goals | versions.keys()), projections_checked=projections_checked, expect_digest=expect_digest)


def _audit_history(ledger: Store, *, goal_id: str | None, expect_digest: str | None, progress: Callable[[int], None] | None) -> dict[str, Any]:
    """:func:`audit` of the history alone (``projections=False``) in the snapshot ``ledger`` (a view): its chain check, no fold."""
    heads = ledger.heads()
    report, log_problems = checked_chain(ledger, heads=heads, goal_id=goal_id, expect_digest=expect_digest)
    if progress is not None:
        progress(report.events_checked)
    headed = {h["goal_id"] for h in heads if goal_id in (None, h["goal_id"])}
    return _audit_report(report, report.problems + log_problems, goals_checked=len(report.goals | headed), projections_checked=None, expect_digest=expect_digest)


def _audit_report(
    report: ChainReport, problems: list[Problem], *, goals_checked: int, projections_checked: int | None, expect_digest: str | None,
) -> dict[str, Any]:
    """What :func:`audit` returns; ``projections_checked`` None: the projections were not checked (a history-only audit)."""
    return {
        "ok": not problems,
        "events_checked": report.events_checked,
        "goals_checked": goals_checked,
        "projections_checked": projections_checked or 0,
        "projections": "not checked" if projections_checked is None else "checked",
        "digest": report.digest,
        "expected_digest": expect_digest,
        "expected_digest_verified": report.expected_digest_verified,
        "problems": [p.as_dict() for p in problems],
    }


def checked_chain(ledger: Store, *, heads: list[dict[str, Any]], goal_id: str | None, expect_digest: str | None) -> tuple[ChainReport, list[Problem]]:
    """The events of ``ledger`` (a view) checked (``verify_events``) and its Merkle log against them: an audit's check of its history."""
    with ledger.reading() as connection:
        # The log is checked against the events as the chain check reads them: every node (the whole ledger), or a goal's events' paths.
        tx = Transaction(connection)
        log: merkle_log.LogAudit | merkle_log.GoalInclusion = merkle_log.LogAudit(tx) if goal_id is None else merkle_log.GoalInclusion(tx)
        report = verify_events(log.watching(ledger.read_all(goal_id=goal_id)), heads, scope_goal=goal_id, expect_digest=expect_digest)
    return report, log.problems


def _audit_goal(folded: FoldedGoal, problems: dict[str, list[Problem]]) -> int:
    """What differs between a goal's stored rows and its fold, added to ``problems`` (by goal); returns how many rows it checked.

    A difference an older benchledger explains (:func:`_older_build`) is ``projection_outdated``
    (run ``replay``); any other is one no benchledger version stores: the row was changed outside benchledger.
    """
    goal = folded.goal_id
    found: list[Problem] = []
    if folded.failure is not None:  # tampered events may not even fold (e.g. a manifest naming a lost event)
        problems[goal] = [Problem("replay_failed", goal, None, f"the goal's events cannot be replayed: {folded.failure}")]
        return 0
    older = _older_build(folded)
    extra = 0
    for (projection, _, key), want, have in folded.differences:
        where = (want or have)["position"]
        label = f"{projection} [{key}]"
        extra += want is None
        if projection in older:
            found.append(Problem("projection_outdated", goal, where, f"{label} {older[projection]}: run `benchledger replay`"))
        elif have is None:
            found.append(Problem("projection_missing", goal, where, f"{label} is not stored"))
        elif want is None:
            found.append(Problem("projection_extra", goal, where, f"{label} is stored but the events do not produce it"))
        else:
            fields = sorted(f for f in want if have.get(f) != want[f])
            found.append(Problem("projection_mismatch", goal, where, f"{label} differs from a replay in {', '.join(fields)}"))
    found += count_problems(goal, folded.counted, folded.stored_counts)
    if found:
        problems[goal] = found
    return folded.row_count + extra


def _older_build(folded: FoldedGoal) -> dict[str, str]:
    """The projections of a goal whose differences an older build explains, each with how, or none.

    The goal's stored checkpoint records the versions of the build that folded
    the goal. They explain its differences when they are an older build's (no
    version newer than this code's) and the goal's stored rows agree with them:
    every stored row of a projection whose version differs was written with
    the recorded version, so none of them matches this code's fold (a
    projection that build did not compute has no stored rows). A checkpoint
    whose versions were edited to excuse a changed row fails that test.
    """
    checkpoint = next((have for (projection, _, _), _, have in folded.differences if projection == catalog.CHECKPOINT), None)
    recorded = recorded_versions(checkpoint.get("payload")) if checkpoint is not None else None
    if recorded is None:
        return {}
    differing = catalog.versions_differing(recorded)
    if not differing or any(not isinstance(was, int | None) or (was is not None and now is not None and was > now) for was, now in differing.values()):
        return {}
    differing_rows = Counter(
        projection for (projection, _, _), want, have in folded.differences if have is not None and have.get("projection_version") == recorded.get(projection)
    )
    if any(now is not None and folded.stored_counts.get(name, 0) != differing_rows[name] for name, (_, now) in differing.items()):
        return {}
    older = {
        name: ("was not computed by the benchledger that stored this goal" if was is None else f"was stored by version {was}, this benchledger computes version {now}")
        if now is not None
        else f"is no longer computed (stored by version {was})"
        for name, (was, now) in differing.items()
    }
    older[catalog.CHECKPOINT] = "was written by a benchledger with other projection versions (" + ", ".join(
        f"{name} {'none' if was is None else was} -> {'none' if now is None else now}" for name, (was, now) in differing.items()
    ) + ")"
    return older
