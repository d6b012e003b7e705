"""`models mtp add`: only the head's bytes cross the wire, the head drafts like the original's, resume, refusals."""

from __future__ import annotations

import functools
import json
import shutil
import struct
import threading
from pathlib import Path

import mlx.core as mx
import pytest
from huggingface_hub import HfApi

from specchat.cli import main
from specchat.engine import Engine, GenerationConfig
from specchat.engine.events import RoundResult
from specchat.engine.mtp_detect import detect_mtp
from specchat.hub.config import HubConfig
from specchat.hub.errors import DownloadCancelled, HubError, NotEnoughDiskError
from specchat.hub.mtp_head import add_mtp_head, plan_head, source_file
from specchat.hub.mtp_plan import HeadShapeError, NoHeadError
from tests.hub import mtp_hub_fixtures as fx
from tests.hub.conftest import point_hub_at
from tests.hub.hub_server import HubServer

INDEX = "model.safetensors.index.json"
SHARDS = [f"model-{i:05d}-of-00003.safetensors" for i in (1, 2, 3)]
LIBRARY_PREFIX = 100_001  # huggingface_hub's parse_safetensors_file_metadata reads bytes 0-100000 of a file first
PROMPT = "def fibonacci(n):\n    "


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The fixture with its head, its original on the hub side, and local conversions without the head."""
    return fx.build_models(tmp_path_factory.mktemp("mtp_head"))


@pytest.fixture
def hub(hub_env, monkeypatch, models):
    """The loopback hub serving the three originals."""
    with HubServer(fx.hub_repos(models), lifetime_s=240) as server:
        point_hub_at(monkeypatch, server.url)
        yield server


@pytest.fixture
def config(hub) -> HubConfig:
    return HubConfig.from_env(timeout_s=10.0, deadline_s=10.0)


def local_copy(models, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(models[name], tmp_path / name))


def header(path: Path) -> tuple[int, dict]:
    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return n, json.loads(f.read(n))


def metadata_read(shard: Path) -> int:
    """Bytes read to index a shard: its first 8 (the header's length, ours), then huggingface_hub's read of the
    header (its first 100 kB, and the rest of a longer header in a second request)."""
    n, _ = header(shard)
    prefix = min(LIBRARY_PREFIX, shard.stat().st_size)
    return 8 + prefix + (n if n > prefix - 8 else 0)


def expected_bytes(original: Path) -> dict[str, int]:
    """Per file: the whole index; for shards with mtp.* tensors, what indexing them reads + those tensors' bytes."""
    expected = {INDEX: (original / INDEX).stat().st_size}
    for shard in SHARDS:
        n, meta = header(original / shard)
        head = [m for k, m in meta.items() if k.startswith("mtp.")]
        if head:
            expected[shard] = metadata_read(original / shard) + sum(
                m["data_offsets"][1] - m["data_offsets"][0] for m in head
            )
    return expected


def sidecar(folder: Path) -> dict[str, mx.array]:
    return dict(mx.load(str(folder / "optiq/mtp.safetensors")))


def assert_same_tensors(got: dict[str, mx.array], want: dict[str, mx.array]) -> None:
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        assert mx.array_equal(got[name], want[name]).item(), name


def mtp_run(folder: Path) -> tuple[list[int], list[tuple[int, int]], list[int]]:
    """Greedy MTP output at depth 3, each round's (drafted, accepted), and plain greedy output."""
    engine = Engine.load(folder)
    ids = list(engine.tokenizer.encode(PROMPT))
    events = list(engine.stream(ids, GenerationConfig(mode="mtp", num_draft_tokens=3, max_tokens=40)))
    rounds = [(e.drafted, e.accepted) for e in events if isinstance(e, RoundResult)]
    plain = engine.generate(ids, GenerationConfig(mode="baseline", max_tokens=40)).tokens
    return list(events[-1].tokens), rounds, plain


@pytest.mark.slow
def test_float_model_gets_the_fixtures_own_head_from_only_its_bytes(hub, config, models, tmp_path, capsys):
    local = local_copy(models, "float", tmp_path)
    assert main(["models", "mtp", "add", str(local)]) == 0
    out, err = capsys.readouterr()
    assert f"from {fx.ORIGINAL_REPO}" in err and "README.md base_model" in err and "mode mtp is now available" in out
    expected = expected_bytes(models["original"])
    assert SHARDS[0] not in expected and hub.bytes_served == expected  # shard 1 holds no head: not even its header
    assert not [p for m, p, _ in hub.requests if p.endswith(SHARDS[0])]
    shard_total = sum((models["original"] / s).stat().st_size for s in SHARDS)
    assert hub.total_served < shard_total / 4
    assert_same_tensors(sidecar(local), fx.head_of(models["fixture"]))
    source = json.loads(source_file(local / "optiq/mtp.safetensors").read_text())
    assert source["repo_id"] == fx.ORIGINAL_REPO and source["revision"] == hub.repos[fx.ORIGINAL_REPO].commit
    assert sum(t["bytes"] for t in source["tensors"]) == source["head_bytes"]
    assert {t["name"] for t in source["tensors"]} == set(fx.head_of(models["fixture"]))
    assert detect_mtp(local).available and not (local / ".specchat-mtp").exists()
    tokens, rounds, plain = mtp_run(local)
    want_tokens, want_rounds, want_plain = mtp_run(models["fixture"])
    assert (tokens, rounds, plain) == (want_tokens, want_rounds, want_plain)
    assert tokens == plain and 0 < sum(a for _, a in rounds) < sum(d for d, _ in rounds)


@pytest.mark.slow
def test_quantized_model_gets_the_head_quantized_like_itself(hub, config, models, tmp_path, capsys):
    local = local_copy(models, "quant", tmp_path)
    assert main(["models", "mtp", "add", str(local), "--from", fx.ORIGINAL_REPO]) == 0
    assert "4-bit (group size 64)" in capsys.readouterr().err
    assert hub.bytes_served == expected_bytes(models["original"])
    reference_head = fx.quantized_reference_head(fx.head_of(models["fixture"]))
    assert_same_tensors(sidecar(local), reference_head)
    assert json.loads((local / "config.json").read_text())["text_config"]["mtp_num_hidden_layers"] == 1
    reference = fx.with_head(tmp_path / "reference", models["quant"], reference_head)
    tokens, rounds, plain = mtp_run(local)
    assert (tokens, rounds, plain) == mtp_run(reference)
    assert tokens == plain and sum(a for _, a in rounds) > 0


def head_tensor(original: Path, name: str) -> tuple[str, int, int]:
    """(shard, first byte, end) of one head tensor in the original."""
    for shard in SHARDS:
        n, meta = header(original / shard)
        if name in meta:
            begin, end = meta[name]["data_offsets"]
            return shard, 8 + n + begin, 8 + n + end
    raise KeyError(name)


def test_a_dropped_connection_resumes_without_resending(hub, config, models, tmp_path):
    local = local_copy(models, "float", tmp_path)
    shard, start, end = head_tensor(models["original"], "mtp.layers.0.mlp.gate_proj.weight")
    hub.faults.drop_at[shard] = (start + end) // 2
    added = add_mtp_head(local, config)
    assert not hub.faults.drop_at  # the drop happened
    gets = hub.ranges_for(shard)
    assert f"bytes={start}-{end - 1}" in gets and f"bytes={(start + end) // 2}-{end - 1}" in gets
    assert hub.bytes_served == expected_bytes(models["original"])  # not one byte sent twice
    assert added.fetched_bytes == head_bytes(models["original"])
    assert_same_tensors(sidecar(local), fx.head_of(models["fixture"]))


def head_bytes(original: Path) -> int:
    """Bytes of the head's tensors alone."""
    return sum(expected_bytes(original).values()) - sum(expected_bytes_meta(original).values())


@pytest.mark.slow
def test_cancel_keeps_the_bytes_and_the_next_run_resumes(hub, config, models, tmp_path):
    local = local_copy(models, "float", tmp_path)
    hub.faults.slow_chunk = 512
    cancel = threading.Event()
    seen: list[int] = []

    def on_progress(p) -> None:
        seen.append(p.bytes_done)
        if p.bytes_done > p.bytes_total // 3:
            cancel.set()

    with pytest.raises(DownloadCancelled):
        add_mtp_head(local, config, on_progress=on_progress, cancel=cancel)
    kept = sum(p.stat().st_size for p in (local / ".specchat-mtp").rglob("*.part"))
    assert kept > 0 and not (local / "optiq/mtp.safetensors").exists()
    first = dict(hub.bytes_served)
    hub.faults.slow_chunk = 0
    add_mtp_head(local, config)
    meta = sum(expected_bytes_meta(models["original"]).values())  # read by each run's plan
    resent = hub.total_served - 2 * meta - head_bytes(models["original"])
    assert 0 <= resent <= 64 * 1024, (first, hub.bytes_served)  # at most what was in flight when it stopped
    assert_same_tensors(sidecar(local), fx.head_of(models["fixture"]))


def expected_bytes_meta(original: Path) -> dict[str, int]:
    """Index and headers only."""
    meta = {INDEX: (original / INDEX).stat().st_size}
    for shard in SHARDS:
        n, tensors = header(original / shard)
        if any(k.startswith("mtp.") for k in tensors):
            meta[shard] = metadata_read(original / shard)
    return meta


def test_a_head_of_another_shape_is_refused_naming_the_tensor(hub, config, models, tmp_path, capsys):
    local = local_copy(models, "float", tmp_path)
    with pytest.raises(HeadShapeError, match=r"mtp\.fc\.weight .* shape \(128, 256\).* needs \(64, 128\)"):
        plan_head(local, config, fx.OTHER_REPO)
    assert main(["models", "mtp", "add", str(local), "--from", fx.OTHER_REPO]) == 1
    assert "mtp.fc.weight" in capsys.readouterr().err
    assert not (local / "optiq").exists()


def test_an_original_without_a_head_is_refused(hub, config, models, tmp_path, capsys):
    local = local_copy(models, "float", tmp_path)
    with pytest.raises(NoHeadError, match=f"{fx.NO_HEAD_REPO} has no MTP head"):
        plan_head(local, config, fx.NO_HEAD_REPO)
    assert set(hub.bytes_served) == {INDEX}  # no shard was touched
    assert main(["models", "mtp", "add", str(local), "--from", fx.NO_HEAD_REPO]) == 1
    assert "has no MTP head" in capsys.readouterr().err


def test_short_disk_is_refused_before_any_tensor(hub, config, models, tmp_path):
    local = local_copy(models, "float", tmp_path)
    with pytest.raises(NotEnoughDiskError, match="not enough disk space for the MTP head"):
        add_mtp_head(local, config, free=lambda path: 1000)
    assert hub.bytes_served == expected_bytes_meta(models["original"])


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("empty", "is not a model folder"),
        ("dense", "is not a Qwen3.5+ hybrid"),
        ("has_head", "already has an MTP head"),
        ("no_card", "--from REPO"),
    ],
)
def test_cli_refuses_bad_folders_clearly(hub, models, dense_target, tmp_path, capsys, case, message):
    folders = {
        "empty": tmp_path / "empty",
        "dense": dense_target,
        "has_head": models["fixture"],
        "no_card": models["quant"],
    }
    folders["empty"].mkdir()
    assert main(["models", "mtp", "add", str(folders[case])]) == 1
    assert message in capsys.readouterr().err
    assert hub.total_served == 0


def test_cli_refuses_a_bad_repo_id(hub, models, tmp_path, capsys):
    local = local_copy(models, "float", tmp_path)
    assert main(["models", "mtp", "add", str(local), "--from", "not a repo"]) == 2
    assert "is not a model id" in capsys.readouterr().err


def test_the_tensor_index_is_huggingface_hubs_and_the_header_length_ours(hub, config, models, tmp_path, monkeypatch):
    parsed: list[str] = []
    original = HfApi.parse_safetensors_file_metadata

    @functools.wraps(original)  # keeps its signature, which the upstream check reads
    def recording(self, repo_id, filename, **kwargs):
        parsed.append(filename)
        return original(self, repo_id, filename, **kwargs)

    monkeypatch.setattr(HfApi, "parse_safetensors_file_metadata", recording)
    plan = plan_head(local_copy(models, "float", tmp_path), config)
    assert parsed == SHARDS[1:]  # only the shards that hold the head
    for shard in SHARDS[1:]:
        n, meta = header(models["original"] / shard)
        assert hub.ranges_for(shard) == ["bytes=0-7", f"bytes=0-{LIBRARY_PREFIX - 1}"]  # ours first, then the library
        for span in (s for s in plan.spans if s.shard == shard):
            begin, end = meta[span.name]["data_offsets"]
            assert (span.start, span.end) == (8 + n + begin, 8 + n + end)
            assert (span.dtype, list(span.shape)) == (meta[span.name]["dtype"], meta[span.name]["shape"])
    assert plan.meta_bytes == sum(8 + header(models["original"] / s)[0] for s in SHARDS[1:]) + len(
        hub.repos[fx.ORIGINAL_REPO].files[INDEX]
    )


def test_a_server_that_ignores_ranges_is_refused_before_the_library_asks_for_100_kb(hub, config, models, tmp_path):
    hub.faults.ignore_range = True
    with pytest.raises(HubError, match="does not serve byte ranges"):
        plan_head(local_copy(models, "float", tmp_path), config)
    assert [r for shard in SHARDS for r in hub.ranges_for(shard)] == ["bytes=0-7"]


def test_a_changed_safetensors_metadata_call_is_a_clear_error(hub, config, models, tmp_path, monkeypatch):
    monkeypatch.setattr(HfApi, "parse_safetensors_file_metadata", lambda self, repo_id, filename: None)
    with pytest.raises(HubError, match=r"changed HfApi.parse_safetensors_file_metadata: it no longer takes `revision`"):
        plan_head(local_copy(models, "float", tmp_path), config)
