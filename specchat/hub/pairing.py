"""Can this draft serve this target? A report with a reason for every check, and draft lists."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import HubError
from .model_facts import facts_from_config, read_config, weights_bytes
from .store import LocalModel
from .tokenizer_info import load_local_tokenizer
from .units import format_bytes
from .weights_check import broken_weights

OK, WARNING, INCOMPATIBLE = "ok", "warning", "incompatible"
_TEMPLATE_MARKERS = (
    ("<|im_start|>", "chatml"),
    ("<|start_header_id|>", "llama3"),
    ("<start_of_turn>", "gemma"),
    ("[INST]", "mistral"),
)


@dataclass(frozen=True)
class PairCheck:
    """One line of the report: ok, a warning (works, but slower), or incompatible (with why)."""

    name: str
    status: str
    detail: str


@dataclass(frozen=True)
class PairReport:
    """Every check on a (target, draft) pair."""

    target: Path
    draft: Path
    checks: tuple[PairCheck, ...]

    @property
    def compatible(self) -> bool:
        """True when no check is incompatible."""
        return all(c.status != INCOMPATIBLE for c in self.checks)

    @property
    def reason(self) -> str:
        """Why the draft cannot serve ("" when it can)."""
        return "; ".join(f"{c.name}: {c.detail}" for c in self.checks if c.status == INCOMPATIBLE)


def template_family(tokenizer: object) -> str:
    """ "chatml" (Qwen), "llama3", "gemma", "mistral", "other", or "none" without a template."""
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return "none"
    text = template if isinstance(template, str) else str(template)
    return next((family for marker, family in _TEMPLATE_MARKERS if marker in text), "other")


def check_template(target_tok: object, draft_tok: object) -> PairCheck:
    """Same chat format family; a different one still works but drafts worse."""
    t, d = template_family(target_tok), template_family(draft_tok)
    if t == d:
        return PairCheck("chat template", OK, f"both {t}")
    return PairCheck(
        "chat template",
        WARNING,
        f"target uses {t}, draft {d}: prompts are framed for the target, so the draft will guess less well",
    )


def _mlx_supports(config: dict[str, Any]) -> str | None:
    """None when mlx-lm has a model class for the config, else why not."""
    if not config.get("model_type"):
        return "config.json has no model_type"
    from specchat.upstream.mlx_lm import model_classes

    try:
        model_classes(config)
    except (ValueError, KeyError) as exc:
        return str(exc)
    return None


def check_architecture(target: Path, draft: Path) -> PairCheck:
    """Both must be model types mlx-lm runs; dense and hybrid mix freely (both roll back exactly)."""
    t_cfg, d_cfg = read_config(target), read_config(draft)
    for role, cfg in (("target", t_cfg), ("draft", d_cfg)):
        problem = _mlx_supports(cfg)
        if problem:
            return PairCheck("architecture", INCOMPATIBLE, f"{role}: {problem}")
    t, d = facts_from_config(t_cfg), facts_from_config(d_cfg)
    return PairCheck(
        "architecture", OK, f"target {t.architecture} ({t.model_type}), draft {d.architecture} ({d.model_type})"
    )


def check_size(target: Path, draft: Path) -> PairCheck:
    """A draft only pays off when it is much smaller than the target."""
    t, d = weights_bytes(target), weights_bytes(draft)
    if t and d >= t:
        return PairCheck(
            "size",
            WARNING,
            f"the draft ({format_bytes(d)}) is not smaller than the "
            f"target ({format_bytes(t)}); it cannot make it faster",
        )
    return PairCheck("size", OK, f"draft is {d / t:.0%} of the target" if t else "unknown")


def check_weights(target: Path, draft: Path) -> PairCheck:
    """Every safetensors file of both folders is as long as its header says (a cut-off copy cannot load)."""
    problems = [
        f"{role}: {problem}"
        for role, folder in (("target", target), ("draft", draft))
        for problem in broken_weights(folder)
    ]
    if problems:
        return PairCheck("weights", INCOMPATIBLE, "; ".join(problems))
    return PairCheck("weights", OK, "every safetensors file is as long as its header says")


def pair_report(target: Path, draft: Path, tokenizers: dict[Path, Any] | None = None) -> PairReport:
    """Weights, vocabulary, special tokens (specchat.engine.compat), chat template, architecture and size."""
    from specchat.engine.compat import check_pair

    target, draft = Path(target), Path(draft)
    cache = tokenizers if tokenizers is not None else {}
    weights = check_weights(target, draft)
    try:
        t_tok = _tokenizer(target, cache)
        d_tok = _tokenizer(draft, cache)
    except HubError as exc:
        return PairReport(target, draft, (weights, PairCheck("tokenizer", INCOMPATIBLE, str(exc))))
    compat = check_pair(t_tok, d_tok)
    checks = [weights] + [PairCheck(c.name, OK if c.ok else INCOMPATIBLE, c.detail) for c in compat.checks]
    checks += [check_template(t_tok, d_tok), check_architecture(target, draft), check_size(target, draft)]
    return PairReport(target, draft, tuple(checks))


def _tokenizer(folder: Path, cache: dict[Path, Any]) -> Any:  # mlx-lm's TokenizerWrapper
    key = folder.resolve()
    if key not in cache:
        cache[key] = load_local_tokenizer(folder)
    return cache[key]


DraftOption = tuple[LocalModel, "PairReport | None", str]


def draft_options(target: LocalModel, candidates: list[LocalModel]) -> list[DraftOption]:
    """Every other complete model with (model, report, reason-if-incompatible).

    Models whose vocab hash already differs are ruled out without loading tokenizers.
    """
    tokenizers: dict[Path, Any] = {}
    options: list[DraftOption] = []
    for model in candidates:
        if model.path.resolve() == target.path.resolve() or not model.complete:
            continue
        if target.vocab_hash and model.vocab_hash and target.vocab_hash != model.vocab_hash:
            options.append(
                (model, None, f"vocabulary differs (hash {model.vocab_hash} vs the target's {target.vocab_hash})")
            )
            continue
        report = pair_report(target.path, model.path, tokenizers)
        options.append((model, report, report.reason))
    return options


def compatible_drafts(target: LocalModel, candidates: list[LocalModel]) -> list[LocalModel]:
    """Only the models that can draft for the target (what the UI offers)."""
    return [model for model, _, reason in draft_options(target, candidates) if not reason]
