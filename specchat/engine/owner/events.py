"""The frozen events of a job's life, and a snapshot of the queue."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ErrorKind


@dataclass(frozen=True)
class JobInfo:
    """Which job: its id (unique per host, increasing) and its kind ("reply", "load", "sweep", ...)."""

    id: int
    kind: str


@dataclass(frozen=True)
class JobQueued:
    """The job joined the queue with `ahead` jobs (queued or running) before it."""

    job: JobInfo
    ahead: int


@dataclass(frozen=True)
class JobStarted:
    """The job began on the engine thread."""

    job: JobInfo


@dataclass(frozen=True)
class JobProgress:
    """One event the job's work emitted (an engine event, a sweep event, a load message...)."""

    job: JobInfo
    event: object


@dataclass(frozen=True)
class JobFinished:
    """The job's work returned; result is what it returned (a cancelled run may return a partial result)."""

    job: JobInfo
    result: object


@dataclass(frozen=True)
class JobFailed:
    """The job's work raised; message is meant for the user, kind says what failed."""

    job: JobInfo
    message: str
    kind: ErrorKind


@dataclass(frozen=True)
class JobCancelled:
    """The job was cancelled before it ran (or its work raised JobCancelledError)."""

    job: JobInfo


JobEvent = JobQueued | JobStarted | JobProgress | JobFinished | JobFailed | JobCancelled
JobEnd = JobFinished | JobFailed | JobCancelled  # a job's terminal event
TERMINAL = (JobFinished, JobFailed, JobCancelled)


@dataclass(frozen=True)
class QueueState:
    """What the host is doing: the running job (or None) and the queued ones in order. running_batch holds
    every running job: the rows of a batch of generations (running is the first of them), or the one job."""

    running: JobInfo | None
    queued: tuple[JobInfo, ...]
    running_batch: tuple[JobInfo, ...] = ()

    def ahead_of(self, job_id: int) -> int | None:
        """How many jobs run before a queued job (None when it is not queued)."""
        for index, info in enumerate(self.queued):
            if info.id == job_id:
                return index + (self.running is not None)
        return None
