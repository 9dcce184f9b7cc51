"""The results table (markdown) and the copy of it kept in benchmarks/README.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.contenders import BULK_ARTIFACTS
from benchmarks.harness import ratio

README = Path(__file__).resolve().parent / "README.md"
RESULTS_BEGIN = "<!-- results:begin -->"
RESULTS_END = "<!-- results:end -->"
# one-artifact ingest, whole process, at most this fraction of LoopX review-claim's time (issue 15)
ONE_ARTIFACT_TARGETS = {"sqlite": 0.6, "postgresql": 0.7}


def fmt_num(v: float | None, unit: str = "", digits: int = 0) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}{unit}"


def fmt_ratio(v: float | None, target: str | None = None, ok: bool | None = None) -> str:
    if v is None:
        return "n/a"
    mark = "" if ok is None else (" ✅" if ok else " ❌")
    return f"{v:.2f}×{mark}" + (f" (target {target})" if target else "")


def render(results: dict[str, Any]) -> str:
    lines = []
    meta = results["meta"]
    lines.append(f"Run {meta['when']} — {meta['mode']} mode, seed {meta['seed']}, {meta['cpus']} CPUs, Python {meta['python']}, "
                 f"SQLAlchemy {meta['sqlalchemy']}, eventsourcing {meta['eventsourcing'] or 'not installed'}, "
                 f"LoopX {meta['loopx'] or 'not installed'}; total {meta['total_s']:.0f} s; "
                 f"1-min load average {meta.get('loadavg_start', float('nan')):.1f} at start, {meta.get('loadavg_end', float('nan')):.1f} at end.")
    lines.append("")
    for backend, r in results["backends"].items():
        w = r["workload"]
        lines.append(f"### {backend}")
        lines.append("")
        lines.append(f"Workload: {w['goals']} goals, {w['batches']} ingest batches, {w['artifacts']} artifacts; stored payload "
                     f"median {w['stored_payload_bytes_median']:.0f} B (mean {w['stored_payload_bytes_mean']} B), input file median {w['input_bytes_median']:.0f} B.")
        lines.append("")
        lines.append("| measurement | benchledger | baseline | ratio (benchledger / baseline) |")
        lines.append("|---|---|---|---|")
        one = r["one_artifact"]
        bl = one["benchledger"]["median_s"]
        if one.get("loopx"):
            rr = ratio(bl, one["loopx"]["median_s"])
            bound = ONE_ARTIFACT_TARGETS[backend]
            lines.append(f"| 1. one-artifact `ingest`, whole process, median | {bl*1e3:.0f} ms | LoopX `review-claim` {one['loopx']['median_s']*1e3:.0f} ms | {fmt_ratio(rr, f'≤ {bound}', rr is not None and rr <= bound)} |")
        else:
            lines.append(f"| 1. one-artifact `ingest`, whole process, median | {bl*1e3:.0f} ms | LoopX not installed | n/a |")
        lines.append(f"| 1. one-artifact `ingest`, whole process, median | {bl*1e3:.0f} ms | `python -c \"import sqlalchemy, click\"` {one['import']['median_s']*1e3:.0f} ms | {fmt_ratio(ratio(bl, one['import']['median_s']))} |")
        batches = r["ingest_batches"]["events_per_s"]
        rr = ratio(batches, r["serial_ceiling"])
        lines.append(f"| 2. bulk ingest through `ingest-batches` (NDJSON validated, then appended in ≤ {BULK_ARTIFACTS}-artifact transactions), "
                     f"artifacts/s | {fmt_num(batches)} | serial ceiling 1 / (1/n + 1/f + 1/p), same run {fmt_num(r['serial_ceiling'])} | "
                     f"{fmt_ratio(rr, '≥ 0.6', rr is not None and rr >= 0.6)} |")
        if "ingest_batches_jobs2" in r:  # (runs before issue 31 measured --jobs 1 only)
            jobs2 = r["ingest_batches_jobs2"]["events_per_s"]
            rr = ratio(jobs2, batches)
            lines.append(f"| 2. bulk ingest through `ingest-batches --jobs 2` (the lines validated by 2 worker processes; "
                         f"`benchmarks.bulk_jobs`: CPU per process, stages), artifacts/s | {fmt_num(jobs2)} | `--jobs 1`, same run {fmt_num(batches)} | "
                         f"{fmt_ratio(rr, '≥ 1.6', rr is not None and rr >= 1.6)} |")
        store = r["store_only"]["events_per_s"]
        es = r.get("bulk_eventsourcing")
        label = f"2. store-only append (normalized artifacts, projections off; ~{BULK_ARTIFACTS}-artifact transactions), events/s"
        if es:
            rr = ratio(store, es["events_per_s"])
            lines.append(f"| {label} | {fmt_num(store)} | eventsourcing aggregates, same transactions {fmt_num(es['events_per_s'])} | "
                         f"{fmt_ratio(rr, '≥ 1.2', rr is not None and rr >= 1.2)} |")
        else:
            lines.append(f"| {label} | {fmt_num(store)} | eventsourcing not installed | n/a |")
        lines.append(f"| {label} | {fmt_num(store)} | plain Core insert, same transactions {fmt_num(r['bulk_plain']['events_per_s'])} | "
                     f"{fmt_ratio(ratio(store, r['bulk_plain']['events_per_s']))} |")
        for mode, label in (
            ("bulk", f"2. bulk ingest (`Ingest`: normalize + chain + projections; ~{BULK_ARTIFACTS}-artifact transactions), events/s"),
            ("per_batch", "2. per-run ingest (one transaction per `ingest` batch), events/s"),
        ):
            b = r[f"{mode}_benchledger"]["events_per_s"]
            plain = r[f"{mode}_plain"]["events_per_s"]
            lines.append(f"| {label} | {fmt_num(b)} | plain Core insert, same transactions {fmt_num(plain)} | {fmt_ratio(ratio(b, plain))} |")
            es = r.get(f"{mode}_eventsourcing")
            if es:
                lines.append(f"| {label} | {fmt_num(b)} | eventsourcing aggregates, same transactions {fmt_num(es['events_per_s'])} | "
                             f"{fmt_ratio(ratio(b, es['events_per_s']))} |")
            else:
                lines.append(f"| {label} | {fmt_num(b)} | eventsourcing not installed | n/a |")
        rp = r["replay_benchledger"]["events_per_s"]
        rr = ratio(rp, r["replay_plain"]["events_per_s"])
        lines.append(f"| 3. full replay (`--jobs 1`), events/s ({r['replay_benchledger']['events']} events) | {fmt_num(rp)} | read + json.loads {fmt_num(r['replay_plain']['events_per_s'])} | {fmt_ratio(rr)} |")
        lat = r["latency"]
        sizes = sorted(lat, key=int)
        smallest = lat[sizes[0]]
        for size in sizes:
            at_size = lat[size]
            for view in ("history", "show"):
                p99 = at_size[view]["p99_ms"]
                growth = ratio(p99, smallest[view]["p99_ms"])
                target = ""
                if view == "history" and int(size) >= 10**6:
                    ok = p99 <= 20 and (growth or 0) <= 2
                    target = f" {'✅' if ok else '❌'} (target p99 ≤ 20 ms and ≤ 2× the 10^4 value)"
                lines.append(
                    f"| 4. `{view} GOAL` at {int(size):,} events ({at_size['goal_events']}-event goal), p50 / p99 | "
                    f"{at_size[view]['p50_ms']:.1f} / {p99:.1f} ms | same goal at {int(sizes[0]):,} events: p99 {smallest[view]['p99_ms']:.1f} ms | "
                    f"{fmt_ratio(growth)}{target} |"
                )
        lines.append("")
        fold = r["fold_only"]["events_per_s"]
        lines.append(f"Ceilings: the projection fold alone (reducers + linking rules + row serialization, events already "
                     f"decoded, no database) runs at {fmt_num(fold)} events/s, {fmt_ratio(ratio(fold, r['replay_plain']['events_per_s']))} "
                     f"read + json.loads and {fmt_ratio(ratio(fold, r['bulk_plain']['events_per_s']))} the bulk plain insert; "
                     f"normalization alone runs at {fmt_num(r['bulk_benchledger']['normalize_events_per_s'])} artifacts/s, "
                     f"{fmt_ratio(ratio(r['bulk_benchledger']['normalize_events_per_s'], r['bulk_plain']['events_per_s']))} the bulk plain insert; "
                     f"one after the other, per artifact (the fold of the {r['fold_only']['events']} events those artifacts and their "
                     f"batch manifests make), the three give the bulk ingest's serial ceiling of {fmt_num(r['serial_ceiling'])} artifacts/s.")
        lines.append("")
        lines.append(f"Ingest breakdown: normalization (parse + compaction + safety checks) is "
                     f"{r['bulk_benchledger']['normalize_share']*100:.0f}% of benchledger's bulk time and "
                     f"{r['per_batch_benchledger']['normalize_share']*100:.0f}% of its per-run time "
                     f"({fmt_num(r['bulk_benchledger']['normalize_events_per_s'])} artifacts/s on its own). "
                     + " ".join(f"{int(s):,}-event ledger built in {lat[s]['build_s']:.0f} s." for s in sizes))
        lines.append("")
    return "\n".join(lines)


def update_readme(table: str) -> None:
    if not README.exists():
        return
    content = README.read_text()
    if RESULTS_BEGIN not in content or RESULTS_END not in content:
        return
    head, rest = content.split(RESULTS_BEGIN, 1)
    _old, tail = rest.split(RESULTS_END, 1)
    README.write_text(f"{head}{RESULTS_BEGIN}\n{table}\n{RESULTS_END}{tail}")
