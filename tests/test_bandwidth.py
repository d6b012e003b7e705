"""The physical limit: the machine's copy bandwidth, measured and kept per machine, and what plain decoding
reaches of it (every weight read once per token)."""

import json

import pytest

from specchat.system.bandwidth import (
    Bandwidth,
    decode_limit,
    decoding_device,
    load_bandwidth,
    measure_copy_bandwidth,
    save_bandwidth,
)

# Published Mac runs: plain decoding's speed as their authors measured it, and the chip's memory bandwidth as
# Apple gives it (the most its GPU can read; nobody published a copy measured there). A model's weight bytes:
# parameters x bits per weight (MLX's 4-bit stores a 16-bit scale and bias per 64 weights: 4.5 bits; 8-bit: 8.5).
MAC_PROFILES = [
    # chip, GB/s, model, parameters, bits per weight, decode tok/s, where it was published
    ("M3 Pro", 150, "Qwen3-4B-Instruct-2507-4bit", 4.02e9, 4.5, 44.62, "ml-explore/mlx-lm pull 1569"),
    ("M4 Pro", 273, "Qwen3-0.6B-8bit", 0.596e9, 8.5, 284.2, "waybarrios/vllm-mlx issue 531"),
]


def test_a_copy_measures_a_positive_bandwidth_and_is_kept_per_machine(tmp_path):
    measured = measure_copy_bandwidth("this machine", size=16 * 1024 * 1024, reps=2)
    assert measured.bytes_per_s > 0 and measured.machine == "this machine"
    file = tmp_path / "bandwidth.json"
    save_bandwidth(file, measured)
    assert load_bandwidth(file, "this machine") == measured
    assert load_bandwidth(file, "another machine") is None  # another machine measures its own
    assert measured.device == decoding_device()  # copied where MLX decodes: the GPU on a Mac
    file.write_text("{broken", encoding="utf-8")
    assert load_bandwidth(file, "this machine") is None


def test_a_figure_saved_before_the_device_was_recorded_is_measured_again(tmp_path):
    file = tmp_path / "bandwidth.json"
    file.write_text(json.dumps({"machine": "Apple M4 Pro", "bytes_per_s": 1.2e11, "measured_at": 0.0}))
    assert load_bandwidth(file, "Apple M4 Pro") is None  # a CPU copy, even on a Mac: it underrates the GPU


@pytest.mark.parametrize("chip, gb_per_s, model, parameters, bits, tps, source", MAC_PROFILES)
def test_plain_decoding_on_a_recorded_mac_stays_under_its_bandwidth(
    chip, gb_per_s, model, parameters, bits, tps, source
):
    limit = decode_limit(int(parameters * bits / 8), tps, Bandwidth(chip, gb_per_s * 1e9, 0.0, "gpu"))
    assert 0.5 < limit.share <= 1.0, f"{model} on {chip} ({source}) reads {limit.share:.0%} of the bandwidth"
    assert limit.one_token_limit_tps > tps


def test_plain_decoding_reads_every_weight_once_per_token():
    machine = Bandwidth("m", 100e9, 0.0)  # 100 GB/s
    limit = decode_limit(weight_bytes=4_000_000_000, plain_tps=20.0, bandwidth=machine)
    assert limit.reached_bytes_per_s == 80e9 and limit.share == 0.8
    assert limit.one_token_limit_tps == 25.0  # no plain decoding here beats 25 tok/s; speculation can


def test_the_weight_bytes_are_every_parameter_once(dense_target):
    import mlx.core as mx
    from mlx.utils import tree_flatten

    from specchat.engine.loading import load_model, weight_bytes

    loaded = load_model(dense_target)
    sizes = [a.size * a.itemsize for _, a in tree_flatten(loaded.model.parameters()) if isinstance(a, mx.array)]
    assert weight_bytes(loaded) == sum(sizes) > 0


def test_both_copies_run_here():
    from specchat.system.bandwidth import _cpu_copy, _mlx_copy

    # the GPU's copy is MLX's: on this CPU it runs on MLX's CPU device, so the path a Mac takes runs here too
    assert _mlx_copy(8 * 1024 * 1024)() > 0 and _cpu_copy(8 * 1024 * 1024)() > 0
