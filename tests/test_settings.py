"""Settings precedence (flags → env → config file → defaults) and secrets that never leak."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esbubble.errors import ConfigError
from esbubble.store.names import IndexNames, validate_prefix
from esbubble.store.settings import Settings, display_url, load_settings


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "esbubble.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_defaults_are_embedded_with_home_from_env(tmp_path: Path) -> None:
    settings = load_settings(env={"ESBUBBLE_HOME": str(tmp_path)})
    assert settings.url is None
    assert settings.embedded
    assert settings.prefix == "esbubble"
    assert settings.home == tmp_path
    assert settings.display_url == "embedded"


def test_flags_beat_env_beat_file(tmp_path: Path) -> None:
    file = _config(
        tmp_path,
        '[elasticsearch]\nurl = "http://file:9200"\napi_key = "file-key"\n'
        'prefix = "fromfile"\nrequest_timeout = 7\n',
    )
    env = {"ELASTICSEARCH_URL": "http://env:9200", "ELASTICSEARCH_API_KEY": "env-key"}
    from_file = load_settings(config_file=file, env={})
    assert (from_file.url, from_file.prefix, from_file.request_timeout) == (
        "http://file:9200",
        "fromfile",
        7.0,
    )
    from_env = load_settings(config_file=file, env=env)
    assert from_env.url == "http://env:9200"
    assert from_env.api_key is not None and from_env.api_key.get_secret_value() == "env-key"
    assert from_env.prefix == "fromfile"
    from_flags = load_settings(url="http://flag:9200", prefix="flagged", config_file=file, env=env)
    assert (from_flags.url, from_flags.prefix) == ("http://flag:9200", "flagged")


def test_config_file_in_home_is_read(tmp_path: Path) -> None:
    _config(tmp_path, '[elasticsearch]\nurl = "https://home:9243"\n').rename(tmp_path / "config.toml")
    assert load_settings(home=tmp_path, env={}).url == "https://home:9243"


def test_secrets_never_in_repr_or_dump() -> None:
    settings = load_settings(
        url="https://elastic:hunter2@es.example:9200",
        api_key="sekret-api-key",
        username="elastic",
        password="hunter2pw",
        env={},
    )
    for text in (repr(settings), str(settings), settings.model_dump_json()):
        assert "sekret-api-key" not in text
        assert "hunter2pw" not in text
    assert settings.display_url == "https://es.example:9200"


def test_bad_values_name_the_key_and_hide_secrets(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"invalid value for 'url': 'ftp://x'"):
        load_settings(url="ftp://x", env={})
    with pytest.raises(ConfigError, match=r"unknown key 'elasticsearch\.uri'"):
        load_settings(config_file=_config(tmp_path, '[elasticsearch]\nuri = "http://x"\n'), env={})
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(config_file=_config(tmp_path, "[elasticsearch\n"), env={})
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(config_file=tmp_path / "absent.toml", env={})
    with pytest.raises(ConfigError, match="invalid index prefix 'Bad\\*'"):
        load_settings(prefix="Bad*", env={})


@pytest.mark.parametrize("prefix", ["", "UPPER", "a,b", "a*", "../x", "-lead", "_lead", "a b", "x" * 49])
def test_invalid_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(ConfigError, match="invalid index prefix"):
        validate_prefix(prefix)


@given(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True))
def test_every_name_of_a_valid_prefix_starts_with_it(prefix: str) -> None:
    names = IndexNames.for_prefix(prefix)
    for name in (names.chunks, names.chunks_index, names.traces, names.runs):
        assert name.startswith(f"{prefix}-")
        assert name == name.lower()


@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_display_url_never_shows_credentials(user: str, password: str) -> None:
    from urllib.parse import quote

    url = f"https://{quote(user, safe='')}:{quote(password, safe='')}@host.example:9200/path"
    shown = display_url(url)
    assert shown == "https://host.example:9200/path"


def test_settings_forbid_unknown_fields() -> None:
    with pytest.raises(ValueError, match="extra"):
        Settings.model_validate({"urll": "http://x"})


def test_engine_table_sets_idle_time_window_and_compaction_size(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[engine]\nidle_minutes = 5\ntrace_window_runs = 3\ncompact_journal_mb = 8\n"
    )
    settings = load_settings(home=tmp_path, env={})
    assert (settings.engine_idle_minutes, settings.trace_window_runs, settings.compact_journal_mb) == (
        5,
        3,
        8,
    )
    assert load_settings(home=tmp_path / "none", env={}).trace_window_runs == 20


def test_unknown_or_bad_engine_keys_are_config_errors(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[engine]\nidle = 5\n")
    with pytest.raises(ConfigError, match=r"unknown key 'engine\.idle'"):
        load_settings(home=tmp_path, env={})
    (tmp_path / "config.toml").write_text("[engine]\nidle_minutes = 0\n")
    with pytest.raises(ConfigError, match="engine_idle_minutes"):
        load_settings(home=tmp_path, env={})
