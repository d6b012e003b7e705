"""Rollback is exact: after a round, caches equal those of processing only the kept tokens."""

import mlx.core as mx
import pytest
from mlx_lm.models.cache import ArraysCache, ChunkedKVCache, KVCache, QuantizedKVCache, RotatingKVCache

from specchat.engine.errors import RollbackError
from specchat.engine.loading import load_model
from specchat.engine.rollback import check_supported
from specchat.engine.runner import ModelRunner
from tests.fixtures.tiny_models import build_dense

PROMPT = [5, 17, 42, 99, 7, 23, 61, 88, 12, 3]
ROUND = [31, 77, 140, 9, 250, 64]  # fed in one round


def cache_arrays(cache) -> list[mx.array]:
    """The arrays that define a cache's content (valid region only)."""
    if isinstance(cache, ArraysCache):
        return list(cache.cache)
    if isinstance(cache, QuantizedKVCache):
        return [part[..., : cache.offset, :] for group in (cache.keys, cache.values) for part in group]
    if isinstance(cache, RotatingKVCache):
        keys, values = cache._temporal_order(cache.keys), cache._temporal_order(cache.values)
        return [keys[..., -cache.size() :, :], values[..., -cache.size() :, :]]
    keys, values = cache.keys_and_values() if isinstance(cache, KVCache) else (cache.keys, cache.values)
    return [keys, values]


def assert_same_caches(a: ModelRunner, b: ModelRunner):
    assert a.tokens == b.tokens
    for i, (ca, cb) in enumerate(zip(a.caches, b.caches)):
        for xa, xb in zip(cache_arrays(ca), cache_arrays(cb)):
            assert xa.shape == xb.shape, f"cache {i}: shape {xa.shape} != {xb.shape}"
            assert mx.array_equal(xa, xb).item(), f"cache {i} ({type(ca).__name__}) differs"


def fresh(folder, **kw) -> ModelRunner:
    runner = ModelRunner(load_model(folder).model, **kw)
    runner.prefill(PROMPT)
    return runner


def reference(folder, keep: int, **kw) -> ModelRunner:
    """A runner that processed only the kept tokens, in one call."""
    runner = fresh(folder, **kw)
    if keep:
        runner.forward(mx.array(ROUND[:keep]))
    return runner


@pytest.mark.parametrize("model_name", ["dense_target", "hybrid_target"])
@pytest.mark.parametrize("keep", [0, 1, 3, 5, 6])
def test_verify_round_keeps_exactly_the_accepted_prefix(request, model_name, keep):
    folder = request.getfixturevalue(model_name)
    runner = fresh(folder)
    runner.begin()
    runner.forward(mx.array(ROUND))
    runner.commit_keep(keep)
    assert_same_caches(runner, reference(folder, keep))


@pytest.mark.parametrize("keep", [0, 2, 4, 6])
def test_draft_round_of_single_steps_rolls_back_to_any_step(hybrid_target, keep):
    runner = fresh(hybrid_target)
    runner.begin()
    runner.forward(mx.array(ROUND[:2]))
    for token in ROUND[2:]:
        runner.forward(mx.array([token]))
    runner.commit_keep(keep)
    ref = fresh(hybrid_target)
    if keep:  # the same call pattern, only over the kept tokens
        ref.forward(mx.array(ROUND[: min(keep, 2)]))
        for token in ROUND[2:keep]:
            ref.forward(mx.array([token]))
    assert_same_caches(runner, ref)


def test_partial_accept_replays_inside_a_multi_token_call(hybrid_target):
    runner = fresh(hybrid_target)
    runner.begin()
    runner.forward(mx.array(ROUND[:4]))
    runner.forward(mx.array(ROUND[4:]))
    runner.commit_keep(3)  # inside the first call: needs the gated-delta replay
    assert_same_caches(runner, reference(hybrid_target, 3))


@pytest.mark.parametrize("keep", [0, 2, 5])
def test_rotating_cache_after_wrap_around(dense_target, keep):
    runner = fresh(dense_target, max_kv_size=8)
    assert isinstance(runner.caches[0], RotatingKVCache)
    assert runner.caches[0].offset > runner.caches[0].max_size - len(ROUND)
    runner.begin()
    for token in ROUND:
        runner.forward(mx.array([token]))
    runner.commit_keep(keep)
    ref = fresh(dense_target, max_kv_size=8)
    for token in ROUND[:keep]:
        ref.forward(mx.array([token]))
    assert_same_caches(runner, ref)


@pytest.fixture(scope="module")
def dense_wide(tmp_path_factory):
    """A dense model whose head_dim (32) MLX can quantize."""
    return build_dense(tmp_path_factory.mktemp("wide") / "model", hidden=128)


@pytest.mark.parametrize("keep", [0, 3, 6])
def test_quantized_kv_cache_is_trimmed_exactly(dense_wide, keep):
    def quantized(runner):
        runner.caches = [c.to_quantized(group_size=32, bits=8) for c in runner.caches]
        return runner

    runner = quantized(fresh(dense_wide))
    runner.begin()
    runner.forward(mx.array(ROUND))
    runner.commit_keep(keep)
    ref = quantized(fresh(dense_wide))
    if keep:
        ref.forward(mx.array(ROUND[:keep]))
    assert isinstance(runner.caches[0], QuantizedKVCache)
    assert_same_caches(runner, ref)


def test_round_leaves_nothing_recorded(hybrid_target):
    runner = fresh(hybrid_target)
    runner.begin()
    runner.forward(mx.array(ROUND))
    assert runner._txn.recorder.calls, "the round recorded nothing"
    runner.commit_keep(2)
    assert runner._txn is None and runner._fed == []


def test_continuing_after_rollback_matches_a_clean_run(hybrid_target):
    runner = fresh(hybrid_target)
    runner.begin()
    runner.forward(mx.array(ROUND))
    runner.commit_keep(2)
    after = runner.forward(mx.array([200, 201]))
    ref = reference(hybrid_target, 2)
    assert mx.array_equal(after, ref.forward(mx.array([200, 201]))).item()


def test_unsupported_cache_type_is_named():
    with pytest.raises(RollbackError, match="ChunkedKVCache"):
        check_supported([KVCache(), ChunkedKVCache(16)])


def test_keep_beyond_what_was_fed_is_refused(dense_target):
    runner = fresh(dense_target)
    runner.begin()
    runner.forward(mx.array(ROUND[:2]))
    with pytest.raises(RollbackError, match="cannot keep 3 of 2"):
        runner.commit_keep(3)
