"""The curated catalog: the shipped file passes the schema check, and the check catches mistakes."""

import copy
import json

import pytest

from specchat.hub.catalog import load_catalog, read_catalog_text, validate_catalog
from specchat.hub.errors import HubError

DFLASH_8B = "z-lab/Qwen3-8B-DFlash-b16"
DFLASH_PAIRS = [
    ("mlx-community/Qwen3-4B-4bit", "z-lab/Qwen3-4B-DFlash-b16"),
    ("mlx-community/Qwen3-8B-4bit", DFLASH_8B),
    ("mlx-community/Qwen3.5-4B-4bit", "z-lab/Qwen3.5-4B-DFlash"),
    ("mlx-community/Qwen3.5-9B-4bit", "z-lab/Qwen3.5-9B-DFlash"),
    ("mlx-community/Qwen3.6-27B-OptiQ-4bit", "z-lab/Qwen3.6-27B-DFlash"),
]


def dflash_pair(data: dict) -> dict:
    """The first dflash pair of a parsed catalog."""
    return next(p for p in data["recommended_pairs"] if p["mode"] == "dflash")


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
    assert [(p.draft, p.mode, p.k) for p in catalog.pairs_for(target) if p.mode != "dflash"] == [(draft, mode, k)]
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
        (lambda d: d["recommended_pairs"][0].update(draft=DFLASH_8B), "a draft pair's draft must be a draft model"),
        (lambda d: dflash_pair(d).update(draft="mlx-community/Qwen3-0.6B-4bit"), "must be a DFlash drafter"),
        (lambda d: dflash_pair(d).update(target=DFLASH_8B), "is a DFlash drafter, not a model to chat with"),
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


@pytest.mark.parametrize("target, drafter", DFLASH_PAIRS)
def test_each_target_with_a_dflash_drafter_is_paired_with_it(target, drafter):
    catalog = load_catalog()
    entry = catalog.dflash_for(target)
    assert entry is not None and entry.repo_id == drafter and entry.is_dflash
    assert not entry.can_target and not entry.can_draft  # never offered as a model to chat with or a draft
    assert catalog.dflash_target(drafter) == target
    (pair,) = [p for p in catalog.pairs_for(target) if p.mode == "dflash"]
    assert (pair.draft, pair.k) == (drafter, 15)  # a block of 16 drafts 15 tokens
    assert catalog.get(target).can_target and catalog.get(target).family == entry.family


def test_targets_without_a_dflash_drafter_have_none():
    catalog = load_catalog()
    paired = {target for target, _ in DFLASH_PAIRS}
    for model in catalog.models:
        if model.can_target and model.repo_id not in paired:
            assert catalog.dflash_for(model.repo_id) is None, model.repo_id
    assert catalog.dflash_for(DFLASH_8B) is None and catalog.dflash_target("mlx-community/Qwen3-8B-4bit") is None
