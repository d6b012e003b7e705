"""Each upstream's self-check: everything fits the installed versions; a changed hook is named, with the version."""

from importlib import metadata

import mlx_lm.models.gated_delta as gated_delta
import pytest
from mlx_lm.models.cache import ArraysCache, RotatingKVCache
from optiq.runtime.mtp import artifacts

from specchat.engine.loading import load_model
from specchat.engine.runner import ModelRunner
from specchat.upstream import hf_hub, mlx_lm, mlx_optiq

MLX_LM = metadata.version("mlx-lm")


def renamed_mask(q, k, v, a, b, A_log, dt_bias, state=None, attn_mask=None, **kwargs):
    """gated_delta_update as a future mlx-lm might spell it: `mask` renamed, same behaviour."""
    return gated_delta.gated_delta_update(q, k, v, a, b, A_log, dt_bias, state, attn_mask, **kwargs)


@pytest.mark.parametrize(
    "module, distribution, hooks",
    [
        (
            mlx_lm,
            "mlx-lm",
            {
                "load",
                "load_tokenizer",
                "make_prompt_cache",
                "utils._get_classes",
                "gated_delta_update",
                "RotatingKVCache",
                "ArraysCache",
            },
        ),
        (mlx_optiq, "mlx-optiq", {"runtime.attach", "MTP sidecar names", "MTP tensor prefixes"}),
        (
            hf_hub,
            "huggingface_hub",
            {
                "file_download.http_get",
                "utils.WeakFileLock",
                "file_download.repo_folder_name",
                "utils.get_session",
                "utils.hf_raise_for_status",
                "hf_hub_url",
                "get_hf_file_metadata",
                "hf_hub_download",
                "constants",
                "HfApi.parse_safetensors_file_metadata",
            },
        ),
    ],
)
def test_every_hook_fits_the_installed_version(module, distribution, hooks):
    check = module.self_check()
    assert check.version == metadata.version(distribution)
    assert set(check.hooks) == hooks
    assert check.ok and check.reason is None, check.reason


def test_a_changed_kernel_signature_is_named_with_the_version(monkeypatch):
    monkeypatch.setattr(gated_delta, "gated_delta_update", renamed_mask)
    check = mlx_lm.self_check()
    assert not check.ok
    assert check.reason == f"mlx-lm {MLX_LM} changed gated_delta_update: it no longer takes `mask`"
    assert [r.hook for r in check.results if not r.fits] == ["gated_delta_update"]


def test_a_reordered_kernel_signature_does_not_fit(monkeypatch):
    def reordered(q, k, v, a, b, A_log, dt_bias, mask=None, state=None):
        raise AssertionError("never called")

    monkeypatch.setattr(gated_delta, "gated_delta_update", reordered)
    assert "its arguments are now (q, k, v, a, b, A_log, dt_bias, mask, state)" in mlx_lm.self_check().reason


def test_a_rotating_cache_without_its_write_index_is_named(monkeypatch):
    original = RotatingKVCache.__init__

    def renamed_index(self, max_size, keep=0):
        original(self, max_size, keep)
        self._write_at = self.__dict__.pop("_idx")

    monkeypatch.setattr(RotatingKVCache, "__init__", renamed_index)
    assert mlx_lm.self_check().reason == f"mlx-lm {MLX_LM} changed RotatingKVCache: it no longer has `_idx`"


def test_an_arrays_cache_without_its_list_is_named(monkeypatch):
    def other_storage(self, size, left_padding=None):
        self.states, self.left_padding, self.lengths = [None] * size, None, None

    monkeypatch.setattr(ArraysCache, "__init__", other_storage)
    assert "changed ArraysCache: it no longer keeps its states in a `cache` list" in mlx_lm.self_check().reason


def test_a_model_is_checked_only_for_the_hooks_its_caches_need(dense_target, hybrid_target):
    dense, hybrid = load_model(dense_target).model, load_model(hybrid_target).model
    plain = ModelRunner(dense)
    assert mlx_lm.model_check(plain.model, plain.caches).hooks == ()
    rotating = ModelRunner(dense, max_kv_size=64)
    assert mlx_lm.model_check(rotating.model, rotating.caches).hooks == ("RotatingKVCache",)
    linear = ModelRunner(hybrid)
    check = mlx_lm.model_check(linear.model, linear.caches)
    assert check.hooks == ("gated_delta_update", "ArraysCache") and check.ok


def test_a_model_layer_calling_a_changed_kernel_does_not_fit(monkeypatch, hybrid_target):
    import mlx_lm.models.qwen3_5 as qwen3_5

    model = load_model(hybrid_target).model
    monkeypatch.setattr(qwen3_5, "gated_delta_update", renamed_mask)
    runner = ModelRunner(model)  # loads; the kernel is left unwrapped
    assert not hasattr(qwen3_5.gated_delta_update, mlx_lm.WRAPPED_MARK)
    reason = mlx_lm.model_check(runner.model, runner.caches).reason
    assert reason == (
        f"mlx-lm {MLX_LM} changed gated_delta_update: it no longer takes `mask` (as called by mlx_lm.models.qwen3_5)"
    )


def test_a_changed_sidecar_lookup_order_is_named(monkeypatch):
    original = artifacts.expected_mtp_file

    def flat_first(model_dir, config=None):
        flat = model_dir / "mtp.safetensors"
        return flat if flat.exists() else original(model_dir, config)

    monkeypatch.setattr(artifacts, "expected_mtp_file", flat_first)
    reason = mlx_optiq.self_check().reason
    assert reason == (
        f"mlx-optiq {metadata.version('mlx-optiq')} changed MTP sidecar names: it now looks "
        "for the MTP sidecar mtp.safetensors before optiq/mtp.safetensors"
    )


def test_a_missing_download_internal_is_named(monkeypatch):
    from huggingface_hub import utils

    monkeypatch.setattr(utils, "WeakFileLock", None)  # a lazy module: delattr cannot remove it
    check = hf_hub.download_check()
    assert check.reason == (
        f"huggingface_hub {metadata.version('huggingface_hub')} changed utils.WeakFileLock: it is gone"
    )
    with pytest.raises(hf_hub.UpstreamMismatch, match="utils.WeakFileLock: it is gone"):
        hf_hub.weak_file_lock("x.lock")


def test_a_missing_model_class_lookup_says_so_instead_of_crashing(monkeypatch):
    from mlx_lm import utils

    assert mlx_lm.model_classes({"model_type": "qwen3"})[0].__module__ == "mlx_lm.models.qwen3"
    monkeypatch.delattr(utils, "_get_classes")
    with pytest.raises(ValueError, match=f"mlx-lm {MLX_LM} changed utils._get_classes: it is gone"):
        mlx_lm.model_classes({"model_type": "qwen3"})


def test_an_attached_head_is_checked_for_the_methods_the_drafter_calls(mtp_agree, dense_target):
    from specchat.engine import Engine

    engine = Engine.load(mtp_agree)
    check = mlx_optiq.self_check(engine.target.model)
    assert check.ok and check.hooks[-3:] == ("mtp_forward", "_mtp_core", "make_mtp_cache")
    plain = load_model(dense_target).model  # no head attached: the drafter's methods are missing
    reason = mlx_optiq.self_check(plain).reason
    assert "changed mtp_forward: the attached model has no `mtp_forward`" in reason
    assert "changed _mtp_core: the attached model has no `_mtp_core`" in reason
