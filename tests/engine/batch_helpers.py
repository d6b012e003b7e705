"""Run requests through a BatchDecoder and collect each one's events."""

from __future__ import annotations

import math
import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from specchat.engine import Engine, GenerationConfig
from specchat.engine.batch.decoder import BatchDecoder, BatchRequest
from specchat.engine.events import Event, Failed, Finished, RoundResult


@dataclass
class Collected:
    """One request's events, its cancel event and its end."""

    cancel: threading.Event = field(default_factory=threading.Event)
    events: list[Event] = field(default_factory=list)

    @property
    def end(self) -> Finished | Failed | None:
        ends = [e for e in self.events if isinstance(e, (Finished, Failed))]
        assert len(ends) <= 1, f"more than one end: {ends}"
        return ends[0] if ends else None

    @property
    def tokens(self) -> list[int]:
        end = self.end
        assert isinstance(end, Finished), end
        return list(end.tokens)


def submit(decoder: BatchDecoder, prompt: list[int], cfg: GenerationConfig) -> Collected:
    """Add one request to the decoder; its events go to the returned Collected."""
    got = Collected()
    decoder.add(BatchRequest(prompt, cfg, got.cancel, got.events.append))
    return got


def run_all(
    decoder: BatchDecoder,
    joins: dict[int, list[tuple[list[int], GenerationConfig]]] | None = None,
    limit: int = 100_000,
) -> dict[int, list[Collected]]:
    """Step until no request is active; at step n, joins[n]'s requests are added. Returns them by step."""
    joins = joins or {}
    added: dict[int, list[Collected]] = {}
    step = 0
    while decoder.active or any(n >= step for n in joins):
        for prompt, cfg in joins.get(step, []):
            added.setdefault(step, []).append(submit(decoder, prompt, cfg))
        decoder.step()
        step += 1
        assert step < limit, "the batch never emptied"
    return added


def lead_then_joiner(
    engine: Engine,
    prompts: tuple[list[int], list[int]],
    cfg: GenerationConfig,
    lead_steps: int,
    joining: AbstractContextManager[object] | None = None,
) -> tuple[Collected, Collected]:
    """The first prompt alone (the lead, on the engine's loop) for lead_steps steps, then the second joins and
    both run to their ends (inside `joining`, when given); their runs."""
    engine.reset()
    decoder = BatchDecoder(engine, max_batch=4)
    lead = submit(decoder, prompts[0], cfg)
    for _ in range(lead_steps):
        decoder.step()
    assert decoder.lead is not None and any(isinstance(e, RoundResult) for e in lead.events)
    with joining or nullcontext():
        other = submit(decoder, prompts[1], cfg)
        run_all(decoder)
    return lead, other


def verdicts(events: list[Event]) -> list[tuple[int, int]]:
    """Each round's (drafted, accepted)."""
    return [(e.drafted, e.accepted) for e in events if isinstance(e, RoundResult)]


def solo_tokens(engine: Engine, prompt: list[int], cfg: GenerationConfig) -> list[int]:
    """The request's tokens when it runs alone."""
    return engine.generate(prompt, cfg).tokens


def assert_samples_follow(firsts: list[int], p: np.ndarray, q: np.ndarray) -> None:
    """The tokens were drawn from p, not from the drafter's q: E[log p(X)] equals -H(p) when X ~ p, within
    4 standard errors, and q's is more than 8 away (else the test could not tell them apart)."""
    log_p = np.log(np.maximum(p, 1e-30))
    mean_p, var_p = (p * log_p).sum(), (p * log_p**2).sum() - (p * log_p).sum() ** 2
    se = math.sqrt(var_p / len(firsts))
    assert abs(np.mean([log_p[t] for t in firsts]) - mean_p) < 4 * se
    assert abs((q * log_p).sum() - mean_p) > 8 * se, "the fixture cannot tell p from q: test would be vacuous"
