"""The goal page's charts as Plotly figures (plain JSON; ``assets/report.js`` draws them with the bundled plotly.js).

Plotly reads a few HTML tags and entities inside trace and axis text, so
every string that came from an artifact goes through :func:`plain` first:
it is shown as the characters it holds, never as markup.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative

from benchledger.cli.output import visible
from benchledger.projections import lifecycle, statistics

NOT_STARTED = "not_started"
# compare's verdicts, as the paired-differences chart colours them; its intervals are all one colour.
VERDICT_COLOURS = {statistics.TREATMENT_BETTER: "#55a868", statistics.TREATMENT_WORSE: "#c44e52", statistics.NO_DETECTABLE_DIFFERENCE: "#4c72b0"}
INTERVAL_COLOUR = "#444444"
LAYOUT: dict[str, Any] = {
    "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
    "height": 340,
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "hovermode": "closest",
    "autosize": True,
}

# Axis labels longer than this are cut from the middle (the whole label is in the hover text).
LABEL_WIDTH = 44
# Pixels per bar of a horizontal bar chart, and per row of a legend under a chart.
BAR_HEIGHT = 26
BARS_AROUND = 110
LEGEND_ROW_HEIGHT = 22
LEGEND_COLUMNS = 2
# Pixels under a plot for its tick labels and axis title (a legend under the plot starts there).
BELOW_AXIS = 64
# 24 distinct colours (Plotly's default ten repeat after ten modes; real ledgers hold twenty and more).
MODE_COLOURS = qualitative.Dark24
SINGLE_INSTANT_SPAN = timedelta(hours=1)
PLOTLY_TIME = "%Y-%m-%d %H:%M:%S"


def plain(value: Any) -> str:
    """``value`` as text Plotly shows verbatim (its tags and entities escaped, its invisible format characters :func:`visible`)."""
    return html.escape(visible("" if value is None else str(value)), quote=False)


def short_label(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` cut from the middle to ``width`` characters, keeping its start and its end (where labels differ)."""
    if len(label) <= width:
        return label
    head = (width - 1) // 2
    return label[:head] + "…" + label[len(label) - (width - 1 - head):]


def _axis_labels(labels: Sequence[str]) -> list[str]:
    """The labels as an axis shows them: shortened from the middle, unless that would make two of them read the same."""
    shortened = [short_label(label) for label in labels]
    return shortened if len(set(shortened)) == len(set(labels)) else list(labels)


def _figure(fig: go.Figure, title: str, *, empty: str | None = None, height: int = LAYOUT["height"]) -> dict[str, Any]:
    """The figure as JSON; ``empty`` names what is missing when there is nothing to draw (no axes, a sentence instead)."""
    fig.update_layout(title={"text": plain(title)}, **{**LAYOUT, "height": height})
    if empty is not None:
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        fig.update_layout(
            showlegend=False,
            annotations=[{"text": plain(f"no data: {empty}"), "showarrow": False, "xref": "paper", "yref": "paper",
                          "x": 0.5, "y": 0.5, "font": {"size": 14, "color": "#667085"}}],
        )
    return fig.to_plotly_json()


def _legend_below(fig: go.Figure, entries: int, plot_height: int) -> int:
    """A legend in rows under the plot (beside it, long names squeezed the plot; over it, they hid the bars); returns the figure's height."""
    rows = math.ceil(entries / LEGEND_COLUMNS)
    below = BELOW_AXIS + rows * LEGEND_ROW_HEIGHT
    fig.update_layout(
        # shown for one entry too: Plotly hides a lone trace's legend, and a chart "per arm" then named no arm
        showlegend=True,
        # entries flow in rows as wide as their names (a fixed share of the width overlapped long names on a narrow page)
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -BELOW_AXIS / plot_height, "yanchor": "top", "font": {"size": 11}},
        margin={**LAYOUT["margin"], "b": below},
    )
    return LAYOUT["margin"]["t"] + plot_height + below


def _time_axis(fig: go.Figure, times: Sequence[str]) -> None:
    """One instant (one event, or a batch recorded at once) gets an hour either side, so the ticks read as times, not microseconds."""
    instants = {_instant(t) for t in times if t}
    if len(instants) == 1:
        (instant,) = instants
        fig.update_xaxes(range=[(instant - SINGLE_INSTANT_SPAN).strftime(PLOTLY_TIME), (instant + SINGLE_INSTANT_SPAN).strftime(PLOTLY_TIME)])


def _count_axis(largest: int) -> dict[str, Any]:
    """An axis of counts (runs, comparisons, ledgers): whole numbers only; a step of 1 up to ten (auto ticks read 0.2, 0.4 …)."""
    return {"tickformat": ",d", "rangemode": "tozero", **({"dtick": 1} if largest <= 10 else {})}


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def timeline(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The phase after each lifecycle change over time; changes of a gate are diamonds."""
    known = [NOT_STARTED, *lifecycle.PHASES]
    phases = [s["phase"] or NOT_STARTED for s in steps]
    order = known + sorted({p for p in phases if p not in known})
    hover = [
        "<br>".join(
            plain(part)
            for part in (
                f"#{s['position']} {s['kind']} — {s['summary']}",
                f"phase: {s['phase']}",
                f"first blocker: {s['first_blocker'] or '—'}",
                *(f"+ {g}" for g in s["gates_opened"]),
                *(f"− {g}" for g in s["gates_closed"]),
            )
        )
        for s in steps
    ]
    symbols = ["diamond" if s["gates_opened"] or s["gates_closed"] else "circle" for s in steps]
    times = [s["recorded_at"] for s in steps]
    fig = go.Figure(
        go.Scatter(
            x=times,
            y=[plain(p) for p in phases],
            mode="lines+markers",
            line={"shape": "hv", "color": "#4c72b0"},
            marker={"symbol": symbols, "size": 10, "color": ["#dd8452" if s == "diamond" else "#4c72b0" for s in symbols]},
            hovertext=hover,
            hoverinfo="text",
            name="phase",
        )
    )
    fig.update_yaxes(categoryorder="array", categoryarray=[plain(p) for p in order if p in set(phases)], title="phase", automargin=True)
    fig.update_xaxes(title="recorded at (UTC)")
    _time_axis(fig, times)
    return _figure(fig, "Lifecycle: phase after each change (◆ a gate opened or closed)", empty=None if steps else "no lifecycle change yet")


def score_delta(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Official task score delta (treatment − baseline) per comparison over time; bucketed comparisons show their range."""
    bucketed = any(p["attempts"] > 1 for p in points)
    times = [p["at"] for p in points]
    scatter = go.Scatter(
        x=times,
        y=[p["mean"] for p in points],
        mode="markers+lines" if bucketed else "markers",
        marker={"size": 8, "color": "#55a868"},
        name="mean delta" if bucketed else "delta",
        hovertext=[f"{p['attempts']} comparison(s): mean {p['mean']}, min {p['min']}, max {p['max']}" for p in points],
        hoverinfo="x+text",
    )
    if bucketed:
        scatter.error_y = {
            "type": "data",
            "symmetric": False,
            "array": [None if p["mean"] is None else p["max"] - p["mean"] for p in points],
            "arrayminus": [None if p["mean"] is None else p["mean"] - p["min"] for p in points],
        }
    fig = go.Figure(scatter)
    fig.update_yaxes(title="score delta", zeroline=True)
    fig.update_xaxes(title="recorded at (UTC)")
    _time_axis(fig, times)
    title = "Score delta per comparison" + (" (buckets of comparisons: mean, min–max)" if bucketed else "")
    return _figure(fig, title, empty=None if points else "no comparison yet")


def claim_strengths(counts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    names = [str(c["claim_strength"]) for c in counts]
    fig = go.Figure(
        go.Bar(
            x=[c["attempts"] for c in counts],
            y=[plain(name) for name in _axis_labels(names)],
            orientation="h",
            marker={"color": "#8172b3"},
            name="attempts",
            hovertext=[plain(f"{name}: {c['attempts']}") for name, c in zip(names, counts, strict=True)],
            hoverinfo="text",
        )
    )
    fig.update_xaxes(title="comparisons", **_count_axis(max((c["attempts"] for c in counts), default=0)))
    fig.update_yaxes(automargin=True)
    height = max(LAYOUT["height"], BARS_AROUND + BAR_HEIGHT * len(counts))
    return _figure(fig, "Claim strengths", empty=None if counts else "no comparison reviewed yet", height=height)


def attribution_labels(counts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Runs per failure label, a bar per label stacked by arm (labels run long: cut from the middle, whole in the hover)."""
    arms = sorted({str(c["arm"]) for c in counts})
    labels = sorted({c["label"] for c in counts})
    shown = [plain(label) for label in _axis_labels(labels)]
    by_key = {(c["label"], str(c["arm"])): c["runs"] for c in counts}
    fig = go.Figure(
        [
            go.Bar(
                x=[by_key.get((label, arm), 0) for label in labels],
                y=shown,
                orientation="h",
                name=plain(arm),
                hovertext=[plain(f"{label} · {arm}: {by_key.get((label, arm), 0)} run(s)") for label in labels],
                hoverinfo="text",
            )
            for arm in arms
        ]
    )
    fig.update_layout(barmode="stack", colorway=MODE_COLOURS, legend_traceorder="normal")
    fig.update_xaxes(title="runs", **_count_axis(max((sum(by_key.get((label, arm), 0) for arm in arms) for label in labels), default=0)))
    fig.update_yaxes(automargin=True, autorange="reversed")  # the labels read top to bottom in their order
    height = _legend_below(fig, len(arms), max(LAYOUT["height"] - 90, BAR_HEIGHT * len(labels)))
    return _figure(fig, "Failure labels of the runs, per arm (archived runs left out)", empty=None if counts else "no run names a failure label", height=height)


def learning_status(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Learning ledgers so far per status (cumulative, stacked) over time."""
    statuses = sorted({s for p in points for s in p["counts"]})

    def so_far(status: str) -> list[int]:
        total, out = 0, []
        for p in points:
            total += p["counts"].get(status, 0)
            out.append(total)
        return out

    times = [p["at"] for p in points]
    fig = go.Figure(
        [
            go.Scatter(
                x=times,
                y=so_far(status),
                stackgroup="learning",
                mode="lines+markers",
                line={"shape": "hv"},
                name=plain(status),
            )
            for status in statuses
        ]
    )
    fig.update_yaxes(title="learning ledgers so far", **_count_axis(sum(sum(p["counts"].values()) for p in points)))
    fig.update_xaxes(title="recorded at (UTC)")
    _time_axis(fig, times)
    height = _legend_below(fig, len(statuses), LAYOUT["height"] - 90)
    return _figure(fig, "Learning status over time", empty=None if points else "no learning ledger yet", height=height)


def paired_differences(comparisons: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each comparison's paired difference (treatment − baseline, percentage points) with its 95 % interval; zero marked.

    One row per benchmark and arm pair that has paired tasks, coloured by verdict
    (comparisons without paired tasks have no difference to draw).
    """
    shown = [c for c in comparisons if c["difference"] is not None]
    # Three lines a row (benchmark, treatment, baseline), each cut alone: cut whole, one label lost the arms that tell rows apart.
    lines = [(str(c["benchmark_id"]), str(c["treatment_arm"]), f"vs {c['baseline_arm']}") for c in shown]
    hover = [
        "<br>".join(
            plain(part)
            for part in (
                f"{c['benchmark_id']}: {c['treatment_arm']} vs {c['baseline_arm']}",
                f"difference {c['difference'] * 100:+.1f} pts, 95% interval [{c['interval'][0] * 100:+.1f}, {c['interval'][1] * 100:+.1f}]",
                f"{c['tasks']} task(s); p (Holm) {c['adjusted_p_value']:.3g}",
                c["verdict"],
            )
        )
        for c in shown
    ]
    fig = go.Figure(
        go.Scatter(
            x=[c["difference"] * 100 for c in shown],
            y=["<br>".join(plain(short_label(line)) for line in row) for row in lines],
            mode="markers",
            marker={"size": 10, "color": [VERDICT_COLOURS.get(c["verdict"], "#4c72b0") for c in shown]},
            error_x={
                # One colour for every interval: left out, Plotly takes the markers' (a list, one per verdict), which an
                # error bar cannot take, and draws them black with a console warning.
                "color": INTERVAL_COLOUR,
                "type": "data",
                "symmetric": False,
                "array": [(c["interval"][1] - c["difference"]) * 100 for c in shown],
                "arrayminus": [(c["difference"] - c["interval"][0]) * 100 for c in shown],
            },
            hovertext=hover,
            hoverinfo="text",
            name="difference",
        )
    )
    fig.add_vline(x=0, line={"color": "#888", "dash": "dot"})
    fig.update_xaxes(title="treatment − baseline pass rate (percentage points), 95% interval", zeroline=False)
    fig.update_yaxes(automargin=True, autorange="reversed")
    height = max(LAYOUT["height"], BARS_AROUND + 2 * BAR_HEIGHT * len(shown))
    return _figure(fig, "Paired differences per benchmark and arm pair", empty=None if shown else "no arm pair with paired tasks", height=height)
