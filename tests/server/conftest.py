"""A real server on a free loopback port, over an engine host with a tiny dense pair."""

from dataclasses import dataclass

import pytest

from specchat.engine import Finished, GenerationConfig, TextChunk
from specchat.engine.owner import EngineHost, load_pair_job
from specchat.server.app import ServerOptions
from specchat.server.backend import EngineBackend
from specchat.server.running import BackgroundServer, free_port

API_KEY = "test-key-123"
DEFAULTS = GenerationConfig(mode="draft", num_draft_tokens=2, max_tokens=24)


@pytest.fixture(scope="module")
def host(dense_target, dense_draft_partial):
    """An engine host with the tiny dense target and its partial draft loaded."""
    engine_host = EngineHost()
    engine_host.submit("load", load_pair_job(dense_target, dense_draft_partial)).result(timeout=120)
    yield engine_host
    engine_host.shutdown()


def start_server(host, **options) -> BackgroundServer:
    """A background server on a free port (stop it when done)."""
    max_queue, max_batch = options.pop("max_queue", 8), options.pop("max_batch", 8)
    backend = EngineBackend(host, max_queue, max_batch)
    server = BackgroundServer(backend, ServerOptions(DEFAULTS, **options), port=free_port())
    server.start()
    return server


@pytest.fixture(scope="module")
def server(host):
    """The server with an API key."""
    running = start_server(host, api_key=API_KEY)
    yield running
    running.stop()


@pytest.fixture
def client(server):
    """The official OpenAI client pointed at the server."""
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0, timeout=120)


@dataclass(frozen=True)
class Reference:
    """A local run of the same tokens and config: its tokens, stats and the text its chunks stream."""

    tokens: list
    stats: object
    text: str


def reference(host, ids, cfg) -> Reference:
    """What engine.stream gives for the same tokens and config (run as a job on the host)."""

    def work(ctx):
        events = list(ctx.engine.stream(ids, cfg))
        finished = events[-1]
        assert isinstance(finished, Finished), finished
        return Reference(
            list(finished.tokens), finished.stats, "".join(e.text for e in events if isinstance(e, TextChunk))
        )

    return host.submit("ref", work).result(timeout=120)


def chat_ids(host, messages):
    """The prompt tokens the server builds for a chat."""
    return list(host.engine.tokenizer.apply_chat_template(messages, add_generation_prompt=True))
