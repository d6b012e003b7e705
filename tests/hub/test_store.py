"""Local store: the HF cache scan finds complete and partial models; user folders; delete."""

import json
import threading

import pytest

from specchat.hub.download import download_model
from specchat.hub.errors import ConfirmationRequired, DownloadCancelled, HubError
from specchat.hub.store import delete_model, describe_folder, find_model, scan_local_models
from specchat.hub.tokenizer_info import VocabHashCache
from tests.hub.conftest import DRAFT_REPO, TARGET_REPO


def download_all_but_weights(repo_id, config):
    """Leave a partial repo: every file except model.safetensors."""
    cancel = threading.Event()

    def stop_at_weights(p):
        if p.filename == "model.safetensors":
            cancel.set()

    with pytest.raises(DownloadCancelled):
        download_model(repo_id, config, on_progress=stop_at_weights, cancel=cancel)


@pytest.fixture
def populated(hub, hub_config):
    download_model(TARGET_REPO, hub_config)
    download_all_but_weights(DRAFT_REPO, hub_config)
    return hub_config


def test_scan_finds_complete_and_partial_models(populated, hybrid_target, tmp_path):
    vocab = VocabHashCache(tmp_path / "vocab.json")
    models = {m.name: m for m in scan_local_models(populated, [hybrid_target], vocab)}
    target, draft, folder = models[TARGET_REPO], models[DRAFT_REPO], models[hybrid_target.name]
    assert target.complete and target.missing == () and target.source == "hf-cache"
    assert not draft.complete and draft.missing == ("model.safetensors",)
    assert target.facts.architecture == "dense" and target.facts.model_type == "qwen3"
    assert target.facts.context_length == 32768 and target.facts.quant_bits is None
    assert folder.source == "folder" and folder.facts.architecture == "hybrid"
    assert folder.facts.linear_layers == 2 and folder.facts.attention_layers == 2
    assert target.vocab_hash and target.vocab_hash == folder.vocab_hash  # same tokenizer
    assert draft.vocab_hash is None  # partial: not loaded
    assert target.mtp_available is False and "MTP" in target.mtp_reason
    assert target.size_bytes == sum(
        (target.path / n).stat().st_size
        for n in (
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "tokenizer_config.json",
            "special_tokens_map.json",
        )
    )
    assert '"' in (tmp_path / "vocab.json").read_text()  # hashes persisted


def test_partial_download_with_bytes_in_flight_is_partial(hub, hub_config):
    hub.faults.slow_chunk, hub.faults.slow_delay_s = 16 * 1024, 0.02
    cancel = threading.Event()

    def stop_midway(p):
        if p.filename == "model.safetensors" and p.bytes_done > 100_000:
            cancel.set()

    with pytest.raises(DownloadCancelled):
        download_model(TARGET_REPO, hub_config, on_progress=stop_midway, cancel=cancel)
    (model,) = scan_local_models(hub_config)
    assert not model.complete
    assert model.missing == ("model.safetensors", "1 partly downloaded file(s)")


def test_vocab_cache_does_not_reload_an_unchanged_tokenizer(dense_target, monkeypatch):
    cache = VocabHashCache()
    first = cache.vocab_hash(dense_target)
    monkeypatch.setattr(
        "specchat.hub.tokenizer_info.load_local_tokenizer", lambda folder: pytest.fail("tokenizer loaded again")
    )
    assert cache.vocab_hash(dense_target) == first


def test_delete_needs_confirmation_then_removes_the_repo(populated):
    models = scan_local_models(populated)
    target = find_model(models, TARGET_REPO)
    with pytest.raises(ConfirmationRequired):
        delete_model(target, populated)
    assert target.path.exists()
    freed = delete_model(target, populated, confirm=True)
    assert freed == target.size_bytes
    assert not target.path.parent.parent.exists()
    assert [m.name for m in scan_local_models(populated)] == [DRAFT_REPO]


def test_user_folders_are_never_deleted(hub_config, dense_target):
    (model,) = scan_local_models(hub_config, [dense_target])
    with pytest.raises(HubError, match="folder you added"):
        delete_model(model, hub_config, confirm=True)
    assert (dense_target / "model.safetensors").exists()


def test_a_folder_of_model_folders_is_scanned(hub_config, dense_target, hybrid_target):
    assert dense_target.parent == hybrid_target.parent
    names = {m.name for m in scan_local_models(hub_config, [dense_target.parent])}
    assert {dense_target.name, hybrid_target.name} <= names


def test_real_quantized_model_facts(smollm_dir):
    model = describe_folder(smollm_dir, vocab=VocabHashCache())
    config = json.loads((smollm_dir / "config.json").read_text())
    assert model.complete and model.facts.quant_bits == config["quantization"]["bits"] == 4
    assert model.facts.architecture == "dense"
    assert model.facts.context_length == config["max_position_embeddings"]
    assert len(model.vocab_hash) == 16
