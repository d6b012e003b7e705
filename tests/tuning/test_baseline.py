"""The plain-decode speed cache (JSON in the data folder) and its measurement on a tiny model."""

import pytest

from specchat.engine import Engine
from specchat.paths import AppPaths
from specchat.tuning.baseline import CACHE_NAME, BaselineCache, measure_baseline_tps


def test_cache_round_trip_keeps_other_models(tmp_path):
    paths = AppPaths.under(tmp_path)
    cache = BaselineCache.for_paths(paths)
    assert cache.path == paths.data_dir / CACHE_NAME and cache.get("a") is None
    cache.put("a", 10.0)
    cache.put("b", 20.0, source="plain-decode reply")
    cache.put("a", 12.0)
    again = BaselineCache.for_paths(paths)
    assert again.get("a").tokens_per_s == 12.0 and again.get("b").source == "plain-decode reply"


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"models": []}',
        '{"models": {"a": {"tokens_per_s": -1}}}',
        '{"models": {"a": {"tokens_per_s": true}}}',
    ],
)
def test_bad_cache_files_count_as_empty(tmp_path, content):
    path = tmp_path / CACHE_NAME
    path.write_text(content)
    assert BaselineCache(path).get("a") is None
    BaselineCache(path).put("a", 3.0)  # and a bad file is replaced, not a crash
    assert BaselineCache(path).get("a").tokens_per_s == 3.0


def test_put_refuses_a_speed_that_is_not_positive(tmp_path):
    with pytest.raises(ValueError, match="positive"):
        BaselineCache(tmp_path / CACHE_NAME).put("a", 0.0)


def test_measure_on_a_tiny_model(dense_target):
    engine = Engine.load(dense_target)
    tps = measure_baseline_tps(engine, max_tokens=8)
    assert tps > 0 and engine.runner.tokens  # it generated from the fixed prompt
