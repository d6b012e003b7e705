"""The API requests behind the server-log screenshots: serve the loaded model on localhost, as Server ▸ Serve
on localhost does, and send it three requests from another thread (a reply, a streamed reply, a wrong model)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

from driving import Failure, Steps, until

ASK_S = 600  # a generous bound for three short replies on 2 busy CPU cores
LIST = "Repeat this list exactly: apples, bananas, carrots, dates, eggs, figs, grapes."
QUESTION = "Name three uses of a paperclip."


def chat_request(url: str, model: str, text: str, **extra: object) -> urllib.request.Request:
    """A POST of an OpenAI chat completion asking text, with a small max_tokens."""
    body = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 24, **extra}
    return urllib.request.Request(
        f"{url}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )


def ask(url: str, model: str, answers: list) -> None:
    """Send the three requests one after another; each one's HTTP status (or the error) goes to answers."""
    lookup = {"speculation": {"mode": "lookup", "num_draft_tokens": "auto"}}
    requests = [
        chat_request(url, model, LIST, **lookup),
        chat_request(url, model, QUESTION, stream=True),
        chat_request(url, "no-such-model", QUESTION),
    ]
    for request in requests:
        try:
            with urllib.request.urlopen(request, timeout=ASK_S) as response:
                response.read()
                answers.append(response.status)
        except urllib.error.HTTPError as error:
            answers.append(error.code)
        except OSError as error:
            answers.append(f"{request.full_url}: {error}")


def serve_and_ask(window, model_path: str) -> Steps:
    """Serve on a free port with the chat's settings, send the requests, wait until the log holds all three."""
    from specchat.server.running import free_port
    from specchat.ui.server_menu import ServeChoice

    if not window.server.serve(ServeChoice(free_port(), None)):
        raise Failure(f"the server did not start: {window.banner.text.text()}")
    url = window.server.controller.server.url
    answers: list = []
    threading.Thread(target=ask, args=(url, Path(model_path).name, answers), daemon=True).start()
    yield until("three API requests", lambda: len(answers) == 3, ASK_S * 3)
    failures = [a for a in answers if not isinstance(a, int)]
    if failures:
        raise Failure(f"an API request did not get an answer: {failures[0]}")
    yield until("the server log's rows", lambda: window.server.requests.rowCount() >= 3, 30)
    print(f"API requests answered {answers}", flush=True)
