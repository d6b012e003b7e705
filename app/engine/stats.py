"""Collect the timings and counts of one generation into GenerationStats."""

from __future__ import annotations

import time

import mlx.core as mx

from .config import GenerationConfig
from .events import GenerationStats, RoundResult


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

    def prefill_done(self) -> None:
        """Mark the end of prompt processing."""
        self.prefill_end = time.perf_counter()

    def tokens_emitted(self, n: int) -> None:
        """Note emitted tokens; the first ones set the time to first token."""
        if n and self.first_token is None:
            self.first_token = time.perf_counter()

    def round_done(self, result: RoundResult) -> None:
        """Add one speculative round's counts."""
        self.rounds += 1
        self.k_sum += result.num_draft_tokens
        self.drafted += result.drafted
        self.accepted += result.accepted

    def finish(self, generated: int, stop_reason: str) -> GenerationStats:
        """The final stats; decode speed counts every generated token from the end of prefill."""
        end = time.perf_counter()
        prefill_s = self.prefill_end - self.start
        decode_s = end - self.prefill_end
        speculative = self.cfg.mode != "baseline"
        return GenerationStats(
            prompt_tokens=self.prompt_tokens,
            cached_prompt_tokens=self.cached_tokens,
            generated_tokens=generated,
            ttft_s=(self.first_token or end) - self.start,
            prefill_tokens_per_s=(self.prompt_tokens - self.cached_tokens) / prefill_s if prefill_s > 0 else 0.0,
            decode_tokens_per_s=generated / decode_s if decode_s > 0 else 0.0,
            rounds=self.rounds,
            drafted=self.drafted,
            accepted=self.accepted,
            acceptance_rate=self.accepted / self.drafted if self.drafted else 0.0,
            mean_accepted_per_round=self.accepted / self.rounds if self.rounds else 0.0,
            peak_memory_bytes=mx.get_peak_memory(),
            mode=self.cfg.mode,
            num_draft_tokens=self.cfg.max_draft_tokens if speculative else 0,
            auto_k=speculative and self.cfg.auto_k,
            mean_k=self.k_sum / self.rounds if self.rounds else 0.0,
            prefill_s=prefill_s,
            decode_s=decode_s,
            stop_reason=stop_reason,
        )
