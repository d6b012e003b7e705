"""Logprobs come from the target's distribution: the same with speculation on and off, equal to a
teacher-forced forward of the target, 0.0 for tokens a grammar forces, and carried by the remote wire."""

import itertools
import json
import math

import mlx.core as mx
import pytest

from specchat.engine import ConfigError, Engine, GenerationConfig, RoundResult, TextChunk
from specchat.engine.autok import AutoK
from specchat.engine.grammar import Grammar
from specchat.engine.logprobs import MAX_TOP_LOGPROBS, TokenLogprob
from specchat.engine.owner import EngineHost, load_pair_job
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.remote import RemoteEngine
from specchat.server.running import BackgroundServer, free_port
from specchat.server.wire import event_from_json, event_to_json

from .helpers import prompt_ids
from .test_grammar import PERSON, _forced_count

# Measured here: 0.0, every setup (MLX's CPU kernels reduce each row in the same order whether the
# verify pass batches K+1 positions or plain decoding feeds one). A GPU's batched matmuls and chunked
# recurrences sum float32 in another order: that moves a logprob of order 1-10 by a few ulps (~1e-6);
# 1e-4 leaves room for that and still catches any real mismatch (a wrong row is off by > 0.01).
TOLERANCE = 1e-4
N = 5
SETUPS = {  # name -> (target, draft, mode, K)
    "draft-dense-1": ("dense_target", "dense_draft_partial", "draft", 1),
    "draft-dense-3": ("dense_target", "dense_draft_partial", "draft", 3),
    "draft-dense-auto": ("dense_target", "dense_draft_partial", "draft", "auto"),
    "draft-hybrid-1": ("hybrid_target", "hybrid_draft_partial", "draft", 1),
    "draft-hybrid-3": ("hybrid_target", "hybrid_draft_partial", "draft", 3),
    "draft-hybrid-auto": ("hybrid_target", "hybrid_draft_partial", "draft", "auto"),
    "lookup-3": ("hybrid_target", None, "lookup", 3),
    "lookup-auto": ("hybrid_target", None, "lookup", "auto"),
    "mtp-1": ("mtp_partial", None, "mtp", 1),
    "mtp-3": ("mtp_partial", None, "mtp", 3),
    "mtp-auto": ("mtp_partial", None, "mtp", "auto"),
}
SLOW_SETUPS = ("draft-hybrid-3", "draft-hybrid-auto", "lookup-3")  # outside the fast subset (-m "not slow")
_ENGINES: dict[tuple[str, str | None], Engine] = {}


def engine_for(request, target: str, draft: str | None = None) -> Engine:
    """One engine per pair for the module (loading is the slow part)."""
    if (target, draft) not in _ENGINES:
        paths = [request.getfixturevalue(name) for name in (target, draft) if name]
        _ENGINES[(target, draft)] = Engine.load(*paths)
    return _ENGINES[(target, draft)]


def run(engine: Engine, ids: list[int] | None = None, **kw) -> tuple[list[int], list[TokenLogprob], list]:
    """(tokens, their logprobs, every event) of one reply to ids (the helpers' prompt by default)."""
    kw.setdefault("max_tokens", 40)
    events = list(engine.stream(ids or prompt_ids(engine), GenerationConfig(**kw)))
    chunks = [e for e in events if isinstance(e, TextChunk)]
    for chunk in chunks:
        assert len(chunk.logprobs) == (len(chunk.token_ids) if kw.get("logprobs") is not None else 0)
        assert [lp.token for lp in chunk.logprobs] == list(chunk.token_ids)[: len(chunk.logprobs)]
    return [t for c in chunks for t in c.token_ids], [lp for c in chunks for lp in c.logprobs], events


def repeating_prompt(engine: Engine) -> list[int]:
    """The prompt, its greedy reply and the reply's start: prompt lookup finds drafts the target accepts."""
    ids = prompt_ids(engine)
    reply = engine.generate(ids, GenerationConfig(max_tokens=40)).tokens
    return ids + reply + reply[:5]


def reference(engine: Engine, tokens: list[int], ids: list[int] | None = None) -> list[list[float]]:
    """The target's log_softmax at each reply position from one full-sequence forward (teacher forcing)."""
    ids = ids or prompt_ids(engine)
    logits = engine.target.model(mx.array(ids + tokens)[None])[0].astype(mx.float32)
    logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    return logprobs[len(ids) - 1 : len(ids) - 1 + len(tokens)].tolist()


def largest_difference(a: list[TokenLogprob], b: list[TokenLogprob]) -> float:
    """The largest gap between two runs' chosen and top logprobs (the same tokens and top ids required)."""
    assert [x.token for x in a] == [y.token for y in b]
    assert [[t for t, _ in x.top] for x in a] == [[t for t, _ in y.top] for y in b]
    gaps = [abs(x.logprob - y.logprob) for x, y in zip(a, b)]
    gaps += [abs(p - q) for x, y in zip(a, b) for (_, p), (_, q) in zip(x.top, y.top)]
    return max(gaps, default=0.0)


def test_the_config_checks_logprobs_against_the_limits_table():
    for value in (None, 0, 7, MAX_TOP_LOGPROBS):
        assert GenerationConfig(logprobs=value).logprobs == value
    for value in (-1, MAX_TOP_LOGPROBS + 1, 1.5, True, "3", math.nan):
        with pytest.raises(
            ConfigError, match=r"^logprobs \(top alternatives\) must be a whole number between 0 and 20"
        ):
            GenerationConfig(logprobs=value)


@pytest.mark.parametrize(
    "target,draft,mode",
    [
        ("dense_target", None, "baseline"),
        pytest.param("hybrid_target", "hybrid_draft_partial", "draft", marks=pytest.mark.slow),
    ],
)
def test_greedy_logprobs_change_no_token_and_rank_the_alternatives(request, target, draft, mode):
    engine = engine_for(request, target, draft)
    without, none, _ = run(engine, mode=mode, num_draft_tokens=3)
    assert none == []
    for n in (0, 1, N, MAX_TOP_LOGPROBS):
        tokens, logprobs, _ = run(engine, mode=mode, num_draft_tokens=3, logprobs=n)
        assert tokens == without and len(logprobs) == len(tokens)
        for lp in logprobs:
            assert len(lp.top) == n and lp.logprob <= 0
            assert all(v <= 0 for _, v in lp.top)
            assert [v for _, v in lp.top] == sorted((v for _, v in lp.top), reverse=True)
            assert len({t for t, _ in lp.top}) == n
            if n:  # greedy picks the likeliest token: its logprob is the top alternative's
                assert lp.top[0] == (lp.token, lp.logprob)


@pytest.mark.parametrize(
    "setup", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_SETUPS else name for name in SETUPS]
)
def test_speculation_gives_plain_decodings_logprobs(request, monkeypatch, setup):
    target, draft, mode, k = SETUPS[setup]
    if k == "auto":  # auto K chooses by measured time: scripted here, so both kinds of round surely come
        ks = itertools.cycle([3, 0])
        monkeypatch.setattr(AutoK, "choose", lambda self: next(ks))
        monkeypatch.setattr(AutoK, "burst_length", lambda self: 3)
    engine = engine_for(request, target, draft)
    ids = repeating_prompt(engine) if mode == "lookup" else prompt_ids(engine)
    plain_tokens, plain, _ = run(engine, ids, logprobs=N)
    tokens, logprobs, events = run(engine, ids, mode=mode, num_draft_tokens=k, logprobs=N)
    assert tokens == plain_tokens
    assert largest_difference(logprobs, plain) <= TOLERANCE
    rounds = [e for e in events if isinstance(e, RoundResult)]
    assert any(r.accepted for r in rounds), "no accepted draft: the verify rows were not exercised"
    if k == "auto":  # the plain bursts report their steps' logprobs too
        assert any(r.num_draft_tokens == 0 for r in rounds)


@pytest.mark.parametrize("temperature", [0.0, 0.8])
@pytest.mark.parametrize(
    "target,draft,mode,k",
    [
        ("dense_target", None, "baseline", 1),
        ("hybrid_target", None, "baseline", 1),
        ("dense_target", "dense_draft_partial", "draft", 3),
        pytest.param("hybrid_target", "hybrid_draft_partial", "draft", 3, marks=pytest.mark.slow),
        ("mtp_partial", None, "mtp", 2),
    ],
)
def test_logprobs_equal_a_teacher_forced_forward_of_the_target(request, target, draft, mode, k, temperature):
    # Sampled replies differ between modes, so each is checked against the target's own forward pass;
    # the logprobs are at temperature 1 whatever the sampling temperature.
    engine = engine_for(request, target, draft)
    tokens, logprobs, _ = run(engine, mode=mode, num_draft_tokens=k, logprobs=N, temperature=temperature, seed=3)
    ref = reference(engine, tokens)
    assert len(logprobs) == len(tokens) > 0
    for lp, row in zip(logprobs, ref):
        assert abs(lp.logprob - row[lp.token]) <= TOLERANCE
        likeliest = sorted(range(len(row)), key=lambda t: -row[t])[:N]
        assert [t for t, _ in lp.top] == likeliest
        assert all(abs(v - row[t]) <= TOLERANCE for t, v in lp.top)


@pytest.mark.parametrize(
    "target,draft,mode",
    [
        ("dense_target", None, "baseline"),
        ("dense_target", "dense_draft_partial", "draft"),
        ("hybrid_target", None, "lookup"),
        ("mtp_partial", None, "mtp"),
    ],
)
def test_under_a_grammar_forced_tokens_carry_zero_and_chosen_ones_the_masked_distribution(request, target, draft, mode):
    engine = engine_for(request, target, draft)
    grammar = Grammar.json_schema(PERSON)
    tokens, logprobs, _ = run(engine, None, mode=mode, num_draft_tokens=3, logprobs=N, grammar=grammar, max_tokens=96)
    assert len(logprobs) == len(tokens)
    forced = [lp for lp in logprobs if lp.top == ()]
    assert len(forced) == _forced_count(engine, grammar, tokens) >= 8
    assert all(lp.logprob == 0.0 for lp in forced)
    ref = reference(engine, tokens)
    for lp, row in zip(logprobs, ref):
        assert all(math.isfinite(v) and v <= 0 for _, v in lp.top) and len(lp.top) <= N
        if lp.top:  # renormalised over what the grammar allows: never below the unmasked logprob
            assert lp.top[0] == (lp.token, lp.logprob)
            assert row[lp.token] - TOLERANCE <= lp.logprob <= 0
    if mode != "baseline":
        plain_tokens, plain, _ = run(engine, None, logprobs=N, grammar=grammar, max_tokens=96)
        assert tokens == plain_tokens
        assert largest_difference(logprobs, plain) <= TOLERANCE


def test_the_remote_wire_carries_logprobs(request):
    engine = engine_for(request, "dense_target", "dense_draft_partial")
    _, logprobs, events = run(engine, mode="draft", num_draft_tokens=3, logprobs=2)
    chunks = [e for e in events if isinstance(e, TextChunk)]
    assert logprobs and all(isinstance(lp, TokenLogprob) for c in chunks for lp in c.logprobs)
    for chunk in chunks:
        assert event_from_json(json.loads(json.dumps(event_to_json(chunk)))) == chunk
    old = event_to_json(TextChunk("a", (5,), (False,)))
    del old["logprobs"]  # what a server from before logprobs sends
    assert event_from_json(old) == TextChunk("a", (5,), (False,))


def test_a_remote_engine_streams_the_servers_logprobs(dense_target, dense_draft_partial):
    host = EngineHost()
    host.submit("load", load_pair_job(dense_target, dense_draft_partial)).result(timeout=120)
    server = BackgroundServer(EngineBackend(host, 4), ServerOptions(GenerationConfig()), port=free_port())
    server.start()
    try:
        remote = RemoteEngine(server.url)
        cfg = GenerationConfig(mode="draft", num_draft_tokens=2, max_tokens=16, logprobs=3)
        ids = list(remote.tokenizer.encode("def fibonacci(n):\n    "))
        local = Engine.load(dense_target, dense_draft_partial)
        chunks = [e for e in remote.stream(ids, cfg) if isinstance(e, TextChunk)]
        assert chunks == [e for e in local.stream(ids, cfg) if isinstance(e, TextChunk)]
        assert sum(len(c.logprobs) for c in chunks) == 16 and all(len(lp.top) == 3 for c in chunks for lp in c.logprobs)
    finally:
        server.stop()
        host.shutdown()
