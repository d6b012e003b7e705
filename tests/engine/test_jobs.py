"""The engine host: one thread, jobs in order and one at a time, cancel, failures, transactional loads."""

import gc
import threading
import time
import weakref

import pytest

from specchat.engine import Finished, GenerationConfig, PrefillProgress, TextChunk
from specchat.engine.errors import EngineError, ErrorKind, ModelLoadError
from specchat.engine.owner import (
    EngineHost,
    JobCancelled,
    JobCancelledError,
    JobFailed,
    JobFinished,
    JobProgress,
    JobQueued,
    JobStarted,
    load_pair_job,
    prompt_job,
)


@pytest.fixture
def host():
    host = EngineHost()
    yield host
    assert host.shutdown(30)


def test_jobs_run_in_order_one_at_a_time_on_the_host_thread(host):
    log, threads, running = [], set(), []
    gate = threading.Event()

    def job(name, hold=False):
        def work(ctx):
            running.append(name)
            assert len(running) == 1, running  # never two at once
            threads.add(threading.current_thread().name)
            if hold:
                gate.wait(5)
            time.sleep(0.01)
            log.append(name)
            running.remove(name)
            return name

        return work

    first = host.submit("a", job("a", hold=True))
    others = [host.submit(k, job(k)) for k in "bcd"]
    state = host.state()
    assert [i.kind for i in state.queued][-3:] == ["b", "c", "d"]
    gate.set()
    assert [h.result(10) for h in (first, *others)] == ["a", "b", "c", "d"]
    assert log == ["a", "b", "c", "d"] and threads == {"engine"}
    events = list(others[2].events())
    assert isinstance(events[0], JobQueued) and events[0].ahead == 3
    assert [type(e) for e in events[1:]] == [JobStarted, JobFinished]


def test_a_queued_job_cancelled_never_runs(host):
    gate, started, ran = threading.Event(), threading.Event(), []
    blocker = host.submit("block", lambda ctx: started.set() or gate.wait(5))
    assert started.wait(5)
    victim = host.submit("victim", lambda ctx: ran.append("victim"))
    after = host.submit("after", lambda ctx: ran.append("after"))
    assert host.state().ahead_of(victim.id) == 1
    host.cancel(victim)
    assert victim.done and isinstance(victim.outcome, JobCancelled)  # at once, not when its turn comes
    assert [i.id for i in host.state().queued] == [after.id]
    gate.set()
    after.result(10)
    assert ran == ["after"] and blocker.result(10) is True
    with pytest.raises(JobCancelledError):
        victim.result(1)


def test_an_exception_fails_the_job_and_the_next_one_runs(host):
    def broken(ctx):
        raise KeyError("boom")

    bad = host.submit("bad", broken)
    good = host.submit("good", lambda ctx: threading.current_thread().name)
    assert good.result(10) == "engine"
    assert isinstance(bad.outcome, JobFailed) and bad.outcome.message == "KeyError: 'boom'"
    assert bad.outcome.kind is ErrorKind.INTERNAL  # not an engine error: a bug, its type named
    with pytest.raises(EngineError, match="KeyError: 'boom'") as raised:
        bad.result(1)
    assert type(raised.value) is EngineError


def test_each_consumer_gets_only_its_own_jobs_events(host):
    def counting(n):
        def work(ctx):
            yield from range(n)
            return n

        return work

    seen = {1: [], 2: []}
    results = []

    def producer(key, n):
        handle = host.submit("count", counting(n), listener=seen[key].append)
        results.append(handle.result(10))

    threads = [threading.Thread(target=producer, args=(1, 3)), threading.Thread(target=producer, args=(2, 5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [3, 5]
    for key, n in ((1, 3), (2, 5)):
        assert [e.event for e in seen[key] if isinstance(e, JobProgress)] == list(range(n))
        assert len({e.job.id for e in seen[key]}) == 1


def test_a_failed_load_keeps_the_previous_pair(host, dense_target, dense_draft_partial, tmp_path):
    pair = host.submit("load", load_pair_job(dense_target, dense_draft_partial)).result(60)
    engine = host.engine
    assert pair.draft == str(dense_draft_partial) and engine.owner is host.thread
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="no model.*safetensors"):
        host.submit("load", load_pair_job(tmp_path / "broken")).result(60)
    assert host.engine is engine
    ids = engine.tokenizer.encode("hello")
    events = list(host.submit("reply", prompt_job(ids, GenerationConfig("draft", 2, max_tokens=5))).events())
    final = [e.event for e in events if isinstance(e, JobProgress)][-1]
    assert isinstance(final, Finished) and len(final.tokens) == 5 and final.stats.mode == "draft"


def test_a_reply_queued_before_a_load_uses_the_old_pair(host, dense_target, hybrid_target):
    host.submit("load", load_pair_job(dense_target)).result(60)
    old = host.engine
    ids = old.tokenizer.encode("def f(x):")
    seen = []
    reply = host.submit(
        "reply", prompt_job(ids, GenerationConfig(max_tokens=4)), listener=lambda e: seen.append(host.engine)
    )
    load = host.submit("load", load_pair_job(hybrid_target))
    reply.result(60)
    load.result(60)
    assert set(seen) == {old} and host.engine is not old and host.engine.owner is host.thread
    released = weakref.ref(old)
    del old, seen[:]
    gc.collect()
    assert released() is None  # the replaced engine was let go (its memory with it)


def test_prefill_progress_streams_through_a_job_and_cancel_stops_it(host, dense_target):
    host.submit("load", load_pair_job(dense_target)).result(60)
    ids = host.engine.tokenizer.encode("def fibonacci(n):\n    " * 6)
    host.engine.runner.prefill_chunk = 8  # an attribute: no model call
    kinds = []

    def listener(event):
        if isinstance(event, JobProgress):
            kinds.append(type(event.event))
            if isinstance(event.event, PrefillProgress) and event.event.done >= 16:
                handle.cancel.set()

    handle = host.submit("reply", prompt_job(ids, GenerationConfig(max_tokens=50)), listener=listener)
    handle.result(60)
    assert kinds == [PrefillProgress, PrefillProgress, Finished] and TextChunk not in kinds
