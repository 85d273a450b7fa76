"""The paper's ablation variants as switches, and the token-matched mode.

=========== ====== ========== ===============
variant     priors redundancy section budgets
=========== ====== ========== ===============
engine_topk no     no         no   (engine order, global budget only)
flat_topk   no     no         no
structure   yes    no         yes
diversity   no     yes        no
full        yes    yes        yes
=========== ====== ========== ===============

The length penalty, the relevance gate, the global budget and ``max_chunks``
apply in every paper variant: they are what makes a bubble a budgeted top-k at all.

``engine_topk`` is the peer baseline, not a paper variant: the engine's own order
cut at the budget, what a plain retriever with a token limit gives. Candidates
are considered in ``es_rank`` order and only the global budget gate decides (a
chunk that does not fit is skipped and the next one tried), so every evaluation
shows whether the bubble beats doing nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from esbubble.config import BubbleConfig
from esbubble.models import Variant


class VariantSwitches(BaseModel):
    """Which optional stages a variant runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    priors: bool
    redundancy: bool
    section_budgets: bool
    engine_order: bool = False
    relevance_gate: bool = True
    max_chunks: bool = True


VARIANTS: dict[Variant, VariantSwitches] = {
    "engine_topk": VariantSwitches(
        priors=False,
        redundancy=False,
        section_budgets=False,
        engine_order=True,
        relevance_gate=False,
        max_chunks=False,
    ),
    "flat_topk": VariantSwitches(priors=False, redundancy=False, section_budgets=False),
    "structure": VariantSwitches(priors=True, redundancy=False, section_budgets=True),
    "diversity": VariantSwitches(priors=False, redundancy=True, section_budgets=False),
    "full": VariantSwitches(priors=True, redundancy=True, section_budgets=True),
}


def token_matched_config(config: BubbleConfig, tokens_used: int) -> BubbleConfig:
    """The profile with ``T_B`` set to what ``full`` used (the paper's Table 1b).

    A budget must be positive, so a ``full`` run that used no tokens gives a
    budget of 1 token (which in practice selects nothing, like ``full`` did).
    """
    return config.with_overrides(token_budget=max(1, tokens_used))
