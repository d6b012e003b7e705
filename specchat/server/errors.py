"""Errors in OpenAI's format: {"error": {"message", "type", "param", "code"}} with an HTTP status."""

from __future__ import annotations

from specchat.engine.json_types import JSONObject


class ApiError(Exception):
    """A request the server refuses; `status` is the HTTP status, the rest OpenAI's error fields."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code
        self.headers = headers or {}

    def body(self) -> JSONObject:
        """The JSON body OpenAI clients parse."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    """400: the request's JSON or one of its values is wrong."""
    return ApiError(400, message, "invalid_request_error", param, code)


def not_found(message: str, param: str | None = None, code: str | None = "model_not_found") -> ApiError:
    """404: the model (or route) named is not here."""
    return ApiError(404, message, "invalid_request_error", param, code)


def unauthorized() -> ApiError:
    """401: no API key, or the wrong one."""
    return ApiError(
        401,
        "Invalid or missing API key: send it as 'Authorization: Bearer KEY'",
        "invalid_request_error",
        None,
        "invalid_api_key",
    )


SHUTTING_DOWN = "The server is shutting down: this request was stopped; retry once it is back"


def shutting_down() -> ApiError:
    """503: the server is stopping; what the request got so far is not a whole answer."""
    return ApiError(503, SHUTTING_DOWN, "server_error", None, "server_shutting_down")


def busy(retry_after_s: int, queued: int) -> ApiError:
    """503: the queue is full; try again later."""
    return ApiError(
        503,
        f"The server is busy: {queued} requests are waiting; retry in {retry_after_s} s",
        "server_error",
        None,
        "queue_full",
        {"Retry-After": str(retry_after_s)},
    )
