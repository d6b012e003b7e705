"""Safetensors files against their headers: whole files pass, cut-off or padded ones are named with the bytes."""

import json
import shutil

import pytest

from specchat.hub.pairing import INCOMPATIBLE, pair_report
from specchat.hub.store import describe_folder
from specchat.hub.weights_check import broken_weights, expected_size, safetensors_problem


def truncated_copy(folder, tmp_path, cut: int):
    """A copy of a model folder whose model.safetensors lost its last `cut` bytes."""
    copy = tmp_path / f"{folder.name}-cut"
    shutil.copytree(folder, copy)
    weights = copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-cut])
    return copy


def test_a_whole_file_matches_its_header(dense_target):
    weights = dense_target / "model.safetensors"
    assert expected_size(weights) == weights.stat().st_size
    assert safetensors_problem(weights) is None and broken_weights(dense_target) == []


def test_a_truncated_file_says_how_many_bytes_are_missing(dense_target, tmp_path):
    copy = truncated_copy(dense_target, tmp_path, 1234)
    size = (copy / "model.safetensors").stat().st_size
    assert broken_weights(copy) == [
        f"model.safetensors is truncated: 1.2 KB missing ({size} of the {size + 1234} bytes its header lists)"
    ]


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"\x01\x02", "too short to hold a safetensors header"),
        ((500).to_bytes(8, "little") + b'{"a":', "cut off inside its header (5 of 500 header bytes)"),
        ((2).to_bytes(8, "little") + b"[]", "its header is not a JSON object"),
    ],
)
def test_broken_headers_are_named(tmp_path, content, problem):
    (tmp_path / "w.safetensors").write_bytes(content)
    assert safetensors_problem(tmp_path / "w.safetensors") == f"w.safetensors is broken: {problem}"


def test_extra_bytes_after_the_data_are_reported(tmp_path):
    header = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    data = len(header).to_bytes(8, "little") + header + bytes(8)
    (tmp_path / "w.safetensors").write_bytes(data + b"junk")
    assert safetensors_problem(tmp_path / "w.safetensors") == (
        f"w.safetensors has 4 bytes after its data ({len(data) + 4}, its header lists {len(data)})"
    )


def test_a_truncated_folder_is_not_complete(dense_target, tmp_path):
    model = describe_folder(truncated_copy(dense_target, tmp_path, 100))
    assert not model.complete
    assert model.missing[0].startswith("model.safetensors is truncated: 100 B missing")


def test_pair_refuses_a_truncated_draft(dense_target, dense_draft_partial, tmp_path):
    report = pair_report(dense_target, truncated_copy(dense_draft_partial, tmp_path, 4096))
    weights = next(c for c in report.checks if c.name == "weights")
    assert weights.status == INCOMPATIBLE and not report.compatible
    assert weights.detail.startswith("draft: model.safetensors is truncated: 4.1 KB missing")


def test_a_folder_without_tokenizer_files_is_named_as_such(dense_target, tmp_path):
    copy = tmp_path / "no-tokenizer"
    shutil.copytree(dense_target, copy)
    for name in ("tokenizer.json", "special_tokens_map.json"):
        (copy / name).unlink()  # tokenizer_config.json alone is no tokenizer
    model = describe_folder(copy)
    assert not model.complete
    assert model.missing == ("tokenizer files (tokenizer.json, vocab.json or tokenizer.model)",)
    report = pair_report(dense_target, copy)
    assert f"{copy} has no tokenizer files (tokenizer.json, vocab.json or tokenizer.model)" in report.reason
