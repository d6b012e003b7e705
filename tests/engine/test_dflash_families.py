"""DFlash on every target family the engine runs: the captured layers are the model's own, greedy DFlash
output is plain decoding, partly accepted blocks leave the drafter's context exactly the kept positions'
layers, and a capturing round rolled back leaves the target's caches (KV, Gated DeltaNet state, conv
window) bit-identical to a run over the kept tokens only.

Families: dense qwen3, qwen3_5 hybrids with Gated DeltaNet value heads = 2 x key heads (Qwen3.5's layout)
and = key heads, qwen3_moe, qwen3_5_moe, qwen3_next (hybrid + MoE, untied head), and a 4-bit qwen3_5.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest

from specchat.engine import Engine
from specchat.engine.loading import load_model
from specchat.engine.runner import LayerCapture, ModelRunner
from specchat.upstream.hidden_capture import capture_forward, capture_problem, num_layers
from tests.fixtures import dflash_models as dm

from .helpers import greedy, mlx_lm_greedy, prompt_ids
from .test_dflash import Oracle, assert_context_equals_a_clean_pass, rounds_of
from .test_rollback import PROMPT, ROUND, assert_same_caches, reference

FAMILIES = ["dense", "hybrid_2x", "hybrid_1x", "qwen3_moe", "qwen3_5_moe", "qwen3_next", "hybrid_4bit"]


@pytest.fixture(scope="module")
def family_root(tmp_path_factory):
    return tmp_path_factory.mktemp("dflash_families")


@pytest.fixture(scope="module")
def targets(family_root, dense_target, hybrid_target):
    """Each family's target folder, built on first use."""
    builders = {
        "dense": lambda folder: dense_target,
        "hybrid_2x": lambda folder: hybrid_target,
        "hybrid_1x": lambda folder: dm.build_hybrid_heads(folder, value_heads=2, key_heads=2),
        "qwen3_moe": dm.build_qwen3_moe,
        "qwen3_5_moe": dm.build_qwen3_5_moe,
        "qwen3_next": dm.build_qwen3_next,
        "hybrid_4bit": lambda folder: dm.build_quantized(folder, hybrid_target),
    }
    built: dict = {}

    def get(family: str):
        if family not in built:
            built[family] = builders[family](family_root / family)
        return built[family]

    return get


@pytest.fixture(scope="module")
def engines(family_root, targets):
    """Each family's engine with a random DFlash drafter reading its first and last layers, built once."""
    built: dict = {}

    def get(family: str) -> Engine:
        if family not in built:
            target = targets(family)
            built[family] = Engine.load(target, dflash=dm.build_dflash(family_root / f"{family}_dflash", target))
        return built[family]

    return get


def layer_ids(model) -> tuple[int, ...]:
    """First, middle and last layer: on a 2-layer target one is named twice, as a config's ids may do."""
    return (0, num_layers(model) // 2, num_layers(model) - 1)


def test_the_families_are_what_they_claim(targets):
    def of(family):
        return load_model(targets(family)).model

    gdn = of("hybrid_2x").language_model.model.layers[0].linear_attn
    assert (gdn.num_v_heads, gdn.num_k_heads) == (4, 2)
    gdn = of("hybrid_1x").language_model.model.layers[0].linear_attn
    assert (gdn.num_v_heads, gdn.num_k_heads) == (2, 2)
    for family in ("qwen3_moe", "qwen3_5_moe", "qwen3_next"):
        assert any("switch_mlp" in name for name, _ in of(family).named_modules()), family
    assert isinstance(of("qwen3_next").lm_head, nn.Linear)  # an untied head: project_logits' other path
    quantized = of("hybrid_4bit")
    assert any(isinstance(m, nn.QuantizedLinear) and m.bits == 4 for _, m in quantized.named_modules())


@pytest.mark.parametrize("family", FAMILIES)
def test_captured_layers_are_the_models_own_outputs(engines, family):
    engine = engines(family)
    model = engine.target.model
    assert capture_problem(model) is None
    ids = mx.array(prompt_ids(engine))[None]
    wanted = layer_ids(model)
    want, outputs = spied_call(model, ids, wanted)
    got, captured = capture_forward(model, ids, None, wanted)
    assert mx.array_equal(got, want).item()
    for i, rows in zip(wanted, captured):
        assert mx.array_equal(rows, outputs[i]).item(), f"layer {i}"


def spied_call(model, ids: mx.array, wanted) -> tuple[mx.array, dict[int, mx.array]]:
    """model(ids) and the outputs the wanted layers returned during that call."""
    layers = model.layers
    seen: dict[int, mx.array] = {}
    for i in wanted:

        class Spy(type(layers[i])):
            def __call__(self, *args, _i=i, **kwargs):
                seen[_i] = super().__call__(*args, **kwargs)
                return seen[_i]

        layers[i].__class__ = Spy
    try:
        return model(ids), seen
    finally:
        for i in wanted:
            layers[i].__class__ = type(layers[i]).__mro__[1]


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_dflash_with_a_random_drafter_is_plain_decoding(engines, family):
    engine = engines(family)
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=20))
    assert baseline.tokens == mlx_lm_greedy(engine, ids, 20) and len(set(baseline.tokens)) > 8
    for k in (3, 15):
        result = engine.generate(ids, greedy("dflash", k, n=20))
        assert result.tokens == baseline.tokens, f"K={k}"
        assert result.stats.acceptance_rate < 1.0  # rounds were rejected in part
    assert_context_equals_a_clean_pass(engine)


@pytest.mark.parametrize("family", FAMILIES)
def test_partly_accepted_blocks_keep_the_output_and_an_exact_context(monkeypatch, engines, family):
    """Drafts right but at every fifth position: rounds keep part of each block, the target rolls the rest
    back, and the drafter's context holds exactly the kept positions' layers."""
    engine = engines(family)
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=24)).tokens
    Oracle(monkeypatch, engine, ids + baseline, wrong=lambda position: position % 5 == 0)
    events = list(engine.stream(ids, greedy("dflash", 6, n=24)))
    assert list(events[-1].tokens) == baseline
    assert any(0 < r.accepted < r.drafted for r in rounds_of(events))
    assert_context_equals_a_clean_pass(engine)


@pytest.mark.parametrize("keep", [0, 2, 5])
@pytest.mark.parametrize("family", FAMILIES)
def test_a_capturing_round_rolled_back_leaves_the_caches_of_the_kept_tokens(targets, family, keep):
    folder = targets(family)
    rows: list[tuple[int, mx.array]] = []
    runner = ModelRunner(load_model(folder).model)
    runner.layer_capture = LayerCapture(layer_ids(runner.model), lambda position, r: rows.append((position, r)))
    runner.prefill(PROMPT)
    runner.begin()
    runner.forward(mx.array(ROUND))
    runner.commit_keep(keep)
    assert rows[-1][0] == len(PROMPT) and rows[-1][1].shape[0] == len(ROUND)  # the round was captured
    assert_same_caches(runner, reference(folder, keep))
