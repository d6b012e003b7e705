"""Which speculative modes the installed mlx-lm / mlx-optiq allow for a loaded model (see specchat.upstream).

Only the hooks a model needs are checked: Gated DeltaNet and ArraysCache for models with
linear-attention layers, RotatingKVCache when a model uses one, mlx-optiq's with an MTP head.
A hook that does not fit turns the modes that need it off; plain decoding never needs one.
"""

from __future__ import annotations

from collections.abc import Mapping

from specchat.upstream import mlx_lm, mlx_optiq
from specchat.upstream.checks import SelfCheck

from .drafters import Drafter, DraftModelDrafter
from .modes import SPECULATIVE_MODES
from .runner import ModelRunner

PLAIN_STILL_WORKS = "plain decoding still works"


def _off(check: SelfCheck, what: str) -> str | None:
    """None when every hook fits, else one line saying what is off and why."""
    return None if check.ok else f"{what} is off: {check.reason}; {PLAIN_STILL_WORKS}"


def hook_problems(target: ModelRunner, drafters: Mapping[str, Drafter]) -> dict[str, str]:
    """Per speculative mode, why an upstream hook rules it out; modes whose hooks fit are absent."""
    problems: dict[str, str] = {}
    target_problem = _off(mlx_lm.model_check(target.model, target.caches), "speculation for this model")
    if target_problem:
        problems.update(dict.fromkeys(SPECULATIVE_MODES, target_problem))
    draft = drafters.get("draft")
    if isinstance(draft, DraftModelDrafter) and "draft" not in problems:
        runner = draft.runner
        draft_problem = _off(
            mlx_lm.model_check(runner.model, runner.caches), f"speculation with the draft model {runner.name}"
        )
        if draft_problem:
            problems["draft"] = draft_problem
    if "mtp" in drafters and "mtp" not in problems:
        mtp_problem = _off(mlx_optiq.self_check(target.model), "MTP drafting")
        if mtp_problem:
            problems["mtp"] = mtp_problem
    return problems
