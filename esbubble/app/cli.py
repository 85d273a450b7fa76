"""The ``esbubble`` command line: a thin layer of click commands over the library.

Every command resolves ``Settings`` once (flags → environment → config file →
defaults), opens one ``Store`` and calls library functions. An
``EsbubbleError`` becomes one line on stderr and its exit code (1 user
mistake, 2 usage, 3 cluster, 4 audit records lost); only bugs print tracebacks.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from esbubble.errors import AuditLostError, EngineError, EsbubbleError, InputError, NotFoundError

if TYPE_CHECKING:
    from esbubble.app.rebubble import BatchResult, Comparison, FailedQuery
    from esbubble.config import BubbleConfig
    from esbubble.models import RunManifest, TraceDict
    from esbubble.store.audit import WriteResult
    from esbubble.store.connection import Store
    from esbubble.store.settings import Settings

# Commands import what they use inside their bodies: `esbubble --help` and a
# command that needs no engine must not pay for the Elasticsearch client,
# pydantic models, rich or tiktoken (docs/benchmarks.md, "CLI start-up").

if TYPE_CHECKING:
    from esbubble.queryset import QuerySet


class EsbubbleGroup(click.Group):
    """A group that turns library errors into one stderr line and their exit code, for every subcommand."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EsbubbleError as error:
            click.echo(f"esbubble: error: {error.one_line()}", err=True)
            ctx.exit(error.exit_code)


@dataclass(frozen=True)
class ConnectionFlags:
    """The global connection flags as given (``None`` = not given; env/config file fill in)."""

    url: str | None
    api_key: str | None
    username: str | None
    password: str | None
    ca_certs: str | None
    insecure: bool
    prefix: str | None
    config: str | None
    ssl_assert_fingerprint: str | None = None

    def settings(self) -> Settings:
        from esbubble.store.settings import load_settings

        return load_settings(
            url=self.url,
            api_key=self.api_key,
            username=self.username,
            password=self.password,
            ca_certs=self.ca_certs,
            verify_certs=False if self.insecure else None,
            ssl_assert_fingerprint=self.ssl_assert_fingerprint,
            prefix=self.prefix,
            config_file=self.config,
        )


def settings_of(ctx: click.Context) -> Settings:
    flags = ctx.find_object(ConnectionFlags)
    assert flags is not None, "the esbubble group always sets its flags"
    return flags.settings()


@contextlib.contextmanager
def store_of(ctx: click.Context, *, index: str | None = None, initialise: bool = False) -> Iterator[Store]:
    """One store for the command, closed (and the embedded engine snapshotted) when it ends.

    ``index`` (``--index``) reads and writes chunks in that index or alias instead of the prefix's.
    ``initialise`` runs what ``esbubble init`` does when the indices do not exist yet, so a
    first ``ingest`` or ``bubble`` on a new cluster or home needs no ``init`` before it.
    """
    from esbubble.store.connection import open_store
    from esbubble.store.names import IndexNames
    from esbubble.store.templates import ensure_initialised

    settings = settings_of(ctx)
    names = IndexNames.for_prefix(settings.prefix).with_chunk_index(index)  # before an engine starts
    with open_store(settings) as store:
        done = ensure_initialised(store) if initialise else None
        if done is not None and done.refused is not None:
            click.echo(
                f"esbubble: warning: the esbubble templates on {store.display_url} are an older "
                f"version's and could not be updated: {done.refused}; until `esbubble init` runs as "
                "such a user, trace records with new fields are spooled",
                err=True,
            )
        elif done is not None:
            what = "initialised the esbubble indices" if done.first_use else "updated the esbubble templates"
            why = "first use" if done.first_use else "they were an older version's"
            click.echo(f"esbubble: {what} on {store.display_url} ({why})", err=True)
        yield replace(store, names=names)


F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
profile_option = click.option(
    "--profile", type=click.Path(dir_okay=False), help="Profile TOML (default: built-in defaults)."
)
budget_option = click.option("--budget", type=int, help="Token budget T_B (overrides the profile).")
max_chunks_option = click.option(
    "--max-chunks", type=int, help="Most chunks in a bubble (overrides the profile; default 100)."
)
index_option = click.option(
    "--index", help="Chunk index or alias to use instead of <prefix>-chunks (one name, no wildcards)."
)
variant_option = click.option(
    "--variant", help="engine_topk, flat_topk, structure, diversity or full (default: profile's)."
)
delta_option = click.option(
    "--delta",
    type=float,
    help="Redundancy threshold δ, 0 < δ ≤ 1 (default: the profile's, else 0.85, or 0.55 in paper mode).",
)


def bubble_options(command: F) -> F:
    """The options that shape one bubble: ``--profile``, ``--budget``, ``--max-chunks``, ``--variant``,
    ``--delta`` (in that order in ``--help``)."""
    for option in (delta_option, variant_option, max_chunks_option, budget_option, profile_option):
        command = option(command)
    return command


redact_option = click.option(
    "--redact-query",
    is_flag=True,
    help="Store only a keyed hash of the query, not its text, and keep it out of messages.",
)


def finish_audit(result: WriteResult) -> None:
    """After the result is printed: one warning if records were spooled, exit 4 if some were lost."""
    from esbubble.app import cli_render as render

    render.warn_write(result)
    fail_if_lost(result)


def fail_if_lost(result: WriteResult) -> None:
    if result.lost:
        raise AuditLostError(
            f"{result.lost} audit records could be neither written nor spooled ({result.error})",
            hint=f"make {result.spool_file or 'the spool folder under ESBUBBLE_HOME'} writable "
            "and check the cluster; the result above was not recorded",
        )


@contextlib.contextmanager
def redacting(texts: Iterable[str]) -> Iterator[None]:
    """With ``--redact-query``: no error message shown on stderr repeats a query's text."""
    hidden = sorted({t for t in texts if t.strip()}, key=len, reverse=True)
    try:
        yield
    except EsbubbleError as error:
        error.message = redact_text(error.message, hidden)
        error.hint = redact_text(error.hint, hidden) if error.hint else error.hint
        error.args = (error.one_line(),)
        raise


def redact_text(text: str, hidden: Sequence[str]) -> str:
    for secret in hidden:
        text = text.replace(secret, "<redacted>")
    return text


def parse_budgets(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, ...]:
    """``--sweep 200,400,800``: the budgets given (``sweep_configs`` orders them and drops repeats)."""
    if value is None:
        return ()
    try:
        budgets = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        budgets = []
    if not budgets:
        raise click.BadParameter(f"{value!r}: give token budgets separated by commas, e.g. 200,400,800")
    return tuple(budgets)


def resolve_config(
    profile: str | None,
    *,
    budget: int | None = None,
    variant: str | None = None,
    delta: float | None = None,
    max_chunks: int | None = None,
) -> BubbleConfig:
    """The profile (or defaults) with flag overrides, validated like a profile."""
    from esbubble.config import BubbleConfig, load_profile

    config = load_profile(profile) if profile else BubbleConfig()
    if budget is None and variant is None and delta is None and max_chunks is None:
        return config
    return config.with_overrides(
        token_budget=budget, variant=variant, overlap_threshold=delta, max_chunks=max_chunks
    )


def query_config(
    query: str,
    purpose: str,
    profile: str | None,
    *,
    budget: int | None,
    variant: str | None,
    delta: float | None,
    max_chunks: int | None,
) -> BubbleConfig:
    """The profile for one query's run, once the query is known to be usable text (an empty, too long
    or undecodable query is an ``InputError`` before an engine is started for nothing)."""
    from esbubble.text import check_query_text

    if not query.strip():
        raise InputError("the query is empty", hint=f"pass the question to {purpose}")
    check_query_text(query)
    return resolve_config(profile, budget=budget, variant=variant, delta=delta, max_chunks=max_chunks)


def load_query_set(path: str) -> QuerySet:
    """A query set under the one policy every command follows for bad entries.

    Each bad entry is reported on stderr with its line (JSONL) or entry (YAML)
    number and skipped; the other queries run; ``exit_if_bad_entries`` then
    ends the command with exit code 1. A set with no usable query at all is a
    user error straight away.
    """
    from esbubble.queryset import load_queries

    queryset = load_queries(path)
    for problem in queryset.problems:
        click.echo(f"esbubble: error: {problem} (entry skipped)", err=True)
    if not queryset.cases:
        raise InputError(f"query set {path} has no usable queries", hint="fix the entries reported above")
    return queryset


def exit_if_bad_entries(ctx: click.Context, queryset: QuerySet) -> None:
    """Exit 1 after the results when some entries of the query set were skipped."""
    if queryset.problems:
        count = len(queryset.problems)
        click.echo(
            f"esbubble: error: {count} bad query-set {'entry' if count == 1 else 'entries'} skipped "
            f"(listed above); the other {len(queryset.cases)} ran",
            err=True,
        )
        ctx.exit(1)


@click.group(cls=EsbubbleGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", help="Elasticsearch URL [env ELASTICSEARCH_URL; default: embedded engine].")
@click.option("--api-key", help="API key [env ELASTICSEARCH_API_KEY].")
@click.option("--username", help="Basic-auth user [env ELASTICSEARCH_USERNAME].")
@click.option("--password", help="Basic-auth password [env ELASTICSEARCH_PASSWORD].")
@click.option("--ca-certs", type=click.Path(dir_okay=False), help="CA bundle [env ELASTICSEARCH_CA_CERTS].")
@click.option("--insecure", is_flag=True, help="Do not verify TLS certificates (prints a warning).")
@click.option(
    "--ssl-assert-fingerprint",
    metavar="SHA256",
    help="Pin the cluster's certificate by SHA-256 fingerprint [env ELASTICSEARCH_SSL_ASSERT_FINGERPRINT].",
)
@click.option("--prefix", help="Index name prefix [env ESBUBBLE_PREFIX; default esbubble].")
@click.option("--config", type=click.Path(dir_okay=False), help="Settings TOML [env ESBUBBLE_CONFIG].")
@click.version_option(package_name="esbubble")
@click.pass_context
def cli(  # noqa: PLR0917 - one parameter per global flag, as click passes them
    ctx: click.Context,
    url: str | None,
    api_key: str | None,
    username: str | None,
    password: str | None,
    ca_certs: str | None,
    insecure: bool,
    ssl_assert_fingerprint: str | None,
    prefix: str | None,
    config: str | None,
) -> None:
    """Structure- and diversity-aware context bubbles on Elasticsearch."""
    if insecure:
        click.echo("esbubble: warning: TLS certificate verification is disabled (--insecure)", err=True)
    ctx.obj = ConnectionFlags(
        url, api_key, username, password, ca_certs, insecure, prefix, config, ssl_assert_fingerprint
    )


@cli.command()
@json_option
@click.pass_context
def init(ctx: click.Context, as_json: bool) -> None:
    """Install the index templates and create the indices (idempotent)."""
    from esbubble.app import cli_render as render
    from esbubble.store.templates import init_indices

    with store_of(ctx) as store:
        result = init_indices(store)
        shown = store.display_url
    if as_json:
        render.emit_json({"url": shown, "steps": [step.model_dump(mode="json") for step in result.steps]})
        return
    for step in result.steps:
        click.echo(f"{step.status:<9} {step.kind:<18} {step.name}")
    click.echo(
        f"initialised esbubble indices on {shown}" if result.changed else f"already up to date on {shown}"
    )


@cli.group()
def engine() -> None:
    """Start, stop or inspect the embedded engine (osmem-server)."""


def _print_status(status: Any, as_json: bool) -> None:
    from esbubble.app import cli_render as render

    if as_json:
        render.emit_json(status.model_dump(mode="json"))
    elif status.running:
        click.echo(
            f"running  pid {status.pid}  {status.url}  since {status.started_at:%Y-%m-%d %H:%M:%S}"
            f"  journal {status.journal_bytes / 1e6:.1f} MB"
        )
    else:
        click.echo("stopped" + (f"  (data kept in {status.snapshot})" if status.snapshot else ""))


@engine.command("start")
@json_option
@click.pass_context
def engine_start(ctx: click.Context, as_json: bool) -> None:
    """Start the embedded engine in the background (commands also start it); later commands use it."""
    from esbubble.store.engine import start_daemon, warn_of

    status = start_daemon(_embedded_settings(ctx))
    warn_of(status)
    _print_status(status, as_json)


@engine.command("stop")
@json_option
@click.pass_context
def engine_stop(ctx: click.Context, as_json: bool) -> None:
    """Compact the embedded engine's data (snapshot, history) and stop it."""
    from esbubble.store.engine import stop_daemon, warn_of

    status = stop_daemon(_embedded_settings(ctx))
    warn_of(status)
    _print_status(status, as_json)


@engine.command("status")
@json_option
@click.pass_context
def engine_status(ctx: click.Context, as_json: bool) -> None:
    """Is the embedded engine running, where, and where is its data (exit 3 when it is stopped)."""
    from esbubble.store.engine import daemon_status

    status = daemon_status(_embedded_settings(ctx))
    _print_status(status, as_json)
    if not status.running:
        ctx.exit(3)


def _embedded_settings(ctx: click.Context) -> Settings:
    settings = settings_of(ctx)
    if not settings.embedded:
        raise click.UsageError(
            f"`engine` manages the embedded engine, but a cluster URL is configured "
            f"({settings.display_url}); unset ELASTICSEARCH_URL / --url"
        )
    return settings


@cli.command()
# readable=False: an unreadable file is that file's failure (exit 1), reported with the others
@click.argument("paths", nargs=-1, required=True, type=click.Path(readable=False))
@profile_option
@click.option("--doc-id", help="Document id for a single file (default: its path relative to the folder).")
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False),
    help="Doc ids are paths relative to this folder (default: each folder given, a file's own folder).",
)
@click.option(
    "--replace", is_flag=True, help="Let a file replace a stored document of the same id from another path."
)
@click.option(
    "--rewrite",
    is_flag=True,
    help="Write every chunk again, unchanged ones too (repairs a stored chunk damaged outside esbubble).",
)
@index_option
@json_option
@click.pass_context
def ingest(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context,
    paths: tuple[str, ...],
    profile: str | None,
    doc_id: str | None,
    root: str | None,
    replace: bool,
    rewrite: bool,
    index: str | None,
    as_json: bool,
) -> None:
    """Index files and folders (xlsx, csv, pdf, docx, md, txt) incrementally.

    The profile's [ingest] table sets how documents are cut into chunks
    (max_chunk_tokens, default 160; min_chunk_tokens; include_hidden_sheets).
    A file whose doc id already belongs to another file in the index is
    refused (exit 1) unless --replace; --doc-id or --root give it its own id.
    Unchanged chunks are left as they are unless --rewrite.
    """
    from esbubble.app import cli_render as render
    from esbubble.app.progress import ProgressBar, wanted
    from esbubble.ingest import IngestOptions, IngestProgress, ingest_paths
    from esbubble.store.templates import ensure_chunk_fields, ensure_chunk_index

    config = resolve_config(profile)
    options = IngestOptions.of(config, root=Path(root) if root else None)
    if doc_id is not None and (len(paths) != 1 or Path(paths[0]).is_dir()):
        raise InputError(
            "--doc-id needs exactly one file", hint="drop --doc-id to ingest folders or many files"
        )
    if doc_id is not None and root is not None:
        raise InputError("--doc-id and --root both set the doc id", hint="give one of them")
    with store_of(ctx, index=index, initialise=True) as store:
        if index is not None:
            ensure_chunk_index(store)
        else:
            ensure_chunk_fields(store)
        with ProgressBar("ingesting", enabled=wanted(as_json=as_json)) as bar:

            def report(step: IngestProgress) -> None:
                bar.update(step.done, step.total, item=Path(step.file).name)

            summary = ingest_paths(
                store, list(paths), options, progress=report, replace=replace, doc_id=doc_id, rewrite=rewrite
            )
    if as_json:
        render.emit_json(render.ingest_json(summary))
    else:
        render.print_ingest(summary)
    if not summary.ok:
        ctx.exit(1)


@cli.command()
@click.argument("query")
@bubble_options
@index_option
@redact_option
@json_option
@click.pass_context
def bubble(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context,
    query: str,
    profile: str | None,
    budget: int | None,
    max_chunks: int | None,
    variant: str | None,
    delta: float | None,
    index: str | None,
    redact_query: bool,
    as_json: bool,
) -> None:
    """Build a context bubble for QUERY, print it and record its trace."""
    from esbubble.app import cli_render as render
    from esbubble.app.runner import RunOptions, run_bubble

    config = query_config(
        query,
        "build a bubble for",
        profile,
        budget=budget,
        variant=variant,
        delta=delta,
        max_chunks=max_chunks,
    )
    with redacting([query] if redact_query else []), store_of(ctx, index=index, initialise=True) as store:
        result = run_bubble(store, query, config, RunOptions(redact_query=redact_query))
    render.warn_empty(result.bubble)
    if as_json:
        render.emit_json(render.bubble_json(result.bubble))
    else:
        render.print_bubble(result.bubble)
    finish_audit(result.write_result)


@cli.command()
@click.argument("query")
@bubble_options
@index_option
@json_option
@click.pass_context
def assemble(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context,
    query: str,
    profile: str | None,
    budget: int | None,
    max_chunks: int | None,
    variant: str | None,
    delta: float | None,
    index: str | None,
    as_json: bool,
) -> None:
    """Build the bubble for QUERY, deliver it (repair/expand as the profile says) and print the prompt.

    The prompt goes to stdout on its own, ready to pipe; the run id and the
    token breakdown go to stderr.
    """
    from esbubble.app import cli_render as render
    from esbubble.app.deliver import run_delivery

    resolved = query_config(
        query,
        "assemble a prompt for",
        profile,
        budget=budget,
        variant=variant,
        delta=delta,
        max_chunks=max_chunks,
    )
    config = resolved.with_section("assemble", {"enabled": True}, source="assemble")
    with store_of(ctx, index=index, initialise=True) as store:
        result = run_delivery(store, query, config)
    render.warn_empty(result.delivery.bubble)
    prompt = result.delivery.prompt
    assert prompt is not None, "assembly is enabled above"
    if as_json:
        render.emit_json(
            {
                "run_id": result.manifest.run_id,
                "query": query,
                "messages": [m.model_dump(mode="json") for m in prompt.messages],
                "text": prompt.text,
                "metadata": prompt.metadata.model_dump(mode="json"),
            }
        )
    else:
        click.echo(prompt.text)
        tokens = prompt.metadata.tokens
        click.echo(
            f"run id: {result.manifest.run_id}  prompt {tokens.total} tokens "
            f"(context {tokens.context}/{tokens.context_budget}, {len(prompt.metadata.sources)} sources)",
            err=True,
        )
    finish_audit(result.write_result)


@cli.command()
@click.argument("run_id")
@click.option("--all", "show_all", is_flag=True, help="Show every candidate, not only the first 25.")
@click.option(
    "--rank",
    type=click.IntRange(min=1),
    help=(
        "Explain one candidate, by its rank in the table: its terms, the coverage, every gate and, when a"
        " budget stopped it, what had taken the room."
    ),
)
@click.option("--chunk", "chunk_id", metavar="CHUNK_ID", help="Explain one candidate, by its chunk id.")
@click.option(
    "--text",
    "phrase",
    metavar="PHRASE",
    help=(
        "Explain every candidate whose text holds PHRASE (case and spacing ignored, as eval compares"
        " evidence): why the passage you expected is not in the bubble."
    ),
)
@json_option
@click.pass_context
def trace(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context,
    run_id: str,
    show_all: bool,
    rank: int | None,
    chunk_id: str | None,
    phrase: str | None,
    as_json: bool,
) -> None:
    """Every candidate of a run with its numbers and the reason it was kept or dropped."""
    from esbubble.app import cli_render as render
    from esbubble.store.history import read_run

    one = sum(option is not None for option in (rank, chunk_id, phrase))
    if one > 1:
        raise click.UsageError("--rank, --chunk and --text each choose what to explain: give one of them")
    if phrase is not None and not phrase.split():
        raise click.UsageError("--text needs a phrase with at least one word")
    with store_of(ctx) as store:
        manifest, records = read_run(store, run_id)
        if phrase is not None:
            chosen = _holding(store, manifest, records, phrase)
        elif one:
            chosen = [r for r in records if r["rank"] == rank or r["chunk_id"] == chunk_id]
        else:
            chosen = records
    if one and not chosen:
        which = f"rank {rank}" if rank is not None else f"chunk {chunk_id!r}"
        raise NotFoundError(
            f"run {run_id!r} has no candidate at {which} ({len(records)} candidates)",
            hint=f"see every rank and chunk id with: esbubble trace {run_id} --all",
        )
    if as_json:
        render.emit_json(
            {
                "run_id": manifest.run_id,
                "manifest": manifest.model_dump(mode="json", by_alias=True),
                "candidates": chosen,
            }
        )
    elif one:
        render.print_decisions(manifest, records, chosen)
    else:
        render.print_trace(manifest, records, limit=None if show_all else 25)


def _holding(
    store: Store, manifest: RunManifest, records: Sequence[TraceDict], phrase: str
) -> list[TraceDict]:
    """The records of the run's candidates whose text holds ``phrase`` (compared as eval compares
    evidence), read from the chunk index the run searched. None holding it is a ``NotFoundError``: the
    engine did not retrieve it, or (when some candidates are gone from the index since) none of those
    left holds it."""
    from esbubble.core.metrics import GoldItems
    from esbubble.store.chunks import get_chunks

    chunks = get_chunks(store.at_chunk_index(manifest.index), [r["chunk_id"] for r in records])
    wanted = GoldItems.of(evidence=[phrase])
    holders = {chunk.chunk_id for chunk in chunks if wanted.held_by([chunk])[0]}
    gone = len(records) - len(chunks)
    if gone:
        click.echo(
            f"note: {gone} of the run's {len(records)} candidates are no longer in {manifest.index!r}"
            " (changed or removed since the run): their text is not searched",
            err=True,
        )
    chosen = [r for r in records if r["chunk_id"] in holders]
    if not chosen:
        why = (
            "the engine did not retrieve it for this query"
            if not gone
            else f"none of those still in {manifest.index!r} holds it"
        )
        raise NotFoundError(
            f"no candidate of run {manifest.run_id!r} holds {phrase!r} ({len(chunks)} of its {len(records)}"
            f" candidates searched): {why}",
            hint="check the phrase against the document, and that the document is ingested; a question"
            " finds a passage through the words it shares with it",
        )
    return chosen


@cli.command("eval")
@click.argument("queryset", type=click.Path())
@profile_option
@budget_option
@max_chunks_option
@click.option("--window", is_flag=True, help="Also measure window expansion (small-to-big).")
@click.option("--parent", is_flag=True, help="Also measure parent-section expansion.")
@click.option("--repair", is_flag=True, help="Also measure fixed-budget gap repair.")
@click.option("--assemble", "assemble_prompt", is_flag=True, help="Also measure the assembled prompt.")
@click.option(
    "--sweep",
    metavar="BUDGETS",
    callback=parse_budgets,
    help="Also run every variant at these budgets, e.g. 200,400,800,1600 (a gold-recall-by-budget table).",
)
@index_option
@json_option
@click.pass_context
def eval_command(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context,
    queryset: str,
    profile: str | None,
    budget: int | None,
    max_chunks: int | None,
    window: bool,
    parent: bool,
    repair: bool,
    assemble_prompt: bool,
    sweep: tuple[int, ...],
    index: str | None,
    as_json: bool,
) -> None:
    """The paper's tables for every variant over a query set (JSONL or YAML).

    A retrieval table gives the gold recall of all the candidates: the
    ceiling no variant can pass, so a miss reads as retrieval's or
    selection's. A gold-by-engine-rank table gives the share of gold items
    each variant holds, by the engine's rank of the best candidate holding
    them (1-3, 4-10, 11-30, 31+): whether the bubble keeps what the engine
    ranks first and what it finds further down. --sweep adds each variant's
    gold recall and tokens at other budgets, on the same candidates: whether
    the bubble beats the engine's own order at the budgets you use. A
    head-to-head table counts the queries and gold items where full is ahead
    of, tied with or behind engine_topk at the fixed budget, and lists every
    gold item only engine_topk holds, with the chunk it is in, its engine rank
    and tokens, and full's reason for leaving that chunk out. With
    --window/--parent/--repair/--assemble, a delivery table compares each
    query's bubble with what those stages deliver (tokens and gold recall).
    Malformed query-set lines are reported with their line number and the
    other queries still run (exit 1).
    """
    from esbubble.app import cli_render as render
    from esbubble.app.deliver import evaluate_delivery, evaluate_options
    from esbubble.app.evaluate import evaluate, evaluation_tables, sweep_configs
    from esbubble.app.progress import ProgressBar, wanted

    config = resolve_config(profile, budget=budget, max_chunks=max_chunks)
    sweep_configs(config, sweep)  # a budget the profile would refuse fails here, before any search
    with_delivery = window or parent or repair or assemble_prompt
    delivery_config = (
        evaluate_options(config, window=window, parent=parent, repair=repair, assemble=assemble_prompt)
        if with_delivery
        else None
    )
    loaded = load_query_set(queryset)
    cases = list(loaded.cases)
    now = datetime.now(UTC)
    steps = len(cases) * (2 if delivery_config else 1)
    with (
        store_of(ctx, index=index, initialise=True) as store,
        ProgressBar("evaluating", steps, enabled=wanted(as_json=as_json)) as bar,
    ):
        evaluation = evaluate(store, cases, config, now=now, sweep=sweep, on_done=bar.advance)
        delivery = (
            evaluate_delivery(store, cases, delivery_config, now=now, on_done=bar.advance)
            if delivery_config
            else None
        )
    if as_json:
        payload = evaluation.model_dump(mode="json")
        if delivery is not None:
            payload["delivery"] = delivery.model_dump(mode="json")
        payload["problems"] = loaded.problems
        render.emit_json(payload)
    else:
        render.print_tables(evaluation_tables(evaluation))
        if delivery is not None:
            render.print_tables([render.delivery_table(delivery)])
    exit_if_bad_entries(ctx, loaded)


@cli.command()
@click.argument("queryset", type=click.Path())
@profile_option
@budget_option
@max_chunks_option
@variant_option
@click.option(
    "--compare", "baseline", metavar="RUN_OR_BATCH_ID", help="Show what changed against these runs."
)
@click.option("--workers", type=int, default=1, show_default=True, help="Parallel retrieval/trace workers.")
@click.option(
    "--resume",
    "resume_id",
    metavar="BATCH_ID",
    help="Finish an interrupted batch: skip its finished queries.",
)
@redact_option
@index_option
@json_option
@click.pass_context
def rebubble(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context,
    queryset: str,
    profile: str | None,
    budget: int | None,
    max_chunks: int | None,
    variant: str | None,
    baseline: str | None,
    workers: int,
    resume_id: str | None,
    redact_query: bool,
    index: str | None,
    as_json: bool,
) -> None:
    """Re-run a whole query set under one batch id, optionally comparing with an earlier run or batch.

    Malformed query-set lines are reported with their line number and the
    other queries still run (exit 1). Queries that fail because the cluster
    went away are listed (exit 3); `--resume BATCH_ID` runs only those.
    """
    from esbubble.app import cli_render as render
    from esbubble.app import rebubble as batch
    from esbubble.app.progress import ProgressBar, wanted
    from esbubble.app.runner import RunOptions
    from esbubble.store.audit import WriteResult, find_manifests, flush_spool
    from esbubble.store.history import restore_runs

    config = resolve_config(profile, budget=budget, variant=variant, max_chunks=max_chunks)
    queryset_loaded = load_query_set(queryset)
    cases = list(queryset_loaded.cases)
    now = datetime.now(UTC)
    batch_id = resume_id or batch.new_batch_id(now)
    # First, so that whatever dies later (engine, network, this process) the batch can be resumed.
    click.echo(f"esbubble: batch {batch_id}", err=True)
    resume = resume_command(ctx, queryset, batch_id)
    told: list[str] = []  # the resume command, once printed
    try:
        with (
            redacting([c.query for c in cases] if redact_query else []),
            store_of(ctx, index=index, initialise=True) as store,
        ):
            if baseline:
                restore_runs(store, find_manifests(store, baseline))
            old = batch.load_summaries(store, baseline) if baseline else None
            finished: set[str] = set()
            if resume_id is not None:
                flush_spool(store)  # spooled runs of the batch count as finished once they land
                finished = batch.finished_case_ids(store, resume_id, config, [c.id for c in cases])
            todo = len(cases) - len(finished)
            with ProgressBar("re-bubbling", todo, enabled=wanted(as_json=as_json)) as bar:
                result = batch.run_batch(
                    store,
                    cases,
                    config,
                    RunOptions(batch_id=batch_id, redact_query=redact_query, now=now),
                    workers=workers,
                    on_done=bar.advance,
                    skip=finished,
                )
            comparison = batch.compare_runs(baseline, old, result.runs) if baseline and old else None
            if comparison is not None and not result.failed:  # the cluster answered the whole batch
                comparison = batch.describe_chunks(store, comparison)
            # Shown before the store closes: closing can still fail if the engine died.
            _print_batch(result, comparison, queryset_loaded.problems, as_json=as_json)
            for reason, case_ids in _failures_by_reason(result.failed).items():
                shown = ", ".join(repr(case_id) for case_id in case_ids)
                click.echo(f"esbubble: error: {len(case_ids)} queries failed ({shown}): {reason}", err=True)
            if result.failed:
                click.echo(
                    f"esbubble: {len(result.failed)} queries failed; finish the batch with `{resume}`",
                    err=True,
                )
                told.append(resume)
            audit = WriteResult(
                written=result.written,
                spooled=result.spooled,
                lost=result.lost,
                spool_file=Path(result.spool) if result.spool else None,
                error=result.audit_error,
            )
            render.warn_write(audit)
    except EsbubbleError as error:
        # The engine or the network went away (or refused) before the batch was done: what finished is
        # stored or spooled, so say what failed and how to finish it. A user error (another profile or
        # index than the batch's, an unknown baseline) is not finished by the same command: its hint says
        # what to change.
        click.echo(f"esbubble: error: {error.one_line()}", err=True)
        if not told and isinstance(error, EngineError):
            click.echo(f"esbubble: finish the batch with `{resume}`", err=True)
        ctx.exit(error.exit_code)
    fail_if_lost(audit)
    if result.failed:
        ctx.exit(3)
    exit_if_bad_entries(ctx, queryset_loaded)


def _failures_by_reason(failed: Sequence[FailedQuery]) -> dict[str, list[str]]:
    """One line per distinct problem (a lost engine fails every remaining query the same way)."""
    grouped: dict[str, list[str]] = {}
    for failure in failed:
        grouped.setdefault(failure.reason, []).append(failure.case_id)
    return grouped


def _print_batch(
    result: BatchResult, comparison: Comparison | None, problems: list[str], *, as_json: bool
) -> None:
    from esbubble.app import cli_render as render

    if not as_json:
        render.print_batch(result, comparison)
        return
    render.emit_json(
        {
            "batch_id": result.batch_id,
            "runs": [run.model_dump(mode="json") for run in result.runs],
            "written": result.written,
            "spooled": result.spooled,
            "lost": result.lost,
            "skipped": result.skipped,
            "failed": [failure.model_dump(mode="json") for failure in result.failed],
            "problems": problems,
            "comparison": comparison.model_dump(mode="json") if comparison else None,
        }
    )


def resume_command(ctx: click.Context, queryset: str, batch_id: str) -> str:
    """The command that finishes this batch: same query set, profile and flags, plus ``--resume``.

    Connection flags given on the command line are repeated except secrets
    (the URL without credentials); those come from the environment again.
    """
    from esbubble.store.settings import display_url

    flags = ctx.find_object(ConnectionFlags)
    words = ["esbubble"]
    if flags is not None:
        if flags.url:
            words += ["--url", display_url(flags.url)]
        for name, value in (
            ("--prefix", flags.prefix),
            ("--config", flags.config),
            ("--ca-certs", flags.ca_certs),
        ):
            if value:
                words += [name, value]
    words += ["rebubble", queryset]
    params = ctx.params
    for name in ("profile", "budget", "max_chunks", "variant", "workers", "index"):
        if params.get(name) is not None and not (name == "workers" and params[name] == 1):
            words += [f"--{name.replace('_', '-')}", str(params[name])]
    if params.get("redact_query"):
        words.append("--redact-query")
    words += ["--resume", batch_id]
    return shlex.join(words)


@cli.command()
@click.argument("batch_id")
@click.option("--out", type=click.Path(dir_okay=False), default="report.html", show_default=True)
@click.option(
    "--queries",
    "queryset",
    type=click.Path(),
    help="The batch's query set (JSONL/YAML): adds gold recall overall and per category.",
)
@click.option(
    "--index",
    help="Read every run's chunks from this index or alias instead of the one the run searched"
    " (after a reindex under another name).",
)
@json_option
@click.pass_context
def report(  # noqa: PLR0917 - click passes one argument per option
    ctx: click.Context, batch_id: str, out: str, queryset: str | None, index: str | None, as_json: bool
) -> None:
    """Write a self-contained HTML report (Figures 2-5 and the tables) for a batch.

    Each run's candidates are read from the chunk index it searched (its
    manifest's `index`), so a batch run with --index needs no flag here.
    """
    from esbubble.app import cli_render as render
    from esbubble.app.rebubble import report_data
    from esbubble.app.report import write_report
    from esbubble.store.audit import find_manifests
    from esbubble.store.history import restore_runs

    loaded = load_query_set(queryset) if queryset is not None else None
    with store_of(ctx, index=index) as store:
        restore_runs(store, find_manifests(store, batch_id))
        cases = list(loaded.cases) if loaded is not None else []
        data = report_data(store, batch_id, now=datetime.now(UTC), queries=cases, chunk_index=index)
    path = write_report(data, out)
    if as_json:
        render.emit_json({"batch_id": batch_id, "runs": data.runs, "out": str(path)})
    else:
        click.echo(f"wrote {path} ({data.runs} runs of batch {batch_id})")
    if loaded is not None:
        exit_if_bad_entries(ctx, loaded)


@cli.group()
def traces() -> None:
    """Maintain the audit trail: replay the local spool, drop old records."""


@traces.command("flush")
@json_option
@click.pass_context
def traces_flush(ctx: click.Context, as_json: bool) -> None:
    """Write spooled audit records (kept when the cluster was unreachable) to the cluster."""
    from esbubble.app import cli_render as render
    from esbubble.store.audit import flush_spool

    with store_of(ctx, initialise=True) as store:
        result = flush_spool(store)
    if as_json:
        render.emit_json(result.model_dump(mode="json"))
    else:
        click.echo(
            f"flushed {result.written} records from {result.files} spool files; {result.remaining} remain"
        )
    if result.remaining:
        ctx.exit(1)


@traces.command("prune")
@click.option("--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 90m")
@json_option
@click.pass_context
def traces_prune(ctx: click.Context, older_than: str, as_json: bool) -> None:
    """Delete trace records and run manifests older than AGE (in the engine and the local history)."""
    from esbubble.app import cli_render as render
    from esbubble.store import history
    from esbubble.store.audit import parse_age, prune_traces

    age = parse_age(older_than)
    now = datetime.now(UTC)
    with store_of(ctx) as store:
        deleted = prune_traces(store, age, now=now)
    if store.settings.embedded:
        deleted += history.prune(store.settings.home, now - age)
    if as_json:
        render.emit_json({"deleted": deleted, "older_than": older_than})
    else:
        click.echo(f"deleted {deleted} trace records older than {older_than}")


@traces.command("push")
@click.option("--url", "target_url", required=True, help="The cluster to copy the local audit history to.")
@json_option
@click.pass_context
def traces_push(ctx: click.Context, target_url: str, as_json: bool) -> None:
    """Copy the embedded engine's audit history to a cluster (same ids: pushing twice changes nothing).

    Credentials for the cluster come from the environment or the config file.
    """
    from esbubble.app import cli_render as render
    from esbubble.store import history
    from esbubble.store.connection import connect
    from esbubble.store.settings import Settings

    settings = _embedded_settings(ctx)
    try:
        target_settings = settings.model_copy(
            update={"url": Settings.model_validate({"url": target_url}).url}
        )
    except ValueError:
        raise InputError(f"invalid --url {target_url!r}", hint="expected http(s)://host[:port]") from None
    target = connect(
        target_settings.url or target_url, target_settings, shown_url=target_settings.display_url
    )
    try:
        result = history.push(settings.home, target)
    finally:
        target.client.close()
    if as_json:
        render.emit_json({**result.model_dump(mode="json"), "url": target.display_url})
    else:
        click.echo(
            f"pushed {result.sent} audit records to {target.display_url}: {result.created} new, "
            f"{result.existing} already there, {result.failed} failed"
        )
    if result.failed:
        ctx.exit(3)


def sample_dir() -> Path:
    """``data/sample`` of the source tree (``make demo`` runs from a clone)."""
    here = Path(__file__).resolve().parents[2] / "data" / "sample"
    if not here.is_dir():
        raise NotFoundError(
            f"sample corpus not found at {here}", hint="run the demo from a clone of the esbubble repository"
        )
    return here


DEMO_QUERY = "scope of work"


@cli.command()
@json_option
@click.pass_context
def demo(ctx: click.Context, as_json: bool) -> None:
    """Init, ingest the sample quote job, bubble "scope of work", show the bubble and its trace."""
    from esbubble.app import cli_render as render
    from esbubble.app.runner import run_bubble
    from esbubble.config import load_profile
    from esbubble.ingest import IngestOptions, ingest_paths
    from esbubble.store.templates import init_indices

    sample = sample_dir()
    config = load_profile(sample / "profile.toml")
    options = IngestOptions.of(config)
    documents = sorted(p for p in sample.iterdir() if p.suffix in {".xlsx", ".pdf", ".md"})
    with store_of(ctx) as store:
        init_indices(store)
        # The sample belongs to the demo: a run from another clone takes its doc ids over.
        summary = ingest_paths(store, documents, options, replace=True)
        result = run_bubble(store, DEMO_QUERY, config)
        shown = store.display_url
    if as_json:
        render.emit_json(
            {
                "engine": shown,
                "ingest": render.ingest_json(summary),
                "bubble": render.bubble_json(result.bubble),
            }
        )
    else:
        click.echo(f"engine: {shown}")
        render.print_ingest(summary)
        render.print_bubble(result.bubble)
        render.print_trace_summary(result.bubble.trace)
        click.echo(f"see every decision: esbubble trace {result.bubble.run_id} --all")
    finish_audit(result.write_result)


def _terminated(signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so cleanups run: an engine this command was starting is stopped,
    audit records are written or spooled. Exit 128 + 15, as the shell reports a terminated process."""
    raise SystemExit(128 + signum)


def main() -> None:
    """Console-script entry point."""
    signal.signal(signal.SIGTERM, _terminated)
    cli.main(prog_name="esbubble")
