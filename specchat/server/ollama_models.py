"""The loaded model as Ollama lists it (/api/tags, /api/show, /api/ps), from its config.json and its folder:
what can be read honestly is filled in (family, parameter count from the safetensors headers, quantization,
context), the rest is left empty."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from specchat.engine.json_types import JSONObject, as_object, as_str
from specchat.engine.loading import context_limit

from .backend import ServedEngine
from .errors import ApiError

OLLAMA_API_VERSION = "0.9.0"  # the Ollama API level these routes follow (think, tools, format schemas)
TAG = ":latest"
HEADER_LIMIT = 100 * 1024 * 1024  # a safetensors header this large is not one


def model_name(engine: ServedEngine) -> str:
    """The model's name as Ollama lists it: the target folder's name with the :latest tag."""
    return Path(engine.target.name).name + TAG


def not_found_error(name: object, served: str) -> ApiError:
    """404 for a model that is not the one loaded."""
    return ApiError(404, f"model {name!r} not found: this server serves {served}", code="model_not_found")


def listed(engine: ServedEngine) -> JSONObject:
    """The model's entry in /api/tags."""
    folder = _folder(engine)
    files = sorted(p for p in folder.iterdir() if p.is_file()) if folder else []
    name = model_name(engine)
    return {
        "name": name,
        "model": name,
        "modified_at": _modified(folder),
        "size": sum(p.stat().st_size for p in files),
        "digest": _digest(files),
        "details": details(engine, files),
    }


def details(engine: ServedEngine, files: list[Path]) -> JSONObject:
    """Ollama's details: format, family, parameter size and quantization."""
    config = engine.target.config
    family = str(config.get("model_type") or "")
    count = parameter_count(files, config)
    return {
        "parent_model": "",
        "format": "safetensors",
        "family": family,
        "families": [family] if family else None,
        "parameter_size": _human(count) if count else "",
        "quantization_level": _quantization(config),
    }


def shown(engine: ServedEngine, defaults: JSONObject) -> JSONObject:
    """The /api/show body: details, model_info from config.json, the chat template, the default parameters."""
    entry = listed(engine)
    config = engine.target.config
    template = getattr(engine.tokenizer, "chat_template", None)
    about = as_object(entry["details"])
    return {
        "modified_at": entry["modified_at"],
        "details": about,
        "model_info": model_info(config, as_str(about.get("family")), as_str(about.get("parameter_size"))),
        "template": template if isinstance(template, str) else "",
        "parameters": "\n".join(f"{k} {v}" for k, v in {**defaults, **_num_ctx(engine)}.items()),
        "capabilities": capabilities(template if isinstance(template, str) else None),
        "license": "",
        "modelfile": "",
    }


def _num_ctx(engine: ServedEngine) -> JSONObject:
    """The context the loaded model runs at, as Ollama names it among the parameters (none when unknown)."""
    window = engine.context_window()
    return {"num_ctx": window[0]} if window is not None else {}


def capabilities(template: str | None) -> list[str]:
    """completion always; tools and thinking when the chat template takes them."""
    found = ["completion"]
    if template and "tools" in template:
        found.append("tools")
    if template and "enable_thinking" in template:
        found.append("thinking")
    return found


def model_info(config: JSONObject, family: str, parameter_size: str) -> JSONObject:
    """Ollama's model_info keys that config.json answers."""
    nested = config.get("text_config")
    text: JSONObject = nested if isinstance(nested, dict) else config
    limit = context_limit(config)
    keys = {
        "embedding_length": "hidden_size",
        "block_count": "num_hidden_layers",
        "feed_forward_length": "intermediate_size",
        "attention.head_count": "num_attention_heads",
        "attention.head_count_kv": "num_key_value_heads",
        "vocab_size": "vocab_size",
    }
    info: JSONObject = {"general.architecture": family}
    info.update({f"{family}.{k}": text[v] for k, v in keys.items() if v in text})
    if limit is not None:
        info[f"{family}.context_length"] = limit[0]
    return info


def running(engine: ServedEngine) -> JSONObject:
    """The model's entry in /api/ps: loaded until the server stops, its weights in memory."""
    entry = listed(engine)
    window = engine.context_window()  # what the loaded model runs at: --context-length where it is below its own
    return {**entry, "size_vram": entry["size"], "context_length": window[0] if window else None}


def parameter_count(files: list[Path], config: JSONObject) -> int:
    """Parameters from the safetensors headers; packed quantized weights counted at their bits, their scales and
    biases left out."""
    quantization = config.get("quantization")
    bits = quantization.get("bits") if isinstance(quantization, Mapping) else None
    bits = bits if isinstance(bits, int) else None
    total = 0
    for path in files:
        if path.suffix == ".safetensors":
            total += _count(_header(path), bits)
    return total


def _count(header: JSONObject, bits: int | None) -> int:
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__" or not isinstance(tensor, dict):
            continue
        stem = name.rsplit(".", 1)[0]
        if bits and name.endswith((".scales", ".biases")) and f"{stem}.weight" in header:
            continue
        count = 1
        for size in tensor.get("shape", []):
            count *= int(size)
        packed = bits and tensor.get("dtype") == "U32" and f"{stem}.scales" in header
        total += count * (32 // int(bits)) if packed and bits else count
    return total


def _header(path: Path) -> JSONObject:
    try:
        with path.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > HEADER_LIMIT:
                return {}
            header = json.loads(handle.read(length))
    except (OSError, ValueError, struct.error):
        return {}
    return header if isinstance(header, dict) else {}


def _human(count: int) -> str:
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= scale:
            return f"{count / scale:.2f}".rstrip("0").rstrip(".") + unit
    return str(count)


def _quantization(config: JSONObject) -> str:
    quant = config.get("quantization")
    if isinstance(quant, dict) and quant.get("bits"):
        return f"Q{quant['bits']}"
    dtype = config.get("torch_dtype") or as_object(config.get("text_config")).get("torch_dtype")
    return {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}.get(str(dtype), "")


def _folder(engine: ServedEngine) -> Path | None:
    path = getattr(engine.target, "path", None)  # a local model's folder; a remote engine has none here
    return path if isinstance(path, Path) and path.is_dir() else None


def _modified(folder: Path | None) -> str:
    config = folder / "config.json" if folder else None
    stamp = config.stat().st_mtime if config and config.exists() else 0.0
    return datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")


def _digest(files: list[Path]) -> str:
    """sha256 over the folder's file names and sizes and its config.json: it names these files, not a blob."""
    if not files:
        return ""
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}:{path.stat().st_size}\n".encode())
        if path.name == "config.json":
            digest.update(path.read_bytes())
    return digest.hexdigest()
