"""The goal page's charts as Plotly figures (plain JSON; ``assets/report.js`` draws them with the bundled plotly.js).

Plotly reads a few HTML tags and entities inside trace and axis text, so
every string that came from an artifact goes through :func:`plain` first:
it is shown as the characters it holds, never as markup.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from benchledger.cli.output import visible
from benchledger.projections import lifecycle

NOT_STARTED = "not_started"
LAYOUT = {
    "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
    "height": 340,
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "hovermode": "closest",
    "autosize": True,
}


def plain(value: Any) -> str:
    """``value`` as text Plotly shows verbatim (its tags and entities escaped, its invisible format characters :func:`visible`)."""
    return html.escape(visible("" if value is None else str(value)), quote=False)


def _figure(fig: go.Figure, title: str) -> dict[str, Any]:
    fig.update_layout(title={"text": plain(title)}, **LAYOUT)
    return fig.to_plotly_json()


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
    fig = go.Figure(
        go.Scatter(
            x=[s["recorded_at"] for s in steps],
            y=[plain(p) for p in phases],
            mode="lines+markers",
            line={"shape": "hv", "color": "#4c72b0"},
            marker={"symbol": symbols, "size": 10, "color": ["#dd8452" if s == "diamond" else "#4c72b0" for s in symbols]},
            hovertext=hover,
            hoverinfo="text",
            name="phase",
        )
    )
    fig.update_yaxes(categoryorder="array", categoryarray=[plain(p) for p in order if p in set(phases)], title="phase")
    fig.update_xaxes(title="recorded at (UTC)")
    return _figure(fig, "Lifecycle: phase after each change (◆ a gate opened or closed)")


def score_delta(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Official task score delta (treatment − baseline) per attempt over time; bucketed attempts show their range."""
    bucketed = any(p["attempts"] > 1 for p in points)
    scatter = go.Scatter(
        x=[p["at"] for p in points],
        y=[p["mean"] for p in points],
        mode="markers+lines" if bucketed else "markers",
        marker={"size": 8, "color": "#55a868"},
        name="mean delta" if bucketed else "delta",
        hovertext=[f"{p['attempts']} attempt(s): mean {p['mean']}, min {p['min']}, max {p['max']}" for p in points],
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
    return _figure(fig, "Score delta per attempt" + (" (buckets of attempts: mean, min–max)" if bucketed else ""))


def claim_strengths(counts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    fig = go.Figure(
        go.Bar(
            x=[c["attempts"] for c in counts],
            y=[plain(c["claim_strength"]) for c in counts],
            orientation="h",
            marker={"color": "#8172b3"},
            name="attempts",
        )
    )
    fig.update_xaxes(title="attempts")
    fig.update_yaxes(automargin=True)
    return _figure(fig, "Claim strengths")


def attribution_labels(counts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    modes = sorted({str(c["mode"]) for c in counts})
    labels = sorted({c["label"] for c in counts})
    by_key = {(c["label"], str(c["mode"])): c["runs"] for c in counts}
    fig = go.Figure(
        [
            go.Bar(
                x=[by_key.get((label, mode), 0) for label in labels],
                y=[plain(label) for label in labels],
                orientation="h",
                name=plain(mode),
            )
            for mode in modes
        ]
    )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="runs")
    fig.update_yaxes(automargin=True)
    return _figure(fig, "Failure attribution labels of the runs, per mode")


def learning_status(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Learning ledgers so far per status (cumulative, stacked) over time."""
    statuses = sorted({s for p in points for s in p["counts"]})

    def so_far(status: str) -> list[int]:
        total, out = 0, []
        for p in points:
            total += p["counts"].get(status, 0)
            out.append(total)
        return out

    fig = go.Figure(
        [
            go.Scatter(
                x=[p["at"] for p in points],
                y=so_far(status),
                stackgroup="learning",
                mode="lines+markers",
                line={"shape": "hv"},
                name=plain(status),
            )
            for status in statuses
        ]
    )
    fig.update_yaxes(title="learning ledgers so far")
    fig.update_xaxes(title="recorded at (UTC)")
    return _figure(fig, "Learning status over time")
