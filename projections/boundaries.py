"""The ``read_boundary`` objects reviews attach to their payloads (spec common-inputs §1.6).

They are constants describing what the reviewer itself did (it read compact
artifacts only), not what the inputs claim. Each function returns a fresh dict
so a caller may embed it without sharing state; key order is the payload's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def compact_read_boundary() -> dict[str, bool]:
    """The 4-field boundary of most reviews."""
    return {
        "compact_only": True,
        "raw_artifacts_read": False,
        "task_text_read": False,
        "local_paths_recorded": False,
    }


def _no_external_calls() -> dict[str, bool]:
    return {"docker_invoked": False, "model_api_invoked": False, "upload_invoked": False}


def adapter_read_boundary() -> dict[str, bool]:
    """The 7-field boundary of ``review-adapter-kwargs``: 4 fields plus no external calls."""
    return {**compact_read_boundary(), **_no_external_calls()}


def lifecycle_read_boundary() -> dict[str, bool]:
    """The 8-field boundary of ``lifecycle-state`` (normal and error payloads)."""
    return {
        "compact_only": True,
        "raw_artifacts_read": False,
        "task_text_read": False,
        "trajectory_read": False,
        "local_paths_recorded": False,
        **_no_external_calls(),
    }


def environment_setup_read_boundary() -> dict[str, bool]:
    """The 11-field boundary of ``lifecycle-state``'s two environment-setup sub-objects."""
    return {
        "compact_only": True,
        "raw_artifacts_read": False,
        "raw_logs_read": False,
        "task_text_read": False,
        "trajectory_read": False,
        "docker_logs_read": False,
        "credential_values_recorded": False,
        "local_paths_recorded": False,
        "model_api_invoked": False,
        "upload_invoked": False,
        "submit_invoked": False,
    }


def refused_input_payload(
    schema_version: str,
    message: str,
    read_boundary: Callable[[], dict[str, bool]] = compact_read_boundary,
) -> dict[str, Any]:
    """The usual payload of a refused input: ``ok``, ``schema_version``, ``error``, ``read_boundary``."""
    return {"ok": False, "schema_version": schema_version, "error": message, "read_boundary": read_boundary()}


def require_gate(payload: dict[str, Any], flag: str, required: bool, passed: bool, reason: str) -> dict[str, Any]:
    """Apply a ``--require-*`` gate: when required and not passed, the payload becomes
    ``ok: false`` with ``reason`` as its ``error``; the flag is echoed last either way."""
    if required and not passed:
        payload["ok"] = False
        payload["error"] = reason
    payload[flag] = required
    return payload
