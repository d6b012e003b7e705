"""One owner for the engine: a plain job queue that runs every piece of MLX work on one thread.

A job is a function `work(ctx) -> result` (or a generator function whose yields are progress events
and whose return value is the result). Jobs run one at a time, in submission order, on the host's
thread; each has an id, a cancel event, its lifecycle events and a result. No Qt here: the Qt worker,
the command line and an HTTP server all adapt the same queue.
"""

from .batch_job import JoinSpec
from .engine_jobs import (
    LoadedPair,
    LoadMessage,
    adopt_job,
    context_length_job,
    knowledge_job,
    learn_job,
    load_pair_job,
    prompt_job,
    reply_job,
)
from .events import (
    TERMINAL,
    JobCancelled,
    JobEvent,
    JobFailed,
    JobFinished,
    JobInfo,
    JobProgress,
    JobQueued,
    JobStarted,
    QueueState,
)
from .handle import NO_MODEL, JobCancelledError, JobContext, JobHandle
from .host import EngineHost

__all__ = [
    "EngineHost",
    "JobHandle",
    "JoinSpec",
    "JobContext",
    "JobCancelledError",
    "NO_MODEL",
    "JobInfo",
    "JobQueued",
    "JobStarted",
    "JobProgress",
    "JobFinished",
    "JobFailed",
    "JobCancelled",
    "JobEvent",
    "TERMINAL",
    "QueueState",
    "LoadedPair",
    "LoadMessage",
    "load_pair_job",
    "adopt_job",
    "reply_job",
    "prompt_job",
    "learn_job",
    "knowledge_job",
    "context_length_job",
]
