"""Focused tests of the ``review-adapter-kwargs`` reducer, its invocation normalizer and command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from benchledger.cli.main import cli
from benchledger.projections import adapter_kwargs_review as review
from benchledger.projections.artifacts import IntakeError, adapter_invocation


def invocation(*pairs):
    return adapter_invocation.invocation_payload(adapter_invocation.flag_argv(list(pairs)))


def reduce(*invocations, **options):
    return review.reduce({review.KIND: list(invocations)}, options)


# --- argv extraction -------------------------------------------------------------------


def test_argv_extraction_skips_malformed_pairs_and_keeps_positions():
    argv = [
        "harbor",
        "--agent-kwarg",
        "loopx_mode=codex",
        "--agent-kwarg",
        "not-a-pair",
        "--agent-kwarg",
        " =empty-key",
        None,  # dropped before positions are counted
        "--agent-kwarg",
        {"a": 1},
        "loopx_goal_id=g",
        "--agent-kwarg",
        True,  # occupies the value position as the text "True"
        "loopx_skipped=x",
        "--agent-kwarg=loopx_single_token=x",
        "--agent-kwarg",
    ]
    assert adapter_invocation.argv_kwarg_keys(argv) == ["loopx_mode", "loopx_goal_id"]


def test_a_flag_after_a_flag_is_its_value_and_a_flag_again():
    argv = ["--agent-kwarg", "--agent-kwarg", "loopx_a=1"]
    assert adapter_invocation.argv_kwarg_keys(argv) == ["loopx_a"]


def test_numbers_become_argv_text():
    assert adapter_invocation.argv_text(1) == "1"
    assert adapter_invocation.argv_text(1.0) == "1.0"
    assert adapter_invocation.argv_text(False) == "False"
    assert adapter_invocation.argv_text(None) is None
    assert adapter_invocation.argv_text([1]) is None


def test_invocation_payload_records_key_names_only():
    payload = adapter_invocation.invocation_payload(["--agent-kwarg", "loopx_trace=/tmp/secret/path", "--agent-kwarg", "model=x"])
    assert payload == {"loopx_kwarg_keys": ["loopx_trace"]}


@pytest.mark.parametrize("pair", ["no-separator", "=value", "  =value"])
def test_malformed_flags_are_an_error(pair):
    with pytest.raises(IntakeError, match="^--agent-kwarg values must use KEY=VALUE form$"):
        adapter_invocation.flag_argv(["loopx_ok=1", pair])


# --- KEYLIST ------------------------------------------------------------------------------


def test_keylist_normalization():
    items = [" loopx_b = 1", "loopx_a", "LOOPX_MODE", "model_name", "loopx_a=again", "", 5, True, None, "loopx_"]
    assert adapter_invocation.loopx_keys(items) == ["loopx_", "loopx_a", "loopx_b"]


def test_keylist_keeps_the_80_smallest_keys():
    keys = [f"loopx_k{i:03d}" for i in reversed(range(100))]
    assert adapter_invocation.loopx_keys(keys) == [f"loopx_k{i:03d}" for i in range(80)]


# Raw key names: loopx_* or not, with whitespace and "=" in them.
key_names = st.lists(
    st.builds(
        "{}{:03d}{}".format,
        st.sampled_from(["loopx_", "Loopx_", "m", " loopx_"]),
        st.integers(0, 199),
        st.sampled_from(["", " ", "=x", "_a"]),
    ),
    max_size=30,
)


def kwarg_argv(keys):
    return [token for key in keys for token in ("--agent-kwarg", f"{key}=value")]


def stored_review_keys(*key_lists):
    """The generated keys the review reads from one stored invocation per key list."""
    return review.generated_keys([adapter_invocation.invocation_payload(kwarg_argv(keys)) for keys in key_lists])


@given(key_names, key_names)
def test_reviewing_stored_invocations_equals_keylist_of_all_raw_keys(first, second):
    """Storing KEYLIST per invocation loses nothing: the union re-normalized is the same."""
    assert stored_review_keys(first, second) == adapter_invocation.loopx_keys(first + second)


def test_per_invocation_cap_does_not_change_the_union_cap():
    high = [f"loopx_k{i:03d}" for i in range(100, 200)]
    low = [f"loopx_k{i:03d}=x" for i in range(60)]
    expected = [f"loopx_k{i:03d}" for i in [*range(60), *range(100, 120)]]
    assert stored_review_keys(high, low) == expected == adapter_invocation.loopx_keys(high + low)


# --- classification ------------------------------------------------------------------------


def test_no_generated_keys_is_missing_and_not_clean():
    payload = reduce(invocation("model_name=gpt"), accepted_loopx_kwarg=["loopx_mode"], require_clean=True)
    assert payload["classification"] == review.KWARGS_MISSING
    assert payload["next_required_action"] == review.RECORD_KWARGS
    assert payload["clean"] is False
    assert payload["ok"] is False
    assert payload["error"] == review.KWARGS_MISSING
    assert list(payload)[-3:] == ["ok", "error", "require_clean"]


def test_absorbed_through_accepted_and_passthrough():
    payload = reduce(
        invocation(" loopx_mode =codex", "loopx_trace=/tmp/x"),
        accepted_loopx_kwarg=["loopx_mode=ignored", "model"],
        allowed_base_passthrough=["loopx_trace"],
        require_clean=True,
    )
    assert payload["classification"] == review.ABSORBED
    assert payload["clean"] is True
    assert payload["ok"] is True
    assert "error" not in payload
    assert payload["absorbed_loopx_kwarg_keys"] == ["loopx_mode", "loopx_trace"]
    assert payload["accepted_loopx_kwarg_keys"] == ["loopx_mode"]
    assert "/tmp/x" not in json.dumps(payload)


def test_leak_lists_unabsorbed_keys():
    payload = reduce(invocation("loopx_mode=a", "loopx_debug=b"), terminal_bench_managed_codex=True)
    assert payload["classification"] == review.LEAK_RISK
    assert payload["leaked_loopx_kwarg_keys"] == ["loopx_debug"]
    assert payload["absorbed_loopx_kwarg_keys"] == ["loopx_mode"]
    assert payload["accepted_loopx_kwarg_keys"] == sorted(review.TERMINAL_BENCH_MANAGED_CODEX_KEYS)


def test_passthrough_list_is_shown_capped_but_matched_in_full():
    passthrough = [f"loopx_p{i:02d}" for i in range(60)]
    payload = reduce(invocation("loopx_p55=1"), allowed_base_passthrough=passthrough)
    assert payload["allowed_base_passthrough_keys"] == passthrough[:40]
    assert payload["classification"] == review.ABSORBED


def test_several_invocations_are_reviewed_together():
    payload = reduce(invocation("loopx_a=1"), invocation("loopx_b=2"), accepted_loopx_kwarg=["loopx_a"])
    assert payload["generated_loopx_kwarg_keys"] == ["loopx_a", "loopx_b"]
    assert payload["leaked_loopx_kwarg_keys"] == ["loopx_b"]


def test_adapter_label_is_echoed_verbatim_with_a_default():
    assert reduce()["adapter_label"] == review.DEFAULT_ADAPTER_LABEL
    assert reduce(adapter_label="")["adapter_label"] == ""
    assert reduce(adapter_label=" /tmp/a ")["adapter_label"] == " /tmp/a "


def test_markdown_of_an_error_payload():
    lines = review.render_markdown(review.error_payload("boom", {})).splitlines()
    assert "- Kwarg values recorded: `None`" in lines
    assert "- Compact only: `True`" in lines
    assert not any("boom" in line for line in lines)


# --- command line ----------------------------------------------------------------------


def invoke(*args):
    return CliRunner().invoke(cli, ["benchmark", "review-adapter-kwargs", "--format", "json", *args])


def test_command_json_error_wins_over_malformed_flag(tmp_path):
    path = tmp_path / "cmd.json"
    path.write_text('{"argv": []}', encoding="utf-8")
    result = invoke("--command-json", str(path), "--agent-kwarg", "bad")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == "--command-json must contain a JSON argv list"


def test_empty_command_json_path_is_not_given():
    result = invoke("--command-json", "", "--agent-kwarg", "loopx_mode=x", "--accepted-loopx-kwarg", "loopx_mode")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["classification"] == review.ABSORBED


def test_flags_and_argv_file_are_combined(tmp_path):
    path = tmp_path / "cmd.json"
    path.write_text(json.dumps(["--agent-kwarg", "loopx_a=1"]), encoding="utf-8")
    result = invoke("--command-json", str(path), "--agent-kwarg", "loopx_b=2", "--require-clean")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["generated_loopx_kwarg_keys"] == ["loopx_a", "loopx_b"]


def test_abbreviated_flags_are_usage_errors():
    assert invoke("--require").exit_code == 2


@pytest.mark.parametrize(
    ("args", "usage_error"),
    [
        (["--agent-kwarg", "-x=1"], True),  # LoopX's argparse: "expected one argument"
        (["--agent-kwarg", "--x"], True),
        (["--adapter-label", "--require-clean"], True),
        (["--agent-kwarg", "x=1", "--adapter-label", "-x"], True),
        (["--agent-kwarg=-x=1"], False),  # attached: a value for both parsers
        (["--agent-kwarg", "-5"], False),  # a negative number is a value
        (["--agent-kwarg", "-"], False),
        (["--agent-kwarg", "-x 1"], False),  # argparse takes a token with a space as a value
    ],
)
def test_an_option_like_value_is_a_usage_error_as_in_loopx(args, usage_error):
    result = CliRunner().invoke(cli, ["benchmark", "review-adapter-kwargs", *args, "--format", "json"])
    assert (result.exit_code == 2) is usage_error, result.output
    if usage_error:
        assert "expected one argument" in result.output
    else:
        assert json.loads(result.stdout)["schema_version"]
