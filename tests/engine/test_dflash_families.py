"""DFlash on every target family the engine runs: the captured layers are the model's own, greedy DFlash
output is plain decoding, partly accepted blocks leave the drafter's context exactly the kept positions'
layers, and a capturing round rolled back leaves the target's caches (KV, Gated DeltaNet state, conv
window) bit-identical to a run over the kept tokens only.

Families: dense qwen3, qwen3_5 hybrids with Gated DeltaNet value heads = 2 x key heads (Qwen3.5's layout)
and = key heads, qwen3_moe, qwen3_5_moe, qwen3_next (hybrid + MoE, untied head), and a 4-bit qwen3_5.
Drafters with sliding-window layers (DFlash and DFlash2) on the dense and hybrid targets, and the window's
reach inside the drafter itself, close the file.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest

from specchat.engine import Engine
from specchat.engine.dflash_model import DFlashConfig, DFlashModel
from specchat.engine.loading import load_model
from specchat.engine.runner import LayerCapture, ModelRunner
from specchat.upstream.hidden_capture import capture_forward, capture_problem, num_layers
from tests.fixtures import dflash_models as dm
from tests.fixtures.dflash2_models import build_dflash2

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


@pytest.mark.slow
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
def test_greedy_dflash2_with_a_random_drafter_is_plain_decoding(family_root, targets, family):
    """DFlash2's convolutions and candidate selector on every family's captured layers."""
    target = targets(family)
    engine = Engine.load(target, dflash=build_dflash2(family_root / f"{family}_dflash2", target))
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=16)).tokens
    for k in (3, 15):
        assert engine.generate(ids, greedy("dflash", k, n=16)).tokens == baseline, f"K={k}"
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


WINDOW = 6  # shorter than the prompt's context: the sliding layer reads part of it


def sliding(config, weights):
    """The drafter's first layer sliding (the block causal in it), its second full."""
    config.update(layer_types=["sliding_attention", "full_attention"], sliding_window=WINDOW)


@pytest.mark.parametrize("build", [dm.build_dflash, build_dflash2])
@pytest.mark.parametrize("family", ["dense", "hybrid_2x"])
def test_greedy_dflash_with_a_sliding_drafter_is_plain_decoding(monkeypatch, family_root, targets, family, build):
    """Plain decoding at every K, blocks partly kept, and a changed prompt (the context trimmed back into
    the window's reach): the drafter's context stays exactly the kept positions' layers."""
    target = targets(family)
    engine = Engine.load(target, dflash=build(family_root / f"{family}_{build.__name__}_sliding", target, edit=sliding))
    assert [layer.self_attn.window for layer in engine.drafters["dflash"].model.layers] == [WINDOW, None]
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=24)).tokens
    assert baseline == mlx_lm_greedy(engine, ids, 24)
    for k in (3, 15):
        assert engine.generate(ids, greedy("dflash", k, n=24)).tokens == baseline, f"K={k}"
    assert_context_equals_a_clean_pass(engine)
    shorter = ids[:-2] + baseline[:1]  # agrees with the held context up to len(ids) - 2 only
    assert engine.generate(shorter, greedy("dflash", 4, n=16)).tokens == engine.generate(shorter, greedy(n=16)).tokens
    with monkeypatch.context() as patch:
        Oracle(patch, engine, ids + baseline, wrong=lambda position: position % 5 == 0)
        events = list(engine.stream(ids, greedy("dflash", 6, n=24)))
    assert list(events[-1].tokens) == baseline
    assert any(0 < r.accepted < r.drafted for r in rounds_of(events))
    assert_context_equals_a_clean_pass(engine)


def sliding_model(dense_target, is_causal: bool | None, layers: int = 1) -> DFlashModel:
    """A random drafter whose layers all slide with a window of WINDOW."""
    config = dm.dflash_config(dense_target, layers=layers)
    config.update(layer_types=["sliding_attention"] * layers, sliding_window=WINDOW)
    if is_causal is not None:
        config["is_causal"] = is_causal
    mx.random.seed(11)
    return DFlashModel(DFlashConfig.from_dict(config))


def random_inputs(model: DFlashModel, context: int, length: int) -> tuple[mx.array, mx.array]:
    """Random captured features for `context` positions and random embeddings for a block of `length`."""
    cfg = model.config
    features = mx.random.normal((context, len(cfg.target_layer_ids) * cfg.hidden_size))
    return features, mx.random.normal((length, cfg.hidden_size))


def block_rows(model: DFlashModel, features: mx.array, embeds: mx.array) -> mx.array:
    cache = model.make_cache()
    model.add_context(features, cache)
    return model.block(embeds, cache)


@pytest.mark.parametrize("row", [0, 1, 3, WINDOW - 1])
def test_a_sliding_row_reads_the_context_positions_of_its_window_only(dense_target, row):
    """Causal sliding layer, context 0..p-1, block row i at p + i: changing context position p + row - W
    (just out of row `row`'s window, just in that of the rows before it) moves rows < row only."""
    model = sliding_model(dense_target, None)
    context, length = 12, 8
    mx.random.seed(12)
    features, embeds = random_inputs(model, context, length)
    before = block_rows(model, features, embeds)
    position = context + row - WINDOW
    changed = block_rows(model, features.at[position].add(1.0), embeds)
    moved = [i for i in range(length) if not mx.array_equal(before[i], changed[i]).item()]
    assert moved == list(range(row))


def test_a_bidirectional_sliding_block_reads_the_first_rows_window(dense_target):
    """is_causal false, two layers: the second reads every row's output of the first, so a context position
    moves the whole block exactly when it is in row 0's window (p - W + 1..p - 1)."""
    model = sliding_model(dense_target, False, layers=2)
    context, length = 12, 8
    mx.random.seed(13)
    features, embeds = random_inputs(model, context, length)
    before = block_rows(model, features, embeds)
    for position, moves in ((context - WINDOW, False), (context - WINDOW + 1, True)):
        changed = block_rows(model, features.at[position].add(1.0), embeds)
        same = [mx.array_equal(before[i], changed[i]).item() for i in range(length)]
        assert same == [not moves] * length, position
