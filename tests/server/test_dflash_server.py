"""A DFlash drafter through the server, with the official OpenAI client: the reply equals the engine's (which
equals plain decoding), streamed or not, and usage names the mode; a K past the block is refused by name."""

import openai
import pytest

from specchat.engine import GenerationConfig
from specchat.engine.owner import EngineHost, load_pair_job
from tests.fixtures.dflash_models import build_dflash

from .conftest import API_KEY, chat_ids, reference, start_server

MESSAGES = [{"role": "user", "content": "Write a short story about a fox."}]


@pytest.fixture(scope="module")
def dflash_server(tmp_path_factory, dense_target):
    drafter = build_dflash(tmp_path_factory.mktemp("dflash") / "drafter", dense_target)
    host = EngineHost()
    host.submit("load", load_pair_job(dense_target, None, dflash=drafter)).result(timeout=300)
    server = start_server(host, api_key=API_KEY)
    yield host, server
    server.stop()
    host.shutdown()


@pytest.fixture
def dflash_client(dflash_server):
    _, server = dflash_server
    return openai.OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("k", [4, 15, "auto"])
def test_dflash_replies_equal_the_engine_and_plain_decoding(dflash_server, dflash_client, k):
    host, _ = dflash_server
    ids = chat_ids(host, MESSAGES)
    want = reference(host, ids, GenerationConfig(mode="dflash", num_draft_tokens=k, max_tokens=24))
    assert want.tokens == reference(host, ids, GenerationConfig(max_tokens=24)).tokens
    spec = {"mode": "dflash", "num_draft_tokens": k}
    reply = dflash_client.chat.completions.create(
        model="dense_target", messages=MESSAGES, max_tokens=24, extra_body={"speculation": spec}
    )
    assert reply.choices[0].message.content == want.text
    usage = reply.usage.model_extra["speculation"]
    assert usage["mode"] == "dflash" and usage["drafted"] >= usage["accepted"] >= 0
    chunks = list(
        dflash_client.chat.completions.create(
            model="dense_target",
            messages=MESSAGES,
            max_tokens=24,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"speculation": spec},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == want.text
    assert chunks[-1].usage.model_extra["speculation"]["mode"] == "dflash"


def test_a_k_past_the_block_is_refused_by_name(dflash_client):
    with pytest.raises(openai.BadRequestError) as refused:
        dflash_client.chat.completions.create(
            model="dense_target",
            messages=MESSAGES,
            max_tokens=8,
            extra_body={"speculation": {"mode": "dflash", "num_draft_tokens": 16}},
        )
    assert "between 1 and 15" in str(refused.value) and "got 16" in str(refused.value)
