"""mlx-optiq: attaching a model's MTP head, and the internals of the attached head we use.

Internals used (each verified by `self_check`):
- `optiq.runtime.mtp.runtime.attach(model, tokenizer, model_path)`: the model gains
  `mtp_forward`, `make_mtp_cache` and `return_hidden`;
- `_mtp_core(hidden_states, next_token_ids, mtp_cache=, emit_logits=False)`: the head
  without its vocabulary projection;
- where mlx-optiq looks for a head (sidecar names, tensor prefixes), mirrored here so a
  folder can be checked without importing mlx-optiq.
mlx-optiq is a heavy import: it is imported only when a head is attached or checked.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import mlx.core as mx

from .checks import HookProbe, SelfCheck, missing_attributes, missing_parameters, run_checks

UPSTREAM, DISTRIBUTION = "mlx-optiq", "mlx-optiq"
# mlx-optiq's lookup order (optiq.runtime.mtp.artifacts.expected_mtp_file).
SIDECAR_NAMES = ("optiq/mtp.safetensors", "mtp.safetensors", "mtp/weights.safetensors", "model-mtp.safetensors")
MTP_KEY_PREFIXES = ("mtp.", "language_model.mtp.")
EXTRA_TENSORS_KEY, EXTRA_MTP_FILE = "mlx_lm_extra_tensors", "mtp_file"  # a config may name its sidecar
CORE_PARAMETERS = ("hidden_states", "next_token_ids", "mtp_cache", "emit_logits")
FORWARD_PARAMETERS = ("hidden_states", "next_token_ids", "mtp_cache", "return_hidden")
# The attached head without its projection: (hidden_states, next_token_ids, mtp_cache=, emit_logits=False)
# -> (logits or None, hidden states). The mlx-lm models it attaches to are untyped: Any here.
MtpCore = Callable[..., tuple[mx.array | None, mx.array]]


def mtp_sidecar_names() -> tuple[str, ...]:
    """Sidecar files mlx-optiq loads a head from, in its lookup order."""
    return SIDECAR_NAMES


def mtp_key_prefixes() -> tuple[str, ...]:
    """Tensor name prefixes mlx-optiq reads as the MTP head's."""
    return MTP_KEY_PREFIXES


def configured_sidecar(config: Mapping[str, Any]) -> str | None:
    """The sidecar a config names for mlx-optiq (mlx_lm_extra_tensors.mtp_file), if any."""
    extra = config.get(EXTRA_TENSORS_KEY)
    if isinstance(extra, dict) and isinstance(extra.get(EXTRA_MTP_FILE), str):
        return extra[EXTRA_MTP_FILE]
    return None


def expected_head_shapes(text_config: Mapping[str, Any], num_layers: int) -> dict[str, tuple[int, ...]]:
    """Shapes of the float `mtp.*` tensors mlx-optiq's head block takes for this text config.

    Built as mlx-optiq builds the block (norms, fc, mlx-lm's qwen3_5 DecoderLayer at the first
    full-attention index); parameters are lazy, so nothing of their size is computed.
    """
    from mlx.utils import tree_flatten
    from mlx_lm.models.qwen3_5 import DecoderLayer, TextModelArgs

    args = TextModelArgs.from_dict(dict(text_config))
    hidden = args.hidden_size
    shapes: dict[str, tuple[int, ...]] = {"mtp.fc.weight": (hidden, 2 * hidden)}
    for norm in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
        shapes[f"mtp.{norm}.weight"] = (hidden,)
    layer = DecoderLayer(args, layer_idx=args.full_attention_interval - 1)
    for i in range(num_layers):
        params: list[tuple[str, Any]] = tree_flatten(layer.parameters())  # type: ignore[assignment]
        for key, value in params:
            shapes[f"mtp.layers.{i}.{key}"] = tuple(value.shape)
    return shapes


def attach_mtp_head(model: Any, tokenizer: object, folder: Path) -> None:
    """Attach the folder's MTP head to a loaded model in place (mlx-optiq raises when it cannot)."""
    from optiq.runtime.mtp.runtime import attach

    attach(model, tokenizer, folder)


def _text_model(model: Any) -> Any:
    return getattr(model, "language_model", model)


def mtp_core(model: Any) -> MtpCore | None:
    """The attached head without its vocabulary projection (`_mtp_core`), or None."""
    return getattr(_text_model(model), "_mtp_core", None)


def head_logits(model: Any, hidden: mx.array) -> mx.array:
    """Project head hidden states to logits the way mlx-optiq's head does (tied embeddings or lm_head)."""
    text = _text_model(model)
    if text.args.tie_word_embeddings:
        return text.model.embed_tokens.as_linear(hidden)
    return text.lm_head(hidden)


# --- self-check -----------------------------------------------------------------------------


def _probe_attach() -> str | None:
    from optiq.runtime.mtp import runtime

    return missing_parameters(getattr(runtime, "attach", None), ("model", "tokenizer", "model_path"), positional=True)


def _probe_prefixes() -> str | None:
    from optiq.runtime.mtp import artifacts

    theirs = tuple(getattr(artifacts, "MTP_KEY_PREFIXES", ()))
    return None if theirs == MTP_KEY_PREFIXES else f"its MTP tensor prefixes are {theirs}, not {MTP_KEY_PREFIXES}"


def _probe_sidecars() -> str | None:
    """Create every sidecar name and remove them one by one: optiq must pick them in our order."""
    from optiq.runtime.mtp import artifacts

    expected = getattr(artifacts, "expected_mtp_file", None)
    if expected is None:
        return "artifacts.expected_mtp_file is gone"
    with tempfile.TemporaryDirectory(prefix="specchat-mtp-names-") as tmp:
        folder = Path(tmp)
        for name in SIDECAR_NAMES:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).touch()
        for name in SIDECAR_NAMES:
            picked = Path(expected(folder, {})).relative_to(folder).as_posix()
            if picked != name:
                return f"it now looks for the MTP sidecar {picked} before {name}"
            (folder / name).unlink()
    return None


def _probe_attached(model: Any, attribute: str, parameters: tuple[str, ...]) -> HookProbe:
    def probe() -> str | None:
        fn = getattr(_text_model(model), attribute, None)
        if fn is None:
            return f"the attached model has no `{attribute}`"
        return missing_parameters(fn, parameters)

    return probe


def _probe_cache(model: Any) -> str | None:
    return missing_attributes(model, ("make_mtp_cache",)) or missing_attributes(
        model.make_mtp_cache()[0], ("offset", "trim")
    )


def self_check(model: Any = None) -> SelfCheck:
    """Verify the mlx-optiq hooks; with an attached model, also the head's own methods."""
    probes: dict[str, HookProbe] = {
        "runtime.attach": _probe_attach,
        "MTP sidecar names": _probe_sidecars,
        "MTP tensor prefixes": _probe_prefixes,
    }
    if model is not None:
        probes["mtp_forward"] = _probe_attached(model, "mtp_forward", FORWARD_PARAMETERS)
        probes["_mtp_core"] = _probe_attached(model, "_mtp_core", CORE_PARAMETERS)
        probes["make_mtp_cache"] = lambda: _probe_cache(model)
    return run_checks(UPSTREAM, DISTRIBUTION, probes)
