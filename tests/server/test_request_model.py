"""The request model's errors: every problem is a 400 whose param is the field's location and whose message
names the field and what it must be, in OpenAI's shape and in Anthropic's."""

import pytest

from specchat.engine.config import GenerationConfig
from specchat.server.anthropic_route import anthropic_error
from specchat.server.errors import ApiError
from specchat.server.request_model import location
from specchat.server.requests import parse_request

ASK = [{"role": "user", "content": "hi"}]


def refusal(extra: dict) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse_request("chat", {"messages": ASK, **extra}, ["m"], GenerationConfig())
    return caught.value


@pytest.mark.parametrize(
    "extra, param, words",
    [
        ({"temperature": "hot"}, "temperature", "temperature must be a finite number, got 'hot'"),
        ({"max_tokens": 1.5}, "max_tokens", "max_tokens must be an integer, got 1.5"),
        ({"max_tokens": 10**400}, "max_tokens", "out of range, got an integer of 401 digits"),
        ({"stop": 5}, "stop", "stop must be a string or a list of non-empty strings"),
        ({"stream": "yes"}, "stream", "stream must be true or false, got 'yes'"),
        ({"stream_options": {"include_usage": 1}}, "stream_options.include_usage", "must be true or false"),
        ({"speculation": "fast"}, "speculation", "speculation must be an object, got 'fast'"),
        ({"speculation": {"mode": "magic"}}, "speculation.mode", "must be one of baseline, draft"),
        ({"speculation": {"depth": 3}}, "speculation.depth", "speculation.depth is not a field this server knows"),
        ({"speculation": {"num_draft_tokens": "fast"}}, "speculation.num_draft_tokens", "a whole number or 'auto'"),
        ({"n": 2}, "n", "n must be 1"),
    ],
)
def test_each_problem_names_its_field(extra, param, words):
    error = refusal(extra)
    assert error.status == 400 and error.param == param and words in error.message
    assert error.body()["error"]["param"] == param
    anthropic = anthropic_error(error).body.decode()
    assert '"type":"error"' in anthropic.replace(" ", "") and words.split(",")[0] in anthropic


def test_a_location_reads_as_openai_names_a_field():
    assert location(("messages", 2, "content")) == "messages[2].content"
    assert location(("stop", "list[str]", 3)) == "stop[3]"
    assert location(("speculation", "mode")) == "speculation.mode"
