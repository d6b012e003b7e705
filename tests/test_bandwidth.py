"""The physical limit: the machine's copy bandwidth, measured and kept per machine, and what plain decoding
reaches of it (every weight read once per token)."""

from specchat.system.bandwidth import (
    Bandwidth,
    decode_limit,
    load_bandwidth,
    measure_copy_bandwidth,
    save_bandwidth,
)


def test_a_copy_measures_a_positive_bandwidth_and_is_kept_per_machine(tmp_path):
    measured = measure_copy_bandwidth("this machine", size=16 * 1024 * 1024, reps=2)
    assert measured.bytes_per_s > 0 and measured.machine == "this machine"
    file = tmp_path / "bandwidth.json"
    save_bandwidth(file, measured)
    assert load_bandwidth(file, "this machine") == measured
    assert load_bandwidth(file, "another machine") is None  # another machine measures its own
    file.write_text("{broken", encoding="utf-8")
    assert load_bandwidth(file, "this machine") is None


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
