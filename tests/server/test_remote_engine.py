"""A server used as the engine: a second host whose engine is a RemoteEngine runs the app's own jobs."""

import pytest

from specchat.engine.errors import RemoteError
from specchat.engine.events import Finished, RoundResult, TextChunk
from specchat.engine.owner import EngineHost, reply_job
from specchat.server.connect import connect_job
from specchat.server.remote import RemoteEngine
from specchat.tuning.ab_compare import run_ab

from .conftest import API_KEY, DEFAULTS, chat_ids

MESSAGES = [{"role": "user", "content": "Write a short story about a fox."}]


@pytest.fixture
def remote_host(server):
    """A local host (no model of its own) connected to the test server."""
    host = EngineHost()
    pair = host.submit("load", connect_job(server.url, API_KEY)).result(timeout=30)
    assert pair.remote == server.url and pair.target.endswith("dense_target") and pair.draft
    yield host
    host.shutdown()


def _reply(host, system_prompt=""):
    events = host.submit("reply", reply_job(MESSAGES, DEFAULTS, system_prompt)).events()
    return [e.event for e in events if hasattr(e, "event")]


def test_a_chat_reply_through_the_server_equals_the_local_one(remote_host, host):
    for system_prompt in ("", "Answer in French."):
        local, remote = _reply(host, system_prompt), _reply(remote_host, system_prompt)
        assert isinstance(remote[-1], Finished) and remote[-1].tokens == local[-1].tokens
        assert [e.text for e in remote if isinstance(e, TextChunk)] == [
            e.text for e in local if isinstance(e, TextChunk)
        ]
        assert any(isinstance(e, RoundResult) for e in remote)  # the dashboard gets every round


def test_ab_runs_unchanged_against_the_server(remote_host, host):
    engine = remote_host.engine
    ids = engine.tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True)
    assert ids == chat_ids(host, MESSAGES)
    assert engine.tokenizer.decode(ids[:5]) == host.engine.tokenizer.decode(ids[:5])
    rows = remote_host.submit("ab", lambda ctx: run_ab(ctx.engine, ids, 2, 12)).result(timeout=120)
    by_mode = {r.mode: r for r in rows}
    assert by_mode["draft"].identical and by_mode["draft"].acceptance_rate is not None
    assert "no MTP head" in (by_mode["mtp"].unavailable or "")


def test_the_remote_chat_template_honours_add_generation_prompt(remote_host, host):
    local, remote = host.engine.tokenizer, remote_host.engine.tokenizer
    conversation = [*MESSAGES, {"role": "assistant", "content": "A fox ran."}]
    for opening in (True, False):
        assert remote.apply_chat_template(conversation, add_generation_prompt=opening) == list(
            local.apply_chat_template(conversation, add_generation_prompt=opening)
        )
    with_opening = remote.apply_chat_template(conversation, add_generation_prompt=True)
    without = remote.apply_chat_template(conversation, add_generation_prompt=False)
    assert len(with_opening) > len(without) and with_opening[: len(without)] == without


def test_connecting_to_nothing_or_with_a_wrong_key_says_so(server):
    with pytest.raises(RemoteError, match="401"):
        RemoteEngine(server.url, "wrong")
    with pytest.raises(RemoteError, match="could not be reached"):
        RemoteEngine("http://127.0.0.1:9", API_KEY)


class RecordedStream:
    """What httpx's streamed response yields line by line: a stream recorded from a newer server."""

    def __init__(self, lines: list[str]):
        self.lines = lines

    def iter_lines(self):
        return iter(self.lines)


def test_events_a_newer_server_added_are_skipped_not_fatal():
    from specchat.engine.events import PrefillProgress
    from specchat.server.remote import _events

    lines = [
        'data: {"type": "Queued", "ahead": 1}',
        'data: {"type": "SpeculationHint", "k": 3}',
        "",
        'data: {"type": "PrefillProgress", "done": 4, "total": 8}',
    ]
    assert list(_events(RecordedStream(lines), None)) == [PrefillProgress(4, 8)]
