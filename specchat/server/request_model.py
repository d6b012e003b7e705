"""The generation fields of an OpenAI-style body as a pydantic model, and the one mapping from a validation
error to the API's error: its location becomes OpenAI's `param` ("speculation.mode", "stop[2]"), and the
Anthropic route renders the same ApiError in its own shape. Ranges come from the engine's LIMITS."""

from __future__ import annotations

import math
from typing import Annotated, TypedDict

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from specchat.engine.config import LIMITS
from specchat.engine.errors import ConfigError
from specchat.engine.json_types import JSONObject
from specchat.engine.modes import MODES, SpecMode

from .errors import ApiError, bad_request

MAX_STOP_SEQUENCES = 4


def _finite_number(value: object) -> object:
    """A JSON number that is finite (NaN, infinities and an integer too large for a float are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
        raise PydanticCustomError("finite_number", "must be a finite number, got {value}", {"value": repr(value)})
    return float(value)


def _integer(value: object) -> object:
    """A JSON integer (true/false and 1.5 are not), small enough to compare against the limits."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError("integer", "must be an integer, got {value}", {"value": repr(value)})
    if not _finite(value):
        shown = repr(value) if len(repr(value)) <= 30 else f"an integer of {len(str(abs(value)))} digits"
        raise PydanticCustomError("integer_range", "is out of range, got {value}", {"value": shown})
    return value


def _draft_tokens(value: object) -> object:
    """K: "auto", or a JSON integer (its range depends on the mode: checked with it)."""
    if value == "auto" or value is None:
        return value
    try:
        return _integer(value)
    except PydanticCustomError:
        raise PydanticCustomError(
            "integer", "must be a whole number or 'auto', got {value}", {"value": repr(value)}
        ) from None


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


Number = Annotated[float, BeforeValidator(_finite_number)]
Integer = Annotated[int, BeforeValidator(_integer)]


class ConfigValues(TypedDict, total=False):
    """The GenerationConfig fields a request body sets (those it leaves out keep the server's defaults)."""

    max_tokens: int
    temperature: float
    top_p: float
    min_p: float
    top_k: int
    seed: int
    mode: SpecMode
    num_draft_tokens: int | str


class SpeculationBody(BaseModel):
    """SpecChat's own `speculation` object: a mode and K (or "auto") for this request."""

    model_config = ConfigDict(extra="forbid")

    mode: Annotated[SpecMode, Field(description="where drafts come from")] | None = None
    num_draft_tokens: Annotated[int | str | None, BeforeValidator(_draft_tokens)] = None

    @field_validator("mode", mode="before")
    @classmethod
    def _known_mode(cls, value: object) -> object:
        if value is not None and value not in MODES:
            raise PydanticCustomError(
                "mode", "must be one of {modes}, got {value}", {"modes": ", ".join(MODES), "value": repr(value)}
            )
        return value


class StreamOptions(BaseModel):
    """stream_options: whether the last chunk carries usage."""

    model_config = ConfigDict(extra="allow")

    include_usage: StrictBool | None = None


class GenerationBody(BaseModel):
    """How to generate, as a chat or completion body says it (its other fields are read elsewhere)."""

    model_config = ConfigDict(extra="allow")

    n: StrictInt | None = None
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    max_tokens: Integer | None = None
    max_completion_tokens: Integer | None = None
    temperature: Number | None = None
    top_p: Number | None = None
    min_p: Number | None = None
    top_k: Integer | None = None
    seed: Integer | None = None
    stop: str | list[str] | None = None
    speculation: SpeculationBody | None = None

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int | None) -> int | None:
        if value not in (None, 1):
            raise PydanticCustomError(
                "n", "n must be 1: SpecChat generates one choice per request, got {value}", {"value": repr(value)}
            )
        return value

    @field_validator("max_tokens", "max_completion_tokens", "temperature", "top_p", "min_p", "top_k", "seed")
    @classmethod
    def _within_limits(cls, value: float | None, info: ValidationInfo) -> float | None:
        name = "max_tokens" if info.field_name == "max_completion_tokens" else str(info.field_name)
        if value is not None:
            try:
                LIMITS[name].check(value)
            except ConfigError as exc:
                raise PydanticCustomError("limit", str(exc)) from None
        return value

    @field_validator("stop")
    @classmethod
    def _stop_sequences(cls, value: str | list[str] | None) -> str | list[str] | None:
        stops = [value] if isinstance(value, str) else value or []
        if not all(stops):
            raise PydanticCustomError("stop", "stop must be a string or a list of non-empty strings")
        if len(stops) > MAX_STOP_SEQUENCES:
            raise PydanticCustomError(
                "stop",
                "stop takes at most {most} sequences, got {count}",
                {"most": MAX_STOP_SEQUENCES, "count": len(stops)},
            )
        return value

    def config_values(self) -> ConfigValues:
        """The GenerationConfig fields this body sets."""
        values: ConfigValues = {}
        max_tokens = self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens
        if max_tokens is not None:
            values["max_tokens"] = max_tokens
        if self.temperature is not None:
            values["temperature"] = self.temperature
        if self.top_p is not None:
            values["top_p"] = self.top_p
        if self.min_p is not None:
            values["min_p"] = self.min_p
        if self.top_k is not None:
            values["top_k"] = self.top_k
        if self.seed is not None:
            values["seed"] = self.seed
        speculation = self.speculation
        if speculation is not None and speculation.mode is not None:
            values["mode"] = speculation.mode
        if speculation is not None and speculation.num_draft_tokens is not None:
            values["num_draft_tokens"] = speculation.num_draft_tokens
        return values

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        """The stop sequences, as a tuple."""
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())


def generation_body(body: JSONObject) -> GenerationBody:
    """The body's generation fields; an ApiError naming the first field that is wrong."""
    try:
        return GenerationBody.model_validate(body)
    except ValidationError as exc:
        raise api_error(exc) from None


# What a field must be, for pydantic's type errors (its own words name our classes)
TYPE_WORDS = {
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "extra_forbidden": "is not a field this server knows",
}
OWN_WORDS = ("limit", "n", "stop")  # their message names the field already
NAMED = ("finite_number", "integer", "integer_range", "mode")  # their message follows the field's name


def api_error(exc: ValidationError) -> ApiError:
    """The 400 for a validation error: its first problem, `param` its location."""
    error = exc.errors(include_url=False)[0]
    param, kind = location(error["loc"]), str(error["type"])
    if param == "stop" and kind not in OWN_WORDS:
        return bad_request("stop must be a string or a list of non-empty strings", "stop")
    if kind in OWN_WORDS:
        message = str(error["msg"])
    elif kind in NAMED:
        message = f"{param} {error['msg']}"
    else:
        words = TYPE_WORDS.get(kind, str(error["msg"]).lower())
        message = f"{param} {words}, got {error.get('input')!r}"
    return bad_request(message, param)


def location(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as OpenAI names a field: a.b[2].c (a union's branch names left out)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in {"str", "list[str]", "int", "float", "literal['auto']"} or part.startswith(
            ("function-", "literal")
        ):
            continue  # which branch of a union failed: not a field
        else:
            out += f".{part}" if out else part
    return out
