"""Stats tell plain bursts from drafted rounds, name the stop reason, and never claim 0% of nothing."""

import pytest

from specchat.engine import Engine, GenerationConfig, RoundResult
from specchat.engine.stats import StatsRecorder, sampling_text
from specchat.engine.summary import acceptance_text, auto_k_text, speculation_text, stop_text


def recorded(rounds: list[RoundResult], generated: int, cfg: GenerationConfig, stop: str = "eos") -> dict:
    from dataclasses import asdict

    recorder = StatsRecorder(cfg, prompt_tokens=10, cached_tokens=0)
    for r in rounds:
        recorder.round_done(r)
    return asdict(recorder.finish(generated, stop))


def test_auto_k_footer_says_how_much_was_plain_decoding():
    # a plain burst of 150 tokens, then five K=2 rounds: 8 of 10 drafts accepted, 13 tokens emitted
    rounds = [RoundResult(0, 0, 0, 0, 150, 0.0, 1.0)] + [RoundResult(i, 2, 2, 2, 3, 0.1, 0.1) for i in (1, 2, 3, 4)]
    rounds.append(RoundResult(5, 2, 2, 0, 1, 0.1, 0.1))
    stats = recorded(rounds, 163, GenerationConfig(mode="draft", num_draft_tokens="auto", max_tokens=163), "length")
    assert (stats["plain_tokens"], stats["speculative_tokens"], stats["k_rounds"]) == (150, 13, {2: 5})
    assert stats["mean_k"] == 2.0 and stats["mean_accepted_per_round"] == 1.6
    assert speculation_text(stats) == (
        "K auto: plain decoding for 92% of tokens, K=2 for the rest; 80% of drafted tokens accepted"
    )
    assert stop_text(stats) == "max tokens (163)"


def test_nothing_drafted_is_no_acceptance_not_zero_percent():
    stats = recorded(
        [RoundResult(0, 0, 0, 0, 12, 0.0, 1.0)], 12, GenerationConfig(mode="lookup", num_draft_tokens="auto")
    )
    assert stats["drafted"] == 0 and stats["plain_tokens"] == 12
    assert acceptance_text(stats) == "acceptance —"
    assert speculation_text(stats) == "K auto: plain decoding for all tokens; acceptance —"


@pytest.mark.parametrize(
    "reason,cancelled,text",
    [
        ("eos", False, "end of turn"),
        ("length", False, "max tokens (256)"),
        ("cancelled", True, "stopped by you"),
        ("error", True, "error"),
        ("", True, "stopped by you"),
    ],
)
def test_stop_reason_words(reason, cancelled, text):
    assert stop_text({"stop_reason": reason, "max_tokens": 256}, cancelled) == text


def test_older_saved_stats_still_read():
    old = {
        "generated_tokens": 20,
        "mode": "draft",
        "auto_k": True,
        "mean_k": 2.5,
        "drafted": 10,
        "accepted": 7,
        "acceptance_rate": 0.7,
        "stop_reason": "length",
    }
    assert auto_k_text(old) is None and speculation_text(old) == "K auto (mean 2.5); 70% of drafted tokens accepted"
    assert stop_text(old) == "max tokens"


def test_sampling_text_names_the_settings():
    assert sampling_text(GenerationConfig()) == "greedy"
    assert sampling_text(GenerationConfig(temperature=0.7, top_p=0.9, top_k=20)) == "T=0.7 top_p=0.9 top_k=20"


def test_an_auto_k_reply_that_never_drafted_reports_no_acceptance(dense_target):
    from dataclasses import asdict

    engine = Engine.load(dense_target)
    # a two-token raw prompt: prompt lookup has nothing to propose, so auto K's rounds draft nothing
    # (the fixture is seeded and decoding greedy, so the same tokens come everywhere)
    ids = list(engine.tokenizer.encode("zq"))
    result = engine.generate(ids, GenerationConfig(mode="lookup", num_draft_tokens="auto", max_tokens=6))
    stats = result.stats
    assert stats.drafted == 0 and stats.accepted == 0 and stats.rounds > 0
    assert stats.stop_reason == "length" and stats.max_tokens == 6
    text = speculation_text(asdict(stats))
    assert text.endswith("acceptance —") and "%" not in text.split(";")[-1]


def test_ttft_is_prompt_reading_then_the_first_token():
    recorder = StatsRecorder(GenerationConfig(mode="draft", num_draft_tokens=3), prompt_tokens=10, cached_tokens=0)
    recorder.start, recorder.prefill_end, recorder.first_token = 100.0, 131.1, 133.1  # the engine's clock
    stats = recorder.finish(5, "eos")
    assert stats.prefill_s == pytest.approx(31.1) and stats.first_token_s == pytest.approx(2.0)
    assert stats.ttft_s == pytest.approx(stats.prefill_s + stats.first_token_s)
