"""What a round is expected to bring per second: tokens from per-token acceptance, seconds from this pair's
measured passes (a verify pass by how many drafts it checks, a draft pass)."""

from __future__ import annotations

from dataclasses import dataclass


def expected_tokens(alpha: float, k: int) -> float:
    """Tokens one round yields with k drafts accepted i.i.d. with probability alpha."""
    if alpha >= 1.0:
        return k + 1.0
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


@dataclass(frozen=True)
class Acceptance:
    """A draft's per-token acceptance: its first token's chance, then each next one's given the ones before were
    accepted, by position from the second (the last one holds on): a copy from the conversation is often refused
    at once, and once on, copied a few tokens further (a phrase) more surely than many."""

    first: float
    then: tuple[float, ...]

    @classmethod
    def iid(cls, alpha: float) -> Acceptance:
        """Every token at the same chance."""
        return cls(alpha, (alpha,))

    def tokens(self, k: int) -> float:
        """Tokens a round with k drafts yields."""
        total, chance = 1.0, self.first
        for i in range(k):
            if i:
                chance *= self.then[min(i - 1, len(self.then) - 1)]
            total += chance
        return total


@dataclass(frozen=True)
class PassCosts:
    """This pair's passes: a verify pass with k drafts by k (k = 0: one plain token) and one draft pass, in
    seconds as measured (or in verify passes, for a prior); one_pass_draft: any K drafts in one pass."""

    verify: tuple[float, ...]
    draft_step: float
    one_pass_draft: bool = False

    @classmethod
    def flat(cls, k_max: int, draft_share: float, one_pass_draft: bool = False) -> PassCosts:
        """Nothing measured: every verify pass costs one, a draft pass draft_share of that."""
        return cls((1.0,) * (k_max + 1), draft_share, one_pass_draft)

    def round_s(self, k: int, drafted: bool) -> float:
        """A round checking k drafts: its verify pass, and the draft passes when a model drafted them."""
        passes = (min(k, 1) if self.one_pass_draft else k) if drafted else 0
        return self.verify[min(k, len(self.verify) - 1)] + passes * self.draft_step

    def best(self, acceptance: Acceptance, depth: int, drafted: bool) -> tuple[int, float]:
        """The k in 1..depth with the most expected tokens per second at this acceptance, and that rate."""
        rates = {k: acceptance.tokens(k) / self.round_s(k, drafted) for k in range(1, max(depth, 1) + 1)}
        k = max(rates, key=rates.__getitem__)
        return k, rates[k]
