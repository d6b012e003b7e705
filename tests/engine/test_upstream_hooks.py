"""A hook that does not fit the installed mlx-lm / mlx-optiq turns speculation off with its reason;
plain decoding still loads and gives the same tokens."""

from importlib import metadata

import mlx_lm.models.gated_delta as gated_delta
import mlx_lm.models.qwen3_5 as qwen3_5
import pytest
from optiq.runtime.mtp import artifacts

from specchat.engine import Engine, EngineError

from .helpers import greedy, prompt_ids

MLX_LM, OPTIQ = metadata.version("mlx-lm"), metadata.version("mlx-optiq")


KERNEL = gated_delta.gated_delta_update


def renamed_mask(q, k, v, a, b, A_log, dt_bias, state=None, attn_mask=None, **kwargs):
    """gated_delta_update as a future mlx-lm might spell it: `mask` renamed, same arithmetic."""
    return KERNEL(q, k, v, a, b, A_log, dt_bias, state, attn_mask, **kwargs)


@pytest.fixture(scope="module")
def plain_tokens(hybrid_target, hybrid_draft_partial):
    """Baseline tokens of the hybrid pair with every hook in place."""
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    assert {m: r for m, r in engine.available_modes().items() if m not in ("mtp", "dflash")} == dict.fromkeys(
        ("baseline", "draft", "lookup", "auto")
    )
    ids = prompt_ids(engine)
    return ids, engine.generate(ids, greedy(n=30)).tokens


def test_a_changed_kernel_turns_speculation_off_and_baseline_still_works(
    monkeypatch, hybrid_target, hybrid_draft_partial, plain_tokens
):
    monkeypatch.setattr(qwen3_5, "gated_delta_update", renamed_mask)
    engine = Engine.load(hybrid_target, hybrid_draft_partial)
    modes = engine.available_modes()
    assert modes["baseline"] is None
    assert modes["mtp"].startswith("no MTP head")  # the plainer reason comes first
    for mode in ("draft", "lookup"):
        assert f"mlx-lm {MLX_LM} changed gated_delta_update: it no longer takes `mask`" in modes[mode]
        assert "plain decoding still works" in modes[mode]
    ids, expected = plain_tokens
    assert engine.generate(ids, greedy(n=30)).tokens == expected
    with pytest.raises(EngineError, match="gated_delta_update"):
        engine.generate(ids, greedy("draft", 3, n=10))
    with pytest.raises(EngineError, match="gated_delta_update"):
        engine.generate(ids, greedy("lookup", 3, n=10))


def test_a_changed_kernel_turns_mtp_off_for_a_hybrid_target_with_a_head(monkeypatch, mtp_partial):
    plain = Engine.load(mtp_partial)
    assert plain.available_modes()["mtp"] is None
    ids = prompt_ids(plain)
    expected = plain.generate(ids, greedy(n=20)).tokens
    monkeypatch.setattr(qwen3_5, "gated_delta_update", renamed_mask)
    engine = Engine.load(mtp_partial)
    reason = engine.available_modes()["mtp"]
    assert reason == (
        f"speculation for this model is off: mlx-lm {MLX_LM} changed gated_delta_update: "
        "it no longer takes `mask` (as called by mlx_lm.models.qwen3_5); plain decoding still works"
    )
    assert engine.generate(ids, greedy(n=20)).tokens == expected


def test_a_dense_target_does_not_depend_on_the_linear_attention_hooks(monkeypatch, dense_target, dense_draft_partial):
    monkeypatch.setattr(qwen3_5, "gated_delta_update", renamed_mask)
    monkeypatch.setattr(gated_delta, "gated_delta_update", renamed_mask)
    engine = Engine.load(dense_target, dense_draft_partial)
    assert engine.hook_problems == {}
    assert engine.available_modes()["draft"] is None and engine.available_modes()["lookup"] is None


def test_a_changed_optiq_lookup_turns_only_mtp_off(monkeypatch, mtp_partial):
    original = artifacts.expected_mtp_file

    def flat_first(model_dir, config=None):
        flat = model_dir / "mtp.safetensors"
        return flat if flat.exists() else original(model_dir, config)

    monkeypatch.setattr(artifacts, "expected_mtp_file", flat_first)
    engine = Engine.load(mtp_partial)  # its head is in optiq/mtp.safetensors: still attaches
    modes = engine.available_modes()
    assert modes["lookup"] is None and modes["baseline"] is None
    assert modes["mtp"].startswith(
        f"MTP drafting is off: mlx-optiq {OPTIQ} changed MTP sidecar names: "
        "it now looks for the MTP sidecar mtp.safetensors before optiq/mtp.safetensors"
    )
    ids = prompt_ids(engine)
    assert engine.generate(ids, greedy(n=20)).tokens == engine.generate(ids, greedy("lookup", 3, n=20)).tokens
