"""Read parts of a remote .safetensors file with HTTP range requests: where its tensors are, then single tensors.

A safetensors file is an 8-byte little-endian header length, a JSON header ({name: {dtype,
shape, data_offsets}}, offsets relative to the end of the header), then the tensors' bytes. The tensor
index is huggingface_hub's (`HfApi.parse_safetensors_file_metadata`, through specchat.upstream.hf_hub);
it does not give the header's length, so the file's first 8 bytes are read with one range request of
ours first (a 206 for exactly those bytes, which also proves the server serves ranges before the
library asks for its 100 kB). Each tensor is fetched into a partial file of its own; a dropped
connection resumes from the bytes already written, in this run (a few retries) and in the next one
(the partial file stays).

Integrity: every tensor is size-checked against the header's byte length. The hub gives a hash
(the LFS sha256) only for whole files, and never for a byte range, so no hash of a range can be
checked against the hub; the sha256 of each tensor's bytes is recorded locally instead.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from specchat.upstream.hf_hub import RangeRefused, RemoteTensor, range_stream

from .errors import CorruptFileError, DownloadCancelled, HubError

MAX_HEADER_BYTES = 100 * 1024 * 1024
RETRIES = 5  # resumes of one tensor after a dropped connection, in one run
TRANSIENT = (httpx.TransportError,)  # dropped, reset, timed out, refused


@dataclass(frozen=True)
class TensorSpan:
    """One tensor of a remote file: its dtype, shape and absolute byte range [start, end)."""

    shard: str
    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's data."""
        return self.end - self.start


@dataclass(frozen=True)
class RangeSource:
    """Where range requests go: a resolve URL with headers and a read timeout."""

    url: str
    headers: dict[str, str]
    timeout_s: float


def read_range(source: RangeSource, start: int, end: int) -> bytes:
    """Bytes [start, end) of the file, in one request; HubError when the server does not serve ranges."""
    parts: list[bytes] = []
    try:
        with range_stream(source.url, start, end, source.headers, source.timeout_s) as chunks:
            parts.extend(chunks)
    except RangeRefused as exc:
        raise HubError(f"{source.url} does not serve byte ranges ({exc}); nothing more was fetched") from exc
    data = b"".join(parts)
    if len(data) != end - start:
        raise CorruptFileError(f"{source.url}: asked for {end - start} bytes at {start}, got {len(data)}")
    return data


def header_length(source: RangeSource, shard: str) -> int:
    """The length of a remote safetensors file's JSON header: its first 8 bytes, in one range request."""
    (length,) = struct.unpack("<Q", read_range(source, 0, 8))
    if length > MAX_HEADER_BYTES:
        raise CorruptFileError(f"{shard}: a safetensors header of {length} bytes is not plausible")
    return length


def tensor_spans(shard: str, length: int, tensors: list[RemoteTensor]) -> list[TensorSpan]:
    """The tensors of a file's index (huggingface_hub's parse of its header) with absolute byte ranges."""
    base = 8 + length
    spans = []
    for tensor in tensors:
        begin, stop = tensor.data_offsets
        if not 0 <= begin <= stop:
            raise CorruptFileError(f"{shard}: {tensor.name} has data_offsets {tensor.data_offsets}")
        spans.append(TensorSpan(shard, tensor.name, tensor.dtype, tensor.shape, base + begin, base + stop))
    return spans


def fetch_span(
    source: RangeSource,
    span: TensorSpan,
    partial: Path,
    on_bytes: Callable[[int], None],
    cancel: threading.Event | None,
) -> str:
    """Fetch one tensor's bytes into `partial`, resuming what is there; returns the bytes' sha256."""
    if partial.exists() and partial.stat().st_size > span.nbytes:
        partial.unlink()
    for attempt in range(RETRIES + 1):
        have = partial.stat().st_size if partial.exists() else 0
        if have == span.nbytes:
            break
        try:
            _append(source, span.start + have, span.end, partial, on_bytes, cancel)
        except TRANSIENT:
            if attempt == RETRIES:
                raise
    size = partial.stat().st_size if partial.exists() else 0
    if size != span.nbytes:
        raise CorruptFileError(f"{span.name}: {size} bytes arrived, its header says {span.nbytes}")
    return file_sha256(partial)


def _append(
    source: RangeSource,
    start: int,
    end: int,
    partial: Path,
    on_bytes: Callable[[int], None],
    cancel: threading.Event | None,
) -> None:
    """Append bytes [start, end) to the partial file as they arrive (flushed chunk by chunk)."""
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        with (
            range_stream(source.url, start, end, source.headers, source.timeout_s) as chunks,
            partial.open("ab") as out,
        ):
            for chunk in chunks:
                if cancel is not None and cancel.is_set():
                    raise DownloadCancelled("cancelled; the bytes fetched so far are kept, run it again to resume")
                out.write(chunk)
                out.flush()
                on_bytes(len(chunk))
    except RangeRefused as exc:
        raise HubError(f"{source.url} does not serve byte ranges ({exc}); nothing more was fetched") from exc


def file_sha256(path: Path) -> str:
    """sha256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(4 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def write_safetensors(path: Path, spans: list[TensorSpan], parts: list[Path], names: list[str]) -> None:
    """A safetensors file of the fetched tensors (their raw bytes under the given names)."""
    header: dict[str, object] = {}
    offset = 0
    for span, name in zip(spans, names):
        header[name] = {"dtype": span.dtype, "shape": list(span.shape), "data_offsets": [offset, offset + span.nbytes]}
        offset += span.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as out:
        out.write(struct.pack("<Q", len(raw)) + raw)
        for part in parts:
            out.write(part.read_bytes())
