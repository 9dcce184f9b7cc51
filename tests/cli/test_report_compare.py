"""The report's and ``serve``'s comparisons and attempt reviews (issue 26 item 4), as a user runs them, on both backends.

The index holds ``compare``'s table over the goals shown and the goal page its
own (``compare --goal``), each with a chart of the paired differences and their
intervals; each attempt row links to that attempt's own reviews (the rows keyed
by its batch), not only the goal's latest.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import invoke
from tests.report_helpers import running_serve

BASELINE, TREATMENT = "codex-goal-mode-baseline", "codex-loopx-treatment"


def paired_batches(goal: str, benchmark: str, tasks: list[str], trials: int) -> list[dict]:
    """One batch a trial, as LoopX writes it: the baseline's compact run, the treatment's, the comparison naming both.

    Outcomes are fixed by the task's index: the baseline passes every third
    task, the treatment all but every third, so the treatment is better.
    """
    lines = []
    for index, task in enumerate(tasks):
        for trial in range(trials):
            outcome = {BASELINE: index % 3 == 0, TREATMENT: index % 3 != 2}
            runs = [
                {
                    "schema_version": "benchmark_run_v0", "source_runner": "harbor", "benchmark_id": benchmark,
                    "job_name": f"{task}-{mode}-{trial}", "mode": mode, "real_run": True,
                    "official_task_score": {"kind": "verifier_reward", "value": float(passed), "passed": passed},
                }
                for mode, passed in outcome.items()
            ]
            comparison = {
                "schema_version": "benchmark_comparison_v0", "benchmark_id": benchmark, "task_id": f"{benchmark}/{task}",
                "comparison_id": f"{goal}-{task}-{trial}", "baseline_scenario_id": BASELINE, "treatment_scenario_id": TREATMENT,
                "official_task_score_delta": float(outcome[TREATMENT]) - float(outcome[BASELINE]),
            }
            lines.append({"goal_id": goal, "kind": None, "artifacts": [*runs, comparison]})
    return lines


def build_compared_ledger(url: str, folder: Path) -> None:
    """Two goals on two benchmarks: ``tb`` (30 Terminal-Bench tasks x 2 trials, the treatment better in 10, worse in none: detected)
    and ``sb`` (6 SkillsBench tasks x 1 trial: too few to detect it)."""
    lines = paired_batches("tb", "terminal-bench@2.0", [f"task-{i:02d}" for i in range(30)], 2)
    lines += paired_batches("sb", "skillsbench@1.1", [f"skill-{i:02d}" for i in range(6)], 1)
    path = folder / "batches.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = invoke(url, "ingest-batches", str(path))
    assert result.exit_code == 0, result.output


def figures_of(page: str) -> dict:
    return json.loads(page.split('<script type="application/json" id="figures">')[1].split("</script>")[0])


def table_rows(page: str) -> list[list[str]]:
    """The comparisons table's rows, each cell's text without tags."""
    table = page.split('<table class="comparisons">')[1].split("</table>")[0]
    body = table.split("<tbody>")[1]
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.DOTALL)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, flags=re.DOTALL)
    ]


def printed_rows(compared: dict) -> list[list[str]]:
    """What the table must show, from ``compare --format json``: the same numbers, formatted as the page formats them."""
    def pct(v):
        return "—" if v is None else f"{v * 100:.0f} %"

    def pts(v):
        return "—" if v is None else f"{v * 100:+.1f}"

    return [
        [c["benchmark_id"], c["baseline_arm"], c["treatment_arm"], str(c["tasks"]), pct(c["baseline_pass_rate"]),
         pct(c["treatment_pass_rate"]), pts(c["difference"]), f"[{pts(c['interval'][0])}, {pts(c['interval'][1])}]",
         f"{c['adjusted_p_value']:.3g}", c["verdict"], f"{len(c['baseline_only_tasks'])} / {len(c['treatment_only_tasks'])}"]
        for c in compared["comparisons"]
    ]


@pytest.fixture
def compared_ledger(migrated_url, tmp_path):
    build_compared_ledger(migrated_url, tmp_path)
    return migrated_url


def compare_json(url: str, *args: str) -> dict:
    result = invoke(url, "compare", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_index_and_each_goal_page_show_what_compare_prints(compared_ledger, tmp_path):
    result = invoke(compared_ledger, "report", "--output", str(tmp_path / "site"))
    assert result.exit_code == 0, result.output
    site = tmp_path / "site"
    index = (site / "index.html").read_text()
    everything = compare_json(compared_ledger)
    assert [c["benchmark_id"] for c in everything["comparisons"]] == ["skillsbench@1.1", "terminal-bench@2.0"]
    assert table_rows(index) == printed_rows(everything)
    assert [row[9] for row in table_rows(index)] == ["no detectable difference", "treatment better"]
    for goal in ("tb", "sb"):
        page = (site / "goals" / goal / "index.html").read_text()
        assert table_rows(page) == printed_rows(compare_json(compared_ledger, "--goal", goal))
    # the goal's table is its own: tb's page compares Terminal-Bench only
    assert [row[0] for row in table_rows((site / "goals" / "tb" / "index.html").read_text())] == ["terminal-bench@2.0"]


def test_the_paired_differences_chart_plots_each_difference_with_its_interval(compared_ledger, tmp_path):
    assert invoke(compared_ledger, "report", "--output", str(tmp_path / "site")).exit_code == 0
    chart = figures_of((tmp_path / "site" / "index.html").read_text())["paired-differences"]
    (trace,) = chart["data"]
    everything = compare_json(compared_ledger)["comparisons"]
    assert trace["x"] == pytest.approx([c["difference"] * 100 for c in everything])
    # each row named by its benchmark, treatment and baseline, a line each (cut from the middle past 44 characters; whole in the hover)
    assert trace["y"] == [f"{c['benchmark_id']}<br>{TREATMENT}<br>vs {BASELINE}" for c in everything]
    assert all(f"{c['benchmark_id']}: {TREATMENT} vs {BASELINE}" in hover for c, hover in zip(everything, trace["hovertext"], strict=True))
    assert [x + up for x, up in zip(trace["x"], trace["error_x"]["array"], strict=True)] == pytest.approx([c["interval"][1] * 100 for c in everything])
    assert [x - down for x, down in zip(trace["x"], trace["error_x"]["arrayminus"], strict=True)] == pytest.approx([c["interval"][0] * 100 for c in everything])
    goal_figures = figures_of((tmp_path / "site" / "goals" / "sb" / "index.html").read_text())
    assert goal_figures["paired-differences"]["data"][0]["y"] == [f"skillsbench@1.1<br>{TREATMENT}<br>vs {BASELINE}"]


def test_a_ledger_without_arm_pairs_says_there_is_nothing_to_compare(migrated_url, tmp_path):
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo"
    assert invoke(migrated_url, "ingest", "--goal", "lone", str(demo / "04-run-baseline.json")).exit_code == 0
    assert invoke(migrated_url, "report", "--output", str(tmp_path / "site")).exit_code == 0
    index = (tmp_path / "site" / "index.html").read_text()
    assert "No arm pair to compare" in index and '<table class="comparisons">' not in index


def attempt_links(page: str) -> list[str]:
    return re.findall(r'<a class="attempt-review-link" href="(attempts/[^"]+)"', page)


def test_each_attempt_row_links_to_that_attempts_own_reviews(compared_ledger, tmp_path):
    assert invoke(compared_ledger, "report", "--output", str(tmp_path / "site")).exit_code == 0
    goal_folder = tmp_path / "site" / "goals" / "sb"
    page = (goal_folder / "index.html").read_text()
    # the goal's one attempt links its latest comparison's reviews
    attempt_row = page.split('id="attempt-row-1"', 1)[1].split("</tr>", 1)[0]
    links = attempt_links(page.split('id="batches"', 1)[1])
    assert attempt_links(attempt_row) == links[:3]
    # six comparisons (one a task), each with its claim review, newest first
    claims = [link for link in links if link.endswith("/review-claim.html")]
    assert len(claims) == 6 and len(set(claims)) == 6
    tasks = []
    for link in claims:
        key = link.split("/")[1]
        document = json.loads((goal_folder / link.replace(".html", ".json")).read_text())
        assert document["key"] == key and document["projection"] == "review-claim" and document["goal_id"] == "sb"
        tasks.append(document["payload"]["task_id"])
        assert (goal_folder / link).read_text().count(key) >= 1
    assert tasks == [f"skillsbench@1.1/skill-{i:02d}" for i in reversed(range(6))]
    # the oldest attempt's review is its own, not the goal's latest
    latest = json.loads((goal_folder / "reviews" / "review-claim.json").read_text())
    assert latest["payload"]["task_id"] == tasks[0] != tasks[-1]


def test_serve_answers_an_attempts_reviews_and_no_other_key(compared_ledger):
    with running_serve(compared_ledger) as (base, _):
        page = urllib.request.urlopen(base + "goals/tb/index.html").read().decode()
        link = attempt_links(page)[0]
        review = urllib.request.urlopen(base + "goals/tb/" + link).read().decode()
        assert "review-claim" in review and link.split("/")[1] in review
        document = json.loads(urllib.request.urlopen(base + "goals/tb/" + link.replace(".html", ".json")).read())
        assert document["key"] == link.split("/")[1]
        other_goal = "goals/sb/" + link  # an attempt of tb is no attempt of sb
        for missing in (other_goal, "goals/tb/attempts/00000000-0000-0000-0000-000000000000/review-claim.html",
                        "goals/tb/attempts/not-a-key/review-claim.html"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(base + missing)
            assert refused.value.code == 404, missing
