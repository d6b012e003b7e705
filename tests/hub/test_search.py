"""Search: catalog merged with the hub's MLX text-generation models; offline never hangs."""

from specchat.hub.catalog import load_catalog
from specchat.hub.config import HubConfig
from specchat.hub.search import search_models
from tests.hub.conftest import point_hub_at
from tests.hub.hub_server import FakeRepo, HubServer

CATALOG_8B = "mlx-community/Qwen3-8B-4bit"


def test_online_search_merges_hub_numbers_into_the_catalog(hub_env, monkeypatch):
    repos = [
        FakeRepo(CATALOG_8B, {"config.json": b"{}"}, downloads=1234),
        FakeRepo("someone/Qwen3-8B-DWQ-mlx", {"config.json": b"{}"}, downloads=7),
    ]
    with HubServer(repos) as server:
        point_hub_at(monkeypatch, server.url)
        result = search_models("qwen3-8b", load_catalog(), HubConfig.from_env(deadline_s=5))
        query = server.queries[-1]
    assert result.state == "online"
    by_id = {h.repo_id: h for h in result.hits}
    assert by_id[CATALOG_8B].curated and by_id[CATALOG_8B].downloads == 1234
    assert by_id[CATALOG_8B].on_hub
    assert not by_id["someone/Qwen3-8B-DWQ-mlx"].curated
    assert by_id["someone/Qwen3-8B-DWQ-mlx"].downloads == 7
    assert result.hits[0].repo_id == CATALOG_8B  # curated first
    assert query["filter"] == ["mlx"] and query["pipeline_tag"] == ["text-generation"]
    assert query["search"] == ["qwen3-8b"]


def test_offline_search_shows_the_catalog_and_says_offline(hub_env):
    catalog = load_catalog()
    result = search_models("qwen3.5", catalog, HubConfig.from_env(deadline_s=5))
    assert result.state == "offline" and "offline" in result.message
    # the refused connection ended it, not the deadline: no retry loop outlasted 5 s
    assert "cannot reach" in result.message and "did not answer" not in result.message
    expected = [m.repo_id for m in catalog.models if "qwen3.5" in m.repo_id.lower()]
    assert [h.repo_id for h in result.hits] == expected and expected
    assert all(h.downloads is None and not h.on_hub for h in result.hits)


def test_a_hub_that_never_answers_is_given_up_on_at_the_deadline(hub_env, monkeypatch):
    with HubServer([]) as server:
        server.faults.hang = True
        point_hub_at(monkeypatch, server.url)
        result = search_models("", load_catalog(), HubConfig.from_env(deadline_s=0.5))
        asked = list(server.requests)
    assert result.state == "offline" and "0.5 s" in result.message
    assert "did not answer" in result.message and asked  # the hub was asked and never answered: the deadline ended it
    assert len(result.hits) == len(load_catalog().models)
