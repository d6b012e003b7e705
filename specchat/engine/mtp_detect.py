"""Tell whether a model folder ships a multi-token-prediction (MTP) head, without loading it.

A folder is MTP-capable when its config declares MTP layers
(`mtp_num_hidden_layers` / `num_nextn_predict_layers` > 0, at the top level or
under `text_config`) AND `mtp.*` tensors exist: in a sidecar file (the names
mlx-optiq looks for) or embedded in the main weights (found through
`model.safetensors.index.json`, or the JSON headers of `model*.safetensors`;
no tensor data is read).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from specchat.upstream.mlx_optiq import configured_sidecar, mtp_key_prefixes, mtp_sidecar_names

from .json_types import JSONValue

CONFIG_KEYS = ("mtp_num_hidden_layers", "num_nextn_predict_layers")
SIDECARS = mtp_sidecar_names()  # in mlx-optiq's lookup order
MTP_PREFIXES = mtp_key_prefixes()  # as mlx-optiq reads them
INDEX_FILE = "model.safetensors.index.json"
MAX_HEADER_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class MtpSupport:
    """Whether a folder has a usable MTP head, where it is, or why not."""

    available: bool
    reason: str
    source: Literal["embedded", "sidecar"] | None = None
    num_layers: int = 0


def is_mtp_key(key: str) -> bool:
    """True for a tensor name that belongs to an MTP head."""
    return key.startswith(MTP_PREFIXES)


def config_mtp_layers(config: Mapping[str, JSONValue]) -> int:
    """Number of MTP layers the config declares (0 when none)."""
    for section in (config, config.get("text_config") or {}):
        if not isinstance(section, dict):
            continue
        for key in CONFIG_KEYS:
            value = section.get(key)
            if isinstance(value, int) and value > 0:
                return value
    return 0


def safetensors_keys(path: Path) -> list[str]:
    """Tensor names of a .safetensors file, read from its JSON header only."""
    with path.open("rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise ValueError("file shorter than a safetensors header")
        (size,) = struct.unpack("<Q", raw)
        if size > MAX_HEADER_BYTES:
            raise ValueError(f"header of {size} bytes is not plausible")
        header = json.loads(f.read(size))
    return [k for k in header if k != "__metadata__"]


def _extra_sidecar(config: Mapping[str, JSONValue]) -> list[str]:
    named = configured_sidecar(config)
    return [named] if named else []


def _find_sidecar(folder: Path, config: Mapping[str, JSONValue]) -> tuple[Path | None, str]:
    """The sidecar mlx-optiq would load (the first that exists), or None; and what is wrong with it."""
    for rel in dict.fromkeys(_extra_sidecar(config) + list(SIDECARS)):
        path = folder / rel
        if not path.is_file():
            continue
        try:
            keys = safetensors_keys(path)
        except (OSError, ValueError) as exc:
            return path, f"sidecar {rel} is unreadable ({exc})"
        if not any(is_mtp_key(k) for k in keys):
            return path, f"sidecar {rel} holds no mtp.* tensors"
        return path, ""
    return None, ""


def _embedded_mtp_keys(folder: Path) -> tuple[list[str], str]:
    """mtp.* tensor names in the main weights, and where they were looked for."""
    index = folder / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        except (OSError, ValueError, AttributeError) as exc:
            return [], f"{INDEX_FILE} is unreadable ({exc})"
        return [k for k in weight_map if is_mtp_key(k)], f"the weight_map of {INDEX_FILE}"
    shards = sorted(folder.glob("model*.safetensors"))
    found: list[str] = []
    for shard in shards:
        try:
            found += [k for k in safetensors_keys(shard) if is_mtp_key(k)]
        except (OSError, ValueError):
            continue
    names = ", ".join(s.name for s in shards) or "no model*.safetensors files"
    return found, f"the headers of {names}"


def detect_mtp(folder: Path) -> MtpSupport:
    """Check config and tensor names of a model folder for an MTP head; loads no weights."""
    folder = Path(folder).expanduser()
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return MtpSupport(False, f"cannot read {config_file}: {exc}")
    if not isinstance(config, dict):
        return MtpSupport(False, f"{config_file} does not hold a JSON object")
    layers = config_mtp_layers(config)
    if layers == 0:
        return MtpSupport(
            False,
            f"config.json declares no MTP layers (looked for {' / '.join(CONFIG_KEYS)} > 0, also under text_config)",
        )
    sidecar, problem = _find_sidecar(folder, config)
    if problem:
        return MtpSupport(False, f"config.json declares {layers} MTP layer(s) but {problem}", None, layers)
    if sidecar is not None:
        rel = sidecar.relative_to(folder).as_posix()
        return MtpSupport(True, f"{layers} MTP layer(s) in sidecar {rel}", "sidecar", layers)
    embedded, where = _embedded_mtp_keys(folder)
    if embedded:
        return MtpSupport(
            True,
            f"{layers} MTP layer(s) embedded in the weights ({len(embedded)} mtp.* tensors, found in {where})",
            "embedded",
            layers,
        )
    return MtpSupport(
        False,
        f"config.json declares {layers} MTP layer(s) but no mtp.* tensors were "
        f"found: no sidecar ({', '.join(SIDECARS)}) and none in {where}",
        None,
        layers,
    )
