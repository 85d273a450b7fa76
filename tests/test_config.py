"""Profiles: TOML loading, round-trips, and error messages that name key, value and allowed range."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbubble.config import BubbleConfig, load_profile, parse_config
from esbubble.errors import ConfigError

FULL_PROFILE = """
[bubble]
token_budget = 800
overlap_threshold = 0.55
candidate_k = 200
max_chunks = 10
length_norm = "median"
min_score = 0.0
slack_policy = "global_pool"
encoding = "o200k_base"
[priors.sections]
"Scope of Works" = 6.0
"Terms & Conditions" = -2.5
[priors.keywords]
"waterproofing" = 1.0
[buckets.shares]
"Scope of Works" = 0.6
[buckets.map]
"Below Grade Works" = "Below Grade"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profile.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_issue_profile_loads(tmp_path: Path) -> None:
    config = load_profile(_write(tmp_path, FULL_PROFILE))
    assert config.bubble.token_budget == 800
    assert config.priors.sections["Terms & Conditions"] == -2.5
    assert config.buckets.bucket_of("Below Grade Works", "x") == "Below Grade"
    assert config.buckets.bucket_of("Other", "Other") == "Other"


def test_config_round_trips_through_json_with_a_stable_hash(tmp_path: Path) -> None:
    config = load_profile(_write(tmp_path, FULL_PROFILE))
    again = BubbleConfig.model_validate_json(config.to_json())
    assert again == config
    assert again.config_hash == config.config_hash
    assert config.with_overrides(token_budget=100).config_hash != config.config_hash


@pytest.mark.parametrize(
    ("data", "fragments"),
    [
        ({"bubble": {"overlap_treshold": 0.5}}, ["unknown key", "bubble.overlap_treshold"]),
        ({"bubbles": {}}, ["unknown key", "'bubbles'"]),
        ({"bubble": {"overlap_threshold": 1.5}}, ["bubble.overlap_threshold", "1.5", "0.0 < value ≤ 1.0"]),
        ({"bubble": {"overlap_threshold": 0}}, ["bubble.overlap_threshold", ": 0 ", "0.0 < value ≤ 1.0"]),
        ({"buckets": {"shares": {"A": 0.7, "B": 0.5}}}, ["buckets.shares", "0.7", "1.2", "Σρ ≤ 1"]),
        ({"buckets": {"shares": {"A": -0.1}}}, ["buckets.shares", "-0.1", "0 ≤ ρ ≤ 1"]),
        ({"bubble": {"token_budget": -5}}, ["bubble.token_budget", "-5", "0 < value ≤ 2000000"]),
        ({"bubble": {"max_chunks": 0}}, ["bubble.max_chunks", ": 0 ", "1 ≤ value ≤ 10000"]),
        ({"bubble": {"length_norm": -1}}, ["bubble.length_norm'", "-1", "'median' or > 0"]),
        ({"bubble": {"length_norm": "mean"}}, ["bubble.length_norm'", "'mean'", "'median' or > 0"]),
        (
            {"bubble": {"slack_policy": "pool"}},
            ["bubble.slack_policy", "'pool'", "'strict' or 'global_pool'"],
        ),
        ({"bubble": {"encoding": "p50k_base"}}, ["bubble.encoding", "'p50k_base'", "'o200k_base'"]),
    ],
)
def test_bad_values_name_key_value_and_range(data: dict[str, object], fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    message = str(caught.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_not_toml_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "[bubble\ntoken_budget = 800\n")
    with pytest.raises(ConfigError, match=r"profile\.toml is not valid TOML"):
        load_profile(path)


def test_missing_profile_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="profile not found"):
        load_profile(tmp_path / "nope.toml")


def test_errors_from_a_file_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"profile\.toml: invalid value for 'bubble\.token_budget': -1"):
        load_profile(_write(tmp_path, "[bubble]\ntoken_budget = -1\n"))


def test_config_errors_exit_with_the_user_error_code() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"bubble": {"overlap_threshold": 2}})
    assert caught.value.exit_code == 1
