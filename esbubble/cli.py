"""The ``esbubble`` command line: a thin layer of click commands over the library.

Every command resolves ``Settings`` once (flags → environment → config file →
defaults), opens one ``Store`` and calls library functions. An
``EsbubbleError`` becomes one line on stderr and its exit code (1 user
mistake, 2 usage, 3 cluster); only bugs print tracebacks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import click

from esbubble.cli_render import emit_json
from esbubble.errors import EsbubbleError
from esbubble.settings import Settings, load_settings
from esbubble.store.connection import Store, open_store


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

    def settings(self) -> Settings:
        return load_settings(
            url=self.url,
            api_key=self.api_key,
            username=self.username,
            password=self.password,
            ca_certs=self.ca_certs,
            verify_certs=False if self.insecure else None,
            prefix=self.prefix,
            config_file=self.config,
        )


def settings_of(ctx: click.Context) -> Settings:
    flags = ctx.find_object(ConnectionFlags)
    assert flags is not None, "the esbubble group always sets its flags"
    return flags.settings()


@contextlib.contextmanager
def store_of(ctx: click.Context) -> Iterator[Store]:
    """One store for the command, closed (and the embedded engine snapshotted) when it ends."""
    with open_store(settings_of(ctx)) as store:
        yield store


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


@click.group(cls=EsbubbleGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", help="Elasticsearch URL [env ELASTICSEARCH_URL; default: embedded engine].")
@click.option("--api-key", help="API key [env ELASTICSEARCH_API_KEY].")
@click.option("--username", help="Basic-auth user [env ELASTICSEARCH_USERNAME].")
@click.option("--password", help="Basic-auth password [env ELASTICSEARCH_PASSWORD].")
@click.option("--ca-certs", type=click.Path(dir_okay=False), help="CA bundle [env ELASTICSEARCH_CA_CERTS].")
@click.option("--insecure", is_flag=True, help="Do not verify TLS certificates (prints a warning).")
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
    prefix: str | None,
    config: str | None,
) -> None:
    """Structure- and diversity-aware context bubbles on Elasticsearch."""
    if insecure:
        click.echo("esbubble: warning: TLS certificate verification is disabled (--insecure)", err=True)
    ctx.obj = ConnectionFlags(url, api_key, username, password, ca_certs, insecure, prefix, config)


@cli.command()
@json_option
@click.pass_context
def init(ctx: click.Context, as_json: bool) -> None:
    """Install the index templates and create the indices (idempotent)."""
    from esbubble.store.templates import init_indices

    with store_of(ctx) as store:
        result = init_indices(store)
        shown = store.display_url
    if as_json:
        emit_json({"url": shown, "steps": [step.model_dump(mode="json") for step in result.steps]})
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
    if as_json:
        emit_json(status.model_dump(mode="json"))
    elif status.running:
        click.echo(f"running  pid {status.pid}  {status.url}  since {status.started_at:%Y-%m-%d %H:%M:%S}")
    else:
        click.echo("stopped" + (f"  (data kept in {status.snapshot})" if status.snapshot else ""))


@engine.command("start")
@json_option
@click.pass_context
def engine_start(ctx: click.Context, as_json: bool) -> None:
    """Start the embedded engine in the background; later commands use it."""
    from esbubble.store.engine import start_daemon

    _print_status(start_daemon(_embedded_settings(ctx)), as_json)


@engine.command("stop")
@json_option
@click.pass_context
def engine_stop(ctx: click.Context, as_json: bool) -> None:
    """Snapshot the embedded engine's data and stop it."""
    from esbubble.store.engine import stop_daemon

    _print_status(stop_daemon(_embedded_settings(ctx)), as_json)


@engine.command("status")
@json_option
@click.pass_context
def engine_status(ctx: click.Context, as_json: bool) -> None:
    """Is the embedded engine running, where, and where is its data."""
    from esbubble.store.engine import daemon_status

    _print_status(daemon_status(_embedded_settings(ctx)), as_json)


def _embedded_settings(ctx: click.Context) -> Settings:
    settings = settings_of(ctx)
    if not settings.embedded:
        raise click.UsageError(
            f"`engine` manages the embedded engine, but a cluster URL is configured "
            f"({settings.display_url}); unset ELASTICSEARCH_URL / --url"
        )
    return settings


def main() -> None:
    """Console-script entry point."""
    cli.main(prog_name="esbubble")
