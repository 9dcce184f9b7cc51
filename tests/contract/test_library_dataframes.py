"""``to_pandas()`` of the runs listings and of ``compare`` (issue 26, "for notebooks"): the ``--format json`` rows as a DataFrame.

pandas is an optional extra: only ``ledger/results.py`` imports it, inside the
method, and without it the call says which extra to install.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import sys
from pathlib import Path

import pandas
import pytest

import benchledger
from benchledger.errors import BenchledgerError
from benchledger.ledger import results
from tests.helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"
RUNS = [str(DEMO / name) for name in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
RUN_FIELDS = [field.name for field in dataclasses.fields(results.Run)]


@pytest.fixture
def demo_ledger(migrated_url):
    """goal-1: the demo's paired runs; goal-2: a comparison whose batch holds its treatment run only (a pair missing a side)."""
    assert invoke(migrated_url, "ingest", "--goal", "goal-1", *RUNS).exit_code == 0
    assert invoke(migrated_url, "ingest", "--goal", "goal-2", RUNS[1], RUNS[2]).exit_code == 0
    assert invoke(migrated_url, "ingest", "--goal", "goal-3", "--kind", "preflight", str(DEMO / "01-preflight.json")).exit_code == 0
    return migrated_url


def spread(row: dict, nested: tuple[str, ...]) -> dict:
    """The expected frame row: each nested run's fields as ``<name>.<field>`` (``None`` without a run)."""
    flat = {name: value for name, value in row.items() if name not in nested}
    for name in nested:
        flat.update({f"{name}.{field}": (row[name] or {}).get(field) for field in RUN_FIELDS})
    return flat


def records(frame: pandas.DataFrame) -> list[dict]:
    """The frame's rows with pandas' missing values (NaN for a number column's None) read back as None."""
    return [
        {name: None if isinstance(value, float) and math.isnan(value) else value for name, value in row.items()}
        for row in frame.astype(object).to_dict("records")
    ]


@pytest.mark.parametrize(
    ("argv", "answer", "nested"),
    [
        (("runs",), lambda ledger: ledger.runs(), ()),
        (("runs", "--current"), lambda ledger: ledger.current_runs(), ("current",)),
        (("runs", "--paired"), lambda ledger: ledger.run_pairs(), ("baseline", "treatment")),
        (("runs", "--summary"), lambda ledger: ledger.pass_rates(), ()),
    ],
)
def test_a_runs_listing_as_a_data_frame_holds_what_the_command_prints(demo_ledger, argv, answer, nested):
    printed = json.loads(invoke(demo_ledger, *argv, "--format", "json").stdout)
    listing_name = next(name for name in printed if name != "counted")
    with benchledger.open(demo_ledger) as ledger:
        frame = answer(ledger).to_pandas()
    expected = [spread(row, nested) for row in printed[listing_name]]
    assert expected and records(frame) == expected
    assert list(frame.columns) == list(expected[0])
    assert frame.attrs["listing"] == listing_name and frame.attrs.get("counted") == printed.get("counted")


def test_a_pair_missing_a_side_has_its_run_columns_empty(demo_ledger):
    with benchledger.open(demo_ledger) as ledger:
        frame = ledger.run_pairs(goal_id="goal-2").to_pandas()
    assert len(frame) == 1
    row = records(frame)[0]
    assert "baseline" not in row and "treatment" not in row  # (spread, not kept as a nested dict)
    assert all(row[f"baseline.{field}"] is None for field in RUN_FIELDS) and row["baseline_missing"]
    assert row["treatment.arm"] == "codex-loopx"


def test_compare_as_a_data_frame_holds_what_compare_prints_and_its_scope(demo_ledger):
    printed = json.loads(invoke(demo_ledger, "compare", "--format", "json").stdout)
    with benchledger.open(demo_ledger) as ledger:
        frame = ledger.compare().to_pandas()
    assert printed["comparisons"] and records(frame) == printed["comparisons"]
    assert frame.attrs["scope"] == printed["scope"]
    assert frame.loc[0, "interval"] == printed["comparisons"][0]["interval"]


def test_an_empty_answer_is_a_frame_with_its_columns(demo_ledger):
    with benchledger.open(demo_ledger) as ledger:
        runs = ledger.runs(goal_id="goal-3").to_pandas()
        pairs = ledger.run_pairs(goal_id="goal-3").to_pandas()
        compared = ledger.compare(goal_ids=["goal-3"]).to_pandas()
    assert runs.empty and list(runs.columns) == RUN_FIELDS
    assert pairs.empty and "baseline.arm" in pairs.columns and "treatment.official_score" in pairs.columns
    assert compared.empty and list(compared.columns) == [field.name for field in dataclasses.fields(results.Comparison)]


def test_without_pandas_to_pandas_names_the_extra(demo_ledger, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # what `import pandas` meets where it is not installed
    with benchledger.open(demo_ledger) as ledger:
        listing, compared = ledger.runs(), ledger.compare()
        for answer in (listing, compared):
            with pytest.raises(BenchledgerError, match=r"^to_pandas\(\) needs pandas, from the pandas extra: pip install 'benchledger\[pandas\]'$"):
                answer.to_pandas()
        assert len(listing) == 3 and len(compared) == 1  # the typed rows need no pandas


def test_only_the_results_module_imports_pandas():
    """pandas is an optional extra: importing it anywhere else would make it a dependency of every command."""
    importers = []
    for folder in ("cli", "ledger", "projections", "src"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if any(name == "pandas" or name.startswith("pandas.") for name in names):
                    importers.append(str(path.relative_to(ROOT)))
    assert importers == ["ledger/results.py"]
