"""What the projections store: every projection's name and version, the keys of its rows, the kinds of events.

A stored row is named by (projection, key) and stamped with the version of
the code that computed it (docs/linking.md's table). The ledger reads rows by
these names without folding anything; ``benchledger status`` lists the rows
whose version is not :func:`projection_versions`'s, ``replay`` rebuilds them,
and a projector checkpoint written by other versions is not resumed from. So
a change to what a projection holds bumps its version: here, or for a review
in its reducer module.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from benchledger.projections import REVIEW_MODULES, goal_archive, retraction, review_module
from benchledger.projections.artifacts import KINDS
from benchledger.projections.batch_manifest import BATCH_KIND
from benchledger.projections.runs import ROW_KIND

# Every kind an event can have: the artifacts, the batch that lists them, imported LoopX run rows, retractions,
# a goal's archive and unarchive marks.
EVENT_KINDS = (*KINDS, BATCH_KIND, ROW_KIND, retraction.KIND, *goal_archive.KINDS)

LIFECYCLE = "lifecycle-state"
CLAIM = "review-claim"
LEARNING = "learning-ledger"
VERIFIER = "review-verifier-attribution"
RUNNER = "review-runner-invariants"
ATTEMPT = "attempt-learning-gate"
ADAPTER = "review-adapter-kwargs"

# What ``benchledger goals`` lists of a goal: the latest attempt and its claim strength and learning status (one row, ``current``).
SUMMARY = "goal-summary"
# 2: the latest attempt's id, and its claim review and learning ledger (not the goal's newest of any attempt).
SUMMARY_VERSION = 2
# Only ever a faulted row: a batch whose members cannot be found.
BATCH_LINKS = "batch-links"
BATCH_LINKS_VERSION = 1
# Lifecycle input kinds, in the order lifecycle-state reads them.
LIFECYCLE_KINDS = ("preflight", "launch", "post-launch", "run", "comparison", "claim-review", "learning-ledger")
CURRENT_KEY = "current"
# The lifecycle after an event where it differs from the lifecycle after the goal's previous event.
STEP = "lifecycle-step"
# Bump when the step rows' content changes: the lifecycle-state reducer's rules or the payload's fields.
# 2: a step names the attempt its event belongs to (projections/attempts.py), and one is stored where the attempt changes.
STEP_VERSION = 2
# Each attempt of the goal (projections/attempts.py) and its lifecycle-state, from its own evidence only
# (one row per attempt, keyed by the attempt's id); bump with the lifecycle-state reducer's rules.
ATTEMPT_LIFECYCLE = "attempt-lifecycle-state"
ATTEMPT_LIFECYCLE_VERSION = 1
# Where each attempt's newest evidence of each lifecycle kind is, by id (one row per attempt, keyed by its id; the
# checkpoint's ``latest`` for that attempt): what a batch named into an earlier attempt (``ingest --attempt``) adds to.
ATTEMPT_EVIDENCE = "attempt-evidence"
ATTEMPT_EVIDENCE_VERSION = 1
# The fold state after a goal's last event (one row, ``current``): where an ingest resumes.
CHECKPOINT = "projector-checkpoint"
# Bump when what the checkpoint holds changes (a checkpoint of another version is not resumed from).
# 2: where the attempt rule stands (the open attempt, what it holds, the next number); the evidence is the open attempt's.
CHECKPOINT_VERSION = 2
# comparison_id -> the latest batch that listed a comparison so named (one row per name): how a
# learning ledger naming a comparison finds that comparison's runs without reading the goal's past.
COMPARISON_INDEX = "comparison-batch"
COMPARISON_INDEX_VERSION = 1


def projection_versions() -> dict[str, int]:
    """Every stored projection and the version of the code that computes it."""
    versions = {name: review_module(name).VERSION for name in REVIEW_MODULES}
    versions[SUMMARY] = SUMMARY_VERSION
    versions[BATCH_LINKS] = BATCH_LINKS_VERSION
    versions[STEP] = STEP_VERSION
    versions[ATTEMPT_LIFECYCLE] = ATTEMPT_LIFECYCLE_VERSION
    versions[ATTEMPT_EVIDENCE] = ATTEMPT_EVIDENCE_VERSION
    versions[CHECKPOINT] = CHECKPOINT_VERSION
    versions[COMPARISON_INDEX] = COMPARISON_INDEX_VERSION
    return versions


def versions_differing(recorded: Mapping[str, object]) -> dict[str, tuple[object, int | None]]:
    """The projections whose version in ``recorded`` (a checkpoint's ``versions``: the build that folded the goal)
    is not this code's, each as (recorded version or None: not computed by that build, this code's or None: no longer computed)."""
    current = projection_versions()
    return {name: (recorded.get(name), current.get(name)) for name in sorted(set(current) | set(recorded)) if recorded.get(name) != current.get(name)}


def step_key(position: int) -> str:
    """The key of the ``lifecycle-step`` row of the event at ``position``: zero-padded, so keys sort as positions."""
    return f"{position:012d}"


def comparison_key(comparison_id: str) -> str:
    """The ``comparison-batch`` row key of a comparison name (keys hold 128 characters; a name may hold 180)."""
    return f"id:{comparison_id}" if len(comparison_id) <= 120 else f"sha256:{hashlib.sha256(comparison_id.encode()).hexdigest()}"
