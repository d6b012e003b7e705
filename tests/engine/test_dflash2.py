"""DFlash2: the published layout loads, its convolution and selector compute what the reference describes,
greedy decoding with it equals plain decoding, and a folder that does not fit is refused by name."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from mlx.utils import tree_flatten

from specchat.engine import Engine
from specchat.engine.dflash2_model import (
    OUTSIDE_MARGIN,
    DFlash2Config,
    DFlash2Model,
    GroupedCausalConv,
    causal_grouped_conv,
)
from specchat.engine.dflash_load import load_dflash
from specchat.engine.dflash_model import DFlashConfig, DFlashModel
from specchat.engine.errors import ModelLoadError
from specchat.engine.grammar import Grammar
from specchat.engine.loading import load_model
from specchat.upstream.hidden_capture import capture_forward
from tests.fixtures import dflash2_models as d2
from tests.fixtures.dflash2_models import build_dflash2

from .helpers import greedy, mlx_lm_greedy, prompt_ids
from .test_dflash import assert_context_equals_a_clean_pass


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("dflash2")


@pytest.fixture(scope="module")
def target(dense_target):
    return load_model(dense_target)


@pytest.fixture(scope="module")
def drafter(root, dense_target, target):
    return load_dflash(build_dflash2(root / "dense", dense_target), target)


def test_the_published_layout_loads_as_dflash2(root, dense_target, target, drafter):
    assert isinstance(drafter.model, DFlash2Model) and drafter.kind == "DFlash2"
    cfg = drafter.config
    assert isinstance(cfg, DFlash2Config)
    assert (cfg.conv_kernel_size, cfg.conv_group_size, cfg.selector_rank, cfg.selector_top_k) == (2, 16, 8, 4)
    assert cfg.vocab_size == 384 and cfg.target_layer_ids == (0, 1) and cfg.block_size == 16
    saved = dict(mx.load(str(root / "dense" / "model.safetensors")))
    model = drafter.model
    assert mx.array_equal(model.layers[1].mlp_conv.base_kernel, saved["layers.1.mlp_conv.base_kernel"]).item()
    selector = model.candidate_selector
    assert mx.array_equal(selector.successor_codebook, saved["candidate_selector.successor_codebook"]).item()
    prefixed = load_dflash(build_dflash2(root / "prefixed", dense_target, prefix="model."), target)
    assert prefixed.config == cfg
    assert mx.array_equal(prefixed.model.candidate_selector.predecessor_codebook, selector.predecessor_codebook).item()


def numpy_conv(x, dynamic, base, group_size):
    """out[t, c] = sum_j (base[j, c] + dynamic[t, j, c // group_size]) * x[t - j, c], x before row 0 = 0."""
    length, width = x.shape
    out = np.zeros_like(x)
    for t in range(length):
        for j in range(base.shape[0]):
            if t - j >= 0:
                for c in range(width):
                    out[t, c] += (base[j, c] + dynamic[t, j, c // group_size]) * x[t - j, c]
    return out


def test_the_convolution_is_grouped_causal_and_two_sided():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 5, 8)).astype(np.float32)
    dynamic = rng.normal(size=(1, 5, 2, 2)).astype(np.float32)
    base = rng.normal(size=(2, 8)).astype(np.float32)
    got = causal_grouped_conv(mx.array(x), mx.array(dynamic), mx.array(base), 4)
    assert np.allclose(np.array(got)[0], numpy_conv(x[0], dynamic[0], base, 4), atol=1e-5)
    conv = GroupedCausalConv(8, 2, 4)
    conv.base_kernel = mx.array(rng.normal(size=(2, 2, 8)).astype(np.float32))
    inner, post = conv.prepare(mx.array(x))
    # Both sides' corrections come from one projection of the sublayer's input.
    projected = (x[0] @ np.array(conv.kernel_projection.weight).T).reshape(5, 2, 2, 2)
    base_kernel = np.array(conv.base_kernel)
    assert np.allclose(np.array(inner)[0], numpy_conv(x[0], projected[:, 0], base_kernel[0], 4), atol=1e-4)
    y = rng.normal(size=(1, 5, 8)).astype(np.float32)
    finished = np.array(conv.finish(mx.array(y), post))[0]
    assert np.allclose(finished, numpy_conv(y[0], projected[:, 1], base_kernel[1], 4), atol=1e-4)


def test_with_identity_convolutions_the_block_is_dflashs(drafter, dense_target):
    """Pass-through convolutions (tap 0 = 1, no correction) leave exactly the DFlash layers it extends."""
    cfg = drafter.config
    weights = tree_flatten(drafter.model.parameters())
    plain_config = {k: v for k, v in d2.dflash2_config(dense_target).items() if k != "architectures"}
    plain = DFlashModel(DFlashConfig.from_dict(plain_config))
    plain.load_weights([(k, v) for k, v in weights if "_conv." not in k and "candidate_selector" not in k])
    twin = DFlash2Model(cfg)
    twin.load_weights(weights)
    identity = np.zeros((2, cfg.conv_kernel_size, cfg.hidden_size), dtype=np.float32)
    identity[:, 0] = 1.0
    for layer in twin.layers:
        for conv in (layer.attention_conv, layer.mlp_conv):
            conv.base_kernel = mx.array(identity)
            conv.kernel_projection.weight = mx.zeros_like(conv.kernel_projection.weight)
    rng = np.random.default_rng(1)
    context = mx.array(rng.normal(size=(7, 2 * cfg.hidden_size)).astype(np.float32))
    block = mx.array(rng.normal(size=(cfg.block_size, cfg.hidden_size)).astype(np.float32))
    outputs = []
    for model in (plain, twin, drafter.model):
        cache = model.make_cache()
        model.add_context(context, cache)
        outputs.append(np.array(model.block(block, cache)))
    assert np.allclose(outputs[0], outputs[1], atol=1e-4)
    assert not np.allclose(outputs[0], outputs[2], atol=1e-2)  # the trained convolutions do change the block


def reference_walk(selector, hidden, logits, anchor):
    """The reference's greedy path: top-k per position, then U_t(b) + <A(a) * P(h_t), B(b)> from the anchor."""
    hidden, logits = np.array(hidden), np.array(logits)
    pred_book, succ_book = np.array(selector.predecessor_codebook), np.array(selector.successor_codebook)
    projected = hidden @ np.array(selector.hidden_projection.weight).T
    path, previous = [], anchor
    for t in range(len(logits)):
        candidates = np.argsort(-logits[t])[: selector.top_k]
        scores = logits[t][candidates] + succ_book[candidates] @ (pred_book[previous] * projected[t])
        previous = int(candidates[np.argmax(scores)])
        path.append(previous)
    return path


def test_the_selector_walks_the_reference_path(drafter):
    model = drafter.model
    rng = np.random.default_rng(2)
    hidden = mx.array(rng.normal(size=(15, 64)).astype(np.float32) * 4)
    logits = mx.array(rng.normal(size=(15, 384)).astype(np.float32) * 4)
    scorer = model.path_scorer(hidden, logits)
    path, previous = [], 7
    for t in range(15):
        row = scorer.row(t, mx.array(previous, dtype=mx.uint32))
        previous = int(mx.argmax(row).item())
        path.append(previous)
    assert path == reference_walk(model.candidate_selector, hidden, logits, 7)
    assert path != np.argmax(np.array(logits), axis=-1).tolist()  # the selector overrules the argmax somewhere


def test_tokens_outside_the_candidates_rank_below_them_in_the_drafters_order(drafter):
    model = drafter.model
    logits = mx.array(np.random.default_rng(3).normal(size=(1, 384)).astype(np.float32))
    row = np.array(model.path_scorer(mx.ones((1, 64)), logits).row(0, 5))
    top = set(np.argsort(-np.array(logits[0]))[:4].tolist())
    outside = [i for i in range(384) if i not in top]
    assert row[outside].max() < row[list(top)].min() - OUTSIDE_MARGIN / 2
    shift = row[outside] - np.array(logits[0])[outside]
    assert np.allclose(shift, shift[0], atol=1e-4)  # one shift for all of them: the drafter's own order
    # A grammar that refuses every candidate still leaves the drafter's best allowed token.
    row[list(top)] = -np.inf
    assert int(np.argmax(row)) == outside[int(np.argmax(np.array(logits[0])[outside]))]


@pytest.mark.parametrize("which", ["dense_target", "hybrid_target"])
def test_greedy_dflash2_equals_plain_decoding(request, root, which):
    path = request.getfixturevalue(which)
    layer_ids = [1, 3] if which == "hybrid_target" else None
    engine = Engine.load(path, dflash=build_dflash2(root / f"engine_{which}", path, layer_ids=layer_ids))
    assert isinstance(engine.drafters["dflash"].model, DFlash2Model)
    ids = prompt_ids(engine)
    baseline = engine.generate(ids, greedy(n=40))
    assert baseline.tokens == mlx_lm_greedy(engine, ids, 40)
    for k in (1, 3, 15, "auto"):
        result = engine.generate(ids, greedy("dflash", k, n=40))
        assert result.tokens == baseline.tokens, f"K={k} differs from plain decoding"
    assert_context_equals_a_clean_pass(engine)


def test_greedy_dflash2_under_a_grammar_equals_constrained_plain_decoding(root, hybrid_target):
    engine = Engine.load(hybrid_target, dflash=build_dflash2(root / "grammar", hybrid_target, layer_ids=[1, 3]))
    grammar = Grammar.lark('start: "Name: " /[a-z ]{1,20}/ "\\nAge: " /[0-9]{1,2}/ "\\n"')
    ids = prompt_ids(engine)
    plain = engine.generate(ids, greedy(n=48, grammar=grammar))
    assert plain.tokens
    for k in (4, 15):
        result = engine.generate(ids, greedy("dflash", k, n=48, grammar=grammar))
        assert result.tokens == plain.tokens and result.stats.stop_reason == plain.stats.stop_reason, f"K={k}"


def set_dflash2(**values):
    def edit(config, weights):
        for key, value in values.items():
            section = config["dflash_config"] if key in config["dflash_config"] else config
            if value is None:
                section.pop(key)
            else:
                section[key] = value

    return edit


def set_weight(name, shape):
    return lambda config, weights: weights.__setitem__(name, mx.zeros(shape))


def drop_weight(name):
    return lambda config, weights: weights.pop(name)


REFUSALS = {
    "no_top_k": (set_dflash2(selector_top_k=None), "has no 'selector_top_k': a DFlash2 config names"),
    "no_vocab": (set_dflash2(vocab_size=None), "has no 'vocab_size'"),
    "rank_zero": (set_dflash2(selector_rank=0), "selector_rank is 0; it must be at least 1"),
    "group": (set_dflash2(conv_group_size=24), "conv_group_size 24 does not divide hidden_size 64"),
    "top_k_past_vocab": (set_dflash2(selector_top_k=400), "selector_top_k 400 exceeds vocab_size 384"),
    "vocab": (
        set_dflash2(vocab_size=512),
        "candidate selector has codebooks for 512 tokens but dense_target has a vocabulary of 384",
    ),
    "softcap": (set_dflash2(final_logit_softcapping=30.0), "final_logit_softcapping 30.0 is not supported"),
    "sliding": (
        set_dflash2(layer_types=["sliding_attention"] * 2),
        "sliding_attention layers need a sliding_window of at least 1, not None",
    ),
    "missing_conv": (
        drop_weight("layers.1.attention_conv.kernel_projection.weight"),
        "is missing tensors: layers.1.attention_conv.kernel_projection.weight",
    ),
    "codebook_shape": (
        set_weight("candidate_selector.predecessor_codebook", (384, 16)),
        "candidate_selector.predecessor_codebook has shape (384, 16), the config calls for (384, 8)",
    ),
    "kernel_size": (
        set_dflash2(conv_kernel_size=3),
        "layers.0.attention_conv.base_kernel has shape (2, 2, 64), the config calls for (2, 3, 64)",
    ),
    "lm_head": (set_weight("lm_head.weight", (384, 64)), "a DFlash2 drafter uses the target's embeddings"),
    "extra": (set_weight("candidate_selector.bias", (8,)), "has tensors a DFlash2 drafter does not have"),
    "hidden": (set_dflash2(hidden_size=32), "has hidden_size 32 but dense_target has 64"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_dflash2_misfit_is_refused_with_its_reason(root, dense_target, target, case):
    edit, message = REFUSALS[case]
    folder = build_dflash2(root / f"bad_{case}", dense_target, edit=edit)
    with pytest.raises(ModelLoadError) as caught:
        load_dflash(folder, target)
    assert message in str(caught.value)


def test_dflash2_tensors_under_a_dflash_config_are_refused(root, dense_target, target):
    def as_dflash(config, weights):
        config["architectures"] = ["DFlashDraftModel"]
        for key in d2.dflash2_config(dense_target)["dflash_config"]:
            if key.startswith(("conv_", "selector_")):
                config["dflash_config"].pop(key)

    folder = build_dflash2(root / "v1_config", dense_target, edit=as_dflash)
    with pytest.raises(ModelLoadError) as caught:
        load_dflash(folder, target)
    message = str(caught.value)
    assert "holds DFlash2 tensors (candidate_selector.hidden_projection.weight" in message
    assert "its config.json describes a DFlash drafter" in message and "selector_top_k" in message


def test_block_logits_and_path_match_the_reference_dflash2(root, dense_target):
    """z-lab's reference MLX DFlash2DraftModel (the `dflash` package's model_mlx.py), skipped where it does not
    import, reads the same folder: a block from the same context gives the same logits and the same path."""
    reference = pytest.importorskip("dflash.model_mlx")
    folder = build_dflash2(root / "reference", dense_target)
    engine = Engine.load(dense_target, dflash=folder)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reference, "snapshot_download", lambda repo, **_: repo)
        theirs = reference.load_draft(str(folder)).bind(engine.target.model)
    assert isinstance(theirs, reference.DFlash2DraftModel)
    model, cfg = engine.drafters["dflash"].model, engine.drafters["dflash"].config
    ids = prompt_ids(engine)
    _, layers = capture_forward(engine.target.model, mx.array(ids[:-1])[None], None, cfg.target_layer_ids)
    context = mx.concatenate(layers, axis=-1)
    block = mx.array([[ids[-1]] + [cfg.mask_token_id] * (cfg.block_size - 1)])
    their_path, _, _ = theirs.propose(block, context, theirs.make_cache(), 0.0, logits_start=1)
    their_logits = theirs(block, context, theirs.make_cache(), logits_start=1)[0]

    cache = model.make_cache()
    model.add_context(context[0], cache)
    hidden = model.block(engine.target.model.model.embed_tokens(block[0]), cache)[1:]
    logits = engine.target.model.model.embed_tokens.as_linear(hidden)
    # measured 1.2e-5 on CPU: float32 rounding, the convolution sums its taps in another order
    assert mx.abs(logits - their_logits).max().item() <= 1e-4
    scorer, path, previous = model.path_scorer(hidden, logits), [], ids[-1]
    for t in range(cfg.block_size - 1):
        previous = int(mx.argmax(scorer.row(t, previous)).item())
        path.append(previous)
    assert path == np.array(their_path[0]).tolist()
    assert path != np.argmax(np.array(logits), axis=-1).tolist()  # the selector mattered in this block


def test_a_round_drafts_the_selectors_path(monkeypatch, root, dense_target):
    engine = Engine.load(dense_target, dflash=build_dflash2(root / "path", dense_target))
    drafter = engine.drafters["dflash"]
    drafts = []
    propose = drafter.propose

    def recorded(request):
        draft = propose(request)
        drafts.append(np.array(draft.tokens).tolist())
        return draft

    monkeypatch.setattr(drafter, "propose", recorded)
    ids = prompt_ids(engine)
    engine.generate(ids, greedy("dflash", 15, n=40))
    model, cfg = drafter.model, drafter.config
    _, layers = capture_forward(engine.target.model, mx.array(ids[:-1])[None], None, cfg.target_layer_ids)
    cache = model.make_cache()
    model.add_context(mx.concatenate(layers, axis=-1)[0], cache)
    embed = engine.target.model.model.embed_tokens
    hidden = model.block(embed(mx.array([ids[-1]] + [cfg.mask_token_id] * 15)), cache)[1:]
    logits = embed.as_linear(hidden)
    want = reference_walk(model.candidate_selector, hidden, logits, ids[-1])
    assert drafts[0] == want
    assert want != np.argmax(np.array(logits), axis=-1).tolist()  # not what DFlash's argmax would draft
