"""Auto K fed the costs of a fixed model instead of the loop's wall times.

Auto K decides from measured seconds; on a loaded machine those say anything, so a test that checks a
decision the real models' acceptance should lead to (fall back to plain bursts, stop a draft early) gives
the engine this controller: its decisions follow the acceptance and confidences the real models give, and
costs that no machine's load can distort.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specchat.engine.autok import AutoK


@dataclass
class CostedAutoK(AutoK):
    """Seconds per draft step, per verify pass (verify_base + verify_per_k * K) and per plain token; the
    defaults are the real Qwen pair's on this CPU (tests/engine/autok_sim.py's CODE pair)."""

    draft_cost: float = 0.16
    verify_base: float = 0.60
    verify_per_k: float = 0.015
    plain_cost: float = 0.552  # 0.92 of a one-token verify pass
    measured: list[str] = field(default_factory=list)  # what the loop reported, by kind ("round", "plain")

    def observe(self, k, accepted, draft_s, verify_s, catch_up=0, confidences=None, steps=None, verified=None):  # noqa: ANN001
        self.measured.append("round")
        draft = self.draft_cost * ((steps or k) + (catch_up if catch_up > 1 else 0))
        verify = self.verify_base + self.verify_per_k * (verified or k)
        super().observe(k, accepted, draft, verify, catch_up, confidences, steps, verified)

    def observe_costless(self, k: int, accepted: int, verify_s: float) -> None:
        self.measured.append("costless")
        super().observe_costless(k, accepted, self.verify_base + self.verify_per_k * k)

    def observe_plain(self, tokens: int, seconds: float) -> None:
        self.measured.append("plain")
        super().observe_plain(tokens, tokens * self.plain_cost)
