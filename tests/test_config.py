"""Profiles: TOML loading, round-trips, and error messages that name key, value and allowed range."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbubble.config import DEFAULT_DELTA, BubbleConfig, load_profile, parse_config
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
        ({"ingest": {"max_chunk_tokens": 8}}, ["ingest.max_chunk_tokens", ": 8 ", "16 ≤ value ≤ 8192"]),
        ({"ingest": {"max_chunk_size": 100}}, ["unknown key", "ingest.max_chunk_size"]),
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


def _float_keys() -> list[tuple[str, str, bool]]:
    """Every float in the profile schema as (table, key, is_map), found from the models themselves."""
    found = []
    for table, section in BubbleConfig.model_fields.items():
        model = section.annotation
        assert isinstance(model, type)
        for key, info in model.model_fields.items():  # type: ignore[attr-defined]
            shown = str(info.annotation)
            if "float" in shown:
                found.append((table, key, shown.startswith("dict")))
    return found


FLOAT_KEYS = _float_keys()


def test_the_schema_walk_finds_the_known_floats() -> None:
    keys = {f"{table}.{key}" for table, key, _ in FLOAT_KEYS}
    assert {"bubble.length_norm", "bubble.min_score", "bubble.overlap_threshold", "priors.sections"} <= keys
    assert {"priors.keywords", "buckets.shares", "repair.epsilon", "repair.gap_weight"} <= keys


@pytest.mark.parametrize("literal", ["nan", "inf", "-inf", "+nan"])
@pytest.mark.parametrize(("table", "key", "is_map"), FLOAT_KEYS, ids=[f"{t}.{k}" for t, k, _ in FLOAT_KEYS])
def test_nan_and_inf_are_refused_for_every_float(
    tmp_path: Path, table: str, key: str, is_map: bool, literal: str
) -> None:
    text = f"[{table}.{key}]\nx = {literal}\n" if is_map else f"[{table}]\n{key} = {literal}\n"
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    line = caught.value.one_line()
    where = f"'{table}.{key}.x'" if is_map else f"'{table}.{key}'"
    assert line.startswith(f"{path}: invalid value for {where}: "), line
    assert literal.lstrip("+") in line and "\n" not in line
    assert "allowed" in line


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            '[bubble]\ntoken_budget = "800"',
            ["'bubble.token_budget': '800'", "valid integer", "0 < value ≤ 2000000"],
        ),
        ("[bubble]\ntoken_budget = 800.0", ["'bubble.token_budget': 800.0", "valid integer"]),
        ("[bubble]\nmax_chunks = true", ["'bubble.max_chunks': True", "1 ≤ value ≤ 10000"]),
        ('[bubble]\noverlap_threshold = "0.5"', ["'bubble.overlap_threshold': '0.5'", "0.0 < value ≤ 1.0"]),
        ('[bubble]\nlength_norm = "0.5"', ["'bubble.length_norm': '0.5'", "'median' or > 0"]),
        ('[priors.sections]\nScope = "2"', ["'priors.sections.Scope': '2'", "valid number"]),
        ('[expand.radius]\npdf = "2"', ["'expand.radius.pdf': '2'", "valid integer"]),
        ('[assemble]\nmax_tokens = "8192"', ["'assemble.max_tokens': '8192'", "valid integer"]),
    ],
)
def test_numbers_are_strict_never_coerced_from_strings(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    path = _write(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    for fragment in fragments:
        assert fragment in caught.value.one_line()


def test_integers_are_still_accepted_where_a_float_is_expected(tmp_path: Path) -> None:
    config = load_profile(
        _write(tmp_path, "[bubble]\nlength_norm = 2\nmin_score = 1\n[priors.sections]\nA = 3\n")
    )
    assert (config.bubble.length_norm, config.bubble.min_score, config.priors.sections) == (2, 1, {"A": 3})


def test_cli_delta_nan_is_a_one_line_user_error() -> None:
    from click.testing import CliRunner

    from esbubble.app.cli import cli

    result = CliRunner().invoke(cli, ["bubble", "steel", "--delta", "nan"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "esbubble: error: overrides: invalid value for 'bubble.overlap_threshold': nan "
        "(Input should be a finite number; allowed range: 0.0 < value ≤ 1.0)"
    ]


def _outcome(make: Callable[[], BubbleConfig]) -> tuple[str, str]:
    try:
        config = make()
    except ConfigError as error:
        return "error", error.one_line()
    return config.config_hash, config.to_json()


@settings(max_examples=80, deadline=None)
@given(
    budget=st.integers(min_value=-5, max_value=3_000_000) | st.none(),
    delta=st.floats(allow_nan=True, allow_infinity=True) | st.none(),
    variant=st.sampled_from(["full", "flat_topk", "nope"]) | st.none(),
    max_chunks=st.integers(min_value=-1, max_value=20_000) | st.none(),
)
def test_a_typed_edit_is_the_profile_that_states_the_same_values(
    budget: int | None, delta: float | None, variant: str | None, max_chunks: int | None
) -> None:
    """Flag overrides edit ``[bubble]`` in place: same config, hash and error as a profile with the
    values written in it (reading the profile back through JSON), and the other sections untouched."""
    base = parse_config(tomllib.loads(FULL_PROFILE))
    flags = {"token_budget": budget, "overlap_threshold": delta, "variant": variant, "max_chunks": max_chunks}
    given_values = {key: value for key, value in flags.items() if value is not None}

    def as_profile() -> BubbleConfig:
        data = json.loads(base.to_json())
        data["bubble"].update(given_values)
        return parse_config(data, source="overrides")

    assert _outcome(lambda: base.with_overrides(**flags)) == _outcome(as_profile)
    if _outcome(as_profile)[0] != "error":
        edited = base.with_overrides(**flags)
        assert (
            edited.priors is base.priors and edited.buckets is base.buckets and edited.expand is base.expand
        )


def test_a_section_edit_names_the_section_and_source_in_its_error() -> None:
    config = BubbleConfig().with_section("expand", {"mode": "window"}, source="eval options")
    assert (config.expand.mode, config.bubble) == ("window", BubbleConfig().bubble)
    with pytest.raises(ConfigError) as raised:
        config.with_section("repair", {"loops": 0}, source="eval options")
    assert raised.value.one_line().startswith("eval options: invalid value for 'repair.loops': 0 (")


def test_an_unset_delta_follows_the_overlap_measure_and_a_set_one_is_kept() -> None:
    """The paper's 0.55 limits its own measure (words anywhere in the bubble); against one chunk, the
    question's words aside, the gate rejects near-copies only."""
    assert parse_config({}).bubble.delta == DEFAULT_DELTA["chunk"] == 0.85  # bm25 measures per chunk
    paper = parse_config({"bubble": {"relevance": "tf", "selection": "score"}}).bubble
    assert (paper.overlap_mode, paper.delta) == ("bubble", 0.55)
    assert parse_config({"bubble": {"overlap": "bubble"}}).bubble.delta == 0.55
    assert parse_config({"bubble": {"overlap_threshold": 0.55}}).bubble.delta == 0.55
    assert BubbleConfig().with_overrides(overlap_threshold=0.3).bubble.delta == 0.3


def test_the_ingest_table_is_what_ingest_cuts_documents_with(tmp_path: Path) -> None:
    from esbubble.ingest import IngestOptions

    profile = _write(tmp_path, "[bubble]\nencoding = 'cl100k_base'\n[ingest]\nmax_chunk_tokens = 320\n"
                               "min_chunk_tokens = 0\n[buckets.map]\nA = 'B'\n")  # fmt: skip
    options = IngestOptions.of(load_profile(profile), root=tmp_path)
    assert (options.max_chunk_tokens, options.min_chunk_tokens, options.include_hidden_sheets) == (
        320,
        0,
        False,
    )
    assert (options.encoding, options.buckets.map, options.root) == ("cl100k_base", {"A": "B"}, tmp_path)
    defaults = IngestOptions.of(BubbleConfig())
    assert defaults == IngestOptions() and defaults.max_chunk_tokens == 160
    assert IngestOptions(root="docs").root == Path("docs")  # built in code: coerced, as before
    with pytest.raises(ValueError, match="max_chunk_tokens"):
        IngestOptions(max_chunk_tokens=8)
