"""The distributed group: who we are, where each rank runs, and the collectives the cluster uses."""

from __future__ import annotations

import os
import socket

import mlx.core as mx
import numpy as np

HOST_BYTES = 64


class LinkLost(RuntimeError):
    """A collective came back without a peer's real answer: the peer died mid-collective."""


def launched() -> bool:
    """True when mlx.launch (or an MPI/ring/JACCL environment) started this process."""
    return any(name in os.environ for name in ("MLX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"))


def settle() -> None:
    """Finish the work already dispatched (the engine queues its next pass, with the model's own
    all_sums, before it yields): our collectives then come after them, in the same order on every rank."""
    mx.synchronize()  # the default device's stream: the GPU's on a Mac, where the model runs
    mx.synchronize(mx.default_stream(mx.cpu))  # where our collectives run


class ClusterGroup:
    """An mx.distributed group with each rank's host name and process id."""

    def __init__(self, group: mx.distributed.Group):
        self.group = group
        self.rank, self.size = group.rank(), group.size()
        self.calls = 0  # gather_ints calls so far: the same on every rank, since all run the same collectives
        names = self.gather_bytes(socket.gethostname().encode()[:HOST_BYTES], HOST_BYTES)
        self.hosts = [name.decode(errors="replace") for name in names]
        pids = self.gather_ints([os.getpid()])
        self.pids = [row[0] for row in pids]

    @classmethod
    def init(cls) -> ClusterGroup | None:
        """The group of this launch, or None when this process runs alone."""
        if not launched():
            return None
        group = mx.distributed.init()
        return cls(group) if group.size() > 1 else None

    def where(self, rank: int) -> str:
        """'rank R on host H' for messages."""
        return f"rank {rank} on host {self.hosts[rank]}"

    def others(self) -> str:
        """Every rank but 0, for messages: 'rank 1 on host a' or 'rank 1 on host a, rank 2 on host b'."""
        return ", ".join(self.where(r) for r in range(1, self.size))

    def broadcast(self, values: np.ndarray | None, length: int) -> np.ndarray:
        """Rank 0's int32 vector of `length` values on every rank (the others pass None)."""
        mine = np.zeros(length, np.int32) if values is None else np.asarray(values, np.int32)
        settle()
        out = mx.distributed.all_sum(mx.array(mine), group=self.group, stream=mx.cpu)
        return np.array(out, copy=True)

    def gather_ints(self, values: list[int]) -> list[list[int]]:
        """Every rank's list of int64 values (same length on every rank), by rank.

        Each row carries the call number: a ring whose peer was killed can hand back a buffer the
        peer never wrote (seen as 38654705672 "tokens"), which must read as a lost link, not as data."""
        self.calls += 1
        mine = mx.array(np.asarray([self.calls, *values], np.int64))
        settle()
        out = mx.distributed.all_gather(mine, group=self.group, stream=mx.cpu)
        rows = np.array(out, copy=True).reshape(self.size, len(values) + 1).tolist()
        garbled = [rank for rank, row in enumerate(rows) if row[0] != self.calls]
        if garbled:
            raise LinkLost(f"rank {garbled[0]}'s part of a collective came back unwritten")
        return [row[1:] for row in rows]

    def gather_bytes(self, data: bytes, length: int) -> list[bytes]:
        """Every rank's `data` (at most `length` bytes), by rank."""
        padded = np.frombuffer(data[:length].ljust(length, b"\0"), np.uint8).astype(np.int32)
        settle()
        out = mx.distributed.all_gather(mx.array(padded), group=self.group, stream=mx.cpu)
        rows = np.array(out, copy=True).reshape(self.size, length).astype(np.uint8)
        return [bytes(row).rstrip(b"\0") for row in rows]
