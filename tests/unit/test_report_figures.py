"""The goal page's charts (issue 28 item 9): empty ones say so, one instant gets readable ticks, long labels and many modes fit."""

from __future__ import annotations

import pytest

from benchledger.cli.web import figures, review_fields

STEP = {"position": 1, "kind": "run", "summary": "s", "phase": "result_ingested", "first_blocker": None, "gates_opened": [], "gates_closed": []}


@pytest.mark.parametrize("build", [figures.timeline, figures.score_delta, figures.claim_strengths, figures.attribution_labels, figures.learning_status])
def test_an_empty_chart_says_no_data_and_draws_no_axes(build):
    layout = build([])["layout"]
    (note,) = layout["annotations"]
    assert note["text"].startswith("no data: ")
    assert layout["xaxis"]["visible"] is False and layout["yaxis"]["visible"] is False


def test_one_instant_gets_an_hour_either_side():
    """A one-event timeline (or a batch recorded at once) was given a range of a millisecond: ticks like 23:24:36.5385."""
    layout = figures.timeline([{**STEP, "recorded_at": "2026-06-20T04:51:08.538939Z"}])["layout"]
    assert layout["xaxis"]["range"] == ["2026-06-20 03:51:08", "2026-06-20 05:51:08"]
    points = [{"at": "2026-06-20T04:51:08Z", "mean": 1.0, "min": 1.0, "max": 1.0, "attempts": 1}] * 3
    assert figures.score_delta(points)["layout"]["xaxis"]["range"][0] == "2026-06-20 03:51:08"
    two = [{**STEP, "recorded_at": "2026-06-20T04:51:08Z"}, {**STEP, "recorded_at": "2026-06-21T04:51:08Z"}]
    assert "range" not in figures.timeline(two)["layout"]["xaxis"]


def test_long_labels_are_cut_from_the_middle_and_whole_in_the_hover():
    label = "skillsbench_host_local_acp_codex_exec_failed_codex_exec_first_action_timeout"
    counts = [{"label": label, "arm": "codex-loopx", "runs": 3}, {"label": "short", "arm": "hardened-codex", "runs": 1}]
    figure = figures.attribution_labels(counts)
    shown = figure["data"][0]["y"]  # labels sorted: "short", then the long one
    assert shown[0] == "short" and len(shown[1]) == figures.LABEL_WIDTH
    assert shown[1].startswith("skillsbench_host_loca") and shown[1].endswith("…" + label[-22:])
    assert label in figure["data"][0]["hovertext"][1]
    # the legend sits under the plot, in rows, not over the bars
    legend = figure["layout"]["legend"]
    assert legend["orientation"] == "h" and legend["y"] < 0 and legend["yanchor"] == "top"


def test_labels_that_would_read_the_same_shortened_are_shown_whole():
    same_ends = ["a" * 30 + "_left_" + "z" * 30, "a" * 30 + "_right_" + "z" * 30]
    assert figures._axis_labels(same_ends) == same_ends


def test_many_arms_get_distinct_colours_and_the_chart_grows_with_its_labels():
    counts = [{"label": f"label_{n:02d}", "arm": f"arm-{n:02d}", "runs": 1} for n in range(21)]
    layout = figures.attribution_labels(counts)["layout"]
    assert len(set(layout["colorway"][:21])) == 21
    assert layout["height"] >= 21 * figures.BAR_HEIGHT + figures.BELOW_AXIS + 11 * figures.LEGEND_ROW_HEIGHT


@pytest.mark.parametrize(("path", "value", "tone"), [
    (("read_boundary", "raw_artifacts_read"), False, "yes"),
    (("read_boundary", "raw_artifacts_read"), True, "no"),
    (("read_boundary", "compact_only"), True, "yes"),
    (("baseline_gate_cli", "docker_invoked"), False, "yes"),
    (("claim_boundary", "kwarg_values_recorded"), True, "no"),
    (("observed_runner_owned_fields", "read_boundary.compact_only"), False, "no"),
    (("gates", "repeat_allowed"), False, "no"),
    (("canonical_lifecycle", "phase_ready", "verifier_scored"), True, "yes"),
    (("ok",), False, "no"),
    (("clean",), True, "yes"),
    (("claim_boundary", "leaderboard_claim_allowed"), False, ""),
    (("routing", "new_candidate_allowed"), True, ""),
    (("require_clean",), True, ""),
    (("run_reviews", "[]", "exception_present"), False, "yes"),
])
def test_a_boolean_is_coloured_by_what_it_means_where_it_is(path, value, tone):
    assert review_fields.tone(path, value) == tone
