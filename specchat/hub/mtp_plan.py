"""Plan adding an MTP head to a local model: check the folder, find the original, read only what says
where its `mtp.*` tensors are (the index, then the headers of the shards that hold them)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specchat.engine.mtp_detect import SIDECARS, config_mtp_layers, detect_mtp, is_mtp_key
from specchat.upstream.checks import UpstreamMismatch
from specchat.upstream.hf_hub import (
    HfHubHTTPError,
    RangeRefused,
    SafetensorsParsingError,
    build_hf_headers,
    get_small_file,
    hf_hub_url,
    safetensors_tensors,
)
from specchat.upstream.mlx_optiq import configured_sidecar, expected_head_shapes

from .catalog import Catalog
from .config import HubConfig
from .errors import CorruptFileError, HubError
from .model_facts import read_config, text_config
from .mtp_convert import LocalFormat, local_format, mtp_name
from .mtp_source import Original, find_original
from .remote import hub_call, translate_error
from .safetensors_ranges import RangeSource, TensorSpan, header_length, tensor_spans
from .units import format_bytes

INDEX_FILE, SINGLE_FILE = "model.safetensors.index.json", "model.safetensors"
MAX_INDEX_BYTES = 50 * 1024 * 1024
HEAD_MODEL_TYPES = ("qwen3_5",)  # qwen3_5 and qwen3_5_moe: the head mlx-optiq builds for Qwen3.5 / 3.6
_LAYER = re.compile(r"^mtp\.layers\.(\d+)\.")


class MtpHeadError(HubError):
    """The local folder cannot take a head, or the original has none that fits it."""


class NoHeadError(MtpHeadError):
    """The original checkpoint has no `mtp.*` tensors."""


class HeadShapeError(MtpHeadError):
    """A tensor of the original's head does not fit the local model's config."""


@dataclass(frozen=True)
class HeadPlan:
    """What adding the head will fetch, from where, and where it goes."""

    folder: Path
    original: Original
    commit: str
    spans: tuple[TensorSpan, ...]
    meta_bytes: int  # sizes of the index and of the headers of the shards holding the head
    num_layers: int
    sidecar: Path
    fmt: LocalFormat

    @property
    def head_bytes(self) -> int:
        """Bytes of the head's tensors, as the original stores them."""
        return sum(s.nbytes for s in self.spans)

    @property
    def summary(self) -> str:
        """e.g. "0.9 GB from Qwen/Qwen3.6-27B"."""
        return f"{format_bytes(self.head_bytes)} from {self.original.repo_id}"


def check_local(folder: Path) -> dict[str, Any]:
    """The local folder's config when it is a Qwen3.5+ hybrid without a head; MtpHeadError otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise MtpHeadError(f"{folder} is not a folder")
    config = read_config(folder)
    if not config:
        raise MtpHeadError(f"{folder} is not a model folder: it has no readable config.json")
    if not any(folder.glob("model*.safetensors")):
        raise MtpHeadError(f"{folder} is not a model folder: it has no model*.safetensors weights")
    kinds = {str(config.get("model_type", "")), str(text_config(config).get("model_type", ""))}
    if not any(k.startswith(HEAD_MODEL_TYPES) for k in kinds):
        raise MtpHeadError(
            f"{folder.name} is not a Qwen3.5+ hybrid (model_type {config.get('model_type')!r}): "
            "only qwen3_5 models take an MTP head"
        )
    support = detect_mtp(folder)
    if support.available:
        raise MtpHeadError(f"{folder.name} already has an MTP head: {support.reason}")
    return config


def range_source(config: HubConfig, repo_id: str, commit: str, filename: str) -> RangeSource:
    """Where range requests for one file of the pinned commit go (resolve URL, auth headers)."""
    url = hf_hub_url(repo_id, filename, revision=commit, endpoint=config.endpoint)
    if not url.startswith(config.endpoint + "/"):
        raise HubError(f"huggingface_hub would fetch {url}, not from {config.endpoint}; set HF_ENDPOINT first")
    headers = build_hf_headers(token=config.token, library_name="specchat")
    return RangeSource(url, headers, config.timeout_s)


def resolve_commit(config: HubConfig, repo_id: str, revision: str) -> str:
    """The commit a revision of the repo points at (pinned for every later request)."""
    api = config.api()
    info = hub_call(
        lambda: api.model_info(repo_id, revision=revision, timeout=config.timeout_s), config, repo_id, repo_id
    )
    if not info.sha:
        raise HubError(f"{repo_id}: the hub did not say which commit {revision} is")
    return str(info.sha)


def _weight_map(config: HubConfig, repo_id: str, commit: str) -> tuple[dict[str, str] | None, int]:
    """The index's weight_map and its size, or (None, 0) when the repo has a single model.safetensors."""
    source = range_source(config, repo_id, commit, INDEX_FILE)
    try:
        raw = get_small_file(source.url, source.headers, source.timeout_s, MAX_INDEX_BYTES)
    except HfHubHTTPError as exc:
        if exc.response is not None and exc.response.status_code == 404:
            return None, 0
        raise translate_error(exc, repo_id, config) from exc
    except RangeRefused as exc:
        raise HubError(f"{repo_id}: {INDEX_FILE} is not plausible ({exc})") from exc
    try:
        weight_map = json.loads(raw)["weight_map"]
    except (ValueError, KeyError, TypeError) as exc:
        raise HubError(f"{repo_id}: {INDEX_FILE} has no readable weight_map ({exc})") from exc
    return {str(k): str(v) for k, v in weight_map.items()}, len(raw)


def head_spans(config: HubConfig, repo_id: str, commit: str) -> tuple[list[TensorSpan], int]:
    """The original's `mtp.*` tensors and the bytes read to find them; NoHeadError when it has none."""
    weight_map, meta = _weight_map(config, repo_id, commit)
    names = [k for k in weight_map if is_mtp_key(k)] if weight_map is not None else None
    if names == []:
        raise NoHeadError(
            f"{repo_id} has no MTP head: none of the {len(weight_map or {})} tensors in its {INDEX_FILE} "
            "starts with mtp."
        )
    shards = sorted({weight_map[n] for n in names}) if weight_map is not None and names else [SINGLE_FILE]
    spans: list[TensorSpan] = []
    for shard in shards:
        length, listed = shard_tensors(config, repo_id, commit, shard)
        meta += 8 + length
        spans += [s for s in listed if is_mtp_key(s.name)]
    if not spans:
        raise NoHeadError(f"{repo_id} has no MTP head: no tensor in {', '.join(shards)} starts with mtp.")
    return sorted(spans, key=lambda s: (s.shard, s.start)), meta


def shard_tensors(config: HubConfig, repo_id: str, commit: str, shard: str) -> tuple[int, list[TensorSpan]]:
    """(header length, tensors with absolute byte ranges) of one remote shard: the length from its first 8 bytes,
    the index from huggingface_hub's parse of its header."""
    try:
        length = header_length(range_source(config, repo_id, commit, shard), shard)
        tensors = safetensors_tensors(repo_id, shard, commit, config.endpoint, config.token, config.timeout_s)
    except SafetensorsParsingError as exc:
        raise CorruptFileError(f"{repo_id}: {shard} has no readable safetensors header ({exc})") from exc
    except UpstreamMismatch as exc:
        raise HubError(f"cannot read where {repo_id}'s head is: {exc}") from exc
    except Exception as exc:  # the hub's and the network's errors, as HubErrors where they have one
        translated = translate_error(exc, repo_id, config)
        if translated is exc:
            raise
        raise translated from exc
    return length, tensor_spans(shard, length, tensors)


def head_layers(spans: list[TensorSpan]) -> int:
    """How many MTP layers the head's tensor names hold."""
    found = {int(m.group(1)) for s in spans if (m := _LAYER.match(mtp_name(s.name)))}
    return max(found) + 1 if found else 0


def check_shapes(spans: list[TensorSpan], config: dict[str, Any], folder: Path, repo_id: str, layers: int) -> None:
    """HeadShapeError naming the first tensor whose shape does not fit the local config (both shapes)."""
    declared = config_mtp_layers(config)
    if declared and declared != layers:
        raise HeadShapeError(f"{folder.name} declares {declared} MTP layer(s), {repo_id}'s head has {layers}")
    expected = expected_head_shapes(text_config(config), layers)
    have = {mtp_name(s.name): s for s in spans}
    for name, shape in expected.items():
        span = have.get(name)
        if span is not None and span.shape != shape:
            raise HeadShapeError(
                f"{name} of {repo_id} has shape {span.shape}, but {folder.name}'s config needs {shape}: "
                "the original is not the model this folder was converted from"
            )
    moe = int(text_config(config).get("num_experts") or 0) > 0
    missing = [n for n in expected if n not in have and not (moe and ".mlp." in n)]
    if missing:
        raise HeadShapeError(f"{repo_id}'s head lacks {missing[0]} ({len(missing)} tensor(s) missing)")


def sidecar_path(folder: Path, config: dict[str, Any]) -> Path:
    """Where the head goes: the sidecar the config names, else the first name mlx-optiq looks for."""
    return Path(folder) / (configured_sidecar(config) or SIDECARS[0])


def plan_head(
    folder: Path,
    config: HubConfig,
    original: str | None = None,
    catalog: Catalog | None = None,
    revision: str = "main",
) -> HeadPlan:
    """Check the folder, find its original, and list the head's tensors (index + headers are read)."""
    folder = Path(folder).expanduser().resolve()
    local = check_local(folder)
    found = find_original(folder, original, catalog)
    if found is None:
        raise MtpHeadError(
            f"nothing says which checkpoint {folder.name} was converted from (no base_model in its README.md, "
            "config.json or the catalog): name it with --from REPO, e.g. --from Qwen/Qwen3.6-27B"
        )
    commit = resolve_commit(config, found.repo_id, revision)
    spans, meta = head_spans(config, found.repo_id, commit)
    layers = head_layers(spans)
    check_shapes(spans, local, folder, found.repo_id, layers)
    fmt = local_format(folder, local)
    return HeadPlan(folder, found, commit, tuple(spans), meta, layers, sidecar_path(folder, local), fmt)
