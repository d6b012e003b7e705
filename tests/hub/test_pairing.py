"""Pair reports on tiny fixture models: equal vocabularies pass, different ones say why."""

import re
from types import SimpleNamespace

import pytest

from specchat.hub.pairing import (
    INCOMPATIBLE,
    OK,
    WARNING,
    compatible_drafts,
    draft_options,
    pair_report,
    template_family,
)
from specchat.hub.store import describe_folder
from specchat.hub.tokenizer_info import VocabHashCache


def statuses(report):
    return {c.name: c.status for c in report.checks}


def test_same_vocabulary_is_compatible(dense_target, dense_draft_partial):
    report = pair_report(dense_target, dense_draft_partial)
    assert report.compatible and report.reason == ""
    assert statuses(report) == {
        "weights": OK,
        "vocabulary": OK,
        "special tokens": OK,
        "chat template": OK,
        "architecture": OK,
        "size": WARNING,
    }  # same-size draft: no speed-up


def test_hybrid_draft_for_a_dense_target_is_compatible(dense_target, hybrid_draft_unrelated):
    report = pair_report(dense_target, hybrid_draft_unrelated)
    assert report.compatible
    arch = next(c for c in report.checks if c.name == "architecture")
    assert arch.detail == "target dense (qwen3), draft hybrid (qwen3_5)"


def test_different_vocabulary_is_incompatible_with_the_reason(dense_target, dense_other_vocab):
    report = pair_report(dense_target, dense_other_vocab)
    assert not report.compatible
    assert statuses(report)["vocabulary"] == INCOMPATIBLE
    assert re.search(
        r"vocabulary: vocabularies differ \(\w{16} vs \w{16}\): token id 0 is '.+' in the target", report.reason
    ), report.reason


def test_different_eos_is_incompatible(dense_target, dense_other_eos):
    report = pair_report(dense_target, dense_other_eos)
    assert statuses(report) == {
        "weights": OK,
        "vocabulary": OK,
        "special tokens": INCOMPATIBLE,
        "chat template": OK,
        "architecture": OK,
        "size": WARNING,
    }
    assert "eos_token" in report.reason


def test_a_folder_without_tokenizer_is_reported_not_raised(dense_target, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    report = pair_report(dense_target, tmp_path)
    assert not report.compatible and "no tokenizer files" in report.reason


@pytest.mark.parametrize(
    "template, family",
    [
        ("{{ '<|im_start|>' }}", "chatml"),
        ("<|start_header_id|>", "llama3"),
        ("<start_of_turn>", "gemma"),
        ("[INST]", "mistral"),
        ("{{ x }}", "other"),
        (None, "none"),
    ],
)
def test_template_family(template, family):
    assert template_family(SimpleNamespace(chat_template=template)) == family


def test_only_compatible_drafts_are_offered(
    dense_target, dense_draft_partial, hybrid_target, dense_other_vocab, dense_other_eos
):
    cache = VocabHashCache()
    target = describe_folder(dense_target, vocab=cache)
    others = [
        describe_folder(p, vocab=cache)
        for p in (dense_target, dense_draft_partial, hybrid_target, dense_other_vocab, dense_other_eos)
    ]
    offered = compatible_drafts(target, others)
    assert [m.path for m in offered] == [dense_draft_partial, hybrid_target]
    reasons = {m.path: reason for m, _, reason in draft_options(target, others)}
    assert reasons[dense_other_vocab].startswith("vocabulary differs (hash ")
    assert "special token" in reasons[dense_other_eos]
    assert dense_target not in reasons  # the target never drafts for itself
