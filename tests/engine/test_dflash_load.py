"""Loading a DFlash folder: the published layouts load, and whatever does not fit the target is refused by name."""

from __future__ import annotations

import mlx.core as mx
import pytest

from specchat.engine import ConfigError, Engine, GenerationConfig
from specchat.engine.batch.admission import batch_refusal
from specchat.engine.config import check_draft_tokens
from specchat.engine.dflash_load import load_dflash
from specchat.engine.errors import ModelLoadError
from specchat.engine.loading import load_model
from tests.fixtures.dflash_models import build_dflash

from .helpers import greedy, prompt_ids


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("dflash_load")


@pytest.fixture(scope="module")
def target(dense_target):
    return load_model(dense_target)


def set_config(**values):
    def edit(config, weights):
        for key, value in values.items():
            if value is None:
                config.pop(key, None)
                config.get("dflash_config", {}).pop(key, None)
            elif key in config.get("dflash_config", {}):
                config["dflash_config"][key] = value
            else:
                config[key] = value

    return edit


def add_weight(name, shape=(4,)):
    return lambda config, weights: weights.__setitem__(name, mx.zeros(shape))


def drop_weight(name):
    return lambda config, weights: weights.pop(name)


REFUSALS = {
    "missing": (drop_weight("layers.1.mlp.up_proj.weight"), "is missing tensors: layers.1.mlp.up_proj.weight"),
    "extra": (
        add_weight("layers.0.mlp.extra.weight"),
        "has tensors a DFlash drafter does not have: layers.0.mlp.extra",
    ),
    "lm_head": (add_weight("lm_head.weight", (384, 64)), "a DFlash drafter uses the target's embeddings and lm_head"),
    "embed": (add_weight("embed_tokens.weight", (384, 64)), "holds ['embed_tokens.weight']"),
    "layer_past_depth": (
        set_config(target_layer_ids=[0, 2]),
        "reads target layers [2], past the 2 layers of dense_target",
    ),
    "negative_layer": (set_config(target_layer_ids=[-1, 1]), "reads target layers [-1]"),
    "hidden": (set_config(hidden_size=32), "has hidden_size 32 but dense_target has 64"),
    "depth": (set_config(num_target_layers=36), "trained on a target of 36 layers; dense_target has 2"),
    "mask_token": (set_config(mask_token_id=100000), "mask_token_id 100000 is outside dense_target's vocabulary"),
    "no_mask_token": (set_config(mask_token_id=None), "has no 'mask_token_id'"),
    "sliding": (
        set_config(layer_types=["sliding_attention", "full_attention"]),
        "sliding_attention layers need a sliding_window of at least 1, not None",
    ),
    "shape": (
        set_config(intermediate_size=96),
        "layers.0.mlp.gate_proj.weight has shape (128, 64), the config calls for (96, 64)",
    ),
    "block": (set_config(block_size=1), "block_size is 1"),
    "dflash2_tensors": (
        add_weight("layers.0.mlp_conv.base_kernel", (2, 2, 64)),
        "holds DFlash2 tensors (layers.0.mlp_conv.base_kernel) but its config.json describes a DFlash drafter",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_misfit_is_refused_with_its_reason(root, dense_target, target, case):
    edit, message = REFUSALS[case]
    folder = build_dflash(root / f"bad_{case}", dense_target, edit=edit)
    with pytest.raises(ModelLoadError) as caught:
        load_dflash(folder, target)
    assert message in str(caught.value)


def test_no_config_and_no_weights_are_refused(root, dense_target, target):
    (root / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="config.json is missing"):
        load_dflash(root / "empty", target)
    folder = build_dflash(root / "no_weights", dense_target)
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="has no .safetensors weights"):
        load_dflash(folder, target)


@pytest.mark.parametrize("layout,prefix", [("nested", ""), ("top", ""), ("nested", "model."), ("top", "model.")])
def test_published_layouts_load_to_the_same_drafter(root, dense_target, target, layout, prefix):
    reference = load_dflash(build_dflash(root / "ref", dense_target), target)
    loaded = load_dflash(
        build_dflash(root / f"{layout}_{prefix or 'bare'}", dense_target, layout=layout, prefix=prefix), target
    )
    assert loaded.config == reference.config
    assert loaded.config.target_layer_ids == (0, 1) and loaded.config.block_size == 16
    want = dict(reference.model.parameters())
    assert mx.array_equal(loaded.model.fc.weight, want["fc"]["weight"]).item()


def test_target_layer_ids_default_from_the_depth(root, dense_target, target):
    folder = build_dflash(
        root / "default_ids", dense_target, layers=1, layer_ids=[1], edit=set_config(target_layer_ids=None)
    )
    assert load_dflash(folder, target).config.target_layer_ids == (1,)  # one drafter layer: the middle one


def test_without_a_drafter_the_mode_says_why_and_is_refused(dense_target):
    engine = Engine.load(dense_target)
    assert engine.available_modes()["dflash"] == "no DFlash drafter loaded"
    with pytest.raises(ConfigError, match="no DFlash drafter loaded"):
        engine.generate(prompt_ids(engine), greedy("dflash", 3, n=4))


def test_dflash_joins_a_batch_and_has_its_own_k_limit(root, dense_target, mtp_partial):
    engine = Engine.load(dense_target, dflash=build_dflash(root / "batch", dense_target))
    assert engine.available_modes()["dflash"] is None
    assert batch_refusal(engine, greedy("dflash", 3)) is None
    headed = Engine.load(mtp_partial, dflash=build_dflash(root / "headed", mtp_partial))
    reason = batch_refusal(headed, greedy("dflash", 3))  # one pass cannot give both the head's and DFlash's taps
    assert reason is not None and "DFlash" in reason and "one request at a time" in reason
    assert batch_refusal(headed, greedy("mtp", 3)) is None
    check_draft_tokens("dflash", 15)
    with pytest.raises(ConfigError, match="DFlash draft tokens"):
        check_draft_tokens("dflash", 16)
    assert GenerationConfig(mode="dflash", num_draft_tokens="auto").max_draft_tokens == 15


def test_a_target_whose_layers_cannot_be_read_is_refused(monkeypatch, root, dense_target, target):
    folder = build_dflash(root / "unreadable", dense_target)
    monkeypatch.setattr(target.model.args, "model_type", "gemma3")
    with pytest.raises(ModelLoadError, match="DFlash cannot read the layers of dense_target: model type 'gemma3'"):
        load_dflash(folder, target)
