"""Errors cross threads and the wire as a message and an ErrorKind, and come back as their own class."""

import json

import pytest

from specchat.engine import Engine, GenerationConfig
from specchat.engine.errors import (
    ConfigError,
    EngineError,
    ErrorKind,
    IncompatibleDraftError,
    ModelLoadError,
    RemoteError,
    RollbackError,
    error_from,
    error_kind,
    user_message,
)
from specchat.engine.events import Failed
from specchat.server.wire import event_from_json, event_to_json

from .helpers import prompt_ids

ENGINE_ERRORS = (ConfigError, ModelLoadError, IncompatibleDraftError, RollbackError, RemoteError, EngineError)


@pytest.mark.parametrize("cls", ENGINE_ERRORS)
def test_every_engine_error_comes_back_as_its_own_class(cls):
    exc = cls("the draft's vocabulary has 151,936 tokens, the target's 152,064")
    again = error_from(error_kind(exc), user_message(exc))
    assert type(again) is cls and str(again) == str(exc)


def test_an_unexpected_exception_is_internal_and_names_its_type():
    exc = KeyError("layers.3")
    assert error_kind(exc) is ErrorKind.INTERNAL
    assert user_message(exc) == "KeyError: 'layers.3'"
    assert type(error_from(ErrorKind.INTERNAL, user_message(exc))) is EngineError
    assert type(error_from("a kind from a newer server", "x")) is EngineError


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_a_failed_event_keeps_its_kind_over_the_wire(kind):
    event = Failed("the server is shutting down", kind, (1, 2))
    assert event_from_json(json.loads(json.dumps(event_to_json(event)))) == event


def test_a_failed_event_of_an_unknown_kind_reads_as_an_engine_error():
    body = {"type": "Failed", "message": "new", "kind": "quota", "partial_tokens": []}
    assert event_from_json(body) == Failed("new", ErrorKind.ENGINE, ())


def test_generate_raises_the_class_a_refused_setting_failed_with(dense_target):
    engine = Engine.load(dense_target)
    with pytest.raises(ConfigError, match="not available"):
        engine.generate(prompt_ids(engine, "hi"), GenerationConfig(mode="draft", max_tokens=4))
