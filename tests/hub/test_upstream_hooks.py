"""A huggingface_hub whose download internals changed: downloads stop with a clear HubError, nothing half-written."""

from importlib import metadata

import pytest
from huggingface_hub import file_download
from huggingface_hub import utils as hf_utils

from specchat.hub.download import download_model
from specchat.hub.errors import HubError
from specchat.hub.transfer import storage_folder
from tests.hub.conftest import TARGET_REPO

HF_HUB = metadata.version("huggingface_hub")


def test_a_missing_http_get_fails_the_download_with_a_clear_message(hub, hub_config, monkeypatch):
    monkeypatch.delattr(file_download, "http_get")
    with pytest.raises(HubError) as caught:
        download_model(TARGET_REPO, hub_config)
    assert str(caught.value) == (
        f"cannot download {TARGET_REPO}: huggingface_hub {HF_HUB} changed file_download.http_get: it is gone"
    )
    assert not any((storage_folder(hub_config, TARGET_REPO) / "blobs").glob("*"))


def test_a_changed_lock_signature_fails_the_download_with_a_clear_message(hub, hub_config, monkeypatch):
    monkeypatch.setattr(hf_utils, "WeakFileLock", lambda path, *, timeout=None: None)
    with pytest.raises(
        HubError, match=f"huggingface_hub {HF_HUB} changed utils.WeakFileLock: it no longer takes `lock_file`"
    ):
        download_model(TARGET_REPO, hub_config)
