"""Constrained decoding: the reply follows a grammar with every drafter, speculation stays exact under it,
forced tokens cost no model pass, and a schema llguidance cannot compile fails before any model work."""

import json
from dataclasses import asdict, replace

import mlx.core as mx
import numpy as np
import pytest

from specchat.engine import ConfigError, Engine, ErrorKind, Failed, GenerationConfig, RoundResult, TextChunk
from specchat.engine.constraint import DraftConstraint, GrammarState, mask_logits
from specchat.engine.drafters import Draft, DraftRequest
from specchat.engine.grammar import Grammar, check_grammar
from specchat.engine.loading import vocab_size
from specchat.engine.runner import ModelRunner
from specchat.engine.sampling import Sampler
from specchat.engine.speculative import _allowed_draft
from specchat.engine.verify import verify_sampled
from specchat.server.errors import ApiError
from specchat.server.structured import response_format_grammar, tool_call_grammar

from .helpers import prompt_ids
from .test_sampling import chi_square

MAX_TOKENS = 160
TAGS = ("red", "green", "blue")
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "member": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": list(TAGS)}, "maxItems": 3},
    },
    "required": ["name", "age", "member", "tags"],
    "additionalProperties": False,
}
SETUPS = {  # mode -> (target, draft) fixtures
    "baseline": ("dense_target", None),
    "draft": ("dense_target", "dense_draft_partial"),
    "draft-hybrid": ("hybrid_target", "hybrid_draft_partial"),
    "lookup": ("hybrid_target", None),
    "mtp": ("mtp_partial", None),
    "mtp-history": ("mtp_partial", None),
}
_ENGINES: dict[tuple[str, str | None], Engine] = {}


def engine_for(request, setup: str) -> Engine:
    """One engine per pair for the module (loading is the slow part)."""
    target, draft = SETUPS[setup]
    if (target, draft) not in _ENGINES:
        paths = [request.getfixturevalue(name) for name in (target, draft) if name]
        _ENGINES[(target, draft)] = Engine.load(*paths)
    return _ENGINES[(target, draft)]


def config(setup: str, k: int | str = 3, **kw) -> GenerationConfig:
    mode = setup.split("-")[0]
    kw.setdefault("max_tokens", MAX_TOKENS)
    return GenerationConfig(mode=mode, num_draft_tokens=k, mtp_history=setup == "mtp-history", **kw)


def check_person(text: str) -> None:
    """The reply is JSON following PERSON (checked by hand: no jsonschema here)."""
    value = json.loads(text)
    assert set(value) == set(PERSON["properties"]), value
    assert isinstance(value["name"], str) and len(value["name"]) <= 12
    assert isinstance(value["age"], int) and not isinstance(value["age"], bool) and 0 <= value["age"] <= 120
    assert isinstance(value["member"], bool)
    assert isinstance(value["tags"], list) and len(value["tags"]) <= 3 and set(value["tags"]) <= set(TAGS)


# --- the grammar itself ---


def test_a_grammar_is_checked_by_llguidance_and_names_the_problem():
    check_grammar(Grammar.json_schema(PERSON))
    check_grammar(Grammar.json_object())
    check_grammar(Grammar.lark('start: "yes" | "no"'))
    with pytest.raises(ConfigError, match="Invalid type: strin"):
        check_grammar(Grammar.json_schema({"type": "object", "properties": {"a": {"type": "strin"}}}))
    with pytest.raises(ConfigError, match="does not exist"):
        check_grammar(Grammar.json_schema({"$ref": "#/definitions/missing"}))
    with pytest.raises(ConfigError, match="Lark grammar"):
        check_grammar(Grammar.lark("start: ("))
    with pytest.raises(ConfigError, match="grammar kind"):
        Grammar("xml", "<a/>")


def test_a_config_takes_a_grammar_or_the_dict_of_one():
    grammar = Grammar.json_schema(PERSON)
    assert GenerationConfig(grammar=grammar).grammar is grammar
    wired = asdict(GenerationConfig(grammar=grammar))  # what a remote engine sends
    assert replace(GenerationConfig(), **json.loads(json.dumps(wired))).grammar == grammar
    with pytest.raises(ConfigError, match="grammar must be"):
        GenerationConfig(grammar="json")


def test_an_uncompilable_schema_fails_before_any_model_work(dense_target, monkeypatch):
    engine = Engine.load(dense_target)
    ids = prompt_ids(engine)
    calls = []
    monkeypatch.setattr(ModelRunner, "forward", lambda self, tokens: calls.append("forward"))
    monkeypatch.setattr(ModelRunner, "prefill_chunks", lambda self, tokens: calls.append("prefill") or iter(()))
    bad = Grammar.json_schema({"type": "object", "properties": {"a": {"type": "strin"}}})
    events = list(engine.stream(ids, GenerationConfig(mode="lookup", grammar=bad)))
    assert len(events) == 1 and isinstance(events[0], Failed), events
    assert events[0].kind == ErrorKind.CONFIG and "Invalid type: strin" in events[0].message
    assert calls == []


# --- every drafter gives valid JSON ---


@pytest.mark.slow
@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("k", [3, "auto"])
@pytest.mark.parametrize("setup", list(SETUPS))
def test_even_a_random_model_writes_json_that_follows_the_schema(request, setup, k, temperature):
    engine = engine_for(request, setup)
    cfg = config(setup, k, temperature=temperature, seed=4, grammar=Grammar.json_schema(PERSON))
    result = engine.generate(prompt_ids(engine), cfg)
    check_person(result.text)
    assert result.stats.stop_reason == "eos" and len(result.tokens) < MAX_TOKENS


@pytest.mark.parametrize("setup", ["baseline", "draft", "lookup", pytest.param("mtp", marks=pytest.mark.slow)])
def test_json_object_gives_an_object_and_a_cut_reply_stops_at_max_tokens(request, setup):
    engine = engine_for(request, setup)
    ids = prompt_ids(engine, "Answer in JSON: ")
    result = engine.generate(ids, config(setup, temperature=0.8, seed=1, grammar=Grammar.json_object()))
    if result.stats.stop_reason == "eos":
        assert isinstance(json.loads(result.text), dict)
    short = engine.generate(ids, config(setup, max_tokens=3, grammar=Grammar.json_schema(PERSON)))
    assert len(short.tokens) == 3 and short.stats.stop_reason == "length"
    assert short.text == '{"n'  # forced tokens count towards max_tokens


# --- exactness: speculation under a grammar is constrained plain decoding ---


GRAMMARS = {
    "person": Grammar.json_schema(PERSON),
    "object": Grammar.json_object(),
    "lark": Grammar.lark('start: "Name: " /[a-z ]{1,20}/ "\\nAge: " /[0-9]{1,2}/ "\\n"'),
}


# The fast subset (-m "not slow") keeps one grammar per drafter; every pair runs in the full suite.
FAST_GRAMMAR = {"draft": "person", "lookup": "lark", "mtp-history": "lark"}


@pytest.mark.parametrize(
    "setup,grammar",
    [
        pytest.param(setup, grammar, marks=() if FAST_GRAMMAR.get(setup) == grammar else pytest.mark.slow)
        for setup in ["draft", "draft-hybrid", "lookup", "mtp", "mtp-history"]
        for grammar in GRAMMARS
    ],
)
@pytest.mark.slow
def test_greedy_speculation_under_a_grammar_equals_constrained_plain_decoding(request, setup, grammar):
    engine = engine_for(request, setup)
    for text in ("def fibonacci(n):\n    ", "The quick brown fox"):
        ids = prompt_ids(engine, text)
        plain = engine.generate(ids, config("baseline", max_tokens=64, grammar=GRAMMARS[grammar]))
        assert plain.tokens, "the grammar gave nothing to compare"
        for k in (1, 2, 4, "auto"):
            result = engine.generate(ids, config(setup, k, max_tokens=64, grammar=GRAMMARS[grammar]))
            assert result.tokens == plain.tokens, f"{setup} K={k} differs from constrained plain decoding"
            assert result.stats.stop_reason == plain.stats.stop_reason


def test_drafts_are_kept_under_a_grammar(request):
    """The exactness test above is not vacuous: a partly agreeing draft gets drafts accepted and rejected."""
    engine = engine_for(request, "draft")
    result = engine.generate(prompt_ids(engine), config("draft", 4, grammar=Grammar.json_schema(PERSON)))
    assert 0.0 < result.stats.acceptance_rate < 1.0


def test_lookup_proposes_only_what_the_grammar_allows_and_the_round_leaves_the_matcher_at_the_reply(request):
    engine = engine_for(request, "baseline")
    tok = engine.tokenizer
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    state = GrammarState.start(Grammar.json_schema(schema), tok, vocab_size(engine.target), tok.eos_token_ids)
    reply = state.forced()
    assert tok.decode(reply) == '{"a":'
    state.consume(reply)
    seq = list(tok.encode('{"a":12,"b":3}\n')) + reply  # what followed '":' before: "12" then a forbidden ","
    constraint = DraftConstraint(state)
    draft = engine.drafters["lookup"].propose(DraftRequest(seq, 6, Sampler(GenerationConfig()), None, constraint))
    drafts = draft.tokens.tolist()
    assert tok.decode(drafts) == "12" and constraint.tokens == drafts
    assert constraint.target_allowed().shape == (len(drafts) + 1, vocab_size(engine.target))
    constraint.finish(drafts[:1])  # the target kept "1" and chose nothing else
    assert state.forced() == [] and state.allowed()[tok.encode("}")[0]]
    state.consume(list(tok.encode("}")))
    assert state.finished


def _forced_count(engine: Engine, grammar: Grammar, tokens: list[int]) -> int:
    """How many of the reply's tokens the grammar forced, replaying it on a fresh matcher."""
    state = GrammarState.start(grammar, engine.tokenizer, vocab_size(engine.target), engine.tokenizer.eos_token_ids)
    i = forced = 0
    while i < len(tokens):
        ff = state.forced()
        assert tokens[i : i + len(ff)] == ff
        forced += len(ff)
        step = ff or tokens[i : i + 1]
        state.consume(step)
        i += len(step)
    return forced


@pytest.mark.parametrize("setup", ["baseline", "draft", "lookup", "mtp"])
def test_forced_tokens_are_emitted_without_a_model_pass(request, setup, monkeypatch):
    engine = engine_for(request, setup)
    passes = []
    forward = ModelRunner.forward

    def counted(self, tokens):
        if self is engine.runner:
            passes.append(tokens.shape[0])
        return forward(self, tokens)

    monkeypatch.setattr(ModelRunner, "forward", counted)
    grammar = Grammar.json_schema(PERSON)
    events = list(engine.stream(prompt_ids(engine), config(setup, 3, grammar=grammar)))
    tokens = [t for e in events if isinstance(e, TextChunk) for t in e.token_ids]
    forced = _forced_count(engine, grammar, tokens)
    assert forced >= 8, "the schema forces its keys"
    if setup == "baseline":
        assert len(passes) == len(tokens) - forced  # one pass per token the model chose, none for forced ones
    else:
        rounds = [e for e in events if isinstance(e, RoundResult)]
        assert sum(r.emitted for r in rounds) == len(tokens) - forced  # forced tokens come between rounds
        assert len(passes) == len(rounds)  # one verify pass per round


# --- exactness at temperature > 0: both distributions masked and renormalised ---

P = np.array([0.30, 0.25, 0.20, 0.15, 0.10])  # the target's unmasked first token
Q = np.array([0.05, 0.05, 0.30, 0.30, 0.30])  # the draft's
P2 = np.array([0.1, 0.2, 0.3, 0.2, 0.2])
Q2 = np.array([0.5, 0.1, 0.1, 0.1, 0.2])
FIRST = np.array([True, True, False, True, True])  # what the grammar allows first
AFTER = {
    0: [True, False, True, False, True],
    1: [False, True, True, True, False],
    3: [True] * 5,
    4: [False] * 4 + [True],
}


def _renorm(p: np.ndarray, allowed) -> np.ndarray:
    p = np.where(allowed, p, 0.0)
    return p / p.sum()


def _two_masked_tokens(rng, sampler: Sampler) -> tuple[int, int]:
    """Two drafts drawn as DraftSteps does (masked draft logits through the sampler), verified against the masked
    target with the mask advanced along the drafts; a second plain round samples when the first emitted one."""
    d1_logits = mask_logits(mx.log(mx.array(Q, dtype=mx.float32)), FIRST)
    _, q1 = sampler.pick(d1_logits)
    d1 = int(rng.choice(5, p=np.array(q1)))
    _, q2 = sampler.pick(mask_logits(mx.log(mx.array(Q2, dtype=mx.float32)), np.array(AFTER[d1])))
    d2 = int(rng.choice(5, p=np.array(q2)))
    allowed = np.stack([FIRST, AFTER[d1], np.ones(5, dtype=bool)])
    logits = mask_logits(mx.log(mx.array(np.stack([P, P2, P]), dtype=mx.float32)), allowed)
    out = verify_sampled(logits, [d1, d2], mx.stack([q1, q2]), sampler).tokens
    if len(out) == 1:
        out.append(int(rng.choice(5, p=_renorm(P2, AFTER[out[0]]))))
    return out[0], out[1]


@pytest.mark.slow
def test_rejection_sampling_under_a_mask_keeps_the_masked_targets_distribution():
    sampler = Sampler(GenerationConfig(temperature=1.0, seed=11))
    rng = np.random.default_rng(2)
    counts = np.zeros(25, dtype=int)
    for _ in range(4000):
        a, b = _two_masked_tokens(rng, sampler)
        counts[5 * a + b] += 1
    first = _renorm(P, FIRST)
    target = np.concatenate([first[a] * _renorm(P2, AFTER[a]) if FIRST[a] else np.zeros(5) for a in range(5)])
    # 12 cells with p > 0, 11 degrees of freedom: the 99.9% quantile is 31.3
    assert (target > 0).sum() == 12 and chi_square(counts, target) < 31.3
    draft = np.concatenate(
        [_renorm(Q, FIRST)[a] * _renorm(Q2, AFTER[a]) if FIRST[a] else np.zeros(5) for a in range(5)]
    )
    assert chi_square(counts, draft) > 300  # the masked draft's own joint is far: the test can fail


# --- the server's structured output ---


def test_response_format_gives_the_grammar_or_a_400_naming_the_field():
    assert response_format_grammar(None) is None and response_format_grammar({"type": "text"}) is None
    assert response_format_grammar({"type": "json_object"}) == Grammar.json_object()
    spec = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
    assert response_format_grammar(spec) == Grammar.json_schema(PERSON)
    bad_schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "objec"}}}
    for value, param in [
        ({"type": "xml"}, "response_format.type"),
        ("json", "response_format"),
        ({"type": "json_schema"}, "response_format.json_schema"),
        ({"type": "json_schema", "json_schema": {"schema": PERSON}}, "response_format.json_schema.name"),
        (bad_schema, "response_format.json_schema.schema"),
    ]:
        with pytest.raises(ApiError) as caught:
            response_format_grammar(value)
        assert caught.value.status == 400 and caught.value.param == param, caught.value.message
    with pytest.raises(ApiError, match="Invalid type: objec"):
        response_format_grammar(bad_schema)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 16}, "days": {"type": "integer", "maximum": 9}},
            "required": ["city", "days"],
            "additionalProperties": False,
        },
    },
}
CLOCK = {"type": "function", "function": {"name": "now"}}


def test_tool_choice_gives_a_tool_call_grammar_or_a_400():
    assert tool_call_grammar([WEATHER], None) is None and tool_call_grammar([WEATHER], "auto") is None
    assert tool_call_grammar([WEATHER], "none") is None
    assert tool_call_grammar([WEATHER, CLOCK], "required").kind == "lark"
    named = tool_call_grammar([WEATHER, CLOCK], {"type": "function", "function": {"name": "now"}})
    assert '"now"' in named.source and "get_weather" not in named.source
    bad_params = {"type": "function", "function": {"name": "f", "parameters": {"type": "strin"}}}
    for tools, choice, param in [
        ([WEATHER], {"type": "function", "function": {"name": "other"}}, "tool_choice"),
        ([WEATHER], "sometimes", "tool_choice"),
        ([], "required", "tools"),
        ([{"type": "function"}], "required", "tools[0]"),
        ([bad_params], "required", "tools[0].function.parameters"),
    ]:
        with pytest.raises(ApiError) as caught:
            tool_call_grammar(tools, choice)
        assert caught.value.status == 400 and caught.value.param == param, caught.value.message


@pytest.mark.parametrize("setup", ["baseline", "draft", "mtp"])
def test_a_forced_tool_call_is_a_qwen_tool_call_with_valid_arguments(request, setup):
    engine = engine_for(request, setup)
    grammar = tool_call_grammar([WEATHER, CLOCK], "required")
    for seed in range(3):
        text = engine.generate(prompt_ids(engine), config(setup, temperature=1.0, seed=seed, grammar=grammar)).text
        assert text.startswith("<tool_call>\n") and text.endswith("\n</tool_call>"), text
        call = json.loads(text.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>"))
        assert list(call) == ["name", "arguments"] and call["name"] in ("get_weather", "now")
        if call["name"] == "get_weather":
            assert set(call["arguments"]) == {"city", "days"} and call["arguments"]["days"] <= 9
        else:
            assert isinstance(call["arguments"], dict)


def test_a_draft_cut_to_the_grammar_keeps_its_source_and_what_survives_of_its_copy():
    """Auto's marks travel with a cut draft: the source it came from, costless, and the copied tail's length."""

    class AllowsThree:
        def settle(self, drafts: list[int]) -> int:
            return 3

    draft = Draft(mx.array([5, 6, 7, 8]), None, 2, source="lookup", costless=True, copied=2)
    cut = _allowed_draft(draft, AllowsThree(), None)  # type: ignore[arg-type]
    assert cut.tokens.tolist() == [5, 6, 7]
    assert (cut.source, cut.costless, cut.copied, cut.steps) == ("lookup", True, 1, 2)
    model_only = _allowed_draft(replace(draft, copied=0), AllowsThree(), None)  # type: ignore[arg-type]
    assert model_only.copied == 0
