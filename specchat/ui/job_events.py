"""One dispatcher for a job's events: a view says what it does with each kind, instead of its own if/elif ladder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specchat.engine.owner import (
    TERMINAL,
    JobCancelled,
    JobEvent,
    JobFailed,
    JobFinished,
    JobProgress,
    JobQueued,
    JobStarted,
)


@dataclass(frozen=True)
class JobHandlers:
    """What to do with each of a job's events, in the order they come; a kind without a handler is ignored.
    `ended` runs after the handler of any terminal event (finished, failed or cancelled)."""

    queued: Callable[[int], None] | None = None  # how many jobs are ahead of it
    started: Callable[[], None] | None = None
    progress: Callable[[Any], None] | None = None  # what the work itself emitted
    finished: Callable[[Any], None] | None = None  # what the work returned
    failed: Callable[[JobFailed], None] | None = None  # its message and kind
    cancelled: Callable[[], None] | None = None  # cancelled while queued: it never ran
    ended: Callable[[], None] | None = None

    def __call__(self, event: JobEvent) -> None:
        """Hand the event to its handler (connect a QtJob's `event` signal to this object)."""
        if isinstance(event, JobQueued) and self.queued:
            self.queued(event.ahead)
        elif isinstance(event, JobStarted) and self.started:
            self.started()
        elif isinstance(event, JobProgress) and self.progress:
            self.progress(event.event)
        elif isinstance(event, JobFinished) and self.finished:
            self.finished(event.result)
        elif isinstance(event, JobFailed) and self.failed:
            self.failed(event)
        elif isinstance(event, JobCancelled) and self.cancelled:
            self.cancelled()
        if isinstance(event, TERMINAL) and self.ended:
            self.ended()
