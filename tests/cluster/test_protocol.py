"""The cluster's pieces without a launch: lockstep checks, the stall watchdog, the gate, sharding checks."""

import threading

import pytest

from specchat.cluster.backend import Gate
from specchat.cluster.leader import ClusterState
from specchat.cluster.protocol import ClusterError, Lockstep, shared_config
from specchat.cluster.sharding import check_divisible
from specchat.engine.config import GenerationConfig
from specchat.engine.errors import ModelLoadError
from specchat.engine.events import TextChunk
from specchat.engine.owner import JobFailed, JobFinished, JobInfo, JobQueued


class TwoRanks:
    """A stand-in group: rank 0 here, rank 1 on 'mini' whose rows a test chooses."""

    rank, size, hosts, pids = 0, 2, ["studio", "mini"], [10, 11]

    def __init__(self, rank1_rows):
        self.rank1_rows = iter(rank1_rows)

    def gather_ints(self, values):
        return [list(values), next(self.rank1_rows)]

    def where(self, rank):
        return f"rank {rank} on host {self.hosts[rank]}"

    def others(self):
        return self.where(1)


def chunk(*tokens):
    return TextChunk("x", tokens, (False,) * len(tokens))


def test_lockstep_names_the_rank_whose_tokens_differ():
    # rank 1 agrees on the first token (digest of [7] is 8), then reports a different second one
    lock = Lockstep(TwoRanks([[0, 1, 8], [0, 2, 12345]]))
    events = lock.run(iter([chunk(7), chunk(9)]))
    assert next(events) == chunk(7)
    with pytest.raises(ClusterError, match="rank 1 on host mini generated different tokens from rank 0"):
        next(events)


def test_rank_0s_cancel_reaches_the_engine_only_at_a_sync():
    job_cancel = threading.Event()
    lock = Lockstep(TwoRanks([[0, 1, 8], [0, 2, 8 * 1_000_003 + 10]]), job_cancel)
    events = lock.run(iter([chunk(7), chunk(9)]))
    next(events)
    job_cancel.set()
    assert not lock.agreed_cancel.is_set()  # the engine keeps going until every rank agrees
    next(events)
    assert lock.agreed_cancel.is_set()


def test_a_stall_degrades_the_cluster_and_fails_the_request_once():
    state = ClusterState(TwoRanks([]), rank_timeout_s=5)
    failures = []
    state.begin(failures.append)
    assert not state.check_stall(now=state._last_beat + 4.9)
    assert state.check_stall(now=state._last_beat + 5.1)
    assert not state.check_stall(now=state._last_beat + 9)
    assert failures == [
        "cluster degraded: rank 1 on host mini did not answer within 5 s. Restart it: "
        "stop every rank (Ctrl-C where mlx.launch runs; `kill -INT` the rank-0 process if it runs "
        "detached) and start the same mlx.launch command again"
    ]
    snapshot = state.snapshot()
    assert snapshot["degraded"] and snapshot["degraded_reason"] == "rank 1 on host mini did not answer within 5 s"
    assert [r["host"] for r in snapshot["ranks"]] == ["studio", "mini"]


def test_the_gate_delivers_one_failure_and_drops_what_follows():
    seen, registry = [], {}
    gate = Gate(seen.append, registry)
    info = JobInfo(4, "api")
    gate(JobQueued(info, 0))
    assert registry == {4: gate}
    gate.fail("cluster degraded: rank 1 on host mini did not answer within 5 s")
    gate(JobFinished(info, None))  # the stuck thread came back late
    assert seen == [
        JobQueued(info, 0),
        JobFailed(info, "cluster degraded: rank 1 on host mini did not answer within 5 s", ClusterError.kind),
    ]


def test_sampling_gets_one_seed_for_every_rank():
    sampled = shared_config(GenerationConfig(temperature=0.7))
    assert isinstance(sampled.seed, int)
    assert shared_config(GenerationConfig(temperature=0.7, seed=3)).seed == 3
    assert shared_config(GenerationConfig()).seed is None  # greedy needs none


def test_sizes_that_do_not_split_are_refused_by_name():
    check_divisible({"num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 1024}, 2, "m")
    with pytest.raises(ModelLoadError, match="Big cannot be split over 3 ranks: its num_attention_heads is 32"):
        check_divisible({"num_attention_heads": 32}, 3, "Big")
    hybrid = {
        "text_config": {
            "model_type": "qwen3_5_text",
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "linear_num_value_heads": 6,
            "linear_num_key_heads": 4,
        }
    }
    check_divisible(hybrid, 2, "h")
    with pytest.raises(ModelLoadError, match="linear_num_value_heads is 6, not a multiple of 4"):
        check_divisible(hybrid, 4, "h")


def test_each_rank_needs_half_the_layers_plus_the_whole_embedding(dense_target):
    from specchat.cluster.memory_plan import rank_fit, rank_share, replicated_bytes
    from specchat.hub.memory_fit import model_memory
    from specchat.hub.model_facts import read_config
    from specchat.system.memory import MachineMemory

    whole, half = model_memory(dense_target), rank_share(dense_target, 2)
    embed = replicated_bytes(read_config(dense_target))
    assert 0 < embed < whole.weights_bytes
    assert half.weights_bytes == embed + -(-(whole.weights_bytes - embed) // 2)
    assert half.cache_bytes(4096) == -(-whole.cache_bytes(4096) // 2)
    machine = MachineMemory(
        total_bytes=16 * 10**9, available_bytes=8 * 10**9, gpu_working_set_bytes=None, source="test"
    )
    parts = dict(rank_fit(dense_target, None, 4096, 2, machine).parts)
    assert parts["target weights"] == half.weights_bytes


def group_whose_rank1_answers(monkeypatch, rank1_row):
    """A real ClusterGroup of two whose all_gather returns this rank's row and `rank1_row(call)`."""
    import mlx.core as mx
    import numpy as np

    from specchat.cluster import group as group_module

    def all_gather(mine, group, stream):
        row = np.array(mine)
        return mx.array(np.concatenate([row, np.asarray(rank1_row(int(row[0])), np.int64)]))

    monkeypatch.setattr(group_module.mx.distributed, "all_gather", all_gather)
    cluster = object.__new__(group_module.ClusterGroup)
    cluster.group, cluster.rank, cluster.size, cluster.calls, cluster.hosts = None, 0, 2, 0, ["studio", "mini"]
    return cluster


def test_gather_ints_returns_each_ranks_values_without_the_call_number(monkeypatch):
    cluster = group_whose_rank1_answers(monkeypatch, lambda call: [call, 5, 6])
    assert cluster.gather_ints([1, 2]) == [[1, 2], [5, 6]]
    assert cluster.gather_ints([3, 4]) == [[3, 4], [5, 6]]


def test_a_row_a_dead_peer_never_wrote_is_a_lost_link_not_a_disagreement(monkeypatch):
    from specchat.cluster.group import LinkLost

    # what the ring handed back in CI after rank 1 was killed mid-reply: a buffer it never filled
    cluster = group_whose_rank1_answers(monkeypatch, lambda call: [38654705672, 3, 0, 0])
    with pytest.raises(LinkLost, match="rank 1's part of a collective came back unwritten"):
        Lockstep(cluster).sync()


class Rank1:
    """A stand-in group seen from rank 1: every broadcast brings rank 0's values, given by the test."""

    rank, size = 1, 2

    def __init__(self, rank0_values):
        self.rank0_values = iter(rank0_values)
        self.sent = []

    def broadcast(self, values, length):
        self.sent.append(values)
        return [next(self.rank0_values)]


def test_rank_1_takes_rank_0s_k_and_burst_length_whatever_its_own_timings_say():
    from specchat.cluster.protocol import SharedAutoK

    group = Rank1([0, 7])  # rank 0 chose plain decoding, 7 tokens before its next probe
    controller = SharedAutoK(group=group, draft_step_s=0.001, verify_s={2: 0.01}, plain_s=0.05)
    assert controller.choose() == 0  # its own costs say speculate (plain is five times dearer)
    assert controller.burst_length() == 7  # its own state would say 16
    assert group.sent == [None, None]  # rank 1 only listens
