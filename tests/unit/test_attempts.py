"""The attempt rule (projections/attempts.py): which attempt of its goal each event joins, as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from benchledger.projections.attempts import (
    AFTER_LAUNCH,
    FIRST_ATTEMPT,
    LIFECYCLE_EVIDENCE,
    Attempts,
    named_attempt,
    place,
    place_named,
    valid_attempt_id,
)

KINDS = [*sorted(LIFECYCLE_EVIDENCE), "ingest_batch", "adapter-invocation", "result", "retraction", "benchmark_run_ledger_row"]
kinds = st.lists(st.sampled_from(KINDS), max_size=40)


def attempts_of(sequence: list[str], start: Attempts | None = None) -> tuple[list[str], Attempts]:
    """The attempt of each event of ``sequence`` (kinds, in stream order), and the rule's state after them."""
    state, placed = start or Attempts(), []
    for kind in sequence:
        state = place(state, kind)
        assert state.open is not None
        placed.append(state.open)
    return placed, state


@given(kinds)
def test_attempts_by_the_rule_are_numbered_1_2_and_on_in_stream_order(sequence):
    placed, _ = attempts_of(sequence)
    numbers = [int(a) for a in placed]
    assert numbers[:1] in ([], [1])
    assert all(later - earlier in (0, 1) for earlier, later in zip(numbers, numbers[1:]))


@given(kinds)
def test_only_a_preflight_after_other_evidence_or_a_launch_after_its_stages_opens_an_attempt(sequence):
    placed, _ = attempts_of(sequence)
    for index in range(1, len(sequence)):
        kind, earlier = sequence[index], {k for k, a in zip(sequence[:index], placed) if a == placed[index - 1]} & LIFECYCLE_EVIDENCE
        opens = placed[index] != placed[index - 1]
        if kind == "preflight":
            assert opens == bool(earlier - {"preflight"})
        elif kind == "launch":
            assert opens == bool(earlier & AFTER_LAUNCH)
        else:
            assert not opens  # runs, comparisons, ledgers, reviews, and what feeds no lifecycle join the open attempt


@given(kinds)
def test_within_an_attempt_no_preflight_follows_other_evidence_and_no_launch_follows_its_later_stages(sequence):
    placed, _ = attempts_of(sequence)
    for attempt in set(placed):
        held = [k for k, a in zip(sequence, placed) if a == attempt and k in LIFECYCLE_EVIDENCE]
        for index, kind in enumerate(held):
            if kind == "preflight":
                assert set(held[:index]) <= {"preflight"}
            if kind == "launch":
                assert not set(held[:index]) & AFTER_LAUNCH


@given(kinds, kinds)
def test_placing_the_rest_from_the_state_after_a_prefix_is_placing_everything(prefix, rest):
    """What an ingest does (it resumes from the goal's checkpoint) gives the attempts a replay gives."""
    whole, end = attempts_of(prefix + rest)
    placed, state = attempts_of(prefix)
    resumed, resumed_end = attempts_of(rest, start=state)
    assert placed + resumed == whole and resumed_end == end


def test_one_case_preflighted_launched_run_compared_and_reviewed_is_one_attempt():
    case = ["preflight", "preflight", "ingest_batch", "launch", "launch", "post-launch", "run", "run", "comparison", "ingest_batch", "claim-review", "learning-ledger"]
    assert attempts_of(case)[0] == [FIRST_ATTEMPT] * len(case)


def test_the_week_a_second_case_after_a_budget_counted_first():
    first = ["preflight", "launch", "post-launch", "run", "run", "comparison", "ingest_batch", "learning-ledger"]
    placed, _ = attempts_of([*first, "preflight", "ingest_batch", "launch", "ingest_batch"])
    assert placed == ["1"] * len(first) + ["2"] * 4
    # a case launched again without a new preflight is a new attempt too
    assert attempts_of([*first, "launch"])[0][-1] == "2"


@given(kinds)
def test_the_count_is_how_many_attempts_the_rule_opened(sequence):
    placed, state = attempts_of(sequence)
    assert state.count == len(set(placed)) == (int(placed[-1]) if placed else 0)


@given(kinds, st.lists(st.tuples(st.sampled_from(KINDS), st.integers(1, 12)), max_size=20))
def test_a_named_attempt_is_the_events_whatever_the_rule_says_and_the_rule_goes_on_from_the_latest_opened(prefix, named):
    _, state = attempts_of(prefix)
    for kind, number in named:
        before, after = state, place_named(state, kind, str(number))
        if number >= before.next_number:  # a number past the attempts opens it
            assert (after.open, after.next_number, after.count) == (str(number), number + 1, before.count + 1)
        elif str(number) == before.open:  # the open attempt: joined, never a new one opened
            assert (after.open, after.next_number, after.count) == (before.open, before.next_number, before.count)
            assert after.held == before.held | ({kind} & LIFECYCLE_EVIDENCE)
        else:  # an earlier attempt: the open one stays as it was
            assert after == before
        state = after
    # un-named events go on from the most recently opened attempt
    opened = place(state, "run")
    assert opened.open == state.open or state.open is None


def test_attempt_ids_are_positive_numbers_without_leading_zeros():
    assert all(map(valid_attempt_id, ["1", "2", "10", "999999999"]))
    assert not any(map(valid_attempt_id, ["0", "01", "-1", "+1", "1.0", "", " 1", "1234567890", 1, True, None, ["1"]]))
    assert named_attempt({"members": [], "attempt": "2"}) == "2"
    assert [named_attempt(m) for m in ({"members": []}, {"attempt": 2}, {"attempt": "02"}, [], None)] == [None] * 5
