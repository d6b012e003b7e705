"""Use a SpecChat server as the app's engine: a job that installs a RemoteEngine on the host, so
every later job (replies, A/B, sweeps, the plain-decode measurement) runs on the server."""

from __future__ import annotations

from collections.abc import Callable

from specchat.engine.owner import JobContext, LoadedPair, LoadMessage

from .remote import RemoteEngine


def connect_job(url: str, api_key: str | None = None) -> Callable[[JobContext], LoadedPair]:
    """A job that connects to `url`; the local engine is released only once the server answered."""

    def work(ctx: JobContext) -> LoadedPair:
        ctx.emit(LoadMessage(f"Connecting to {url}…"))
        remote = RemoteEngine(url, api_key)
        ctx.host.install(remote)
        return LoadedPair(
            remote.target.path,
            remote.draft.path if remote.draft else None,
            remote.available_modes(),
            remote.tokenizer.decode,
            None,
            0,
            remote=remote.url,
        )

    return work
