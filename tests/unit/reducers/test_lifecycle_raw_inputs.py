"""Storing only what lifecycle-state reads of raw inputs never changes its verdict.

The kept fields in projections/artifacts/lifecycle_records.py are a promise about the
reducer; this property test holds the reducer to it on arbitrary raw inputs.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.projections import lifecycle_state
from benchledger.projections.artifacts import lifecycle_records
from benchledger.projections.artifacts.kinds import normalize

KEYS = sorted(
    set(lifecycle_records.PREFLIGHT_READS)
    | set(lifecycle_records.LAUNCH_READS)
    | set(lifecycle_records.POST_LAUNCH_READS)
    | {"private_job_dir", "checked", "notes", "ready_for_launch_state"}
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from(["", "ready", "ready_for_compact_result_ingest", "job_root_missing", "/tmp/x/y", "None"]),
    st.sampled_from(sorted(lifecycle_state.READY_PREFLIGHT_BLOCKERS)),
)
VALUES = st.recursive(SCALARS, lambda inner: st.dictionaries(st.sampled_from(KEYS), inner, max_size=5), max_leaves=12)
RAW = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=8)


@settings(max_examples=300, deadline=None)
@given(preflight=RAW, launch=RAW, post_launch=RAW)
def test_trimmed_raw_inputs_give_the_same_lifecycle_state(preflight, launch, post_launch):
    raw = {"preflight": [preflight], "launch": [launch], "post-launch": [post_launch]}
    trimmed = {kind: [normalize(kind, value)] for kind, (value,) in raw.items()}
    options = lifecycle_state.DEFAULT_OPTIONS
    assert lifecycle_state.reduce(trimmed, options) == lifecycle_state.reduce(raw, options)
