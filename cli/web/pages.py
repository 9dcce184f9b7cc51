"""The report's pages: one :class:`Site` renders every page, for ``benchledger report`` (files) and ``serve`` (HTTP).

A page is addressed by the same relative path in both (``index.html``,
``goals/<goal>/index.html``, ``goals/<goal>/attempts-2.html`` (older attempts, each
with its timeline), ``goals/<goal>/batches-2.html`` (older rows of the comparisons table),
``goals/<goal>/reviews/<review>.html`` and ``.json``,
``goals/<goal>/attempts/<batch>/<review>.html`` and ``.json`` (a comparison's own
reviews: its claim review, learning ledger and verifier attribution), ``assets/...``), and
pages link to each other relatively, so a written site works from its folder
(offline, from ``file://``) exactly as the server's pages do. The data comes
from the ledger's ``report_views()`` (bounded reads); the HTML from the
Jinja2 templates beside this module (autoescape on: every artifact string is
text), the charts from ``cli.web.figures``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import markupsafe

from benchledger.cli.common import FIRST_GOAL_STEP, standby_lag_text
from benchledger.cli.output import encoded, signed_number, utc_text, visible
from benchledger.cli.web import figures, report_folder, review_fields
from benchledger.ledger.api import Ledger, is_goal_id
from benchledger.projections import catalog

# What a page may load: its own folder's (or origin's) scripts, styles and images, nothing else.
# Plotly sets SVG style attributes while it draws, hence inline styles (never inline scripts).
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'none'; base-uri 'none'; form-action 'none'"
)
ASSETS = {"report.css": "text/css; charset=utf-8", "report.js": "text/javascript; charset=utf-8"}
PLOTLY_JS = "plotly.min.js"
HTML = "text/html; charset=utf-8"
JSON_TYPE = "application/json"

# Page 1 is index.html; page N > 1 is spelled one way only (no 0, no leading zero, not -1), so no page has two addresses.
_INDEX_PAGE = re.compile(r"index(?:-([2-9]|[1-9][0-9]+))?\.html")
_GOAL_PAGE = re.compile(r"index\.html|(attempts|batches)-([2-9]|[1-9][0-9]+)\.html")
# Past this a page's first row would be past any row offset a database takes (a BIGINT): there is no such page.
_MAX_ROW_OFFSET = 2**63 - 1
_REVIEW_FILE = re.compile(r"([a-z][a-z-]*)\.(html|json)")
# An attempt is addressed by its batch's event id (a UUID: no character needs quoting).
_ATTEMPT_KEY = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Page:
    body: bytes
    content_type: str


@functools.cache
def plotly_js() -> bytes:
    """The plotly.js bundle that ships inside the ``plotly`` package (written once beside the pages)."""
    return (resources.files("plotly") / "package_data" / PLOTLY_JS).read_bytes()


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("benchledger.cli.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    env.filters["segment"] = lambda value: quote(str(value), safe="")
    env.filters["percent"] = lambda value: "—" if value is None else f"{value * 100:.0f} %"
    env.filters["score"] = lambda value: "—" if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)
    env.filters["short"] = lambda value, n=12: str(value)[:n]
    env.filters["points"] = lambda value: "—" if value is None else f"{value * 100:+.1f}"
    # (as the CLI's tables show them: times to the second in UTC, a delta with its sign)
    env.filters["utc"] = utc_text
    env.filters["delta"] = lambda value: "—" if value is None else signed_number(value) if isinstance(value, (int, float)) else str(value)
    env.filters["left_out"] = _left_out
    # An attempt's reviews as its row links them: short, so the column stays narrow (the link's title names the review).
    env.globals["ATTEMPT_REVIEW_NAMES"] = {catalog.CLAIM: "claim", catalog.LEARNING: "learning", catalog.VERIFIER: "verifier"}
    env.globals["FIRST_GOAL_STEP"] = FIRST_GOAL_STEP
    env.tests["mapping"] = lambda value: isinstance(value, Mapping)
    return env


# A pass rate's runs outside passed / (passed + failed), by why, in runs --summary's words and order.
_LEFT_OUT = (("archived", "archived"), ("superseded", "superseded"), ("retracted", "retracted"), ("not_countable", "not countable"))


def _left_out(rate: Mapping[str, Any]) -> str:
    """What a pass rate's cell says beside passed/rated: its unscored runs, then every run left out and why.

    ``runs --summary`` counts the same runs in its columns; a cell naming only
    the archived ones read as if the rest had been counted.
    """
    unscored = f"; {rate['unscored']} unscored" if rate["unscored"] else ""
    out = ", ".join(f"{rate[key]} {why}" for key, why in _LEFT_OUT if rate[key])
    return unscored + (f"; left out: {out}" if out else "")


def _shown(value: Any) -> Any:
    """Every value a template prints, its invisible format characters made :func:`visible` (still escaped after)."""
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


class Site:
    """Every page of the report over one ledger (optionally only some goals).

    ``audit`` returns the ledger's latest audit result (what ``audit --format json`` prints,
    plus when it was taken) or ``None`` while none is known yet.

    ``written`` (``benchledger report``): a comparison's own review pages are written, and linked, for the
    comparisons a goal's first page shows only (its latest attempts' and the first page of its
    comparisons table), a bounded number per goal; later pages name the reviews and point to ``serve``,
    which renders every one when asked (writing all of them was six files per comparison: 60,219 files
    for a goal of 10^4).
    """

    def __init__(
        self, ledger: Ledger, goal_ids: list[str] | None, audit: Callable[[], Mapping[str, Any] | None], *, include_archived: bool = False,
        written: bool = False,
    ) -> None:
        self.ledger = ledger
        self.written = written
        self.include_archived = include_archived  # archived goals (``goals archive``) are left out of the index otherwise
        self.views = ledger.report_views()
        self.goal_ids = goal_ids or None
        self.audit = audit
        self.env = _environment()
        self._timelines: dict[str, tuple[int, dict[str, Any]]] = {}
        self._read_runs: dict[tuple[str, ...], tuple[int, dict[str, Any]]] = {}
        # Per goal, kept while the goal has no new event (its last position, as the timelines): its overview,
        # its pass rates (the index's and its first page's), and where each attempts page seen so far starts.
        self._overviews: dict[str, tuple[int, dict[str, Any]]] = {}
        self._pass_rates: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        # Per goal, the pass rates the comparisons' runs model gave, with the position that reading covers at least.
        self._runs_rates: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self._ledger_runs_at: int | None = None  # the position the last runs model of the whole ledger covers
        # The goals the index lists when none are named and archived ones are left out, with how many are archived, as of
        # the ledger's last position (an archive mark is an event): what its comparisons read.
        self._listed_goals: tuple[int, tuple[str, ...], int] | None = None
        # per (goal, listing: "attempts" or "batches")
        self._page_starts: dict[tuple[str, str], tuple[int, dict[int, tuple[int, str] | None]]] = {}  # None: no row there
        # The last comparison whose own reviews were read: (goal, batch key, the goal's last position) and its rows.
        # Its six files (three reviews, as HTML and JSON) are asked for one after another: one reading, not six.
        self._attempt_reviews_read: tuple[tuple[str, str, int | None], list[dict[str, Any]]] | None = None
        # The first page of each listing of the goal whose review files were listed last (:meth:`paths`), handed to that
        # goal's first page once, at the same last position: `report --goal G` lists then writes G, and read them twice
        # (its attempts' spans are counted: 0.08 s on SQLite, 0.35 s on PostgreSQL at 10^4). One goal's, so memory stays a page.
        self._listed_first: tuple[str, int, dict[str, dict[str, Any]]] | None = None
        if self.goal_ids:
            self.views.goal_index(self.goal_ids, limit=1, pass_rates=False)  # unknown goals fail here, before anything is written

    def warm_up(self) -> None:
        """Compile the templates, build each kind of chart once (empty) and compare the arms of the index, so the first visitor of ``serve`` does not pay for it.

        The index's comparisons read every run of the goals shown (seconds on
        a 10^5-event ledger): ``serve`` pays that before it listens, and again
        on the first visit of the index after the ledger grew.
        """
        for name in self.env.list_templates():
            self.env.get_template(name)
        for build in (
            figures.timeline, figures.score_delta, figures.claim_strengths, figures.attribution_labels, figures.learning_status,
            figures.paired_differences,
        ):
            build([])
        self._index_comparisons()

    # -- addressing ----------------------------------------------------------------------

    def render(self, path: str) -> Page | None:
        """The page at ``path`` (relative, decoded), or ``None`` when there is none."""
        parts = path.split("/")
        if len(parts) == 1:
            match = _INDEX_PAGE.fullmatch(parts[0])
            number = _page_number(match, self.views.index_page_size)
            return None if number is None else self._index(number)
        if parts[0] == "assets" and len(parts) == 2:
            if parts[1] == PLOTLY_JS:
                return Page(plotly_js(), "text/javascript; charset=utf-8")
            if parts[1] in ASSETS:
                return Page((resources.files("benchledger.cli.web") / "assets" / parts[1]).read_bytes(), ASSETS[parts[1]])
            return None
        if parts[0] != "goals" or len(parts) < 3 or not self._shown(parts[1]):
            return None
        goal = parts[1]
        if len(parts) == 3:
            match = _GOAL_PAGE.fullmatch(parts[2])
            if match is None or match.group(1) is None:
                return None if match is None else self._goal(goal, None, 1)
            listing, number = match.group(1), int(match.group(2))
            if (number - 1) * self._page_size(listing) > _MAX_ROW_OFFSET:
                return None
            return self._goal(goal, listing, number)
        if len(parts) == 4 and parts[2] == "reviews":
            match = _REVIEW_FILE.fullmatch(parts[3])
            return self._review(goal, match.group(1), match.group(2)) if match else None
        if len(parts) == 5 and parts[2] == "attempts" and _ATTEMPT_KEY.fullmatch(parts[3]):
            match = _REVIEW_FILE.fullmatch(parts[4])
            return self._attempt_review(goal, parts[3], match.group(1), match.group(2)) if match else None
        return None

    def is_folder(self, path: str) -> bool:
        """Whether ``path`` (relative, no trailing slash) names a goal's folder, whose page is ``path/index.html``."""
        parts = path.split("/")
        return len(parts) == 2 and parts[0] == "goals" and self._shown(parts[1])

    def not_found(self, path: str) -> Page:
        """The page ``serve`` answers for a path with no page (status 404): it says so and links to the index."""
        return self._html("not_found.html", "/", path=path)

    def _shown(self, goal: str) -> bool:
        if not is_goal_id(goal) or (self.goal_ids is not None and goal not in self.goal_ids):
            return False
        return self.ledger.has_goal(goal)

    def paths(self) -> Iterator[str]:
        """Every page of the site, for writing it out."""
        yield from (f"assets/{name}" for name in (PLOTLY_JS, *ASSETS))
        size = self.views.index_page_size
        # (the paths need the goals and their attempt counts, not their pass rates)
        first = self.views.goal_index(self.goal_ids, limit=size, pass_rates=False, include_archived=self.include_archived)
        for number in range(1, _pages(first["total"], size) + 1):
            yield _index_name(number)
            listing = first if number == 1 else self.views.goal_index(
                self.goal_ids, limit=size, offset=(number - 1) * size, pass_rates=False, include_archived=self.include_archived
            )
            for goal in listing["goals"]:
                yield from self._goal_paths(goal["goal_id"], goal["attempts"] or 0, goal["comparisons"])

    def _goal_paths(self, goal: str, attempt_count: int, comparison_count: int) -> Iterator[str]:
        yield f"goals/{goal}/index.html"
        for listing, count in (("attempts", attempt_count), ("batches", comparison_count)):
            for number in range(2, _pages(count, self._page_size(listing)) + 1):
                yield f"goals/{goal}/{listing}-{number}.html"
        for review in self.views.latest_reviews(goal):
            yield f"goals/{goal}/reviews/{review['projection']}.html"
            yield f"goals/{goal}/reviews/{review['projection']}.json"
        for key, reviews in self._first_page_comparisons(goal).items():
            for projection in reviews:
                yield f"goals/{goal}/attempts/{key}/{projection}.html"
                yield f"goals/{goal}/attempts/{key}/{projection}.json"

    def _first_page_comparisons(self, goal: str) -> dict[str, list[str]]:
        """The comparisons whose reviews the goal's first page links (batch key -> its reviews): what a written report holds of them."""
        last_position = self._overview(goal)["last_position"]
        listed = {
            "attempts": self.views.attempts(goal, limit=self.views.attempts_page_size),
            "batches": self.views.batches(goal, limit=self.views.batches_page_size),
        }
        self._listed_first = (goal, last_position, listed)
        shown: dict[str, list[str]] = {}
        for attempt in listed["attempts"]["rows"]:
            if attempt["latest_comparison"] is not None:
                shown[attempt["latest_comparison"]] = attempt["reviews"]
        for batch in listed["batches"]["rows"]:
            shown[batch["key"]] = batch["reviews"]
        return shown

    # -- pages ---------------------------------------------------------------------------

    def _html(self, template: str, root: str, **context: Any) -> Page:
        body = self.env.get_template(template).render(
            root=root, csp=CONTENT_SECURITY_POLICY, generated_at=_now(), **context
        )
        return Page(encoded(body), HTML)

    def _index(self, number: int) -> Page | None:
        size = self.views.index_page_size
        listing = self.views.goal_index(
            self.goal_ids, limit=size, offset=(number - 1) * size, include_archived=self.include_archived, pass_rates=False
        )
        pages = _pages(listing["total"], size)
        if number > pages:
            return None
        compared, archived_left_out = self._index_comparisons()
        rates = self._rates(listing["goals"])
        listing = {**listing, "goals": [{**goal, "pass_rates": rates[goal["goal_id"]]} for goal in listing["goals"]]}
        standby = self.ledger.standby()
        return self._html(
            "index.html", "", listing=listing, audit=self.audit(), paging=_pager(number, pages, _index_name),
            comparisons=compared, archived_left_out=archived_left_out, command="report" if self.written else "serve",
            figures={"paired-differences": figures.paired_differences(compared["comparisons"])},
            standby=None if standby is None else standby_lag_text(standby.replayed_at, standby.lag_seconds),
        )

    def _page_size(self, listing: str) -> int:
        return self.views.attempts_page_size if listing == "attempts" else self.views.batches_page_size

    def _goal(self, goal: str, listing: str | None, number: int) -> Page | None:
        """The goal's first page (``listing`` None: its overview, charts, latest attempts and comparisons), or page ``number`` of one listing."""
        overview = self._overview(goal)
        counts = {"attempts": overview["attempts"] or 0, "batches": overview["comparisons"]}
        if listing is not None and number > _pages(counts[listing], self._page_size(listing)):
            return None
        first_page = listing is None
        if first_page:  # (its runs first: the goal's pass rates come from the same reading)
            goal_runs = self._runs([goal])
        # the pass rates head the first page only
        overview = {**overview, "pass_rates": self._rates([overview])[goal] if first_page else None}
        context: dict[str, Any] = {"goal": overview, "first_page": first_page, "attempts": None, "batches": None}
        context["link_reviews"] = first_page or not self.written
        figures_shown: dict[str, Any] = {}
        for name in ("attempts", "batches"):
            if first_page or listing == name:
                shown = number if listing == name else 1
                context[name] = self._listing(goal, name, overview, shown)
                context[f"{name}_paging"] = _pager(shown, _pages(counts[name], self._page_size(name)), lambda n, name=name: _goal_page_name(name, n))
        attempts_shown = (context["attempts"] or {}).get("rows") or []
        if attempts_shown:
            figures_shown.update({f"timeline-{a['attempt']}": figures.timeline(a["timeline"]["steps"]) for a in attempts_shown})
        elif first_page:  # a goal stored before attempts existed, until `replay`: the goal's one timeline
            context["timeline"] = self._timeline(goal, overview["last_position"])
            figures_shown["timeline"] = figures.timeline(context["timeline"]["steps"])
        if first_page:
            charts = self.views.chart_series(goal)
            context["retractions"] = self.views.retractions(goal)
            context["reviews"] = self.views.latest_reviews(goal)
            context["comparisons"] = goal_runs["comparisons"]
            figures_shown.update({
                "score-delta": figures.score_delta(charts["score_delta"]),
                "claim-strengths": figures.claim_strengths(charts["claim_strengths"]),
                "attribution-labels": figures.attribution_labels(goal_runs["failure_labels"][goal]),
                "learning-status": figures.learning_status(charts["learning_status"]),
                "paired-differences": figures.paired_differences(context["comparisons"]["comparisons"]),
            })
        context["figures"] = figures_shown
        return self._html("goal.html", "../../", **context)

    def _overview(self, goal: str) -> dict[str, Any]:
        """The goal's overview (without its pass rates), read once per goal while it has no new event (the report: once per goal)."""
        cached = self._overviews.get(goal)
        if cached is None or cached[0] != self.views.goal_last_position(goal):
            overview = self.views.goal_overview(goal, pass_rates=False)
            cached = (overview["last_position"], overview)
            self._overviews[goal] = cached
        return cached[1]

    def _rates(self, goals: list[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        """The pass rates of these goals (index entries), each read once while its goal has no new event: they read every run of it.

        Those of the runs read last (:meth:`_runs`, the comparisons' runs model) are used when
        they cover the goal's last event; the others are counted from the goal's runs.
        """
        for g in goals:
            known = self._runs_rates.get(g["goal_id"])
            if self._ledger_runs_at is not None and (known is None or known[0] < self._ledger_runs_at):
                known = (self._ledger_runs_at, [])  # not in the ledger's runs model read last: the goal has no run
            if known is not None and known[0] >= g["last_position"] and self._pass_rates.get(g["goal_id"], (None,))[0] != g["last_position"]:
                self._pass_rates[g["goal_id"]] = (g["last_position"], known[1])
        stale = [g["goal_id"] for g in goals if self._pass_rates.get(g["goal_id"], (None,))[0] != g["last_position"]]
        if stale:
            read = self.views.pass_rates(stale)
            for g in goals:
                if g["goal_id"] in read:
                    self._pass_rates[g["goal_id"]] = (g["last_position"], read[g["goal_id"]])
        return {g["goal_id"]: self._pass_rates[g["goal_id"]][1] for g in goals}

    def _listing(self, goal: str, listing: str, overview: Mapping[str, Any], number: int) -> dict[str, Any]:
        """Page ``number`` of the goal's attempts or comparisons, read by key: from where the page before ended, else found from the index alone."""
        size = self._page_size(listing)
        read, find_start = (
            (self.views.attempts, self.views.attempts_page_start) if listing == "attempts" else (self.views.batches, self.views.batches_page_start)
        )
        cached = self._page_starts.get((goal, listing))
        if cached is None or cached[0] != overview["last_position"]:
            cached = (overview["last_position"], {})
            self._page_starts[(goal, listing)] = cached
        starts = cached[1]
        if number > 1 and number not in starts:
            starts[number] = find_start(goal, offset=(number - 1) * size)
        start = starts.get(number)
        if number > 1 and start is None:  # no row that far (the count said there was: the goal changed meanwhile)
            page: dict[str, Any] = {"limit": size, "rows": [], "next": None}
        else:
            page = (self._handed_over(goal, listing, overview["last_position"]) if number == 1 else None) or read(goal, limit=size, start=start)
            starts[number + 1] = page["next"]
        return {**page, "total": overview["attempts" if listing == "attempts" else "comparisons"] or 0}

    def _handed_over(self, goal: str, listing: str, last_position: int) -> dict[str, Any] | None:
        """The first page of the goal's ``listing`` as :meth:`paths` read it at ``last_position``, once (``None``: read it)."""
        listed = self._listed_first
        if listed is None or listed[:2] != (goal, last_position):
            return None
        return listed[2].pop(listing, None)

    def _timeline(self, goal: str, last_position: int) -> dict[str, Any]:
        """The goal's lifecycle changes; kept while the goal has no new event (its events never change)."""
        cached = self._timelines.get(goal)
        if cached is None or cached[0] != last_position:
            cached = (last_position, self.views.lifecycle_timeline(goal))
            self._timelines[goal] = cached
        return cached[1]

    def _index_comparisons(self) -> tuple[dict[str, Any], int]:
        """The index's comparisons, ``compare`` over the goals it lists, and how many archived goals that leaves out.

        The goals named, else every goal, but the archived ones unless ``include_archived``: the listing
        leaves them out (``goals archive``), so their runs are no evidence of what the index shows. The
        comparisons compared the whole ledger, and an archived goal's arms stayed in the table above
        "0 goal(s).". (``compare`` and ``runs`` themselves read every goal unless goals are named.)
        """
        if self.goal_ids or self.include_archived:
            return self._runs(self.goal_ids)["comparisons"], 0
        last_position = self.ledger.last_position()
        if self._listed_goals is None or self._listed_goals[0] != last_position:
            with self.ledger.goals(include_archived=True) as goals:
                found = [(goal.goal_id, goal.archived) for goal in goals]
            self._listed_goals = (last_position, tuple(g for g, archived in found if not archived), sum(a for _, a in found))
        _, listed, archived = self._listed_goals
        if not archived:
            return self._runs(None, last_position)["comparisons"], 0
        if not listed:  # (every goal archived: no run is evidence here)
            return {"scope": {"goals": []}, "comparisons": []}, archived
        return self._runs(list(listed), last_position)["comparisons"], archived

    def _runs(self, goal_ids: list[str] | None, last_position: int | None = None) -> dict[str, Any]:
        """``compare`` over the goals (None: the ledger), their pass rates and failure labels (``goal_runs``: one runs model); kept
        while nothing new is recorded in them (it reads every run of its scope).

        Kept by scope and the last position of what it reads (the goals' last events, or the ledger's; ``last_position``
        when the caller read it), so the index of ``report --goal G`` and G's own page share one reading.
        """
        scope = tuple(goal_ids or ())
        if last_position is None:
            last_position = self.ledger.last_position() if not scope else max(self.views.goal_last_position(g) or 0 for g in scope)
        cached = self._read_runs.get(scope)
        if cached is None or cached[0] < last_position:  # (a reading at a later position covers the scope too: positions only grow)
            read = self.views.goal_runs(list(scope))
            cached = (last_position, read)
            self._read_runs[scope] = cached
            # (read after ``last_position``: they cover every event of their goals up to it, at least)
            self._runs_rates.update((goal, (last_position, rates)) for goal, rates in read["pass_rates"].items())
            if not scope:
                self._ledger_runs_at = last_position
        return cached[1]

    def _review(self, goal: str, projection: str, extension: str) -> Page | None:
        review = next((r for r in self.views.latest_reviews(goal) if r["projection"] == projection), None)
        if review is None:
            return None
        if extension == "json":
            return _review_json(review)
        payload = review_fields.shown(projection, review["payload"])
        return self._html("review.html", "../../../", goal_id=goal, review=review, payload=payload)

    def _attempt_review(self, goal: str, key: str, projection: str, extension: str) -> Page | None:
        """One of an attempt's own reviews (its claim review, learning ledger or verifier attribution row)."""
        found = self._attempt_reviews(goal, key)
        review = next((r for r in found if r["projection"] == projection), None)
        if review is None:
            return None
        if extension == "json":
            return _review_json(review)
        payload = review_fields.shown(projection, review["payload"])
        return self._html(
            "attempt_review.html", "../../../../", goal_id=goal, review=review, payload=payload, siblings=[r["projection"] for r in found]
        )


    def _attempt_reviews(self, goal: str, key: str) -> list[dict[str, Any]]:
        """The comparison's own review rows, kept for its next file while the goal has no new event."""
        read_as = (goal, key, self.views.goal_last_position(goal))
        kept = self._attempt_reviews_read  # (one reading of it: serve's threads may replace it meanwhile)
        if kept is None or kept[0] != read_as:
            kept = (read_as, self.views.attempt_reviews(goal, key))
            self._attempt_reviews_read = kept
        return kept[1]


def _review_json(review: Mapping[str, Any]) -> Page:
    document = {key: review[key] for key in ("goal_id", "projection", "key", "position", "status", "payload", "error")}
    return Page(encoded(json.dumps(document, indent=2, ensure_ascii=False) + "\n"), JSON_TYPE)


def _page_number(match: re.Match[str] | None, page_size: int) -> int | None:
    """The page a matched name addresses; ``None`` for no match, or a page whose rows no database could reach."""
    if match is None:
        return None
    number = int(match.group(1) or 1)
    return None if (number - 1) * page_size > _MAX_ROW_OFFSET else number


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pages(count: int, size: int) -> int:
    return max(1, math.ceil(count / size))


def _goal_page_name(listing: str, number: int) -> str:
    return "index.html" if number == 1 else f"{listing}-{number}.html"


def _index_name(number: int) -> str:
    return "index.html" if number == 1 else f"index-{number}.html"


def _pager(number: int, pages: int, name: Callable[[int], str]) -> dict[str, Any]:
    return {
        "number": number,
        "pages": pages,
        "previous": name(number - 1) if number > 1 else None,
        "next": name(number + 1) if number < pages else None,
    }


def write_site(
    site: Site, output: Path, progress: Callable[[int, int], None] | None = None, audit_needed: Callable[[], None] | None = None,
) -> int:
    """Write every page of ``site`` as the report folder ``output`` (see :mod:`benchledger.cli.web.report_folder`); returns how many files.

    The pages that show the audit (the index's) are written last, and
    ``audit_needed`` is called before the first of them: ``report`` audits
    while it writes the others. ``progress`` is called with the files written
    so far and how many there are, after each one.
    """

    def build(folder: Path) -> int:
        listed = list(site.paths())
        showing_audit = [path for path in listed if _INDEX_PAGE.fullmatch(path)]
        others = [path for path in listed if not _INDEX_PAGE.fullmatch(path)]
        for written, path in enumerate(others + showing_audit, 1):
            if written == len(others) + 1 and audit_needed is not None:
                audit_needed()
            page = site.render(path)
            if page is None:
                raise LookupError(f"the report lists {path} but has no page for it")
            report_folder.write_file(folder, path.split("/"), page.body)
            if progress is not None:
                progress(written, len(listed))
        return len(listed)

    return report_folder.write_report(output, build)
