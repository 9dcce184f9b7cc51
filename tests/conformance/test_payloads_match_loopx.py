"""Every conformance case and mode-alias case, in-process: whole-payload equality (JSON) and byte equality (markdown)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from tests.conformance.cases import load_cases, strip_volatile, typed

CASES = load_cases(aliases=True)


def invoke(case, extra):
    return CliRunner().invoke(cli, ["benchmark", case.command, *case.args, *extra], catch_exceptions=False)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_json_payload(case, monkeypatch):
    monkeypatch.chdir(case.directory)
    result = invoke(case, ["--format", "json"])
    actual = json.loads(result.stdout)
    assert typed(strip_volatile(actual, case.volatile)) == typed(strip_volatile(case.expected, case.volatile))
    assert result.exit_code == case.expected_exit


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_markdown(case, monkeypatch):
    monkeypatch.chdir(case.directory)
    expected_text, expected_exit = case.markdown
    result = invoke(case, [])
    assert result.stdout == expected_text
    assert result.exit_code == expected_exit
