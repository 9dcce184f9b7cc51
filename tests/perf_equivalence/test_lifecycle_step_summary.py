"""A fold's lifecycle step summary (``lifecycle_state.step_summary``, worked out once per ``summary_key``) is
the summary of the whole ``lifecycle-state`` payload (issue 31 item 4).

The summary is held by a key of what the facts read of each kind of evidence; two inputs with equal
keys and different summaries would make a step row wrong. Hypothesis draws evidence over the fields the
reducer reads (readiness contexts, probes, markers, routing, schemas, scores) and asks for summaries in
sequence, each after others were held, as a fold does.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.projections import lifecycle as lc
from benchledger.projections import lifecycle_state as ls
from benchledger.projections.history import lifecycle_summary

TEXTS = st.sampled_from(
    [
        "",
        "ready",
        "ready_for_private_managed_no_upload_pilot_review",
        "x",
        lc.ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER,
        lc.ENVIRONMENT_SETUP_PROBE_MATERIALIZED,
        "none",
        "RuntimeError",
    ]
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1, 2), st.floats(allow_nan=False, width=16), TEXTS)
FLAGS = st.dictionaries(
    st.sampled_from(
        [
            "ready",
            "ok",
            "first_blocker",
            "pid",
            "launched",
            "ready_for_launch_state",
            "ready_for_compact_result_ingest",
            "ready_for_compact_failure_marker",
            "terminal_closeout",
            "case_attempt_countable",
            "benchmark_budget_countable",
            "budget_count_allowed",
            "new_candidate_allowed",
            "repeat_allowed",
            "spend_allowed",
            "schema_version",
        ]
    ),
    SCALARS,
    max_size=5,
)
SCHEMAS = st.sampled_from(["", ls.RUN_SCHEMA, ls.COMPARISON_SCHEMA, ls.CLAIM_REVIEW_SCHEMA, ls.LEARNING_LEDGER_SCHEMA, "other"])
CONTEXT = st.fixed_dictionaries({"schema_version": st.one_of(st.none(), TEXTS)}, optional={"failure_kind": TEXTS, "timed_out": st.booleans()})
TRIAL = st.fixed_dictionaries(
    {},
    optional={
        "task_id": TEXTS,
        "worker_start_status": TEXTS,
        "exception_type": TEXTS,
        "score": SCALARS,
        "trial_result_present": st.booleans(),
        "environment_setup_failure_context": CONTEXT,
    },
)
RUN = st.fixed_dictionaries(
    {"schema_version": SCHEMAS},
    optional={
        "benchmark_id": TEXTS,
        "official_score": SCALARS,
        "trials": st.lists(TRIAL, max_size=3),
        "first_blocker": TEXTS,
        "repeat_blocked_by": TEXTS,
        "environment_setup_failure_before_worker_count": st.integers(-1, 2),
        "environment_setup_failure_context": CONTEXT,
    },
)
WITH_SCHEMA = st.builds(lambda flags, schema: {**flags, "schema_version": schema}, FLAGS, SCHEMAS)
LEDGER = st.builds(
    lambda schema, gate, routing, quota: {"schema_version": schema, "lifecycle_gate": gate, "routing": routing, "learning_quota_gate": quota},
    SCHEMAS,
    FLAGS,
    FLAGS,
    FLAGS,
)
POST_LAUNCH = st.builds(lambda flags, marker: {**flags, "compact_failure_marker": marker}, FLAGS, st.one_of(FLAGS, SCALARS))
PREFLIGHT = st.builds(lambda flags, nested: {**flags, "benchmark_run": nested}, FLAGS, FLAGS)
EVIDENCE = {
    "preflight": PREFLIGHT,
    "launch": FLAGS,
    "post-launch": POST_LAUNCH,
    "run": RUN,
    "comparison": WITH_SCHEMA,
    "claim-review": WITH_SCHEMA,
    "learning-ledger": LEDGER,
}
INPUTS = st.fixed_dictionaries({}, optional={kind: st.lists(st.one_of(payload, SCALARS), min_size=1, max_size=1) for kind, payload in EVIDENCE.items()})
# One kind's latest evidence replaced, as each event of a fold replaces it: most keys then equal the one before.
CHANGES = st.lists(st.sampled_from(sorted(EVIDENCE)).flatmap(lambda kind: st.tuples(st.just(kind), EVIDENCE[kind])), max_size=8)


@settings(max_examples=500, deadline=None)
@given(INPUTS, CHANGES)
def test_the_step_summary_is_the_summary_of_the_whole_state(inputs, changes):
    for kind, payload in [(None, None), *changes]:
        if kind is not None:
            inputs = {**inputs, kind: [payload]}
        summary = ls.step_summary(inputs)
        assert summary == lifecycle_summary(ls.reduce(inputs, ls.DEFAULT_OPTIONS))
        assert summary == lifecycle_summary(ls.reduce(inputs, {"require_budget_count_allowed": True}))


def test_a_probe_with_an_exception_and_one_without_are_told_apart():
    def run(exception):
        trial = {"task_id": "t", "worker_start_status": lc.ENVIRONMENT_SETUP_PROBE_MATERIALIZED, "exception_type": exception}
        return {"preflight": [{"ready": True}], "run": [{"schema_version": ls.RUN_SCHEMA, "trials": [trial]}]}

    for inputs in (run("none"), run("RuntimeError"), run("none")):
        assert ls.step_summary(inputs) == lifecycle_summary(ls.reduce(inputs, ls.DEFAULT_OPTIONS))
    assert ls.step_summary(run("none"))["first_blocker"] != ls.step_summary(run("RuntimeError"))["first_blocker"]


def test_a_held_summary_is_never_shared_with_a_caller():
    inputs = {"preflight": [{"ready": True}], "launch": [{"pid": 7}]}
    first = ls.step_summary(inputs)
    first["gates"][lc.BUDGET_COUNT_ALLOWED] = "changed"
    first["current_phase"] = "changed"
    assert ls.step_summary(inputs) == lifecycle_summary(ls.reduce(inputs, ls.DEFAULT_OPTIONS))


def test_equal_keys_are_met_again_in_a_fold():
    # Runs that differ in what the summary does not read share one key (the reason it is held by key).
    runs = [{"schema_version": ls.RUN_SCHEMA, "official_score": 1.0, "benchmark_id": name} for name in ("a", "b")]
    keys = {ls.summary_key(ls.Evidence.from_inputs({"run": [run]})) for run in runs}
    assert len(keys) == 1
    scored = ls.summary_key(ls.Evidence.from_inputs({"run": [{"schema_version": ls.RUN_SCHEMA}]}))
    assert scored not in keys


@settings(max_examples=300, deadline=None)
@given(INPUTS)
def test_the_key_is_each_kinds_read_of_its_latest_payload(inputs):
    """A fold makes the key from each kind's read of the payload it holds (``summary_read``), without the inputs."""
    reads = tuple(ls.summary_read(kind, inputs[kind][-1] if kind in inputs else None) for kind in ls.SUMMARY_KINDS)
    assert reads == ls.summary_key(ls.Evidence.from_inputs(inputs))


def test_a_folds_key_is_the_key_of_its_lifecycle_inputs_after_every_event():
    """The projector's key (the reads held with each piece of evidence) is ``summary_key`` of the inputs it would build,
    after every event of ordinary goals, as the fold leaves and enters attempts and replaces evidence."""
    from benchledger.projections.projector import GoalProjector
    from benchmarks import workload as wl
    from benchmarks.synthetic_ledger import build_templates

    compared = 0
    for template in build_templates(wl.load_templates(), 8, seed=31):
        projector = GoalProjector(strict=False)
        for event in template.events:
            projector.apply(event)
            assert projector._summary_key() == ls.summary_key(ls.Evidence.from_inputs(projector.lifecycle_inputs()))
            compared += 1
        projector.finish()
    assert compared > 100
