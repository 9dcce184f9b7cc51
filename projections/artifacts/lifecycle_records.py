"""What the ledger keeps of raw lifecycle records (preflight, launch, post-launch).

LoopX never compacts these records; lifecycle-state reads a few fields of
each (common-inputs.md §7). The ledger stores exactly those fields: a field
maps to ``None`` (kept whole), to :data:`PRINTED` (kept as the text the review
prints of it) or to the fields kept inside it. Every other
field keeps its name with a null value, because the review looks at whether a
record is empty (``launch_present``) but never at those values, and so private
paths in, say, a launch summary's job directory are never stored.
``tests/unit/reducers/test_lifecycle_raw_inputs.py`` holds lifecycle-state to this: on any
raw input, the kept part gives the same verdict.
"""

from __future__ import annotations

from typing import TypeAlias

# A field the review prints as LoopX's str() of it. An object's keys are stored sorted, while str() shows them in the
# document's order ("{'b': 1, 'a': 2}"): a non-empty object or array is kept as that text, which reads the same.
PRINTED = "printed"

# A field's name -> None (the field is kept whole), PRINTED or the fields kept inside it.
Reads: TypeAlias = dict[str, "Reads | str | None"]

PREFLIGHT_READS: Reads = {
    "schema_version": PRINTED,
    "ok": None,
    "ready": None,
    "first_blocker": None,
    "private_runner_launch_summary": {"ready": None},
}
# A preflight may nest another preflight-shaped object, read the same way.
PREFLIGHT_READS["benchmark_run"] = PREFLIGHT_READS
PREFLIGHT_READS["preflight_guard"] = PREFLIGHT_READS
LAUNCH_READS: Reads = {"schema_version": None, "process_started": None, "launched": None, "started": None, "pid": None}
POST_LAUNCH_READS: Reads = {
    "schema_version": PRINTED,
    "first_blocker": PRINTED,
    "ready_for_launch_state": None,
    "ready_for_compact_result_ingest": None,
    "ready_for_compact_failure_marker": None,
    "compact_failure_marker": {"terminal_closeout": None, "case_attempt_countable": None, "benchmark_budget_countable": None},
}
KEPT_FIELDS: dict[str, Reads] = {"preflight": PREFLIGHT_READS, "launch": LAUNCH_READS, "post-launch": POST_LAUNCH_READS}
