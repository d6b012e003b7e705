"""The knobs of Auto K, the early stop, the plain probes and the batch's K, in one place.

`SpeculationPolicy` holds every tuned constant those controllers decide by; each field's metadata["doc"]
says what it means and its unit. The values are today's defaults, several fitted on the real Qwen pair
on a Linux CPU (a draft step about a third of a verify pass, verify growing with K); a machine whose
costs differ much (a Mac's GPU: drafting cheap, verify nearly flat in K) may want others. Every
controller takes a policy (default DEFAULT_POLICY); `dataclasses.replace(DEFAULT_POLICY, ...)` makes one
that differs in a few knobs.

What is measured online (draft-step and verify costs, acceptance) is not here: these are the priors,
margins and memories the measurements are weighed by.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SpeculationPolicy:
    """Every tuned constant of Auto K (autok.py), the early stop (draft_stop.py), the plain probes
    (plain_probe.py) and the batch's K (batch/batch_k.py). Units are in each field's metadata["doc"]."""

    # Auto K (autok.py)
    start_k: int = field(
        default=2,
        metadata={
            "doc": "K of a new controller's first round (drafts): one speculative round tells the draft-step "
            "and verify costs; also the deepest a new reply may draft before it earns longer drafts"
        },
    )
    max_probe_gap: int = field(
        default=128,
        metadata={
            "doc": "plain tokens between K = 1 probes from plain decoding at most (tokens): a probe costs the "
            "drafter's catch-up"
        },
    )
    plain_margin: float = field(
        default=1.05,
        metadata={
            "doc": "speculation predicted less than this much faster than the plain estimate measures plain "
            "at once (ratio of rates)"
        },
    )
    line_weight: float = field(
        default=2.0,
        metadata={
            "doc": "a K's verify cost leans on the line through all Ks as much as on this many of its own "
            "rounds (rounds)"
        },
    )
    resume_margin: float = field(
        default=1.05,
        metadata={
            "doc": "once decoding plainly, speculation resumes only where predicted this much faster (ratio of rates)"
        },
    )
    stay_margin: float = field(
        default=0.02,
        metadata={"doc": "speculation goes on while within this fraction of plain decoding's rate (fraction)"},
    )
    near_tie: float = field(
        default=0.01,
        metadata={
            "doc": "Ks within this fraction of the best rate are tied: the least measured runs, so no "
            "estimate goes stale (fraction)"
        },
    )
    max_rounds_weight: int = field(
        default=16,
        metadata={"doc": "a K's own rounds count up to this many in its verify cost and in the line (rounds)"},
    )
    reply_evidence: float = field(
        default=6.0,
        metadata={"doc": "acceptance evidence a new reply starts from (drafts checked)"},
    )
    prior_alpha: float = field(
        default=0.6,
        metadata={
            "doc": "a fresh controller's per-token acceptance, weighing reply_evidence drafts (probability): "
            "a story's easy first line must not talk it into long drafts before the first misses (on the real "
            "pair's recorded replies a lighter 2:1 prior overshot to K=5-6, 0.96 of K=1 over a 64-token story)"
        },
    )
    measured_rounds: int = field(
        default=4,
        metadata={"doc": "early-stopping rounds before their measured rate replaces the i.i.d. model's (rounds)"},
    )
    round_decay: float = field(
        default=0.97,
        metadata={"doc": "decay of the measured rate's sums (factor per round): about the last thirty rounds"},
    )
    normal_catch_up: int = field(
        default=2,
        metadata={
            "doc": "tokens a drafter takes in at the start of a round after a full accept (tokens); a round "
            "that caught up on more says nothing about a draft step's cost"
        },
    )
    # Auto's choice of drafter (auto_drafter.py)
    lookup_tail_evidence: float = field(
        default=2.0,
        metadata={
            "doc": "a narrow record of lookup's copies (a tail length, a later position) starts from the broader one's "
            "rate (pooled first tokens, the position before) as if this many were checked (drafts)"
        },
    )
    lookup_short_tail: int = field(
        default=2,
        metadata={
            "doc": "copies after a matched tail of at most this many tokens learn how far they run apart from longer "
            "tails' copies (tokens)"
        },
    )
    lookup_min_match: int = field(
        default=2,
        metadata={"doc": "a prompt-lookup match shorter than this is a guess, not a copy (tokens)"},
    )
    copy_on_min_tail: int = field(
        default=2,
        metadata={
            "doc": "a model draft is copied on from the conversation only where at least this many of its last tokens "
            "(the draft's end among them) occurred before (tokens): a one-token tail is a guess"
        },
    )
    source_decay: float = field(
        default=0.95,
        metadata={
            "doc": "decay of each drafter's accepted and checked counts (factor per round): a reply's character "
            "changes as it goes"
        },
    )
    # the early stop's confidence model (draft_stop.py)
    confidence_edges: tuple[float, ...] = field(
        default=(0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.95, 0.98),
        metadata={"doc": "upper edges of the drafter's top-1 probability bins, all but the last (probabilities)"},
    )
    next_edges: tuple[float, ...] = field(
        default=(0.5, 0.9),
        metadata={
            "doc": "coarse confidence bins' upper edges, for the chance the token after one is accepted (probabilities)"
        },
    )
    prior_weight: float = field(
        default=10.0,
        metadata={
            "doc": "a bin's estimate starts from the calibrated draft probability, weighing this many tokens (tokens)"
        },
    )
    state_prior_weight: float = field(
        default=16.0,
        metadata={"doc": "a state's acceptance starts from the overall acceptance, weighing this many tokens (tokens)"},
    )
    after_confidence: float = field(
        default=0.25,
        metadata={
            "doc": "until measured, how much likelier the token after a sure one is accepted than after a "
            "guess (fraction of the state's acceptance)"
        },
    )
    greedy_calibration: tuple[float, float] = field(
        default=(0.2, 1.0),
        metadata={
            "doc": "the logistic calibration's start, logit(acceptance) = a + b * logit(confidence) "
            "(a in logits, b unitless): lifted half as much as the real pair's fit (0.43, 1.08)"
        },
    )
    calibration_rate: float = field(
        default=0.05,
        metadata={"doc": "the calibration fit's step (per verified token)"},
    )
    calibration_slope_damping: float = field(
        default=4.0,
        metadata={"doc": "how much slower the calibration's slope moves than its offset (ratio)"},
    )
    confidence_forget: float = field(
        default=0.995,
        metadata={
            "doc": "decay of the confidence model's counts (factor per observed token): its last few hundred drafts"
        },
    )
    # measuring plain decoding while speculating (plain_probe.py)
    probe_margin: float = field(
        default=1.2,
        metadata={"doc": "speculation predicted this much faster than plain decoding spends no probe (ratio of rates)"},
    )
    probe_after: int = field(
        default=4,
        metadata={"doc": "speculative rounds before a probe (rounds): they give the rate plain is compared with"},
    )
    probe_burst: int = field(
        default=4,
        metadata={"doc": "tokens a probe decodes plainly (tokens); also the first measurement of plain decoding"},
    )
    reprobe_shift: float = field(
        default=0.15,
        metadata={
            "doc": "verify passes this much dearer or cheaper than when plain was measured measure it again (fraction)"
        },
    )
    max_probe_share: float = field(
        default=1 / 16,
        metadata={"doc": "of the tokens decoded, at most this share goes to probes after the first (fraction)"},
    )
    # the batch's K (batch/batch_k.py)
    batch_k_max: int = field(
        default=8,
        metadata={"doc": "the deepest a batched round drafts (drafts), whatever its rows allow alone"},
    )
    batch_decay: float = field(
        default=0.9,
        metadata={"doc": "decay of a batch size's round times (factor per round at that K): about the last ten"},
    )
    prior_draft_share: float = field(
        default=0.3,
        metadata={
            "doc": "before two Ks are measured at a batch size, each draft adds this share of a K = 0 "
            "round's time; also Auto's draft-step cost, as a share of a verify pass, until Auto K measures it "
            "(fraction)"
        },
    )
    explore_every: int = field(
        default=8,
        metadata={"doc": "rounds between tries of another K at a batch size (rounds)"},
    )
    max_explore_gap: int = field(
        default=64,
        metadata={"doc": "the explore gap doubles after each try that changed nothing, up to this (rounds)"},
    )
    explore_reach: int = field(
        default=2,
        metadata={"doc": "a try goes at most this far past the best K (drafts)"},
    )
    row_prior: tuple[float, float] = field(
        default=(1.0, 2.0),
        metadata={"doc": "a row's acceptance evidence before any draft (accepted drafts, checked drafts)"},
    )
    row_decay: float = field(
        default=0.97,
        metadata={"doc": "decay of a row's acceptance counts (factor per checked draft): about the last thirty"},
    )
    stop_reach: int = field(
        default=2,
        metadata={
            "doc": "with the early stop measured, a batched round may draft this much deeper than the best K (drafts)"
        },
    )
    smaller_size_margin: float = field(
        default=0.15,
        metadata={
            "doc": "a batch size not yet measured starts plain (and skips the draft model's prefill) only where the "
            "largest smaller measured size decodes plainly this much faster than drafting (fraction)"
        },
    )
    pooled_weight: float = field(
        default=6.0,
        metadata={"doc": "a new row starts from the pooled acceptance as if it had checked this many drafts (drafts)"},
    )


DEFAULT_POLICY = SpeculationPolicy()
