"""How the CLI shows results to people: rich tables and short summaries.

Kept apart from ``cli.py`` so commands stay a few lines each, and so the
``--json`` forms (built in the commands) and the human forms cannot drift into
one tangled function.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from esbubble.app.report import Table
from esbubble.core.metrics import bubble_metrics
from esbubble.models import Bubble, GateDict, RunManifest, TraceDict
from esbubble.text import preview

if TYPE_CHECKING:
    from esbubble.app.deliver import DeliveryEvaluation
    from esbubble.app.rebubble import BatchResult, ChunkNote, Comparison
    from esbubble.ingest import IngestSummary
    from esbubble.store.audit import WriteResult


# Columns a table may use when output goes to a file or a pipe (no terminal to fit).
NON_TTY_WIDTH = 200


def console() -> Console:
    """A console on the current stdout (tests swap it); when not a TTY (a file, a CI log) wide enough
    that no table cuts a value: the trace's 14 columns need about 170."""
    width = (
        None
        if sys.stdout.isatty()
        else max(shutil.get_terminal_size((NON_TTY_WIDTH, 40)).columns, NON_TTY_WIDTH)
    )
    return Console(file=sys.stdout, width=width, highlight=False, soft_wrap=False)


def emit_json(payload: Any) -> None:
    """One JSON document on stdout, UTF-8, keys in the order given (a stable contract)."""
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2, default=str))


def print_table(table: Table) -> None:
    """A plain ``report.Table`` as a rich table: the first column and any column with words in it (a
    query id, an evidence phrase, a reason) left-aligned, columns of numbers right-aligned."""
    rich = RichTable(title=table.title, title_justify="left")
    for i, column in enumerate(table.columns):
        words = i == 0 or any(any(c.isalpha() for c in row[i]) for row in table.rows if i < len(row))
        rich.add_column(column, justify="left" if words else "right", overflow="fold")
    for row in table.rows:
        rich.add_row(*row)
    console().print(rich)


def print_tables(tables: Sequence[Table]) -> None:
    for table in tables:
        print_table(table)


def fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def warn_write(result: WriteResult) -> None:
    """Say once on stderr when audit records went to the spool instead of the cluster.

    Records that could not be spooled either are not a warning: the command
    raises ``AuditLostError`` (exit 4) once its result is printed.
    """
    if result.spooled:
        click.echo(
            f"esbubble: warning: {result.spooled} audit records spooled to {result.spool_file} "
            f"({result.error}); run `esbubble traces flush` later",
            err=True,
        )


def empty_reason(bubble: Bubble) -> str | None:
    """Why the bubble is empty, in one line; ``None`` when it is not empty."""
    if bubble.selected:
        return None
    if not bubble.trace:
        return "no chunk matched the query"
    reasons = Counter(record["final_reason"] for record in bubble.trace)
    shown = ", ".join(
        f"{reason} {count}" for reason, count in sorted(reasons.items(), key=lambda i: (-i[1], i[0]))
    )
    total = len(bubble.trace)
    return f"{'the only candidate was' if total == 1 else f'all {total} candidates'} rejected: {shown}"


def warn_empty(bubble: Bubble) -> None:
    """An empty bubble is a valid result (exit 0), but say why on stderr."""
    reason = empty_reason(bubble)
    if reason is not None:
        click.echo(f"esbubble: warning: the bubble is empty: {reason} (budget {bubble.budget})", err=True)


def ingest_json(summary: IngestSummary) -> dict[str, Any]:
    return {
        "documents": len(summary.documents),
        "chunks": sum(d.chunks for d in summary.documents),
        "added": summary.added,
        "updated": summary.updated,
        "deleted": summary.deleted,
        "unchanged": summary.unchanged,
        "failures": [f.model_dump(mode="json") for f in summary.failures],
        "skipped": summary.skipped,
        "per_document": [d.model_dump(mode="json") for d in summary.documents],
    }


def print_ingest(summary: IngestSummary) -> None:
    chunks = sum(d.chunks for d in summary.documents)
    click.echo(
        f"{len(summary.documents)} documents, {chunks} chunks: {summary.added} added, "
        f"{summary.updated} updated, {summary.deleted} deleted, {summary.unchanged} unchanged; "
        f"{len(summary.failures)} failed"
    )
    warned = [(document.file, warning) for document in summary.documents for warning in document.warnings]
    if warned:
        click.echo("reader warnings (the files were ingested; check their chunks):")
        for file, warning in warned:
            click.echo(f"  {file}: {warning}")
    for failure in summary.failures:
        click.echo(f"esbubble: error: {failure.file}: {failure.reason}", err=True)
    for skipped in summary.skipped:
        click.echo(f"skipped (no reader): {skipped}", err=True)


def bubble_json(bubble: Bubble) -> dict[str, Any]:
    """The stable ``bubble --json`` contract (see the README); keys are never renamed."""
    return {
        "run_id": bubble.run_id,
        "query": bubble.query,
        "variant": bubble.variant,
        "budget": bubble.budget,
        "delta": bubble.delta,
        "tokens_used": bubble.tokens_used,
        "candidates": len(bubble.trace),
        "sections": bubble.sections,
        "avg_overlap": bubble_metrics(bubble).avg_overlap,
        "selected": [
            {
                "rank": s.selection_order,
                "chunk_id": s.chunk.chunk_id,
                "doc_id": s.chunk.doc_id,
                "section": s.chunk.section,
                "bucket": s.chunk.bucket,
                "row_number": s.chunk.row_number,
                "page": s.chunk.page,
                "token_count": s.chunk.token_count,
                "score": s.score,
                "text": s.chunk.text,
            }
            for s in bubble.selected
        ],
        "rejected": bubble.rejected,
    }


def _where(row_number: int | None, page: int | None) -> str:
    if row_number is not None:
        return f"row {row_number}"
    return f"p. {page}" if page is not None else ""


def print_bubble(bubble: Bubble) -> None:
    selected = RichTable(
        title=f"Bubble for {bubble.query!r} — {bubble.variant}, {bubble.tokens_used}/{bubble.budget} tokens, "
        f"δ={bubble.delta:g}",
        title_justify="left",
    )
    for column, justify in (("rank", "right"), ("section", "left"), ("row/page", "left"), ("tokens", "right"),
                            ("score", "right"), ("text", "left")):  # fmt: skip
        selected.add_column(column, justify=justify)  # type: ignore[arg-type]
    for s in bubble.selected:
        selected.add_row(
            str(s.selection_order), s.chunk.section, _where(s.chunk.row_number, s.chunk.page),
            str(s.chunk.token_count), f"{s.score:.2f}", preview(s.chunk.text),
        )  # fmt: skip
    out = console()
    out.print(selected)
    used = bubble.tokens_used or 1
    allocation = RichTable(title="Token allocation per section", title_justify="left")
    allocation.add_column("section")
    allocation.add_column("tokens", justify="right")
    allocation.add_column("share", justify="right")
    for section, tokens in bubble_metrics(bubble).tokens_per_section.items():
        allocation.add_row(section, str(tokens), f"{tokens / used:.0%}")
    out.print(allocation)
    click.echo(f"run id: {bubble.run_id}")


def print_trace_summary(records: Sequence[TraceDict]) -> None:
    """How many candidates each reason accounts for, largest first."""
    counts: dict[str, int] = {}
    for record in records:
        counts[record["final_reason"]] = counts.get(record["final_reason"], 0) + 1
    parts = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    click.echo(f"{len(records)} candidates: {parts}")


def print_run_header(manifest: RunManifest) -> None:
    """The run a trace belongs to, in one line (and its batch in a second)."""
    query = manifest.query if manifest.query is not None else "<redacted>"
    click.echo(
        f"run {manifest.run_id}  {manifest.timestamp:%Y-%m-%d %H:%M:%S}  variant {manifest.variant}  "
        f"budget {manifest.totals.budget}  used {manifest.totals.tokens_used}  query {query!r}"
    )
    if manifest.batch_id:
        click.echo(f"batch {manifest.batch_id}")


def print_decisions(manifest: RunManifest, records: Sequence[TraceDict], chosen: Sequence[TraceDict]) -> None:
    """``chosen`` (records of the run ``records`` holds) explained one by one (``explain``)."""
    print_run_header(manifest)
    ranks = {r["chunk_id"]: r["rank"] for r in records}
    for record in chosen:
        click.echo("\n".join(explain(record, ranks, records)))


def print_trace(manifest: RunManifest, records: Sequence[TraceDict], *, limit: int | None) -> None:
    print_run_header(manifest)
    table = RichTable(show_lines=False)
    columns = (
        "rank",
        "chunk",
        "section",
        "tokens",
        "tf",
        "boost",
        "lp",
        "score",
        "gain",
        "fill",
        "doc",
        "share",
        "overlap/δ",
        "decision",
        "reason",
    )
    for column in columns:
        table.add_column(
            column, justify="left" if column in ("chunk", "section", "decision", "reason") else "right"
        )
    shown = records if limit is None else records[:limit]
    ranks = {r["chunk_id"]: r["rank"] for r in records}
    for r in shown:
        table.add_row(
            str(r["rank"]), r["chunk_id"], r["section"], str(r["token_count"]), f"{r['tf']:g}",
            f"{r['boost']:g}", f"{r['len_penalty']:.2f}", f"{r['score_final']:.2f}",
            _number(r.get("gain")), _number(r.get("fill_value"), absent=""),  # blank: its gain ordered it
            _number(_document_weight(r)), _number(r.get("chunk_share")),
            f"{r['overlap']:.2f}/{r['threshold']:g}", r["final_decision"], _reason(r, ranks),
        )  # fmt: skip
    console().print(table)
    if len(shown) < len(records):
        click.echo(f"… {len(records) - len(shown)} more candidates (use --all)")
    print_trace_summary(records)


def _named_line(record: TraceDict) -> list[str]:
    """The cell value the question names, if the record's row has one, and what it weighed in the gain."""
    named = record.get("named")
    if named is None:
        return []
    weight = _number(record.get("named_weight"))
    return [f"  named      the question names this row's {named!r}: weight {weight}"]


def explain(record: TraceDict, ranks: Mapping[str, int], records: Sequence[TraceDict] = ()) -> list[str]:
    """One candidate's decision in words (``trace --rank`` / ``--chunk``): where the chunk comes from,
    how it scored and on which terms, what the bubble covered when it was decided, every gate's
    value against its limit in gate order — the first that failed gave the final reason — and, for a
    chunk a budget stopped, which chunks of the run (``records``) had taken the room (``room_line``)."""
    r, details = record, record["step_details"]
    place = ", ".join(p for p in (r["section"], _where(r["row_number"], r["page"])) if p)
    stored = r.get("relevance")  # none in a record older than bm25 relevance: its tf was the relevance
    relevance = r["tf"] if stored is None else stored
    lines = [
        f"#{r['rank']} of {len(ranks)}  chunk {r['chunk_id']}",
        f"  from       {r['doc_id']}: {place} (bucket {r['bucket']}), {r['token_count']} tokens",
        f"  decision   {r['final_decision']}: {_reason(r, ranks)} (stage {r['stage']})",
        f"  engine     rank {r['es_rank']}, score {_g(r['es_score'])}; "
        f"rank weight {_number(r.get('rank_weight'))}",
        f"  score      relevance {_g(relevance)}, boost {_g(r['boost'])}, lp {_g(r['len_penalty'])}: "
        f"raw {_g(r['score_raw'])}, final {_g(r['score_final'])} (paper tf {_g(r['tf'])})",
    ]
    lines += [
        f"    {m['term']} ({m['facet']}): idf {_g(m['idf'])}, tf {m['tf']}, context tf {m['context_tf']}, "
        f"weight {_g(m['weight'])}"
        for m in details["terms"]
    ]
    covered = ", ".join(f"{facet} {_g(amount)}" for facet, amount in details["coverage"].items())
    fill, document = _number(r.get("fill_value"), absent="none"), _number(_document_weight(r))
    lines += [
        f"  facets     {', '.join(r['facets']) or 'none'}; "
        f"new to the bubble: {', '.join(r['facets_new']) or 'none'}",
        f"  covered    when decided: {covered or 'nothing'}",
        f"  near       {', '.join(r.get('near') or ()) or 'no pair of the question'}; "
        f"proximity weight {_number(r.get('proximity_weight'))}",
        f"  meaning    similarity {_number(r.get('similarity'), absent='none')}; "
        f"semantic weight {_number(r.get('semantic_weight'))}",
        f"  gain       {_number(r.get('gain'))}; fill value {fill}; document weight {document}; "
        f"chunk share {_number(r.get('chunk_share'))}",
        *_named_line(r),
        f"  overlap    {_g(r['overlap'])}{_versus(r, ranks)} (δ {_g(r['threshold'])})",
        "  gates      in order; the first that failed gave the reason",
        *map(_gate_line, details["gates"]),
    ]
    if details["second_pass"]:
        lines.append(f"  second pass, {_g(details['pool_remaining'] or 0.0)} tokens left in the pool")
        lines += map(_gate_line, details["second_pass"])
    lines += room_line(r, records)
    swap = details["replacement"]
    if swap is not None:
        victim, newcomer = swap["victim_chunk_id"], swap["newcomer_chunk_id"]
        lines.append(
            f"  repair     loop {swap['loop']}: #{ranks.get(victim, '?')} {victim} (utility "
            f"{_g(swap['victim_utility'])}) left for #{ranks.get(newcomer, '?')} {newcomer} (utility "
            f"{_g(swap['newcomer_utility'])}, margin {_g(swap['margin'])})"
        )
    lines += [
        f"  expansion  {event['mode']} {event.get('chunk_id') or 'parent'}: "
        f"{'added' if event['added'] else 'refused'}, {event['tokens']} tokens ({event['reason']})"
        for event in details["expansion"]
    ]
    lines += [f"  note       {note}" for note in details["notes"]]
    return lines


def room_line(record: TraceDict, records: Sequence[TraceDict]) -> list[str]:
    """For a chunk the global or section budget stopped: the chunks of the run (``records``) admitted
    before it was decided, with their tokens and gains — what it would have had to displace. They are
    the first ``count`` admitted (``selection_order``), ``count`` being what its ``max_chunks`` gate
    read, in the pass that decided it; a section budget's first pass counts only its bucket's. Empty
    for any other decision."""
    if record["final_reason"] not in ("budget_exceeded", "section_budget_exceeded"):
        return []
    details = record["step_details"]
    gates = details["second_pass"] or details["gates"]
    count = next(g["value"] for g in gates if g["gate"] == "max_chunks")
    bucket = None
    if record["final_reason"] == "section_budget_exceeded" and not details["second_pass"]:
        bucket = record["bucket"]
    before = sorted(
        (
            r
            for r in records
            if r["selection_order"] is not None
            and r["selection_order"] <= count
            and (bucket is None or r["bucket"] == bucket)
        ),
        key=itemgetter("selection_order"),
    )
    if not before:
        return []
    spent = ", ".join(
        f"#{r['rank']} ({r['token_count']} tokens, gain {_number(r.get('gain'))})" for r in before
    )
    where = f" of bucket {bucket}" if bucket is not None else ""
    total = sum(r["token_count"] for r in before)
    chunks = f"{len(before)} chunk{'s' if len(before) > 1 else ''}{where}"
    return [f"  room       taken by the {chunks} admitted before it, {total} tokens: {spent}"]


def _gate_line(gate: GateDict) -> str:
    """A gate's verdict as its rule with the numbers in: ``global_budget  87 <= 12  FAIL``."""
    check = gate["rule"].replace("value", _g(gate["value"])).replace("limit", _g(gate["limit"]))
    verdict = "off" if not gate["enabled"] else "pass" if gate["passed"] else "FAIL"
    return f"    {gate['gate']:<15} {check:<22} {verdict}"


def _g(value: float) -> str:
    """A number as the trace holds it, to four significant digits (whole token counts stay whole)."""
    return f"{value:.4g}"


def _reason(record: TraceDict, ranks: Mapping[str, int]) -> str:
    """The final reason; ``too_redundant`` with the rank of the chunk it overlapped (``overlap_with``)."""
    reason: str = record["final_reason"]
    return reason + _versus(record, ranks) if reason == "too_redundant" else reason


def _versus(record: TraceDict, ranks: Mapping[str, int]) -> str:
    """`` vs #N``: the rank of the chunk the overlap was measured against; empty when there is none."""
    nearest = record.get("overlap_with")
    return f" vs #{ranks[nearest]}" if nearest is not None and nearest in ranks else ""


def _document_weight(record: TraceDict) -> float | None:
    """The factor the gain applied for the chunk's document: its share of the query times its engine
    weight (an older record without the engine weight: the share alone)."""
    share = record.get("document_share")
    if share is None:
        return None
    engine = record.get("document_engine")
    return share if engine is None else share * engine


def _number(value: float | None, *, absent: str = "-") -> str:
    """A trace number to two places; ``absent`` (``-``: a field an older record does not have) for none."""
    return absent if value is None else f"{value:.2f}"


def print_batch(result: BatchResult, comparison: Comparison | None) -> None:
    click.echo(
        f"batch {result.batch_id}: {len(result.runs)} runs, {result.written} audit records written"
        + (f", {result.spooled} spooled" if result.spooled else "")
    )
    if comparison is None:
        table = RichTable()
        for column in ("query id", "run id", "tokens", "sections", "selected"):
            table.add_column(column)
        for case_id, run in zip(result.case_ids, result.runs, strict=True):
            table.add_row(
                case_id, run.run_id, str(run.tokens_used), str(len(run.sections)), str(len(run.selected))
            )
        console().print(table)
        return
    click.echo(
        f"compared with {comparison.baseline}: "
        f"{comparison.changed} of {len(comparison.changes)} queries changed"
    )
    for change in comparison.changes:
        if not change.changed:
            continue
        sections = "".join(
            [*(f"  +{s}" for s in change.sections_entered), *(f"  −{s}" for s in change.sections_left)]
        )
        click.echo(
            f"\n{preview(change.query or change.query_hash, 60)}  "
            f"({change.old_run_id} → {change.new_run_id})  tokens {change.token_delta:+d}{sections}"
        )
        for mark, ids in (("+", change.entered), ("−", change.left)):
            for chunk_id in ids:
                click.echo(f"  {mark} {describe_chunk(comparison.chunks.get(chunk_id), chunk_id)}")
    for run_id in comparison.only_in_new:
        click.echo(f"new query (no baseline run): {run_id}")


def describe_chunk(note: ChunkNote | None, chunk_id: str) -> str:
    """``section · doc, sheet, row or page · "snippet"  [chunk id]`` for a chunk that moved."""
    if note is None:  # not looked up: the batch lost the cluster
        return chunk_id
    where = note.doc_id
    where += f" sheet {note.sheet_name}" if note.sheet_name and note.sheet_name != note.section else ""
    where += f" row {note.row_number}" if note.row_number is not None else ""
    where += f" p. {note.page}" if note.page is not None else ""
    text = f'"{preview(note.snippet, 60)}"' if note.snippet is not None else "(no longer in the chunk index)"
    return f"{note.section} · {where} · {text}  [{chunk_id}]"


def delivery_table(delivery: DeliveryEvaluation) -> Table:
    """Bubble alone versus after the delivery stages, per query and on average."""
    rows = [
        [
            r.id,
            str(r.bubble_tokens),
            str(r.delivered_tokens),
            fmt(r.prompt_tokens, 0) if r.prompt_tokens is not None else "–",
            fmt(r.bubble_recall),
            fmt(r.delivered_recall),
            str(r.swaps),
            str(r.neighbours_added),
        ]
        for r in delivery.rows
    ]
    rows.append(
        [
            "mean / total",
            fmt(delivery.mean_bubble_tokens, 0),
            fmt(delivery.mean_delivered_tokens, 0),
            fmt(delivery.mean_prompt_tokens, 0),
            fmt(delivery.mean_bubble_recall),
            fmt(delivery.mean_delivered_recall),
            str(delivery.swaps),
            str(delivery.neighbours_added),
        ]
    )
    columns = [
        "query",
        "bubble tok",
        "delivered tok",
        "prompt tok",
        "bubble recall",
        "delivered recall",
        "swaps",
        "neighbours",
    ]
    return Table(title="Delivery — bubble vs expand/repair/assemble", columns=columns, rows=rows)
