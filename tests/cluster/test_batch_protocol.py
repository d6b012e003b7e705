"""A batch's lockstep pieces without a launch: step messages, rank 0's round times, what rank 0 tells."""

import threading

import numpy as np
import pytest

from specchat.cluster.batch_lead import LeadBatch
from specchat.cluster.batch_steps import (
    Joined,
    RankBatch,
    RowTrack,
    SharedBatchK,
    StepMessage,
    receive_step,
    send_step,
)
from specchat.cluster.group import LinkLost
from specchat.cluster.leader import ClusterState
from specchat.cluster.protocol import ClusterError
from specchat.engine.batch.requests import BatchRequest
from specchat.engine.config import GenerationConfig
from specchat.engine.events import Failed, TextChunk


class Wire:
    """Rank 0's broadcasts, read back in order by a rank-1 stand-in."""

    def __init__(self):
        self.sent = []

    def rank(self, rank):
        wire = self

        class Group:
            def broadcast(self, values, length):
                if rank == 0:
                    wire.sent.append(np.asarray(values, np.int32).copy())
                    return wire.sent[-1]
                out = wire.sent.pop(0)
                assert out.size == length
                return out

        group = Group()
        group.rank = rank
        return group


def test_a_step_message_reaches_the_other_ranks_whole():
    wire = Wire()
    cfg = GenerationConfig(mode="draft", num_draft_tokens="auto", temperature=0.7, seed=5, max_tokens=9)
    message = StepMessage((Joined(3, (5, 6, 7), cfg), Joined(4, (8,), GenerationConfig())), (1, 3))
    send_step(wire.rank(0), message)
    assert receive_step(wire.rank(1)) == message


def test_a_step_that_changes_nothing_is_one_value():
    wire = Wire()
    send_step(wire.rank(0), StepMessage())
    assert [a.tolist() for a in wire.sent] == [[0]]
    assert receive_step(wire.rank(1)) == StepMessage()


def test_every_rank_learns_rank_0s_round_times():
    wire = Wire()
    leader, follower = SharedBatchK(wire.rank(0)), SharedBatchK(wire.rank(1))
    leader.observe(2, 3, 0.25)
    follower.observe(2, 3, 9.0)  # its own time differs: it takes rank 0's
    assert follower.timings[2].sums == leader.timings[2].sums == {3: 0.25}
    assert follower.choose([0.5, 0.5], 4) == leader.choose([0.5, 0.5], 4)


def test_a_row_holds_its_events_until_they_are_checked():
    seen = []
    row = RowTrack(1, seen.append)
    row.note("event")
    assert seen == [] and row.held == ["event"]
    row.flush()
    assert seen == ["event"] and row.held == []


class Rows:
    """A stand-in for rank 0's RankBatch: the rows it knows, each with its agreed cancel."""

    def __init__(self, serials):
        self.rows = {s: RowTrack(s) for s in serials}


def request(cancel):
    return BatchRequest([5, 6], GenerationConfig(), cancel, lambda event: None)


def test_rank_0_tells_each_cancel_once_and_a_joiner_cancelled_with_its_join():
    lead = LeadBatch(state=None, engine=None, max_batch=4)
    first, second = threading.Event(), threading.Event()
    lead.add(request(first))
    message, _ = lead._message()
    assert [j.serial for j in message.joined] == [1] and message.cancelled == ()
    lead.batch = Rows([1])
    first.set()
    second.set()
    lead.add(request(second))
    message, deliver = lead._message()
    assert [j.serial for j in message.joined] == [2] and sorted(message.cancelled) == [1, 2]
    assert set(deliver) == {2}
    lead.batch.rows[1].cancel.set()  # what apply() does on every rank
    lead.batch.rows[2] = RowTrack(2)
    lead.batch.rows[2].cancel.set()
    assert lead._message()[0] == StepMessage()


class Decoder:
    active = 2

    def step(self):
        pass


class Gathers:
    """rank 0 here, rank 1 on 'mini' answering the rows a test gives."""

    rank, size, hosts = 0, 2, ["studio", "mini"]

    def __init__(self, rank1):
        self.rank1 = rank1

    def gather_ints(self, values):
        return [list(values), self.rank1(values)]

    def where(self, rank):
        return f"rank {rank} on host {self.hosts[rank]}"

    def others(self):
        return self.where(1)


def batch_of(group, rows):
    batch = RankBatch.__new__(RankBatch)
    batch.group, batch.decoder, batch.rows = group, Decoder(), {r.serial: r for r in rows}
    return batch


def test_a_rank_whose_rows_differ_stops_the_batch_before_its_events_are_seen():
    seen = []
    row = RowTrack(1, seen.append)
    row.note(TextChunk("a", (7,), (False,)))
    batch = batch_of(Gathers(lambda values: [values[0], values[1], values[2] + 1]), [row])
    with pytest.raises(ClusterError, match="rank 1 on host mini decoded a batch differently from rank 0"):
        batch.step()
    assert seen == []
    agreeing = batch_of(Gathers(list), [row])
    assert agreeing.step() == [] and len(seen) == 1


def test_a_row_failed_on_a_lost_peer_ends_the_step_without_a_check():
    row = RowTrack(1)
    row.note(Failed("RuntimeError: [ring] Connection reset by peer", "internal"))
    batch = batch_of(Gathers(lambda values: pytest.fail("no collective after a lost peer")), [row])
    with pytest.raises(LinkLost, match=r"\[ring\]"):
        batch.step()


def test_a_degraded_cluster_fails_the_next_step_without_a_collective():
    state = ClusterState(Gathers(lambda values: pytest.fail("no collective")), rank_timeout_s=5)
    state.degrade("rank 1 on host mini did not answer within 5 s")
    lead = LeadBatch(state, engine=None, max_batch=4)
    lead.add(request(threading.Event()))
    with pytest.raises(ClusterError, match="cluster degraded: rank 1 on host mini did not answer"):
        lead.step()
