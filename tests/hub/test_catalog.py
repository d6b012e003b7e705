"""The curated catalog: the shipped file passes the schema check, and the check catches mistakes."""

import copy
import json

import pytest

from specchat.hub.catalog import load_catalog, read_catalog_text, validate_catalog
from specchat.hub.errors import HubError


@pytest.fixture(scope="module")
def raw():
    return json.loads(read_catalog_text())


def test_shipped_catalog_is_valid(raw):
    assert validate_catalog(raw) == []


@pytest.mark.parametrize(
    "target, draft, mode, k",
    [
        ("mlx-community/Qwen3-8B-4bit", "mlx-community/Qwen3-0.6B-4bit", "draft", 2),
        ("mlx-community/Qwen3.8-27B-4bit", "mlx-community/Qwen3.5-0.8B-4bit", "draft", 4),
        ("mlx-community/Qwen3.6-27B-OptiQ-4bit", None, "mtp", 2),
    ],
)
def test_required_pairs_are_recommended(target, draft, mode, k):
    catalog = load_catalog()
    assert [(p.draft, p.mode, p.k) for p in catalog.pairs_for(target)] == [(draft, mode, k)]
    assert catalog.get(target).can_target
    if draft:
        assert catalog.get(draft).can_draft


def test_catalog_covers_dense_hybrid_and_mtp():
    catalog = load_catalog()
    optiq = catalog.get("mlx-community/Qwen3.6-27B-OptiQ-4bit")
    assert optiq.mtp and optiq.mtp_depth == 2
    assert catalog.get("mlx-community/Qwen3-8B-4bit").architecture == "dense"
    assert catalog.get("mlx-community/Qwen3.5-0.8B-4bit").architecture == "hybrid"
    families = {m.family for m in catalog.models}
    assert {"qwen3", "qwen3.5"} <= families
    assert sum(m.family == "qwen3" for m in catalog.models) >= 4


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["models"][0].update(role="helper"), "role 'helper'"),
        (lambda d: d["models"][0].pop("approx_size_gb"), "'approx_size_gb' must be"),
        (lambda d: d["models"][0].update(architecture="moe"), "architecture 'moe'"),
        (lambda d: d["models"][0].update(mtp=True, mtp_depth=None), "positive mtp_depth"),
        (lambda d: d["models"].append(dict(d["models"][0])), "duplicate repo_id"),
        (lambda d: d["recommended_pairs"][0].update(draft="nobody/Nothing"), "draft 'nobody/Nothing'"),
        (lambda d: d["recommended_pairs"][0].update(k=0), "k must be a whole number"),
        (lambda d: d["recommended_pairs"][2].update(draft="mlx-community/Qwen3-0.6B-4bit"), "an mtp pair has no draft"),
    ],
)
def test_schema_check_names_the_problem(raw, mutate, expected):
    data = copy.deepcopy(raw)
    mutate(data)
    problems = validate_catalog(data)
    assert any(expected in p for p in problems), problems


def test_load_catalog_rejects_an_invalid_file(tmp_path, raw):
    data = copy.deepcopy(raw)
    data["models"][1]["role"] = "boss"
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(data))
    with pytest.raises(HubError, match=r"models\[1\]: role 'boss'"):
        load_catalog(path)
