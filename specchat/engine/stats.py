"""Collect the timings and counts of one generation into GenerationStats."""

from __future__ import annotations

import statistics
import time

import mlx.core as mx

from .config import GenerationConfig
from .draft_stop import TENTHS, checked_drafts
from .events import GenerationStats, RoundResult
from .modes import SpecMode


class StatsRecorder:
    """Times prefill and decode, counts rounds and acceptance, reads peak memory."""

    def __init__(self, cfg: GenerationConfig, prompt_tokens: int, cached_tokens: int):
        mx.reset_peak_memory()
        self.cfg = cfg
        self.prompt_tokens = prompt_tokens
        self.cached_tokens = cached_tokens
        self.start = time.perf_counter()
        self.prefill_end = self.start
        self.first_token: float | None = None
        self.rounds = self.drafted = self.accepted = self.k_sum = 0
        self.speculative_tokens = 0
        self.k_rounds: dict[int, int] = {}
        self.drafter_rounds: dict[str, tuple[int, int]] = {}
        self.stop_confidences: list[float] = []
        self.by_confidence: dict[float, list[int]] = {}

    def prefill_done(self) -> None:
        """Mark the end of prompt processing."""
        self.prefill_end = time.perf_counter()

    def tokens_emitted(self, n: int) -> None:
        """Note emitted tokens; the first ones set the time to first token."""
        if n and self.first_token is None:
            self.first_token = time.perf_counter()

    def round_done(self, result: RoundResult) -> None:
        """Add one round's counts; a K=0 round (auto K's plain burst) counts its tokens as plain decoding."""
        self.rounds += 1
        self.drafted += result.drafted
        self.accepted += result.accepted
        if result.num_draft_tokens > 0:
            self.k_sum += result.num_draft_tokens
            self.speculative_tokens += result.emitted
            self.k_rounds[result.num_draft_tokens] = self.k_rounds.get(result.num_draft_tokens, 0) + 1
        if result.drafter:
            rounds, emitted = self.drafter_rounds.get(result.drafter, (0, 0))
            self.drafter_rounds[result.drafter] = (rounds + 1, emitted + result.emitted)
        if result.stopped_early and result.stop_confidence is not None:
            self.stop_confidences.append(result.stop_confidence)
        for tenth, accepted in checked_drafts(result.confidences, result.accepted):
            counts = self.by_confidence.setdefault(tenth / TENTHS, [0, 0])
            counts[0] += accepted
            counts[1] += 1

    def finish(self, generated: int, stop_reason: str) -> GenerationStats:
        """The final stats; decode speed counts every generated token from the end of prefill."""
        end = time.perf_counter()
        prefill_s = self.prefill_end - self.start
        decode_s = end - self.prefill_end
        speculative = self.cfg.mode != SpecMode.BASELINE
        drafting_rounds = sum(self.k_rounds.values())
        return GenerationStats(
            prompt_tokens=self.prompt_tokens,
            cached_prompt_tokens=self.cached_tokens,
            generated_tokens=generated,
            ttft_s=(self.first_token or end) - self.start,
            first_token_s=max((self.first_token or end) - self.prefill_end, 0.0),
            prefill_tokens_per_s=(self.prompt_tokens - self.cached_tokens) / prefill_s if prefill_s > 0 else 0.0,
            decode_tokens_per_s=generated / decode_s if decode_s > 0 else 0.0,
            rounds=self.rounds,
            drafted=self.drafted,
            accepted=self.accepted,
            acceptance_rate=self.accepted / self.drafted if self.drafted else 0.0,
            mean_accepted_per_round=self.accepted / drafting_rounds if drafting_rounds else 0.0,
            peak_memory_bytes=mx.get_peak_memory(),
            mode=self.cfg.mode,
            num_draft_tokens=self.cfg.max_draft_tokens if speculative else 0,
            auto_k=speculative and self.cfg.auto_k,
            mean_k=self.k_sum / drafting_rounds if drafting_rounds else 0.0,
            prefill_s=prefill_s,
            decode_s=decode_s,
            stop_reason=stop_reason,
            max_tokens=self.cfg.max_tokens,
            plain_tokens=generated - self.speculative_tokens,
            speculative_tokens=self.speculative_tokens,
            k_rounds=dict(sorted(self.k_rounds.items())),
            drafter_rounds=dict(sorted(self.drafter_rounds.items())),
            sampling=sampling_text(self.cfg),
            early_stops=len(self.stop_confidences),
            median_stop_confidence=statistics.median(self.stop_confidences) if self.stop_confidences else None,
            confidence_acceptance=tuple(
                (edge, hits, total) for edge, (hits, total) in sorted(self.by_confidence.items())
            ),
        )


def sampling_text(cfg: GenerationConfig) -> str:
    """The sampling settings in a few words: 'greedy', or e.g. 'T=0.7 top_p=0.9 top_k=20'."""
    if cfg.greedy:
        return "greedy"
    parts = [f"T={cfg.temperature:g}"]
    if cfg.top_p < 1:
        parts.append(f"top_p={cfg.top_p:g}")
    if cfg.top_k:
        parts.append(f"top_k={cfg.top_k}")
    if cfg.min_p:
        parts.append(f"min_p={cfg.min_p:g}")
    return " ".join(parts)
