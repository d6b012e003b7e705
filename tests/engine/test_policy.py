"""SpeculationPolicy: every knob of Auto K, the early stop, the plain probes and the batch's K in one frozen
dataclass (policy.py), each documented, and read by the controllers from the policy they are given."""

import ast
import random
import re
from dataclasses import FrozenInstanceError, fields, replace
from pathlib import Path

import pytest

from specchat.engine import auto_drafter, autok, draft_stop, plain_probe
from specchat.engine.autok import AutoK
from specchat.engine.batch import batch_k
from specchat.engine.batch.batch_k import BatchK
from specchat.engine.draft_stop import ConfidenceModel
from specchat.engine.policy import DEFAULT_POLICY, SpeculationPolicy

from .autok_sim import Pair, run

# today's values: moving the knobs into the policy changed none of them
TODAY = {
    "start_k": 2,
    "max_probe_gap": 128,
    "plain_margin": 1.05,
    "line_weight": 2.0,
    "resume_margin": 1.05,
    "stay_margin": 0.02,
    "near_tie": 0.01,
    "max_rounds_weight": 16,
    "reply_evidence": 6.0,
    "prior_alpha": 0.6,
    "measured_rounds": 4,
    "round_decay": 0.97,
    "normal_catch_up": 2,
    "lookup_tail_evidence": 2.0,
    "lookup_short_tail": 2,
    "lookup_min_match": 2,
    "copy_on_min_tail": 2,
    "source_decay": 0.95,
    "confidence_edges": (0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.95, 0.98),
    "next_edges": (0.5, 0.9),
    "prior_weight": 10.0,
    "state_prior_weight": 16.0,
    "after_confidence": 0.25,
    "greedy_calibration": (0.2, 1.0),
    "calibration_rate": 0.05,
    "calibration_slope_damping": 4.0,
    "confidence_forget": 0.995,
    "probe_margin": 1.2,
    "probe_after": 4,
    "probe_burst": 4,
    "reprobe_shift": 0.15,
    "max_probe_share": 1 / 16,
    "batch_k_max": 8,
    "batch_decay": 0.9,
    "prior_draft_share": 0.3,
    "explore_every": 8,
    "max_explore_gap": 64,
    "explore_reach": 2,
    "row_prior": (1.0, 2.0),
    "row_decay": 0.97,
    "stop_reach": 2,
    "smaller_size_margin": 0.15,
    "pooled_weight": 6.0,
}

# a draft step a third of a verify pass, verify growing with K (this CPU); a tenth, verify nearly flat (a Mac)
CPU_LIKE = Pair(draft=0.16, v0=0.48, vs=0.04, plain_factor=0.9)
MAC_LIKE = Pair(draft=0.005, v0=0.05, vs=0.0005, plain_factor=0.9)


def test_every_field_says_what_it_means_and_its_unit():
    for f in fields(SpeculationPolicy):
        doc = f.metadata.get("doc", "")
        assert len(doc) > 20, f.name
        assert re.search(r"\([^)]+\)", doc), f"{f.name}: no unit in parentheses"


def test_the_defaults_are_todays_values():
    assert {f.name: getattr(DEFAULT_POLICY, f.name) for f in fields(SpeculationPolicy)} == TODAY
    assert DEFAULT_POLICY == SpeculationPolicy()


def test_the_policy_is_frozen_and_replaceable():
    with pytest.raises(FrozenInstanceError):
        DEFAULT_POLICY.start_k = 3  # type: ignore[misc]
    other = replace(DEFAULT_POLICY, start_k=3, probe_burst=6)
    assert (other.start_k, other.probe_burst) == (3, 6) and other.max_probe_gap == DEFAULT_POLICY.max_probe_gap
    assert DEFAULT_POLICY.start_k == 2 and other != DEFAULT_POLICY
    assert len({DEFAULT_POLICY, other}) == 2  # hashable: a default value, a key


@pytest.mark.parametrize("module", [autok, draft_stop, plain_probe, batch_k, auto_drafter])
def test_no_knob_is_left_as_a_module_constant(module):
    """Only what is no policy stays at module level: the outcomes a draft follows, the tenths reported."""
    tree = ast.parse(Path(module.__file__).read_text())
    names = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id.isupper()
    }
    assert names <= {"STATES", "TENTHS", "LOOKUP", "CONTINUED"}  # the last two: names of records


def mean_k(pair: Pair, acceptance: float, seed: int, policy: SpeculationPolicy = DEFAULT_POLICY) -> float:
    """The mean K of the drafting rounds Auto K ran over a 512-token reply drafted right with this chance."""
    draws = random.Random(seed)
    auto = AutoK(k_max=16, policy=policy)
    run([draws.random() < acceptance for _ in range(512)], pair, seed, auto=auto)
    rounds = auto.verify_rounds
    return sum(k * n for k, n in rounds.items()) / sum(rounds.values())


@pytest.mark.parametrize("acceptance", [0.8, 0.9])
def test_cheap_drafts_and_a_flat_verify_draw_deeper_drafts_at_the_same_acceptance(acceptance):
    cpu = sum(mean_k(CPU_LIKE, acceptance, s) for s in range(3)) / 3
    mac = sum(mean_k(MAC_LIKE, acceptance, s) for s in range(3)) / 3
    assert mac > cpu + 1.5  # about 1.6 against 4.6 at 0.8, 3.5 against 8 at 0.9


def test_a_knob_given_through_the_constructor_changes_what_auto_k_does():
    # where speculation loses, plain decoding probes K = 1 at gaps doubling up to max_probe_gap: a lower cap
    # probes more often
    def probe_rounds(policy: SpeculationPolicy, seed: int) -> int:
        draws = random.Random(seed)
        auto = AutoK(k_max=16, policy=policy)
        run([draws.random() < 0.25 for _ in range(1024)], CPU_LIKE, seed, auto=auto)
        return sum(auto.verify_rounds.values())

    eager = replace(DEFAULT_POLICY, max_probe_gap=16)
    for seed in range(2):
        assert probe_rounds(eager, seed) > probe_rounds(DEFAULT_POLICY, seed)


def test_every_part_of_a_controller_reads_the_policy_it_was_given():
    policy = replace(
        DEFAULT_POLICY, start_k=1, prior_alpha=0.9, probe_burst=7, greedy_calibration=(0.0, 1.0), probe_margin=2.0
    )
    auto, default = AutoK(k_max=8, policy=policy), AutoK(k_max=8)
    assert (auto.choose(), default.choose()) == (1, 2)
    assert auto.alpha == pytest.approx(0.9) and default.alpha == pytest.approx(0.6)
    assert (auto.burst_length(), default.burst_length()) == (7, 4)  # plain unmeasured: a probe's burst
    assert auto.confidence.policy is policy and auto.probe.policy is policy
    assert ConfidenceModel(policy=policy).calibrated(0.7) == pytest.approx(0.7)  # no lift
    assert ConfidenceModel().calibrated(0.7) > 0.7
    auto.new_reply()
    assert auto.reach == 1


def test_the_batch_reads_its_k_max_and_priors_from_its_policy():
    assert BatchK().k_max == DEFAULT_POLICY.batch_k_max == 8  # the decoder's BatchK()
    assert BatchK(k_max=6).k_max == 6
    shallow = BatchK(policy=replace(DEFAULT_POLICY, batch_k_max=4))
    chosen = []
    for _ in range(60):  # drafts nearly free and always accepted: the deepest K pays
        k, _stop = shallow.plan([0.99, 0.99], 16, [0.99, 0.99])
        shallow.observe(2, k, 1.0 + 0.01 * k, verify_s=1.0 + 0.005 * k)
        chosen.append(k)
    assert max(chosen) == 4
    hopeful = BatchK(policy=replace(DEFAULT_POLICY, row_prior=(3.0, 4.0)))
    assert hopeful.new_row().rate == pytest.approx(0.75) and BatchK().new_row().rate == pytest.approx(0.5)
