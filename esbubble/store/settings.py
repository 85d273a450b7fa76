"""Connection and runtime settings: flags, then environment, then a config file, then defaults.

Settings are read once into one ``Settings`` object that is passed down; no
module keeps a client or reads the environment on its own. Secrets are
``SecretStr`` so they never show up in a repr, a log line or an error.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import platformdirs
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from esbubble.errors import ConfigError
from esbubble.store.names import validate_prefix

# Environment variable → settings field, for the variables the issue names.
ENV_VARS: dict[str, str] = {
    "ELASTICSEARCH_URL": "url",
    "ELASTICSEARCH_API_KEY": "api_key",
    "ELASTICSEARCH_USERNAME": "username",
    "ELASTICSEARCH_PASSWORD": "password",
    "ELASTICSEARCH_CA_CERTS": "ca_certs",
    "ELASTICSEARCH_SSL_ASSERT_FINGERPRINT": "ssl_assert_fingerprint",
    "ESBUBBLE_PREFIX": "prefix",
}
CONFIG_KEYS = (
    "url",
    "api_key",
    "username",
    "password",
    "ca_certs",
    "verify_certs",
    "ssl_assert_fingerprint",
    "prefix",
    "request_timeout",
)
ENGINE_KEYS = ("idle_minutes", "trace_window_runs", "compact_journal_mb")


def default_home(env: Mapping[str, str] = os.environ) -> Path:
    """``$ESBUBBLE_HOME``, else the per-user data directory."""
    configured = env.get("ESBUBBLE_HOME")
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("esbubble", appauthor=False))


def display_url(url: str) -> str:
    """The URL without user info, safe to print or record."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class Settings(BaseModel):
    """Where the engine is and how to talk to it. ``url=None`` means the embedded engine."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None
    api_key: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = None
    ca_certs: Path | None = None
    verify_certs: bool = True
    ssl_assert_fingerprint: str | None = None
    prefix: str = "esbubble"
    home: Path = Field(default_factory=default_home)
    request_timeout: float = Field(default=30.0, gt=0)
    # [engine] table: the embedded engine's idle stop, trace window and journal compaction size.
    engine_idle_minutes: float = Field(default=30.0, gt=0)
    trace_window_runs: int = Field(default=20, ge=0)
    compact_journal_mb: float = Field(default=64.0, gt=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().rstrip("/")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected http(s)://host[:port]")
        return value

    @field_validator("ssl_assert_fingerprint")
    @classmethod
    def _hex_fingerprint(cls, value: str | None) -> str | None:
        if value is None:
            return None
        digits = value.strip().replace(":", "").lower()
        if len(digits) not in (32, 40, 64) or any(ch not in "0123456789abcdef" for ch in digits):
            raise ValueError("expected the certificate's SHA-256 fingerprint: 64 hex digits, colons allowed")
        return digits

    @field_validator("ca_certs")
    @classmethod
    def _existing_ca_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.expanduser().is_file():
            raise ValueError("CA certificate file not found")
        return value.expanduser() if value is not None else None

    @field_validator("prefix")
    @classmethod
    def _valid_prefix(cls, value: str) -> str:
        return validate_prefix(value)

    @model_validator(mode="after")
    def _tls_needs_https(self) -> Settings:
        """A CA bundle or a pinned fingerprint on an http:// URL would be silently meaningless (the
        client refuses it); say so before connecting."""
        tls = self.ca_certs is not None or self.ssl_assert_fingerprint is not None
        if tls and self.url is not None and urlsplit(self.url).scheme != "https":
            raise ValueError("a CA bundle (--ca-certs) or a pinned fingerprint needs an https:// URL")
        return self

    @property
    def display_url(self) -> str:
        """The cluster URL without credentials, or ``embedded``."""
        return display_url(self.url) if self.url else "embedded"

    @property
    def embedded(self) -> bool:
        return self.url is None


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}", hint="give the path of a TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from None
    table = data.get("elasticsearch", {})
    if not isinstance(table, dict):
        raise ConfigError(f"config file {path}: [elasticsearch] must be a table")
    unknown = sorted(set(table) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key 'elasticsearch.{unknown[0]}'",
            hint=f"allowed keys: {', '.join(CONFIG_KEYS)}",
        )
    engine = data.get("engine", {})
    if not isinstance(engine, dict):
        raise ConfigError(f"config file {path}: [engine] must be a table")
    unknown = sorted(set(engine) - set(ENGINE_KEYS))
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key 'engine.{unknown[0]}'",
            hint=f"allowed keys: {', '.join(ENGINE_KEYS)}",
        )
    engine_fields = {"idle_minutes": "engine_idle_minutes"}
    return {**table, **{engine_fields.get(key, key): value for key, value in engine.items()}}


def load_settings(
    *,
    url: str | None = None,
    api_key: str | None = None,
    username: str | None = None,
    password: str | None = None,
    ca_certs: str | Path | None = None,
    verify_certs: bool | None = None,
    ssl_assert_fingerprint: str | None = None,
    prefix: str | None = None,
    home: str | Path | None = None,
    request_timeout: float | None = None,
    config_file: str | Path | None = None,
    env: Mapping[str, str] = os.environ,
) -> Settings:
    """Resolve settings: flags win, then environment variables, then the config file, then defaults.

    Without ``config_file``, ``$ESBUBBLE_CONFIG`` or ``<home>/config.toml`` is
    read when it exists.
    """
    resolved_home = Path(home).expanduser() if home is not None else default_home(env)
    values: dict[str, Any] = {}
    file = Path(config_file) if config_file is not None else None
    if file is None and env.get("ESBUBBLE_CONFIG"):
        file = Path(env["ESBUBBLE_CONFIG"])
    if file is None and (resolved_home / "config.toml").is_file():
        file = resolved_home / "config.toml"
    if file is not None:
        values.update(_read_config_file(file))
    for variable, field in ENV_VARS.items():
        if env.get(variable):
            values[field] = env[variable]
    flags: dict[str, Any] = {
        "url": url,
        "api_key": api_key,
        "username": username,
        "password": password,
        "ca_certs": ca_certs,
        "verify_certs": verify_certs,
        "ssl_assert_fingerprint": ssl_assert_fingerprint,
        "prefix": prefix,
        "request_timeout": request_timeout,
    }
    values.update({key: value for key, value in flags.items() if value is not None})
    values["home"] = resolved_home
    source = str(file) if file is not None else "settings"
    try:
        return Settings.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        shown = "<hidden>" if key in ("api_key", "password") else repr(first.get("input"))
        message = first["msg"].removeprefix("Value error, ")
        if not key:  # a rule over several settings, not one value
            raise ConfigError(f"{source}: {message}") from None
        raise ConfigError(f"{source}: invalid value for '{key}': {shown} ({message})") from None
