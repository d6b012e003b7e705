"""One dispatcher for job events: each kind reaches its handler, `ended` follows any terminal event."""

from specchat.engine.errors import ErrorKind
from specchat.engine.owner import (
    JobCancelled,
    JobFailed,
    JobFinished,
    JobInfo,
    JobProgress,
    JobQueued,
    JobStarted,
)
from specchat.ui.job_events import JobHandlers

JOB = JobInfo(7, "sweep")


def recording_handlers(calls: list) -> JobHandlers:
    return JobHandlers(
        queued=lambda ahead: calls.append(("queued", ahead)),
        started=lambda: calls.append(("started",)),
        progress=lambda event: calls.append(("progress", event)),
        finished=lambda result: calls.append(("finished", result)),
        failed=lambda failed: calls.append(("failed", failed.message, failed.kind)),
        cancelled=lambda: calls.append(("cancelled",)),
        ended=lambda: calls.append(("ended",)),
    )


def test_each_event_reaches_its_handler_and_ended_follows_the_terminal_one():
    calls: list = []
    handle = recording_handlers(calls)
    for event in (JobQueued(JOB, 2), JobStarted(JOB), JobProgress(JOB, "row 1"), JobFinished(JOB, [1, 2])):
        handle(event)
    assert calls == [("queued", 2), ("started",), ("progress", "row 1"), ("finished", [1, 2]), ("ended",)]
    calls.clear()
    handle(JobFailed(JOB, "no model", ErrorKind.INTERNAL))
    handle(JobCancelled(JOB))
    assert calls == [("failed", "no model", ErrorKind.INTERNAL), ("ended",), ("cancelled",), ("ended",)]


def test_a_kind_without_a_handler_is_ignored_and_ended_still_runs():
    calls: list = []
    handle = JobHandlers(ended=lambda: calls.append("ended"))
    handle(JobStarted(JOB))
    handle(JobProgress(JOB, "ignored"))
    handle(JobFinished(JOB, None))
    assert calls == ["ended"]
