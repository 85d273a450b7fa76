"""The one budget of a bubble: ``T_B``, the bucket caps ``ρ_b·T_B`` and the global_pool slack.

Selection spends it candidate by candidate (the "Context Bubble" paper's
eq. 14/15), expansion spends what selection left on neighbours, and repair asks
how much room a newcomer has when a victim leaves. All three read the same
numbers the same way from this type, so a cap means one thing everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from esbubble.config import BubbleConfig, BucketsConfig, SlackPolicy
from esbubble.core.variants import VARIANTS
from esbubble.models import Bubble, Chunk, FinalReason

# Shares are floats; ρ_b·T_B is rounded down to whole tokens after this tolerance,
# so 0.6 · 1000 is 600 even when the float product is 599.9999999.
_SHARE_EPSILON = 1e-9


def bucket_caps(shares: Mapping[str, float], budget: int) -> dict[str, int]:
    """ρ_b·T_B in whole tokens (token counts are integers, so rounding down changes no verdict)."""
    return {bucket: math.floor(share * budget + _SHARE_EPSILON) for bucket, share in sorted(shares.items())}


@dataclass(frozen=True, slots=True)
class BudgetRules:
    """What a stage after selection needs of the profile to spend the bubble's budget as selection did:
    the bucket map (``[buckets]``) and the slack policy (``[bubble] slack_policy``)."""

    buckets: BucketsConfig
    slack_policy: SlackPolicy

    @classmethod
    def of(cls, config: BubbleConfig) -> BudgetRules:
        return cls(buckets=config.buckets, slack_policy=config.bubble.slack_policy)

    def bucket_of(self, chunk: Chunk) -> str:
        """The bucket a chunk is budgeted under (the profile's map, else the chunk's own)."""
        return self.buckets.bucket_of(chunk.section, chunk.bucket)


@dataclass(slots=True)
class Budget:
    """Tokens spent and left, globally and per bucket, as a bubble grows.

    ``caps`` are the bucket caps in force. A bucket without a cap gets nothing
    when ``closed_to_new`` (selection, where every present bucket has a cap,
    and the strict slack policy), and is bounded by the global budget alone
    otherwise (global_pool after selection, or a variant without section
    budgets). ``count`` is the number of chunks admitted.
    """

    total: int
    caps: dict[str, int]
    closed_to_new: bool = True
    spent: int = 0
    count: int = 0
    bucket_spent: dict[str, int] = field(default_factory=dict)

    def remaining(self) -> float:
        """``T_B`` minus what is spent: the global budget gate's limit."""
        return float(self.total - self.spent)

    def cap_of(self, bucket: str) -> int | None:
        """The bucket's cap, 0 for a bucket closed to newcomers, None when only ``T_B`` bounds it.

        A cap of ``T_B`` or more is None too: what such a bucket has left is never less than what the
        global budget has left, so its cap can never stop a chunk the global budget lets in, and a
        chunk that does not fit is refused by the global budget, not by a section budget it never
        reached (``pool``'s default, where every bucket without a share may spend the whole budget).
        """
        cap = self.caps.get(bucket, 0 if self.closed_to_new else None)
        return None if cap is not None and cap >= self.total else cap

    def bucket_remaining(self, bucket: str) -> float:
        """What the bucket may still take: the section budget gate's limit (``T_B`` when uncapped)."""
        cap = self.cap_of(bucket)
        if cap is None:
            return float(self.total)
        return float(cap - self.bucket_spent.get(bucket, 0))

    def swap_room(self, bucket: str, freed: int) -> float:
        """What a newcomer in ``bucket`` may take when ``freed`` tokens of that bucket just left.

        A bucket may always hold again what it held before the swap, even where the slack
        pool took it past its cap (repair never grows a bucket beyond that).
        """
        cap = self.cap_of(bucket)
        if cap is None:
            return float(self.total)
        used = self.bucket_spent.get(bucket, 0)
        return float(max(cap, used + freed) - used)

    def refusal(self, bucket: str, tokens: int) -> FinalReason | None:
        """Why ``tokens`` more in ``bucket`` would break a budget, or None when they fit."""
        if self.spent + tokens > self.total:
            return "budget_exceeded"
        cap = self.cap_of(bucket)
        if cap is not None and self.bucket_spent.get(bucket, 0) + tokens > cap:
            return "section_budget_exceeded"
        return None

    def spend(self, bucket: str, tokens: int) -> int:
        """Admit ``tokens`` in ``bucket``; returns the number of chunks admitted so far."""
        self.spent += tokens
        self.bucket_spent[bucket] = self.bucket_spent.get(bucket, 0) + tokens
        self.count += 1
        return self.count

    def unspent(self) -> int:
        """The global_pool slack: what the capped buckets left unspent (a cap of ``T_B`` or more caps
        nothing, ``cap_of``)."""
        caps = ((bucket, self.cap_of(bucket)) for bucket in self.caps)
        return sum(max(0, cap - self.bucket_spent.get(bucket, 0)) for bucket, cap in caps if cap is not None)

    def trial(self) -> Budget:
        """A copy to try spending on without touching this budget."""
        return Budget(
            total=self.total,
            caps=self.caps,
            closed_to_new=self.closed_to_new,
            spent=self.spent,
            count=self.count,
            bucket_spent=dict(self.bucket_spent),
        )

    @classmethod
    def after(cls, bubble: Bubble, chunks: Iterable[Chunk], rules: BudgetRules) -> Budget:
        """The budget once ``chunks`` are in, with the bubble's own bucket caps ``ρ_b·T_B``.

        Caps apply only when the bubble's variant uses section budgets. A bucket
        the global_pool slack already took past its cap may not grow further; a
        bucket the bubble had no cap for is bounded by the global budget alone
        under global_pool and gets nothing under strict.
        """
        budget = cls(total=bubble.budget, caps={}, closed_to_new=False)
        for chunk in chunks:
            budget.spend(rules.bucket_of(chunk), chunk.token_count)
        if VARIANTS[bubble.variant].section_budgets:
            strict = rules.slack_policy == "strict"
            caps = dict(bubble.bucket_caps)
            if strict:
                caps.update({b: 0 for b in budget.bucket_spent if b not in caps})
            budget.caps = {b: max(cap, budget.bucket_spent.get(b, 0)) for b, cap in caps.items()}
            budget.closed_to_new = strict
        return budget
