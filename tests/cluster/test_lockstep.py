"""Two ranks (ring backend on localhost) generate exactly what one process does, and agree when sampling."""

import json

import pytest

from specchat.engine.config import GenerationConfig
from specchat.engine.engine import Engine

from .launch import run_ranks

PROMPT = list(range(5, 25))
SPEC_CASES = [
    dict(mode="baseline"),
    dict(mode="draft", num_draft_tokens=3),
    dict(mode="draft", num_draft_tokens="auto"),
    dict(mode="lookup", num_draft_tokens=2),
    dict(mode="draft", num_draft_tokens=3, temperature=0.9),  # seed None: rank 0 picks it for all
    dict(mode="baseline", temperature=0.8, top_p=0.9, seed=11),
    dict(mode="draft", num_draft_tokens=2, drift=True),
]  # rank 0 alone dropped its caches
MTP_CASES = [
    dict(mode="mtp", num_draft_tokens=2),
    dict(mode="mtp", num_draft_tokens="auto"),
    dict(mode="mtp", num_draft_tokens=2, temperature=0.9),
    dict(mode="mtp", num_draft_tokens=2, temperature=0.9, cancel_after=3),
]  # rank 0 cancels mid-reply


@pytest.fixture(scope="module")
def setups(dense_target, dense_draft_partial, hybrid_target, hybrid_draft_partial, mtp_partial):
    """Dense and hybrid pairs with a draft, and a hybrid target with an MTP head; 24 tokens per case."""

    def cases(specs):
        return [dict(spec, max_tokens=24, prompt=PROMPT) for spec in specs]

    return [
        dict(target=str(dense_target), draft=str(dense_draft_partial), cases=cases(SPEC_CASES)),
        dict(target=str(hybrid_target), draft=str(hybrid_draft_partial), cases=cases(SPEC_CASES)),
        dict(target=str(mtp_partial), draft=None, cases=cases(MTP_CASES)),
    ]


@pytest.fixture(scope="module")
def ranks(setups, tmp_path_factory):
    """What each rank generated for every case, from one mlx.launch run."""
    folder = tmp_path_factory.mktemp("ranks")
    (folder / "setups.json").write_text(json.dumps(setups))
    done = run_ranks(["-m", "tests.cluster.run_ranks", str(folder / "setups.json"), str(folder)], timeout_s=240)
    assert done.returncode == 0, done.stdout[-3000:]
    return [json.loads((folder / f"rank{r}.json").read_text()) for r in (0, 1)]


def all_cases(setups):
    return [(setup, case) for setup in setups for case in setup["cases"]]


def test_greedy_output_is_single_process_plain_decoding(setups, ranks):
    greedy = 0
    for index, (setup, case) in enumerate(all_cases(setups)):
        if case.get("temperature", 0) > 0:
            continue
        plain = Engine.load(setup["target"]).generate(PROMPT, GenerationConfig(max_tokens=24)).tokens
        assert len(plain) == 24
        assert ranks[0]["tokens"][index] == plain, (setup["target"], case)
        assert ranks[1]["tokens"][index] == plain, (setup["target"], case)
        greedy += 1
    assert greedy == 12


def test_ranks_take_the_same_tokens_when_sampling(setups, ranks):
    sampled = [i for i, (_, case) in enumerate(all_cases(setups)) if case.get("temperature", 0) > 0]
    assert len(sampled) == 6
    for index in sampled[:-1]:
        assert len(ranks[0]["tokens"][index]) == 24
        assert ranks[0]["tokens"][index] == ranks[1]["tokens"][index]
    # sampling really happened: the dense pair's sampled replies differ from its greedy one
    assert ranks[0]["tokens"][4] != ranks[0]["tokens"][0]  # (index 4: the dense pair's first sampled case)


def test_the_ranks_hold_equal_shares(ranks):
    memory = ranks[0]["memory"]
    assert [m["rank"] for m in memory] == [0, 1]
    assert ranks[0]["hosts"] == ranks[1]["hosts"]
    active = [m["active_memory_bytes"] for m in memory]
    assert all(a > 0 for a in active) and abs(active[0] - active[1]) < 0.2 * max(active)


def test_rank_0s_cancel_stops_every_rank_at_the_same_token(setups, ranks):
    index = len(all_cases(setups)) - 1
    assert all_cases(setups)[index][1]["cancel_after"] == 3
    stopped = ranks[0]["tokens"][index]
    assert 3 <= len(stopped) < 24
    assert ranks[1]["tokens"][index] == stopped
