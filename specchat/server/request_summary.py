"""The API's totals, computed from the request log's records only: how many requests, how many failed or
hung up, the tokens generated, their mean speed and acceptance, and the last request. The status bar's count,
the dashboard's API line and the server log window all read records, so they cannot disagree.

A record exists only once its request has ended; what a request does while it runs (its rounds) reaches
the dashboard through the engine's events instead."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .request_log import CLIENT_GONE_STATUS, RequestRecord


@dataclass(frozen=True)
class RequestSummary:
    """Totals over records, oldest first; `plus` adds one more (the fields are sums, the means properties)."""

    requests: int = 0
    failed: int = 0  # refused, failed or cut short (RequestRecord.failed), hang-ups included
    hang_ups: int = 0  # the client hung up before the response ended (499)
    completion_tokens: int = 0  # tokens generated, over every record that generated
    timed_tokens: int = 0  # tokens of the records that generated and have a decode speed
    decode_seconds: float = 0.0  # their decode time: the sum of tokens / decode tok/s
    drafted_requests: int = 0  # records whose generation drafted (an acceptance)
    acceptance_sum: float = 0.0  # sum of their acceptances
    last: RequestRecord | None = None  # the newest record

    @classmethod
    def of(cls, records: Iterable[RequestRecord]) -> RequestSummary:
        """The summary of records given oldest first (the last one is `last`)."""
        summary = cls()
        for record in records:
            summary = summary.plus(record)
        return summary

    def plus(self, record: RequestRecord) -> RequestSummary:
        """This summary with one more (newer) record."""
        tokens = record.completion_tokens or 0
        speed = record.decode_tokens_per_s
        timed = tokens if tokens > 0 and speed else 0
        drafted = record.acceptance is not None
        return RequestSummary(
            requests=self.requests + 1,
            failed=self.failed + record.failed,
            hang_ups=self.hang_ups + (record.status == CLIENT_GONE_STATUS),
            completion_tokens=self.completion_tokens + tokens,
            timed_tokens=self.timed_tokens + timed,
            decode_seconds=self.decode_seconds + (timed / speed if timed and speed else 0.0),
            drafted_requests=self.drafted_requests + drafted,
            acceptance_sum=self.acceptance_sum + (record.acceptance or 0.0),
            last=record,
        )

    @property
    def mean_tokens_per_s(self) -> float | None:
        """Decode tok/s over the records that generated: their tokens over their decode time (None: none did)."""
        return self.timed_tokens / self.decode_seconds if self.decode_seconds else None

    @property
    def mean_acceptance(self) -> float | None:
        """The mean acceptance over the records that drafted, each counted once (None: none drafted)."""
        return self.acceptance_sum / self.drafted_requests if self.drafted_requests else None


def plural(count: int, noun: str) -> str:
    """'1 request', '12 requests'."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def count_text(summary: RequestSummary) -> str:
    """'12 requests', and ' · 1 failed' when any failed."""
    text = plural(summary.requests, "request")
    return text + (f" · {summary.failed:,} failed" if summary.failed else "")


def totals_text(summary: RequestSummary) -> str:
    """'12 requests · 1 failed · 3,456 tokens · 11.2 tok/s mean · 85% accepted' (figures it has none of left out)."""
    parts = [count_text(summary)]
    if summary.completion_tokens:
        parts.append(plural(summary.completion_tokens, "token"))
    if summary.mean_tokens_per_s is not None:
        parts.append(f"{summary.mean_tokens_per_s:.1f} tok/s mean")
    if summary.mean_acceptance is not None:
        parts.append(f"{summary.mean_acceptance:.0%} accepted")
    return " · ".join(parts)


def _figure_parts(record: RequestRecord) -> list[str]:
    """The status and what the generation did, each figure it has."""
    parts = [str(record.status)]
    if record.completion_tokens is not None:
        parts.append(plural(record.completion_tokens, "token"))
    if record.decode_tokens_per_s is not None:
        parts.append(f"{record.decode_tokens_per_s:.1f} tok/s")
    if record.drafter:
        parts.append(record.drafter)
    if record.acceptance is not None:
        parts.append(f"{record.acceptance:.0%} accepted")
    return parts


def figures_text(record: RequestRecord) -> str:
    """'200 · 64 tokens · 11.2 tok/s · draft · 85% accepted', then the error when there is one."""
    return " · ".join(_figure_parts(record) + ([record.error] if record.error else []))


def record_text(record: RequestRecord) -> str:
    """'POST /v1/chat/completions · 200 · 64 tokens · 11.2 tok/s · draft · 85% accepted · 127.0.0.1:5555', then
    the error (last: the longest part, the one an elided line cuts first)."""
    parts = [f"{record.method} {record.route}".strip(), *_figure_parts(record)]
    parts += [part for part in (record.client, record.error) if part]
    return " · ".join(parts)


def summary_tooltip(summary: RequestSummary) -> str:
    """Every total in words, one a line, and the last request."""
    if not summary.requests:
        return "No request has finished yet."
    lines = [f"{plural(summary.requests, 'request')} finished, {summary.failed:,} failed"]
    if summary.hang_ups:
        lines[0] += f" ({plural(summary.hang_ups, 'hang-up')}: the client left before the response ended)"
    lines.append(f"{plural(summary.completion_tokens, 'token')} generated")
    if summary.mean_tokens_per_s is not None:
        lines.append(
            f"{summary.mean_tokens_per_s:.1f} tok/s decode over the requests that generated (their tokens over their decode time)"
        )
    if summary.mean_acceptance is not None:
        lines.append(
            f"{summary.mean_acceptance:.0%} of drafts accepted, the mean over {plural(summary.drafted_requests, 'request')}"
            " that drafted"
        )
    if summary.last is not None:
        lines.append(f"Last: {record_text(summary.last)}")
    return "\n".join(lines)
