"""Joinable jobs on the engine host, over a scripted stand-in for the batch decoder: who joins when, each
row's own events and end, cancel, a failed batch, max_batch, and configs the decoder refuses."""

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from specchat.engine import Failed, Finished, GenerationConfig, GenerationStats, TextChunk
from specchat.engine.errors import ErrorKind
from specchat.engine.owner import (
    EngineHost,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobQueued,
    JobStarted,
    JoinSpec,
    batch_job,
)

WAIT_S = 60  # generous: nothing here measures time


@dataclass
class FakeRequest:
    prompt: list
    cfg: GenerationConfig
    cancel: threading.Event
    emit: Any


@dataclass
class FakeRow:
    request: FakeRequest
    tokens: list = field(default_factory=list)


class FakeDecoder:
    """Each step: one token per row (prompt[0] * 100 + i), Finished after cfg.max_tokens tokens, or cancelled."""

    def __init__(self, api, engine, max_batch):
        self.api, self.engine, self.max_batch = api, engine, max_batch
        self.rows: list[FakeRow] = []
        self.steps: list[tuple] = []  # the rows' first prompt ids, per step
        self.added: list[int] = []

    @property
    def active(self):
        return len(self.rows)

    @property
    def room(self):
        return self.max_batch - self.active

    def add(self, request):
        assert self.room > 0, "added beyond max_batch"
        self.rows.append(FakeRow(request))
        self.added.append(request.prompt[0])

    def step(self):
        with self.api.entered:
            self.api.steps_entered += 1
            self.api.entered.notify_all()
        assert self.api.gate.acquire(timeout=WAIT_S), "the test never released a step"
        if self.api.fail_at_step == len(self.steps):
            raise RuntimeError("the batch broke")
        self.steps.append(tuple(r.request.prompt[0] for r in self.rows))
        for row in list(self.rows):
            req = row.request
            if req.cancel.is_set():
                req.emit(Finished(tuple(row.tokens), "", GenerationStats(stop_reason="cancelled"), True))
                self.rows.remove(row)
                continue
            token = req.prompt[0] * 100 + len(row.tokens)
            row.tokens.append(token)
            req.emit(TextChunk(f"<{token}>", (token,), (False,)))
            if len(row.tokens) >= req.cfg.max_tokens:
                stats = GenerationStats(generated_tokens=len(row.tokens), stop_reason="length")
                req.emit(Finished(tuple(row.tokens), "", stats))
                self.rows.remove(row)


class FakeApi:
    """The decoder module's contract: BatchRequest, BatchDecoder, batch_refusal."""

    BatchRequest = FakeRequest

    def __init__(self):
        self.decoders: list[FakeDecoder] = []
        self.gate = threading.Semaphore(0)
        self.entered = threading.Condition()
        self.steps_entered = 0  # over every decoder
        self.fail_at_step: int | None = None
        self.refuse_mode = "mtp"

    def BatchDecoder(self, engine, max_batch):  # noqa: N802 - the module's class, as a factory
        decoder = FakeDecoder(self, engine, max_batch)
        self.decoders.append(decoder)
        return decoder

    def batch_refusal(self, engine, cfg):
        return "this mode does not batch" if cfg.mode == self.refuse_mode else None

    def run_free(self):
        self.gate.release(10_000)

    def in_step(self, index):
        """Wait until step `index` (counted over every decoder) began: it is held at the gate."""
        with self.entered:
            assert self.entered.wait_for(lambda: self.steps_entered > index, WAIT_S)


@pytest.fixture
def api(monkeypatch):
    fake = FakeApi()
    monkeypatch.setattr(batch_job, "load_decoder", lambda: fake)
    yield fake
    fake.run_free()


@pytest.fixture
def host(api):
    host = EngineHost()
    host.submit("load", lambda ctx: ctx.host.install(object())).result(WAIT_S)
    RECORDED.clear()
    yield host
    api.run_free()
    assert host.shutdown(WAIT_S)


def cfg(tokens=3, mode="draft"):
    return GenerationConfig(mode=mode, max_tokens=tokens)


def solo_work(tag):
    def work(ctx):
        ctx.emit(TextChunk(f"solo{tag}", (tag,), (False,)))
        ctx.emit(Finished((tag,), f"solo{tag}", GenerationStats()))
        return "solo"

    return work


RECORDED: dict[int, list] = {}  # job id -> its events, as its listener got them


def record(event):
    RECORDED.setdefault(event.job.id, []).append(event)


def joinable(host, tag, tokens=3, mode="draft", max_batch=8, observers=()):
    spec = JoinSpec((tag, 1, 2), cfg(tokens, mode), tuple(observers), max_batch)
    return host.submit("api", solo_work(tag), record, join=spec)


def events(handle):
    assert handle.wait(WAIT_S), f"job {handle.id} did not end"
    return list(RECORDED[handle.id])


def engine_events(handle):
    return [e.event for e in events(handle) if isinstance(e, JobProgress)]


def tokens_of(handle):
    return [t for e in engine_events(handle) if isinstance(e, TextChunk) for t in e.token_ids]


def test_joiners_join_between_steps_and_each_row_is_its_own_job(api, host):
    seen = []
    first = joinable(host, 1, tokens=4, observers=[lambda job_id, event: seen.append((job_id, type(event)))])
    api.in_step(0)  # the first row's first step is under way
    later = [joinable(host, tag, tokens=2) for tag in (2, 3)]
    state = host.state()
    assert [i.id for i in state.running_batch] == [first.id] and state.running.id == first.id
    assert [i.id for i in state.queued] == [h.id for h in later]
    api.gate.release()  # step 0: the first row alone
    api.in_step(1)  # step 1 holds all three
    state = host.state()
    assert [i.id for i in state.running_batch] == [first.id, *(h.id for h in later)] and not state.queued
    api.run_free()
    for handle in (first, *later):
        got = events(handle)
        assert isinstance(got[0], JobQueued) and isinstance(got[1], JobStarted)
        assert all(isinstance(e, JobProgress) for e in got[2:-1])
        assert isinstance(got[-1], JobFinished) and got[-1].result is None
        assert isinstance(got[-2].event, Finished) and not got[-2].event.cancelled
    assert tokens_of(first) == [100, 101, 102, 103]
    assert tokens_of(later[0]) == [200, 201] and tokens_of(later[1]) == [300, 301]
    (decoder,) = api.decoders
    assert decoder.steps == [(1,), (1, 2, 3), (1, 2, 3), (1,)]
    assert seen == [(first.id, TextChunk)] * 4 + [(first.id, Finished)]
    assert host.state().running is None and host.state().running_batch == ()


def test_rows_end_on_their_own_not_with_the_batch(api, host):
    long = joinable(host, 1, tokens=6)
    api.in_step(0)
    short = joinable(host, 2, tokens=1)
    api.gate.release()  # step 0: long alone
    api.in_step(1)
    api.gate.release()  # step 1: long and short; short ends
    assert short.wait(WAIT_S) and not long.done
    api.in_step(2)
    assert [i.id for i in host.state().running_batch] == [long.id]
    api.run_free()
    assert long.wait(WAIT_S) and tokens_of(long) == [100 + i for i in range(6)]


def test_a_queued_load_at_the_front_stops_joining_and_runs_once_the_rows_end(api, host):
    order = []

    def load(ctx):
        order.append(("load", tuple(i.id for i in ctx.host.state().running_batch)))
        return "loaded"

    first = joinable(host, 1, tokens=3)
    api.in_step(0)
    load_job = host.submit("load", load, record)
    after = joinable(host, 2, tokens=2)  # behind the load: must not jump it
    api.run_free()
    assert load_job.result(WAIT_S) == "loaded" and after.wait(WAIT_S) and first.wait(WAIT_S)
    assert order == [("load", (load_job.id,))]  # it ran alone, after the rows
    assert [d.steps for d in api.decoders] == [[(1,)] * 3, [(2,)] * 2]
    assert tokens_of(after) == [200, 201]


def test_cancel_of_a_queued_and_of_a_running_row(api, host):
    running = joinable(host, 1, tokens=50)
    api.in_step(0)
    other = joinable(host, 2, tokens=3)
    api.gate.release()
    api.in_step(1)  # both rows run
    hold = threading.Event()
    blocker = host.submit("sweep", lambda ctx: hold.wait(WAIT_S), record)  # non-joinable: nothing joins behind it
    queued = joinable(host, 3, tokens=3)
    host.cancel(queued)
    assert [type(e) for e in events(queued)] == [JobQueued, JobCancelled]
    host.cancel(running)
    api.run_free()
    got = events(running)
    finished = got[-2].event
    assert isinstance(finished, Finished) and finished.cancelled and isinstance(got[-1], JobFinished)
    assert len(tokens_of(running)) < 50
    assert other.wait(WAIT_S) and tokens_of(other) == [200, 201, 202]
    hold.set()
    assert blocker.wait(WAIT_S)
    assert all(3 not in d.added for d in api.decoders)


def test_a_failed_batch_fails_every_row_and_the_host_lives_on(api, host):
    api.fail_at_step = 2
    rows = [joinable(host, 1, tokens=10)]
    api.in_step(0)
    rows += [joinable(host, tag, tokens=10) for tag in (2, 3)]
    api.run_free()
    for handle in rows:
        got = events(handle)
        failed = got[-2].event
        assert isinstance(failed, Failed) and "the batch broke" in failed.message
        assert failed.kind is ErrorKind.INTERNAL and isinstance(got[-1], JobFinished)
    assert list(_failed(rows[0]).partial_tokens) == [100, 101]  # what it had emitted
    assert list(_failed(rows[1]).partial_tokens) == [200]
    api.fail_at_step = None
    assert tokens_of(joinable(host, 4, tokens=2)) == [400, 401]


def _failed(handle):
    return next(e for e in engine_events(handle) if isinstance(e, Failed))


def test_max_batch_is_respected_and_waiting_rows_join_as_rows_end(api, host):
    first = joinable(host, 1, tokens=2, max_batch=2)
    api.in_step(0)
    rest = [joinable(host, tag, tokens=2, max_batch=2) for tag in (2, 3, 4, 5)]
    api.run_free()
    for handle in (first, *rest):
        assert handle.wait(WAIT_S)
    (decoder,) = api.decoders
    assert max(len(step) for step in decoder.steps) == 2
    assert decoder.added == [1, 2, 3, 4, 5]
    assert all(tokens_of(h) == [tag * 100, tag * 100 + 1] for tag, h in zip((2, 3, 4, 5), rest))


def test_refused_configs_and_max_batch_1_run_solo(api, host):
    mtp = joinable(host, 7, mode="mtp")
    one = joinable(host, 8, max_batch=1)
    assert mtp.result(WAIT_S) == "solo" and one.result(WAIT_S) == "solo"
    assert tokens_of(mtp) == [7] and tokens_of(one) == [8]
    assert api.decoders == []
    # a refused one at the front of the queue stops the joining too, then runs alone
    first = joinable(host, 1, tokens=2)
    api.in_step(0)
    refused = joinable(host, 9, mode="mtp")
    behind = joinable(host, 2, tokens=2)
    api.run_free()
    assert first.wait(WAIT_S) and refused.result(WAIT_S) == "solo" and behind.wait(WAIT_S)
    assert [d.added for d in api.decoders] == [[1], [2]]


def test_a_decoder_that_cannot_be_asked_leaves_joinable_jobs_solo(monkeypatch):
    def broken():
        raise ImportError("no batch decoder here")

    monkeypatch.setattr(batch_job, "load_decoder", broken)
    host = EngineHost()
    try:
        host.submit("load", lambda ctx: ctx.host.install(object())).result(WAIT_S)
        assert joinable(host, 5).result(WAIT_S) == "solo"
    finally:
        assert host.shutdown(WAIT_S)


def test_shutdown_stops_every_row(api, host):
    rows = [joinable(host, 1, tokens=10_000)]
    api.in_step(0)
    rows.append(joinable(host, 2, tokens=10_000))
    api.gate.release()
    api.in_step(1)
    stopper = threading.Thread(target=host.shutdown, args=(WAIT_S,))
    stopper.start()
    api.run_free()
    for handle in rows:
        finished = [e for e in engine_events(handle) if isinstance(e, Finished)]
        assert finished and finished[0].cancelled
    stopper.join(WAIT_S)
