"""Two ranks (ring backend on localhost): concurrent requests through ClusterBackend decode in one batch,
each greedy reply equal to its solo run, the follower producing the same tokens, a cancel ending one row."""

import json

import pytest

from specchat.engine.config import GenerationConfig
from specchat.engine.engine import Engine

from .launch import run_ranks

REQUESTS = [
    dict(prompt=list(range(5, 25)), mode="draft", num_draft_tokens=2),
    dict(prompt=[9, 8, 7, 6, 5, 4, 3, 2], mode="baseline"),
    dict(prompt=[11, 12, 13, 11, 12, 13, 11, 12], mode="lookup", num_draft_tokens=2),
    dict(prompt=list(range(40, 52)), mode="draft", num_draft_tokens="auto"),
    dict(prompt=[30, 31, 32, 33], mode="draft", num_draft_tokens=2, max_tokens=400, cancel_after=3),
    dict(prompt=[60, 61, 62, 63, 64], mode="draft", num_draft_tokens=2, temperature=0.9),  # rank 0 picks the seed
]
CANCELLED, SAMPLED = 4, 5
MTP = [dict(r, mode="mtp") if r["mode"] != "baseline" else r for r in REQUESTS]  # MTP rows drafting with the head


@pytest.fixture(scope="module")
def setups(dense_target, dense_draft_partial, hybrid_target, hybrid_draft_partial, mtp_partial):
    """Dense and hybrid pairs with a draft, and a target with an MTP head; 24 tokens per request unless it says
    otherwise."""

    def requests(specs):
        return [dict({"max_tokens": 24}, **r) for r in specs]

    return [
        dict(target=str(dense_target), draft=str(dense_draft_partial), requests=requests(REQUESTS)),
        dict(target=str(hybrid_target), draft=str(hybrid_draft_partial), requests=requests(REQUESTS)),
        dict(target=str(mtp_partial), draft=None, requests=requests(MTP)),
    ]


@pytest.fixture(scope="module")
def ranks(setups, tmp_path_factory):
    """What rank 0's consumers got and what rank 1 produced, per setup, from one mlx.launch run."""
    folder = tmp_path_factory.mktemp("batch")
    (folder / "setups.json").write_text(json.dumps(setups))
    done = run_ranks(["-m", "tests.cluster.run_batch", str(folder / "setups.json"), str(folder)], timeout_s=400)
    written = [(folder / f"rank{r}.json").exists() for r in (0, 1)]
    assert done.returncode == 0 and all(written), done.stdout[-3000:]
    return [json.loads((folder / f"rank{r}.json").read_text()) for r in (0, 1)]


def solo(setup, request):
    fields = {k: v for k, v in request.items() if k not in ("prompt", "cancel_after")}
    engine = Engine.load(setup["target"], setup["draft"])
    return engine.generate(request["prompt"], GenerationConfig(**fields)).tokens


def test_concurrent_requests_decode_in_one_batch(setups, ranks):
    for result in ranks[0]:
        assert result["degraded"] is None
        rows = [r["rows_max"] for r in result["batch"]]
        assert max(rows) >= 2, rows
        assert all(1 <= n <= 4 for n in rows), rows  # max_batch 4: the fifth joined once a row left


def test_every_greedy_reply_equals_its_solo_run(setups, ranks):
    for setup, result in zip(setups, ranks[0]):
        for i, (request, reply) in enumerate(zip(setup["requests"], result["batch"])):
            if i in (CANCELLED, SAMPLED):
                continue
            assert reply["tokens"] == solo(setup, request), (setup["target"], request)
            assert len(reply["tokens"]) == 24 and reply["stop"] == "length"


def test_the_follower_produced_the_same_tokens(setups, ranks):
    for setup, result, rows in zip(setups, ranks[0], ranks[1]):
        leader = [[r["prompt"], reply["tokens"]] for r, reply in zip(setup["requests"], result["batch"])]
        leader.append([setup["requests"][0]["prompt"], result["alone"]["tokens"]])
        assert sorted(rows) == sorted(leader)


def test_a_cancel_ends_only_its_row(setups, ranks):
    for result in ranks[0]:
        cancelled = result["batch"][CANCELLED]
        assert cancelled["stop"] == "cancelled" and 3 <= len(cancelled["tokens"]) < 400
        others = [r for i, r in enumerate(result["batch"]) if i != CANCELLED]
        assert all(r["stop"] == "length" for r in others)


def test_a_lone_request_still_runs_as_before(setups, ranks):
    for setup, result in zip(setups, ranks[0]):
        assert result["alone"]["tokens"] == solo(setup, setup["requests"][0])
        assert result["alone"]["rows_max"] <= 1
