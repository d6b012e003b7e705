"""A real server on a free loopback port, over an engine host with a tiny dense pair."""

import pytest

from app.engine import GenerationConfig
from app.engine.engine_jobs import load_pair_job
from app.engine.jobs import EngineHost
from app.server.app import ServerOptions
from app.server.backend import EngineBackend
from app.server.running import BackgroundServer, free_port

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
    max_queue = options.pop("max_queue", 8)
    server = BackgroundServer(EngineBackend(host, max_queue), ServerOptions(DEFAULTS, **options),
                              port=free_port())
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


def reference(host, ids, cfg):
    """What engine.generate gives for the same tokens and config (run as a job on the host)."""
    return host.submit("ref", lambda ctx: ctx.engine.generate(ids, cfg)).result(timeout=120)


def chat_ids(host, messages):
    """The prompt tokens the server builds for a chat."""
    return list(host.engine.tokenizer.apply_chat_template(messages, add_generation_prompt=True))
