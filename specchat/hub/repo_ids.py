"""What the user typed as a model, checked before anything asks the hub: a repo id or a pasted hub URL."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from .errors import HubError

HUB_HOSTS = ("huggingface.co", "www.huggingface.co", "hf.co")
# Hugging Face's own rule (huggingface_hub validate_repo_id): letters, digits, "-", "_", ".";
# at most one "/"; no "--" or ".."; not starting or ending with "-" or "."; 96 characters at most.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"(?:{_PART}/)?{_PART}")
MAX_LENGTH = 96
URL_TAILS = ("tree", "blob", "resolve", "commit", "commits", "discussions", "files")
EXAMPLE = "mlx-community/Qwen3-8B-4bit"


class BadRepoIdError(HubError):
    """The text is not a model repo id nor a model page URL."""


def parse_repo_id(text: str, extra_hosts: tuple[str, ...] = ()) -> str:
    """The repo id in `text` (an id like org/name, or a huggingface.co model URL); BadRepoIdError if none."""
    raw = text.strip()
    if "://" in raw:
        return _repo_id_from_url(raw, extra_hosts)
    return checked_repo_id(raw, text)


def checked_repo_id(repo_id: str, typed: str | None = None) -> str:
    """repo_id when Hugging Face would accept it, else BadRepoIdError naming what was typed and why."""
    typed = repo_id if typed is None else typed
    if not repo_id:
        where = f"{typed!r} names no model" if typed.strip() else "no model id given"
        raise BadRepoIdError(f"{where}: expected org/name, e.g. {EXAMPLE}")
    problem = _id_problem(repo_id)
    if problem:
        raise BadRepoIdError(
            f"{typed!r} is not a model id: {problem} (expected org/name, e.g. {EXAMPLE}, "
            "or the model's huggingface.co URL)"
        )
    return repo_id


def _id_problem(repo_id: str) -> str | None:
    if any(c.isspace() for c in repo_id):
        return "it contains spaces"
    if repo_id.count("/") > 1:
        return f"it has {repo_id.count('/') + 1} parts separated by '/', a model id has at most 2"
    if ".." in repo_id or "--" in repo_id:
        return "'..' and '--' are not allowed"
    if len(repo_id) > MAX_LENGTH:
        return f"it is {len(repo_id)} characters long, at most {MAX_LENGTH} are allowed"
    if not _REPO_ID.fullmatch(repo_id):
        return "only letters, digits, '-', '_' and '.' are allowed, not at the start or end of a part"
    return None


def _repo_id_from_url(url: str, extra_hosts: tuple[str, ...]) -> str:
    """org/name from https://huggingface.co/org/name[/tree/main | /blob/main/file | ...]."""
    parts = urlsplit(url)
    hosts = HUB_HOSTS + tuple(urlsplit(h).netloc or h for h in extra_hosts)
    if parts.scheme not in ("http", "https") or parts.netloc.lower() not in hosts:
        raise BadRepoIdError(f"{url!r} is not a Hugging Face model URL (expected https://huggingface.co/org/name)")
    segments = [unquote(s) for s in parts.path.split("/") if s]
    if segments and segments[0] in ("datasets", "spaces"):
        raise BadRepoIdError(f"{url!r} points at a {segments[0][:-1]}, not a model")
    if segments and segments[0] == "models":
        segments = segments[1:]
    if len(segments) > 1 and segments[1] in URL_TAILS:  # a repo without an org: /gpt2/tree/main
        segments = segments[:1]
    if len(segments) > 2 and segments[2] not in URL_TAILS:
        raise BadRepoIdError(f"{url!r} is not a model page: after org/name it has {segments[2]!r}")
    return checked_repo_id("/".join(segments[:2]), url)
