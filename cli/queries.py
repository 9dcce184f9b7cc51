"""Commands that read the ledger or rebuild its projections: info, goals, show, history, status, replay, audit."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from benchledger.cli.common import (
    FIRST_GOAL_STEP,
    as_of_after_last_event_text,
    attempt_id,
    echo_as_of_after_last_event,
    goal_filter,
    jobs_option,
    open_ledger,
    standby_lag_text,
    with_goal,
)
from benchledger.cli.output import (
    echo_json,
    echo_json_listing,
    echo_rows,
    format_option,
    utc_text,
    visible,
    wide_option,
)
from benchledger.errors import capped
from benchledger.ledger.results import Attempt, AuditProblem, FaultedRow, GoalView, History, HistoryEntry, Lifecycle
from benchledger.projections.catalog import EVENT_KINDS

AS_OF_HELP = (
    "Only the events up to this global position, or those the ledger recorded at or before TIME "
    "(ISO-8601, no offset = UTC; compared with the ledger's recording time, recorded_at, never an artifact's own time; "
    "a TIME without a fraction takes in the whole month, week, day, hour, minute or second it names: 2026-12-04 is up to its last microsecond)."
)


def _as_of_text(as_of: str | None, view: GoalView | History) -> str | None:
    """What an --as-of answer is as of, in words: the position, and the instant of ledger time it was resolved from."""
    if view.as_of_position is None or as_of is None:
        return None
    if view.as_of_after_last_event is not None:
        return as_of_after_last_event_text(as_of, view.as_of_after_last_event)
    if view.as_of_time is None:
        return f"as of position {view.as_of_position}"
    whole = f" (--as-of {as_of} takes in that whole {view.as_of_period})" if view.as_of_period else ""
    return f"as of position {view.as_of_position}: the events the ledger recorded (recorded_at, UTC) at or before {view.as_of_time}{whole}"


def _echo_faulted(faulted: Sequence[FaultedRow]) -> None:
    for line in capped([f"{f.projection} [{f.key}] of {f.goal_id}: {f.error}" for f in faulted]):
        click.echo(f"faulted: {line}")


@click.command("info")
@format_option("table", "json")
@click.pass_context
def info_command(ctx: click.Context, fmt: str) -> None:
    """Which ledger the commands use: its URL (password redacted), backend, schema revision, events, goals, file size."""
    with open_ledger(ctx, any_revision=True) as ledger:
        facts = ledger.info()
    if fmt == "json":
        echo_json(facts.as_dict())
        return
    revision = facts.schema_revision or "not initialized"
    if facts.schema_revision is not None and facts.schema_revision < facts.schema_head:
        revision += f" (this benchledger needs {facts.schema_head}: run `benchledger db upgrade`)"
    elif facts.schema_revision != facts.schema_head:
        revision += f" (this benchledger needs {facts.schema_head})"
    rows = [
        ["ledger", facts.url],
        ["backend", facts.backend],
        ["schema revision", revision],
        ["events", facts.events],
        ["goals", facts.goals],
    ]
    if facts.file_bytes is not None:
        rows.append(["file size", f"{facts.file_bytes} bytes" + (f" (+ {facts.wal_bytes} bytes of write-ahead log)" if facts.wal_bytes else "")])
    if facts.standby:
        rows.append(["standby", f"yes: a read-only replica, {standby_lag_text(facts.replayed_at, facts.replay_lag_seconds)}"])
    rows.append(["benchledger", facts.benchledger_version])
    echo_rows(["", "value"], rows, fmt)


@click.group("goals", invoke_without_command=True)
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the first N goals (by id).")
@click.option("--after", metavar="GOAL", help="Only the goals whose id sorts after GOAL: with --limit, the next page after the last goal listed "
              "(GOAL need not exist).")
@click.option("--include-archived", "--all", "include_archived", is_flag=True, help="List archived goals too, marked (`goals archive`).")
@format_option("table", "json", "markdown", "csv")
@wide_option
@click.pass_context
def goals_command(ctx: click.Context, limit: int | None, after: str | None, include_archived: bool, fmt: str, wide: bool) -> None:
    """Every goal: event count, attempts, last activity, and its latest attempt's phase, first blocker, claim strength, learning status.

    Printed as they are read, a page of goals at a time. Archived goals are
    left out (--include-archived lists them, marked); `goals archive GOAL` and
    `goals unarchive GOAL` change that, by an event, never a deletion.
    Page through many goals with --limit N, then --after LAST --limit N.
    """
    if ctx.invoked_subcommand is not None:
        return
    with open_ledger(ctx) as ledger, ledger.goals(limit=limit, after=after, include_archived=include_archived) as listing:
        if fmt == "json":
            echo_json_listing(listing)
            return
        headers = ["goal", "events", "attempts", "last activity (UTC)", "phase", "first blocker", "claim strength", "learning"]
        rows = (
            [g.goal_id, g.event_count, g.attempts, utc_text(g.last_activity), g.current_phase, g.first_blocker, g.claim_strength, g.learning_status]
            + (["yes" if g.archived else "no"] if include_archived else [])
            for g in listing
        )
        where = f"after '{after}' " if after is not None else ""
        hidden = "" if include_archived else "; archived goals are left out (--include-archived lists them)"
        first = "" if after is not None else f"; `{FIRST_GOAL_STEP}` creates one"
        echo_rows(headers + (["archived"] if include_archived else []), rows, fmt, wide=wide,
                  empty=f"no goals {where}in this ledger (`benchledger info` names it){hidden}{first}")


def _archive_command(name: str, archived: bool, summary: str) -> click.Command:
    @with_goal(help=f"The goal to {name}.", positional_alias=True)
    @click.command(name, help=summary)
    @format_option("markdown", "json")
    @click.pass_context
    def command(ctx: click.Context, goal: str, fmt: str) -> None:
        with open_ledger(ctx, writes=True) as ledger:
            done = ledger.archive_goal(goal, archived=archived, source=f"cli goals {name}")
        if fmt == "json":
            echo_json(done.as_dict())
        elif done.changed:
            click.echo(f"goal `{goal}` {name}d (event {done.event_id} at position {done.position})")
        else:
            click.echo(f"goal `{goal}` is {name}d already: nothing was written")

    return command


goals_command.add_command(_archive_command(
    "archive", True,
    "Hide GOAL from `goals` and the report's index: an event (goal_archive), never a deletion. Its events, history, "
    "reviews and `show` stay as they were; `goals --include-archived` lists it, `goals unarchive` shows it again.",
))
goals_command.add_command(_archive_command(
    "unarchive", False, "List GOAL in `goals` and the report's index again: an event (goal_unarchive) after its archive.",
))


@with_goal(help="The goal to show.", positional_alias=True)
@click.command("show")
@click.option("--as-of", metavar="POSITION|TIME", help="Replay only the events up to then. " + AS_OF_HELP)
@click.option("--projection", metavar="NAME", help="List this projection's rows (in position order) instead of the latest of each.")
@click.option("--key", metavar="KEY", help="With --projection: only its row KEY (an event id, 'current', or a step's 12-digit position).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="With --projection: at most N rows.")
@click.option("--offset", type=click.IntRange(min=0), default=0, metavar="M", help="With --projection: skip the first M rows.")
@format_option("json", "markdown")
@click.pass_context
def show_command(
    ctx: click.Context, goal: str, as_of: str | None, projection: str | None, key: str | None, limit: int | None, offset: int, fmt: str
) -> None:
    """The goal's current state: the latest row of each projection, and how many rows each holds.

    Every 'current' row (lifecycle-state, goal-summary) and the newest row of
    each per-batch, per-run and per-step projection; --projection NAME lists
    the rest (--key, --limit, --offset).
    """
    if projection is None and (key is not None or limit is not None or offset):
        raise click.UsageError("--key, --limit and --offset go with --projection NAME", ctx)
    with open_ledger(ctx) as ledger:
        view = ledger.show(goal, as_of=as_of, projection=projection, key=key, limit=limit, offset=offset)
    if as_of is not None and not view.counts:  # (an --as-of before the goal's first event: say so, not only an empty page)
        click.echo(f"benchledger: note: no event of goal '{goal}' at or before position {view.as_of_position}: it held nothing then", err=True)
    held = view.counts.get(projection, 0) if projection is not None else 0
    shown = sum(len(rows) for rows in view.projections.values())
    if key is None and held and not shown:  # (a page past the rows: an empty page alone reads as a projection with none)
        click.echo(f"benchledger: note: --offset {offset} is past the {held} row(s) of projection {projection} of goal '{goal}' "
                   f"(--offset 0 to {held - 1} start within them)", err=True)
    if fmt == "json":
        echo_as_of_after_last_event(as_of, view.as_of_after_last_event)
        echo_json(view.as_dict())
        return
    from benchledger.projections import REVIEW_MODULES, review_module

    when = _as_of_text(as_of, view) or "current"
    click.echo(visible(f"# Goal `{goal}` ({when}; head at position {view.head_position})\n"))
    listing = ", ".join(f"{name} {count}" for name, count in view.counts.items())
    if projection is None:
        click.echo(f"Rows per projection: {listing or 'none'}. The latest of each follows; `--projection NAME` lists the rest.\n")
        _echo_attempts(view.attempts, view.counts.get("attempt-lifecycle-state", 0))
    else:
        page = f"rows {offset + 1}-{offset + shown} of {held}" if shown else f"no row after --offset {offset}: the goal holds {held}"
        click.echo(f"{projection}: {page if held else 'no row: the goal holds none'}.\n")
    for name, rows in view.projections.items():
        for row in rows:
            click.echo(visible(f"## {name} [{row.key}] @ position {row.position}\n"))
            if row.faulted:
                click.echo(visible(f"FAULTED: {row.error}\n"))
            elif name in REVIEW_MODULES:
                click.echo(visible(review_module(name).render_markdown(row.payload)))
            else:
                click.echo(visible("```json\n" + json.dumps(row.payload, indent=2, ensure_ascii=False) + "\n```\n"))


def _echo_attempts(attempts: list[Attempt], total: int) -> None:
    """The goal's attempts, the latest first: each one's own lifecycle (phase, first blocker, open gates)."""
    if not attempts:
        return
    more = f" (the latest {len(attempts)} of {total}; `--projection attempt-lifecycle-state` lists all)" if total > len(attempts) else ""
    rows = [
        [a.attempt, a.position, a.current_phase, a.first_blocker, " ".join(g for g, v in (a.gates or {}).items() if v is True)]
        if a.status == "ok" else [a.attempt, a.position, "FAULTED", a.error, ""]
        for a in attempts
    ]
    click.echo(visible(f"## attempts, the latest first{more}\n"))
    echo_rows(["attempt", "last event", "phase", "first blocker", "open gates"], iter(rows), "markdown", wide=True)
    click.echo()


def _gate_text(gates: dict[str, Any] | None, changed: list[str]) -> str:
    if not gates:
        return ""
    opened = [g for g in changed if gates.get(g) is True]
    closed = [g for g in changed if gates.get(g) is not True]
    return " ".join([*(f"+{g}" for g in opened), *(f"-{g}" for g in closed)])


@with_goal(help="The goal whose history to print.", positional_alias=True)
@click.command("history")
@click.option("--as-of", metavar="POSITION|TIME", help="What the ledger said then. " + AS_OF_HELP)
@click.option("--kind", type=click.Choice(EVENT_KINDS), help="Only entries of this event kind (the lifecycle state still reflects every event).")
@click.option("--since", metavar="POSITION|TIME", help="Only entries from this global position on, or recorded (recorded_at) at or after TIME.")
@click.option("--until", metavar="POSITION|TIME", help="Only entries up to this global position, or recorded (recorded_at) at or before TIME (a TIME without a fraction takes in "
                   "the whole period it names, as --as-of: 2026-12-04 is up to its last microsecond).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the latest N of the entries selected (still printed oldest first).")
@click.option(
    "--changes-only", is_flag=True,
    help="Only the entries after which the lifecycle differs from before them (phase, first blocker, next transition, a gate, or a fault).",
)
@click.option("--attempt", metavar="ID", callback=lambda ctx, param, value: attempt_id(value),
              help="Only the events of this attempt of the goal (`show` lists its attempts).")
@format_option("table", "json", "markdown", "csv")
@wide_option
@click.pass_context
def history_command(
    ctx: click.Context, goal: str, as_of: str | None, kind: str | None, since: str | None, until: str | None,
    limit: int | None, changes_only: bool, attempt: str | None, fmt: str, wide: bool,
) -> None:
    """The goal's lifecycle history: every event, and the lifecycle state after it.

    Each event belongs to an attempt of the goal, and the lifecycle after it is
    that attempt's. Entries where the lifecycle phase or a gate changed are
    marked with '*' (the gates column lists +opened / -closed gates); an event a
    retraction withdrew is marked "by @POS", the retraction's position (JSON retracted_by,
    with its reason). --wide, CSV and markdown carry each event's id. A run's summary starts
    with its outcome (passed / failed and its score); "recorded" is when the
    ledger recorded the event, "artifact time" the time the artifact itself
    states, where it states one (a LoopX run-ledger row's recorded_at), both UTC.
    Entries are read from the stored lifecycle steps and printed as they are read.
    """
    with open_ledger(ctx) as ledger, ledger.history(
        goal, as_of=as_of, kind=kind, since=since, until=until, limit=limit, changes_only=changes_only, attempt=attempt
    ) as view:
        if fmt in ("json", "csv"):
            echo_as_of_after_last_event(as_of, view.as_of_after_last_event)
        if fmt == "json":
            echo_json_listing(view)
            return
        # Event ids are what `retract` takes: a wide table, CSV and markdown carry them (a fitted table: `retract @POS`).
        with_ids = wide or fmt != "table"
        headers = [
            "changed", "pos", "ver", *(["event id"] if with_ids else []), "recorded", "artifact time", "kind", "attempt", "retracted",
            "summary", "phase", "first blocker", "next transition", "gate changes",
        ]
        when = _as_of_text(as_of, view)
        if fmt == "table" and when:
            click.echo(when)
        title = f"# Lifecycle history of `{goal}`" + (f" ({when})" if when else "")
        asked = [f"{name} {value}" for name, value in (("--as-of", as_of), ("--since", since), ("--until", until), ("--kind", kind),
                                                         ("--attempt", attempt)) if value] + (["--changes-only"] if changes_only else [])
        echo_rows(headers, (_history_row(entry, with_ids) for entry in view), fmt, wide=wide, title=title,
                  empty=f"no history entry of goal '{goal}' matches {', '.join(asked) or 'this view'}")


# What a row shows of an entry whose lifecycle row is faulted.
_NO_LIFECYCLE = Lifecycle(None, None, None, None)


def _history_row(e: HistoryEntry, with_id: bool) -> list[Any]:
    life = e.lifecycle or _NO_LIFECYCLE
    changed = e.phase_changed or bool(e.gates_changed)
    return [
        "*" if changed else "",
        e.position,
        e.stream_version,
        *([e.event_id] if with_id else []),
        utc_text(e.recorded_at),
        utc_text(e.artifact_time),
        e.kind,
        e.attempt,
        "" if e.retracted_by is None else f"by @{e.retracted_by.position}",
        e.summary,
        life.current_phase,
        life.first_blocker,
        life.next_required_transition,
        _gate_text(life.gates, e.gates_changed),
    ]


@click.command("status")
@format_option("markdown", "json")
@click.pass_context
def status_command(ctx: click.Context, fmt: str) -> None:
    """Projections stored by an older reducer version, goals folded by a benchledger with other projection
    versions (after an upgrade: which projections, from which version to which), faulted rows, and goals whose projections lag.

    Exits 1 when anything needs `benchledger replay` (`replay --if-stale` runs it only then).
    """
    with open_ledger(ctx) as ledger:
        report = ledger.status()
    if fmt == "json":
        echo_json(report.as_dict())
    else:
        if report.ok:
            click.echo("all projections are current")
        for s in report.stale:
            click.echo(f"stale: {s.projection} stored by version {s.stored_version}, code is {s.code_version} ({s.rows} rows)")
        for f in report.folded_by_other_versions:
            others = f" and {f.goals - 1} other(s)" if f.goals > 1 else ""
            click.echo(
                visible(f"stale: goal {f.first_goal}{others} folded by a benchledger with other projection versions ({_version_changes(f.differences)}); "
                "`benchledger replay` refolds them")
            )
        for m in report.missing:
            click.echo(f"stale: no {m.projection} rows for {m.goals} goal(s), stored before this benchledger kept them (`benchledger replay` builds them)")
        _echo_faulted(report.faulted)
        for line in capped([f"{g.goal_id} reflects position {g.reflects_position}, head is {g.head_position}" for g in report.lagging_goals]):
            click.echo(f"lagging: {line}")
    ctx.exit(0 if report.ok else 1)


def _version_changes(differences: Sequence[dict[str, Any]]) -> str:
    """``comparison-batch: none -> 1, review-claim: 1 -> 2`` (none: that build did not compute it, or this one no longer does)."""
    return ", ".join(
        f"{d['projection']}: {'none' if d['folded_version'] is None else d['folded_version']} -> {'none' if d['code_version'] is None else d['code_version']}"
        for d in differences
    )


def _progress_bar(total: int, label: str):
    """A progress bar on stderr when it is a terminal and the work is large; ``None`` otherwise."""
    return click.progressbar(length=total, label=label, file=sys.stderr) if sys.stderr.isatty() and total > 1000 else None


@click.command("replay")
@goal_filter(help="Only this goal (default: every goal; only a replay of every goal rebuilds the Merkle log).")
@click.option("--projection", help="Only this projection (a review name or goal-summary).")
@click.option(
    "--if-stale",
    is_flag=True,
    help="Only when `benchledger status` would report something (exit 1): otherwise say so and exit 0 (after an upgrade).",
)
@jobs_option("Worker processes that fold goals, each reading its own goals from the database (1: fold here)")
@format_option("markdown", "json")
@click.pass_context
def replay_command(ctx: click.Context, goal: str | None, projection: str | None, if_stale: bool, jobs: int, fmt: str) -> None:
    """Recompute stored projections from the events and replace them atomically.

    Every row is recomputed; only rows that differ from the stored ones are
    rewritten (the report says how many: 0 on a healthy ledger). Worker
    processes fold the goals; this one writes every row in one transaction.
    With --if-stale, only when `status` finds the ledger stale: after
    installing a newer benchledger, `benchledger db upgrade && benchledger replay --if-stale`.

    A reducer that raises marks its row faulted (queries say so) and the
    command exits 1.
    """
    with open_ledger(ctx, writes=True) as ledger:
        if if_stale and ledger.status().ok:
            if fmt == "json":
                echo_json({"replayed": False, "reason": "all projections are current"})
            else:
                click.echo("all projections are current: nothing replayed")
            return
        bar = _progress_bar(ledger.event_count(goal), "replaying")
        try:
            report = ledger.replay(goal_id=goal, projection=projection, progress=bar.update if bar else None, jobs=jobs)
        finally:
            if bar is not None:
                bar.render_finish()
    if fmt == "json":
        echo_json(report.as_dict())
    else:
        repairs = [f"{report.counts_repaired} stored row count(s)" if report.counts_repaired else "", f"{report.heads_repaired} stream head(s)" if report.heads_repaired else "",
                   f"{report.log_nodes_repaired} Merkle log node(s)" if report.log_nodes_repaired else ""]
        repaired = "; " + " and ".join(r for r in repairs if r) + " repaired" if any(repairs) else ""
        # (a rate only of events there were: an empty ledger's replay took time, at "0.0 events/s", for nothing)
        rate = f" ({report.events_per_second} events/s)" if report.events and report.events_per_second else ""
        click.echo(
            f"replayed {report.events} events of {report.goals} goal(s) into {report.rows} rows "
            f"({report.rows_changed} of them changed{repaired}) in {report.seconds} s{rate}"
            if report.events else f"nothing to replay: the ledger holds no events{repaired and ' (' + repaired[2:] + ')'}"
        )
        _echo_faulted(report.faulted)
    ctx.exit(1 if report.faulted else 0)


def _where(problem: AuditProblem) -> str:
    """Where an audit problem is: its goal and position, each where it has one."""
    return ", ".join(part for part in (problem.goal_id and f"goal {problem.goal_id}", problem.position and f"position {problem.position}") if part) or "the ledger"


@click.command("audit")
@goal_filter(help="Audit only this goal (its chain, its projections, a digest over its events, each event's proof in the Merkle log; "
                   "only a whole-ledger audit recomputes the log).")
@click.option("--expect-digest", metavar="DIGEST", help="A digest printed by an earlier audit: prove that history is unchanged.")
@click.option("--history-only", is_flag=True, help="Check the history alone (hashes, chains, versions, positions, heads, the Merkle log, the digest) "
              "and do not refold the projections: one reading of the events, without the fold that is most of an audit's cost. "
              "It does not prove the projections (its JSON says \"projections\": \"not checked\"): run `benchledger audit` for that. "
              "--jobs is unused: nothing is folded.")
@jobs_option("Worker processes that fold goals, each reading its own goals from the database (1: fold here)")
@format_option("markdown", "json")
@click.pass_context
def audit_command(ctx: click.Context, goal: str | None, expect_digest: str | None, history_only: bool, jobs: int, fmt: str) -> None:
    """Prove the ledger: hashes, chains, versions, positions, the Merkle log, projections; print its digest.

    Exits 1 when any problem is found. See docs/hash-chain.md for the digest.
    """
    with open_ledger(ctx) as ledger:
        bar = _progress_bar(ledger.event_count(goal), "auditing")
        try:
            report = ledger.audit(
                goal_id=goal, expect_digest=expect_digest, jobs=jobs, progress=bar.update if bar else None, projections=not history_only,
            )
        finally:
            if bar is not None:
                bar.render_finish()
    if fmt == "json":
        echo_json(report.as_dict())
    else:
        verdict = "clean" if report.ok else f"{len(report.problems)} problem(s)"
        projections = (
            "not checked (--history-only: run `benchledger audit` to refold them)" if history_only else str(report.projections_checked)
        )
        click.echo(
            f"# Audit: {verdict}\n\n- events checked: {report.events_checked}\n- goals checked: {report.goals_checked}\n"
            f"- projections checked: {projections}\n- digest: `{report.digest}`"
        )
        if report.expected_digest is not None:
            position = report.expected_digest.split(":")[0]
            scope = "the goal's history up to version" if goal else "the history up to position"
            verdict = "verified: " + scope + f" {position} is unchanged" if report.expected_digest_verified else "NOT verified (below)"
            click.echo(f"- expected digest `{report.expected_digest}`: {verdict}")
        for line in capped([f"{p.kind} ({_where(p)}): {p.detail}" for p in report.problems]):
            click.echo(f"- {line}")
        outdated = report.as_dict()["outdated_count"]
        if outdated:
            click.echo(
                f"\n{outdated} of the problems are rows an older benchledger stored (projection_outdated), not tampering: "
                "`benchledger replay` rebuilds them"
            )
    ctx.exit(0 if report.ok else 1)
