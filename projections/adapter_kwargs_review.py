"""``review-adapter-kwargs``: are the generated ``loopx_*`` adapter kwargs absorbed?

A LoopX treatment run hands its control-plane settings to the benchmark's agent
adapter as ``--agent-kwarg loopx_…=…`` pairs. A key the adapter does not
consume leaks into the base agent's constructor, which typically crashes the
worker at start-up and burns an attempt without any learning. The review
checks, before launch, that every generated ``loopx_*`` key is either consumed
by the adapter contract or explicitly allowed to pass through.

Data model. The *adapter invocation* is the evidence: the kwargs a runner
generated, whether read from a ``--command-json`` argv list or given as
``--agent-kwarg`` flags. Each source becomes one artifact of kind
``adapter-invocation`` whose normalized payload is ``{"loopx_kwarg_keys":
[...]}``: the generated key names normalized by KEYLIST (stripped, cut at
``=``, ``loopx_*`` only, deduplicated, sorted, at most 80). Values are never
stored, because the review's own boundary promises ``kwarg_values_recorded:
false`` and values routinely carry local paths and credentials; keys that are
not ``loopx_*`` never influence the review. Storing the KEYLIST form loses
nothing the review reads: the union of several invocations' lists, normalized
again, equals KEYLIST of the union of their raw keys (the 80-key cap keeps the
smallest keys, and a key among the 80 smallest of a union is among the 80
smallest of its own source).

Everything describing the *adapter* rather than the invocation — its label,
the keys it accepts (``accepted_loopx_kwarg``, ``terminal_bench_managed_codex``),
the keys allowed through to the base constructor (``allowed_base_passthrough``)
— and the ``require_clean`` gate are options, so the same invocation can be
reviewed against different adapter contracts.

:func:`invocation_payload` (argv list -> payload) and :func:`loopx_keys` are
what ``ledger.intake.kinds.normalize("adapter-invocation", …)`` applies;
:func:`flag_argv` turns ``--agent-kwarg`` flag values into the argv form after
the stricter flag validation, so both sources share one extraction rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ledger.intake import IntakeError
from projections.boundaries import adapter_read_boundary
from projections.markdown import code, document, get, text

NAME = "review-adapter-kwargs"
VERSION = 1
SCHEMA_VERSION = "benchmark_adapter_kwarg_absorption_review_v0"
KIND = "adapter-invocation"
# The one field of a normalized adapter-invocation payload.
KEYS_FIELD = "loopx_kwarg_keys"

MARKDOWN_TITLE = "Benchmark Adapter Kwarg Absorption Review"
DEFAULT_ADAPTER_LABEL = "benchmark-adapter"

# The command's adapter-describing flags and gate (python names) at their defaults.
DEFAULT_OPTIONS = {
    "adapter_label": DEFAULT_ADAPTER_LABEL,
    "accepted_loopx_kwarg": [],
    "allowed_base_passthrough": [],
    "terminal_bench_managed_codex": False,
    "require_clean": False,
}

AGENT_KWARG_FLAG = "--agent-kwarg"
LOOPX_KEY_PREFIX = "loopx_"
MAX_KEYS = 80
MAX_PASSTHROUGH_KEYS_SHOWN = 40

# Classifications and what to do about each.
LEAK_RISK = "adapter_kwarg_leak_risk"
ABSORBED = "adapter_kwargs_absorbed"
KWARGS_MISSING = "adapter_loopx_kwargs_missing"

CONSUME_OR_REJECT = "consume_or_reject_generated_loopx_kwargs_before_worker_start"
GUARD_PASSED = "adapter_kwarg_absorption_guard_passed"
RECORD_KWARGS = "record_generated_loopx_kwargs_before_run"

MALFORMED_FLAG_ERROR = "--agent-kwarg values must use KEY=VALUE form"

# The keys the GoalHarnessManagedCodex adapter contract consumes, in contract order.
TERMINAL_BENCH_MANAGED_CODEX_KEYS = (
    "loopx_policy_version",
    "loopx_behavior_spec_id",
    "loopx_ablation_mode",
    "loopx_mode",
    "loopx_goal_id",
    "loopx_access_packet_mode",
    "loopx_trace_publicness",
    "loopx_counter_trace",
    "loopx_cli_bridge_enabled",
    "loopx_codex_install_strategy",
    "loopx_command_prefix",
    "loopx_runtime_preflight_command",
    "loopx_registry_arg",
    "loopx_runtime_root_arg",
    "loopx_scan_path",
    "loopx_benchmark_run_json",
    "loopx_benchmark_run_schema_version",
    "loopx_benchmark_run_writeback_contract",
    "loopx_counter_trace_json",
    "loopx_classification",
    "loopx_append_execute_enabled",
    "loopx_worker_materialization_probe_only",
    "loopx_active_user_intervention_enabled",
    "loopx_active_user_feed_jsonl",
    "loopx_active_user_observation_json",
    "loopx_active_user_observe_command",
    "loopx_active_user_channel_surface",
)

CLAIM_BOUNDARY = {
    "kwarg_values_recorded": False,
    "local_paths_recorded": False,
    "adapter_absorption_required_before_worker_start": True,
    "base_constructor_may_receive_generated_loopx_kwargs": False,
}


# --- key names -----------------------------------------------------------------


def _is_scalar_text_source(item: Any) -> bool:
    return isinstance(item, (str, int, float)) and not isinstance(item, bool)


def loopx_keys(items: Iterable[Any]) -> list[str]:
    """KEYLIST: the distinct ``loopx_*`` key names among ``items``, sorted, at most 80.

    A ``KEY=VALUE`` item counts as ``KEY``; surrounding whitespace is ignored;
    booleans and non-scalar items are not key names. The prefix is case-sensitive.
    """
    keys = set()
    for item in items:
        if not _is_scalar_text_source(item):
            continue
        key = str(item).strip().partition("=")[0].strip()
        if key.startswith(LOOPX_KEY_PREFIX):
            keys.add(key)
    return sorted(keys)[:MAX_KEYS]


def split_pair(pair: str) -> str | None:
    """The stripped key of a ``KEY=VALUE`` pair, or ``None`` when it is malformed."""
    key, separator, _value = pair.partition("=")
    key = key.strip()
    return key if separator and key else None


# --- intake: the adapter-invocation normalizer ------------------------------------


def argv_text(item: Any) -> str | None:
    """An argv item as the command line would see it; ``None`` for items that are not scalars.

    Booleans keep their place as ``True``/``False``; null, objects and lists
    drop out before positions are counted.
    """
    if isinstance(item, (str, int, float)):
        return str(item)
    return None


def argv_kwarg_keys(argv: Sequence[Any]) -> list[str]:
    """Key names of the ``--agent-kwarg KEY=VALUE`` pairs of an argv list, in order.

    Malformed pairs are skipped silently (unlike malformed flags). Only the
    two-token form counts, and the token after the flag is always read as its
    value, even when it is itself the flag.
    """
    tokens = [token for token in map(argv_text, argv) if token is not None]
    keys = []
    for flag, pair in zip(tokens, tokens[1:]):
        key = split_pair(pair) if flag == AGENT_KWARG_FLAG else None
        if key is not None:
            keys.append(key)
    return keys


def invocation_payload(argv: Sequence[Any]) -> dict[str, list[str]]:
    """The normalized ``adapter-invocation`` payload of an argv list (key names only)."""
    return {KEYS_FIELD: loopx_keys(argv_kwarg_keys(argv))}


def flag_argv(pairs: Sequence[str]) -> list[str]:
    """``--agent-kwarg`` flag values as an argv list; a malformed pair is an error here."""
    for pair in pairs:
        if split_pair(pair) is None:
            raise IntakeError(MALFORMED_FLAG_ERROR)
    return [token for pair in pairs for token in (AGENT_KWARG_FLAG, pair)]


# --- the review ----------------------------------------------------------------


def generated_keys(invocations: Sequence[Any]) -> list[str]:
    """KEYLIST of every key generated by any of the invocations."""
    return loopx_keys(
        key
        for invocation in invocations
        if isinstance(invocation, Mapping)
        for key in (invocation.get(KEYS_FIELD) or ())
    )


def accepted_keys(options: Mapping[str, Any]) -> list[str]:
    """KEYLIST of the adapter's accepted keys: the explicit ones, then the built-in contract.

    ``options`` must hold every key of :data:`DEFAULT_OPTIONS`.
    """
    accepted = list(options["accepted_loopx_kwarg"] or ())
    if options["terminal_bench_managed_codex"]:
        accepted.extend(TERMINAL_BENCH_MANAGED_CODEX_KEYS)
    return loopx_keys(accepted)


def classify(generated: Sequence[str], leaked: Sequence[str]) -> tuple[str, str]:
    """Classification and next required action: first matching row of the decision table."""
    if leaked:
        return LEAK_RISK, CONSUME_OR_REJECT
    if generated:
        return ABSORBED, GUARD_PASSED
    return KWARGS_MISSING, RECORD_KWARGS


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    options = {**DEFAULT_OPTIONS, **options}
    generated = generated_keys(inputs.get(KIND, ()))
    accepted = accepted_keys(options)
    passthrough = loopx_keys(options["allowed_base_passthrough"] or ())
    absorbing = set(accepted) | set(passthrough)
    absorbed = [key for key in generated if key in absorbing]
    leaked = [key for key in generated if key not in absorbing]
    classification, next_action = classify(generated, leaked)
    # A review without any generated loopx_* key proves nothing, so it is not clean.
    clean = bool(generated) and not leaked
    require_clean = bool(options["require_clean"])

    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "adapter_label": options["adapter_label"],
        "classification": classification,
        "clean": clean,
        "generated_loopx_kwarg_count": len(generated),
        "absorbed_loopx_kwarg_count": len(absorbed),
        "leaked_loopx_kwarg_count": len(leaked),
        "generated_loopx_kwarg_keys": generated,
        "absorbed_loopx_kwarg_keys": absorbed,
        "leaked_loopx_kwarg_keys": leaked,
        "accepted_loopx_kwarg_keys": accepted,
        "allowed_base_passthrough_keys": passthrough[:MAX_PASSTHROUGH_KEYS_SHOWN],
        "next_required_action": next_action,
        "claim_boundary": dict(CLAIM_BOUNDARY),
        "read_boundary": adapter_read_boundary(),
        "ok": True,
    }
    if require_clean and not clean:
        # The gate names the reason: the (not clean) classification.
        payload["ok"] = False
        payload["error"] = classification
    payload["require_clean"] = require_clean
    return payload


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "ok": False,
        "schema_version": SCHEMA_VERSION,
        "error": message,
        "read_boundary": adapter_read_boundary(),
    }


def render_markdown(payload: Mapping[str, Any]) -> str:
    return document(
        MARKDOWN_TITLE,
        [
            code("Schema", get(payload, "schema_version")),
            code("Adapter", get(payload, "adapter_label")),
            code("Classification", get(payload, "classification")),
            code("Clean", get(payload, "clean")),
            code("Generated GH kwargs", get(payload, "generated_loopx_kwarg_count")),
            code("Absorbed GH kwargs", get(payload, "absorbed_loopx_kwarg_count")),
            code("Leaked GH kwargs", get(payload, "leaked_loopx_kwarg_count")),
            code("Leaked keys", get(payload, "leaked_loopx_kwarg_keys")),
            text("Next action", get(payload, "next_required_action")),
            code("Kwarg values recorded", get(payload, "claim_boundary", "kwarg_values_recorded")),
            code("Compact only", get(payload, "read_boundary", "compact_only")),
            code("Raw artifacts read", get(payload, "read_boundary", "raw_artifacts_read")),
        ],
    )
