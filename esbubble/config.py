"""``BubbleConfig``: the profile that decides how a bubble is built.

A profile is a TOML file whose tables map one to one onto the models here;
keys the schema does not know are errors. Every model round-trips to JSON,
and ``config_hash`` is the SHA-256 of that canonical JSON, recorded in each
run manifest.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from esbubble.errors import ConfigError
from esbubble.models import SourceType
from esbubble.text import DEFAULT_STOP_WORDS

Encoding = Literal["o200k_base", "cl100k_base"]
SlackPolicy = Literal["strict", "global_pool"]


class _Section(BaseModel):
    """Strict numbers: ``token_budget = "800"`` or ``= 800.0`` is an error, not coerced, and no
    float anywhere (δ, θ, min_score, priors, shares, weights) may be ``nan`` or ``inf``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# δ when the profile sets none, by the redundancy gate's overlap measure (``BubbleParams.delta``).
DEFAULT_DELTA: dict[Literal["bubble", "chunk"], float] = {"bubble": 0.55, "chunk": 0.85}


class BubbleParams(_Section):
    """The ``[bubble]`` table: budget, gates and selection."""

    token_budget: int = Field(default=800, gt=0, le=2_000_000, description="T_B, tokens")
    overlap_threshold: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="δ, 0 < δ ≤ 1; unset: 0.55 (the paper's) under overlap 'bubble', 0.85 under 'chunk'",
    )
    candidate_k: int = Field(default=200, ge=1, le=10_000, description="K candidates from the engine")
    max_chunks: int = Field(default=100, ge=1, le=10_000)
    length_norm: Literal["median"] | float = Field(default="median", description="θ: 'median' or > 0")
    min_score: float = Field(default=0.0, description="a candidate needs score > min_score")
    slack_policy: SlackPolicy = "global_pool"
    encoding: Encoding = "o200k_base"
    variant: Literal["engine_topk", "flat_topk", "structure", "diversity", "full"] = "full"
    stop_words: tuple[str, ...] = Field(default=DEFAULT_STOP_WORDS, strict=False)  # a TOML array is a list
    relevance: Literal["bm25", "tf"] = Field(
        default="bm25", description="'bm25': idf-weighted, saturated, analysed terms; 'tf': the paper's eq. 5"
    )
    selection: Literal["coverage", "score"] = Field(
        default="coverage",
        description="'coverage': marginal gain per token; 'score': the paper's order",
    )
    context_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="a query term in the context counts this, vs 1 in the text",
    )
    k1: float = Field(default=1.2, gt=0.0, le=10.0, description="bm25 term-frequency saturation")
    covered_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="share of a facet's weight earned per chunk of the bubble that already covers it",
    )
    document_share: bool = Field(
        default=True,
        description=(
            "coverage order: a chunk's facet weights count in proportion to its document's share of the"
            " query (the facet weight its document's candidates match at best, over all candidates')"
        ),
    )
    document_engine: bool = Field(
        default=True,
        description=(
            "coverage order: a chunk's facet weights count in proportion to the engine's score of its"
            " document's best candidate, over the best candidate's of all"
        ),
    )
    chunk_share: float = Field(
        default=0.5,
        ge=0.0,
        le=4.0,
        description=(
            "coverage order: a chunk's facet weights count in proportion to its own share of the query"
            " (the weight of the facets it matches, each at the best any candidate has, over all"
            " facets') to this power; 0: off"
        ),
    )
    named_row: float = Field(
        default=0.5,
        ge=0.0,
        le=4.0,
        description=(
            "coverage order: a table row with a cell value the question names (the value's analysed"
            " words a run of the question's), or a code linked to a label it names, has its facet"
            " weights count 1 + this; 0: off"
        ),
    )
    engine_rank: float = Field(
        default=3.0,
        ge=0.0,
        le=20.0,
        description=(
            "coverage order: a chunk's facet weights count 1 + this / (its engine rank + 1), so the"
            " engine's first candidate weighs 1 + this/2 and its tenth 1 + this/11; 0: off"
        ),
    )
    proximity: float = Field(
        default=1.0,
        ge=0.0,
        le=4.0,
        description=(
            "bm25 coverage order: a chunk's facet weights count 1 + this x the share of the question's"
            " successive word pairs it holds within proximity_window words of each other; 0: off"
        ),
    )
    proximity_window: int = Field(
        default=4,
        ge=1,
        le=50,
        description="how many analysed words apart a pair's two words may stand to count as near",
    )
    semantic: float = Field(
        default=2.0,
        ge=0.0,
        le=8.0,
        description=(
            "coverage order, where every candidate carries a similarity to the question (chunks"
            " embedded at ingest): a chunk's facet weights count its similarity over the best"
            " candidate's (negatives 0) to this power; 0: off"
        ),
    )
    facet_engine: bool = Field(
        default=True,
        description=(
            "coverage order: each query facet weighs in proportion to the engine's score of the best"
            " candidate matching it, over the best candidate's of all"
        ),
    )
    spent_gain: float = Field(
        default=0.02,
        ge=0.0,
        le=1.0,
        description=(
            "coverage order: a candidate whose gain falls below this share of the best gain on the empty"
            " bubble is spent and comes after every other, by its gain on the empty bubble times its"
            " engine score over the best candidate's; 0: off"
        ),
    )
    min_gain: float = Field(
        default=0.01,
        ge=0.0,
        le=1.0,
        description=(
            "coverage order: a candidate is admitted only if what orders it (its gain, or a spent"
            " candidate's fill value) is at least this share of the best gain on the empty bubble; 0: off"
        ),
    )
    overlap: Literal["auto", "bubble", "chunk"] = Field(
        default="auto",
        description=(
            "'bubble': eq. 12, a chunk's words already anywhere in B; 'chunk': its words beyond the"
            " query's own already in one selected chunk; 'auto': 'bubble' under tf, 'chunk' under bm25"
        ),
    )
    fill_with_priors: bool = Field(
        default=False, description="may a chunk that matches no query facet enter on its prior alone"
    )
    unlisted_shares: Literal["auto", "pool", "demand", "equal"] = Field(
        default="auto",
        description=(
            "buckets without a [buckets.shares] entry: 'pool': each may spend what the listed shares"
            " leave; 'demand': that split by where the relevant candidates are; 'equal': split equally"
            " (the paper); 'auto': 'equal' under tf, 'pool' under bm25"
        ),
    )
    share_floor: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="under unlisted_shares = 'demand': part of the split made equally, not by relevance",
    )

    @property
    def unlisted_mode(self) -> Literal["pool", "demand", "equal"]:
        """How unlisted buckets are capped, ``auto`` resolved by the relevance mode."""
        if self.unlisted_shares != "auto":
            return self.unlisted_shares
        return "equal" if self.relevance == "tf" else "pool"

    @property
    def delta(self) -> float:
        """δ, the redundancy gate's limit: ``overlap_threshold``, else the default of the overlap mode.

        The paper's 0.55 is a limit on its measure, the share of a chunk's words anywhere in the
        bubble (``bubble``). Under ``chunk`` the share is of the words beyond the question's found in
        the one most similar admitted chunk; rows and requirements written from one template share
        more than half of them with a neighbour that says something else ("Verify that there is an
        inactivity timeout such that re-authentication is enforced …" and "… an absolute maximum
        session lifetime such that …"), so there the gate rejects only near-copies (0.85), measured
        on seven sets of real documents (docs/evaluation.md, "Before and after").
        """
        if self.overlap_threshold is not None:
            return self.overlap_threshold
        return DEFAULT_DELTA[self.overlap_mode]

    @property
    def overlap_mode(self) -> Literal["bubble", "chunk"]:
        """The redundancy gate's overlap, ``auto`` resolved by the relevance mode."""
        if self.overlap != "auto":
            return self.overlap
        return "bubble" if self.relevance == "tf" else "chunk"

    @property
    def standard_words(self) -> bool:
        """Whether the redundancy gate reads a chunk's words as the engine's standard tokenizer cuts
        them (bm25: "65.2" is one word) rather than as the paper's tokens (tf: "65" and "2")."""
        return self.relevance == "bm25"

    @field_validator("length_norm")
    @classmethod
    def _positive_norm(cls, value: Literal["median"] | float) -> Literal["median"] | float:
        if value != "median" and (isinstance(value, bool) or float(value) <= 0):
            raise ValueError("must be 'median' or a number > 0")
        return value


class PriorsConfig(_Section):
    """``[priors.sections]`` π(s) and ``[priors.keywords]`` γ_k; π may be negative."""

    sections: dict[str, float] = Field(default_factory=dict)
    keywords: dict[str, float] = Field(default_factory=dict)


class BucketsConfig(_Section):
    """``[buckets.shares]`` ρ_b (Σ ≤ 1) and ``[buckets.map]`` section → bucket."""

    shares: dict[str, float] = Field(default_factory=dict)
    map: dict[str, str] = Field(default_factory=dict)

    @field_validator("shares")
    @classmethod
    def _shares_in_range(cls, shares: dict[str, float]) -> dict[str, float]:
        for bucket, share in shares.items():
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"share of bucket {bucket!r} is {share}; allowed range is 0 ≤ ρ ≤ 1")
        total = sum(shares.values())
        if total > 1.0 + 1e-9:
            raise ValueError(f"shares sum to {total:g}; allowed range is Σρ ≤ 1")
        return shares

    def bucket_of(self, section: str, default_bucket: str) -> str:
        """The bucket a section's chunks are budgeted under."""
        return self.map.get(section, default_bucket)


def _default_radius() -> dict[SourceType, int]:
    return {"xlsx": 1, "csv": 1, "pdf": 1, "docx": 1, "markdown": 1, "text": 1}


class IngestParams(_Section):
    """The ``[ingest]`` table: how ``esbubble ingest`` cuts documents into chunks.

    160 tokens, not more: a chunk is what the bubble selects or leaves, so at a 400-token budget a
    320-token section left room for one other chunk, and its one answering sentence cost the whole
    section; windows (``[expand]``) give a selected chunk its neighbours back when the budget allows.
    """

    max_chunk_tokens: int = Field(
        default=160,
        ge=16,
        le=8192,
        description="longer rows and paragraphs become continuation chunks (tiktoken counts)",
    )
    min_chunk_tokens: int = Field(
        default=12,
        ge=0,
        le=1024,
        description="shorter paragraphs join the next (or last) paragraph of their section; 0 keeps them",
    )
    include_hidden_sheets: bool = False
    embedding_model: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "store each chunk's sentence embedding under this model ('all-MiniLM-L6-v2' or a"
            " sentence-transformers model folder; needs the 'semantic' extra); unset: no vectors"
        ),
    )


class ExpandConfig(_Section):
    """``[expand]``: small-to-big expansion after the bubble (off unless ``mode`` is set)."""

    mode: Literal["off", "window", "parent"] = "off"
    radius: dict[SourceType, int] = Field(
        default_factory=_default_radius, description="window radius per source type: rows or paragraphs"
    )
    cross_sections: bool = Field(default=False, description="may a window cross a section boundary")
    parent_span: int = Field(
        default=64, ge=1, le=10_000, description="positions fetched each side in parent mode"
    )

    @field_validator("radius")
    @classmethod
    def _radius_in_range(cls, radius: dict[SourceType, int]) -> dict[SourceType, int]:
        for source_type, value in radius.items():
            if not 0 <= value <= 5:
                raise ValueError(f"radius of {source_type!r} is {value}; allowed range is 0–5")
        return {**_default_radius(), **radius}


class RepairConfig(_Section):
    """``[repair]``: fixed-budget gap repair, "replace, don't expand" (off unless enabled)."""

    enabled: bool = False
    loops: int = Field(default=2, ge=1, le=20, description="L, the most repair loops")
    epsilon: float = Field(
        default=0.05, ge=0.0, le=10.0, description="ε, the hysteresis margin a newcomer must beat"
    )
    dwell: int = Field(default=1, ge=0, le=20, description="loops a just-inserted chunk cannot be evicted")
    gap_weight: float = Field(default=1.0, ge=0.0, le=100.0, description="λ1 · gap_coverage")
    novelty_weight: float = Field(default=0.3, ge=0.0, le=100.0, description="λ2 · novelty")
    redundancy_weight: float = Field(default=0.3, ge=0.0, le=100.0, description="λ3 · redundancy")
    micro_k: int = Field(default=10, ge=1, le=1_000, description="candidates per micro-query")
    facets: dict[str, list[str]] = Field(default_factory=dict, description="facet group name → its terms")


class AssembleConfig(_Section):
    """``[assemble]``: the prompt the bubble is delivered in (off unless enabled)."""

    enabled: bool = False
    max_tokens: int = Field(
        default=8192, gt=0, le=10_000_000, description="T_max, the model's context window"
    )
    reserved_tokens: int = Field(
        default=1024, ge=0, le=10_000_000, description="T_reserved, kept for the answer"
    )
    order: Literal["score", "primacy_recency", "document"] = "primacy_recency"
    system_prompt: str | None = Field(default=None, description="None: the built-in prompt")
    message_overhead: int = Field(default=3, ge=0, le=100, description="chat framing tokens per message")
    reply_overhead: int = Field(default=3, ge=0, le=100, description="tokens that prime the reply")


class BubbleConfig(_Section):
    """The whole resolved profile."""

    bubble: BubbleParams = Field(default_factory=BubbleParams)
    priors: PriorsConfig = Field(default_factory=PriorsConfig)
    buckets: BucketsConfig = Field(default_factory=BucketsConfig)
    ingest: IngestParams = Field(default_factory=IngestParams)
    expand: ExpandConfig = Field(default_factory=ExpandConfig)
    repair: RepairConfig = Field(default_factory=RepairConfig)
    assemble: AssembleConfig = Field(default_factory=AssembleConfig)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys), the form that is hashed and stored."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def config_hash(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    def with_section(
        self, name: SectionName, fields: Mapping[str, object], *, source: str = "overrides"
    ) -> BubbleConfig:
        """A copy with fields of one section replaced. The edited section is validated like a
        profile's (a value from a flag gets the same error, naming ``source`` and the key); the other
        sections are the same objects."""
        section: _Section = getattr(self, name)
        try:
            edited = type(section).model_validate({**dict(section), **fields})
        except ValidationError as error:
            raise ConfigError(_describe(error, source, within=(name,))) from None
        return self.model_copy(update={name: edited})

    def with_overrides(self, **bubble_fields: object) -> BubbleConfig:
        """A copy with the ``[bubble]`` fields that are not None replaced, validated like a profile."""
        changes = {key: value for key, value in bubble_fields.items() if value is not None}
        return self.with_section("bubble", changes) if changes else self


SectionName = Literal["bubble", "priors", "buckets", "ingest", "expand", "repair", "assemble"]


def _field_at(loc: Sequence[int | str]) -> tuple[FieldInfo | None, int]:
    """The profile field an error location points at, and how many loc parts name fields."""
    model: type[BaseModel] | None = BubbleConfig
    info: FieldInfo | None = None
    for depth, part in enumerate(loc):
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return info, depth
        info = model.model_fields[part]
        annotation = info.annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return info, len(loc)


def _allowed(info: FieldInfo) -> str | None:
    """The field's allowed range from its numeric bounds, e.g. ``0 < value ≤ 1``."""
    lower = upper = ""
    for bound in info.metadata:  # annotated_types Gt/Ge/Lt/Le, as pydantic stores Field(gt=…)
        if getattr(bound, "gt", None) is not None:
            lower = f"{bound.gt} < "
        elif getattr(bound, "ge", None) is not None:
            lower = f"{bound.ge} ≤ "
        elif getattr(bound, "lt", None) is not None:
            upper = f" < {bound.lt}"
        elif getattr(bound, "le", None) is not None:
            upper = f" ≤ {bound.le}"
    return f"allowed range: {lower}value{upper}" if lower or upper else None


def _describe(error: ValidationError, source: str, *, within: tuple[str, ...] = ()) -> str:
    """The first error as one line; ``within`` is the path of the model that was validated."""
    first = error.errors()[0]
    loc = (*within, *first["loc"])
    info, depth = _field_at(loc)
    members = typing.get_args(info.annotation) if info is not None else ()
    optional = len(members) == 2 and type(None) in members  # one type or unset: not a choice of forms
    forms = info is not None and typing.get_origin(info.annotation) in (typing.Union, types.UnionType)
    union = forms and not optional
    if union:
        loc = loc[:depth]  # drop pydantic's union-member tags such as "literal['median']"
    key = ".".join(str(part) for part in loc) or "<root>"
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown key '{key}' (remove it or check its spelling)"
    value = first.get("input")
    message = first["msg"].removeprefix("Value error, ")
    allowed = _allowed(info) if info is not None and depth == len(loc) else None
    if union and info is not None and info.description:
        # pydantic reports only one member's complaint; the description names every allowed form
        message, allowed = f"allowed: {info.description}", None
    if first["type"] == "finite_number" and not allowed:
        allowed = "allowed: any finite number, no nan or inf"
    detail = f"{message}; {allowed}" if allowed else message
    return f"{source}: invalid value for '{key}': {value!r} ({detail})"


def parse_config(data: object, *, source: str = "profile") -> BubbleConfig:
    """Validate a mapping into a ``BubbleConfig``; errors name the key, value and range."""
    try:
        return BubbleConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error, source)) from None


def load_profile(path: str | Path) -> BubbleConfig:
    """Read a TOML profile. Missing files, bad TOML and bad values are ``ConfigError``."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"profile not found: {file}", hint="give the path of a TOML profile") from None
    except OSError as error:
        raise ConfigError(f"cannot read profile {file}: {error.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"profile {file} is not valid TOML: {error}") from None
    return parse_config(data, source=str(file))
