"""Can a draft serve a target? Same token->id mapping and the same special tokens."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .errors import IncompatibleDraftError
from .tokenizer import Vocabulary

SPECIAL_FIELDS = ("eos_token", "bos_token", "pad_token")
CHAT_MARKERS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>")


@dataclass(frozen=True)
class Check:
    """One line of a compatibility report."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class CompatReport:
    """Every check made on a (target, draft) pair; compatible when all pass."""

    checks: tuple[Check, ...]

    @property
    def compatible(self) -> bool:
        """True when every check passed."""
        return all(c.ok for c in self.checks)

    @property
    def reason(self) -> str:
        """The first failing check's detail, or an empty string."""
        return next((c.detail for c in self.checks if not c.ok), "")


def id_to_token(tokenizer: Vocabulary) -> dict[int, str]:
    """The tokenizer's full id->token map, added tokens included."""
    return {i: t for t, i in tokenizer.get_vocab().items()}


def vocab_hash(tokenizer: Vocabulary) -> str:
    """A short sha256 of the sorted id->token mapping."""
    digest = hashlib.sha256()
    for i, tok in sorted(id_to_token(tokenizer).items()):
        digest.update(f"{i}\t{tok}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def first_vocab_difference(target: Vocabulary, draft: Vocabulary) -> str | None:
    """Describe the first id whose token differs between the two tokenizers, or None."""
    t_map, d_map = id_to_token(target), id_to_token(draft)
    for i in sorted(set(t_map) | set(d_map)):
        t, d = t_map.get(i), d_map.get(i)
        if t != d:
            return f"token id {i} is {t!r} in the target but {d!r} in the draft"
    return None


def special_tokens(tokenizer: Vocabulary) -> dict[str, object]:
    """The special tokens that decide where generation stops and how chat is framed."""
    specials: dict[str, object] = {f: getattr(tokenizer, f, None) for f in SPECIAL_FIELDS}
    vocab = tokenizer.get_vocab()
    for marker in CHAT_MARKERS:
        specials[marker] = vocab.get(marker)
    eos_ids = getattr(tokenizer, "eos_token_ids", None)
    specials["eos_token_ids"] = tuple(sorted(eos_ids)) if eos_ids else None
    return specials


def check_pair(target: Vocabulary, draft: Vocabulary) -> CompatReport:
    """Compare the target's and the draft's tokenizers and return the report."""
    diff = first_vocab_difference(target, draft)
    t_hash, d_hash = vocab_hash(target), vocab_hash(draft)
    vocab = Check(
        "vocabulary",
        diff is None,
        f"identical ({t_hash})" if diff is None else f"vocabularies differ ({t_hash} vs {d_hash}): {diff}",
    )
    t_spec, d_spec = special_tokens(target), special_tokens(draft)
    bad = [k for k in t_spec if t_spec[k] != d_spec.get(k)]
    detail = (
        "identical"
        if not bad
        else (f"special token {bad[0]} is {t_spec[bad[0]]!r} in the target but {d_spec.get(bad[0])!r} in the draft")
    )
    return CompatReport((vocab, Check("special tokens", not bad, detail)))


def ensure_compatible(
    target: Vocabulary, draft: Vocabulary, target_name: str = "target", draft_name: str = "draft"
) -> None:
    """Raise IncompatibleDraftError naming the first difference when the draft cannot serve."""
    report = check_pair(target, draft)
    if not report.compatible:
        raise IncompatibleDraftError(f"{draft_name} cannot draft for {target_name}: {report.reason}")
