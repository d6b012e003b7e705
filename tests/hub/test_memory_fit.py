"""Memory fit: parts add up from the configs, and the colour follows the machine's memory."""

import pytest

from specchat.hub.memory_fit import GREEN, RED, YELLOW, memory_fit, model_memory
from specchat.hub.model_facts import read_config, text_config
from specchat.system.memory import MachineMemory


def machine(limit, available=None, metal=None):
    return MachineMemory(limit, available if available is not None else limit, metal, "test")


def test_kv_cache_follows_the_config(dense_target, hybrid_target):
    dense = model_memory(dense_target)
    cfg = read_config(dense_target)
    per_token = cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    assert dense.cache_bytes(1000) == 1000 * per_token
    hybrid = model_memory(hybrid_target)
    hcfg = text_config(read_config(hybrid_target))
    attention = hcfg["layer_types"].count("full_attention")
    fixed = hybrid.cache_bytes(0)
    assert fixed > 0  # the linear layers' recurrent state does not depend on context
    per_token = attention * 2 * hcfg["num_key_value_heads"] * hcfg["head_dim"] * 2
    assert hybrid.cache_bytes(1000) - fixed == 1000 * per_token


def test_parts_add_up_and_include_the_draft(dense_target, dense_draft_partial):
    target, draft = model_memory(dense_target), model_memory(dense_draft_partial)
    fit = memory_fit(target, draft, 4096, machine(10**12))
    parts = dict(fit.parts)
    assert parts["target weights"] == (dense_target / "model.safetensors").stat().st_size
    assert parts["draft weights"] == (dense_draft_partial / "model.safetensors").stat().st_size
    assert parts["draft cache"] == draft.cache_bytes(4096)
    assert fit.needed_bytes == sum(parts.values())
    alone = memory_fit(target, None, 4096, machine(10**12))
    assert fit.needed_bytes - alone.needed_bytes > parts["draft weights"]


@pytest.fixture
def needed(dense_target):
    return memory_fit(model_memory(dense_target), None, 8192, machine(10**12)).needed_bytes


@pytest.mark.parametrize(
    "limit_factor, available_factor, level",
    [
        (2.0, 2.0, GREEN),
        (1.1, 1.1, YELLOW),  # above 80% of the limit
        (2.0, 0.9, YELLOW),  # fits the machine, but not what is free right now
        (0.9, 0.9, RED),
    ],
)
def test_colours(dense_target, needed, limit_factor, available_factor, level):
    fit = memory_fit(
        model_memory(dense_target), None, 8192, machine(int(needed * limit_factor), int(needed * available_factor))
    )
    assert fit.level == level
    assert fit.summary().startswith(f"{level}: needs ")


def test_metal_working_set_is_the_limit_when_there_is_one(dense_target, needed):
    fit = memory_fit(model_memory(dense_target), None, 8192, machine(needed * 4, needed * 4, metal=int(needed * 0.9)))
    assert fit.level == RED and fit.limit_source == "Metal working set"
    assert fit.limit_bytes == int(needed * 0.9)
