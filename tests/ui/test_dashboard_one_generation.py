"""The dashboard follows one generation at a time: a chat reply sharing a batch with an API request is the
one on screen, and every tile and chart reads that reply's rounds only."""

from dataclasses import asdict

from specchat.engine import GenerationConfig
from specchat.engine.events import Finished, RoundResult, TextChunk
from specchat.engine.stats import StatsRecorder
from specchat.ui.chat.footer import footer_text
from specchat.ui.dashboard.followed import Follower, Step

from .test_dashboard import make_dashboard

CHAT_ID, API_ID, LATER_API_ID = 7, 8, 9


def chat_rounds() -> list[RoundResult]:
    """An Auto K reply: 18 rounds, every third a plain burst (K=0), the others K=4 with 2 or 3 accepted."""
    rounds = []
    for i in range(18):
        if i % 3 == 0:
            rounds.append(RoundResult(i, 0, 0, 0, 6, 0.0, 0.3))
        else:
            accepted = 2 + i % 2
            rounds.append(RoundResult(i, 4, 4, accepted, accepted + 1, 0.05, 0.1))
    return rounds


def api_rounds(start: int = 0, count: int = 13) -> list[RoundResult]:
    """Another request's rounds: faster and with far better acceptance, so any mixing shows."""
    return [RoundResult(i, 4, 4, 4, 5, 0.01, 0.02) for i in range(start, start + count)]


def stats_of(rounds: list[RoundResult], generated: int):
    recorder = StatsRecorder(GenerationConfig("draft", "auto", max_tokens=generated), 10, 0)
    for r in rounds:
        recorder.round_done(r)
    return recorder.finish(generated, "length")


def test_the_first_generation_is_followed_and_a_chat_reply_takes_over():
    follower = Follower()
    assert follower.take("api", API_ID, False) is Step.START
    assert follower.take("api", LATER_API_ID, False) is Step.SKIP  # one at a time
    assert follower.take("chat", CHAT_ID, False) is Step.START  # the chat's reply comes first
    assert follower.take("api", API_ID, False) is Step.SKIP  # passed over to its end
    assert follower.take("api", API_ID, True) is Step.SKIP
    assert follower.take("chat", CHAT_ID, True) is Step.SAME
    assert follower.take("api", LATER_API_ID, False) is Step.SKIP  # first seen halfway: never followed
    assert follower.take("api", LATER_API_ID, True) is Step.SKIP
    assert follower.take("api", 10, False) is Step.START  # a new one, from its first event


def test_interleaved_streams_show_only_the_chat_reply(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    chat, api = chat_rounds(), api_rounds()
    dash.on_api_event(API_ID, TextChunk("a", (1,), (False,)))  # the API request starts first
    dash.on_api_event(API_ID, api[0])
    for i, r in enumerate(chat):  # then the chat reply joins its batch: events interleave
        dash.on_request_event(CHAT_ID, r)
        if i + 1 < len(api):
            dash.on_api_event(API_ID, api[i + 1])
        if i == 10:  # the API request ends halfway through the reply
            dash.on_api_event(API_ID, Finished((1,) * 60, "x", stats_of(api, 60)))
        if i == 12:  # another request starts during the reply, and goes on after it
            dash.on_api_event(LATER_API_ID, TextChunk("b", (2,), (False,)))
        if i == 6:
            dash.redraw()
            assert dash.generating and dash.status.text() == "Generating…"
            assert dash.throughput.round_curve.getData()[0].tolist() == [r.index for r in chat[: i + 1]]
    stats = stats_of(chat, 80)
    dash.on_request_event(CHAT_ID, Finished((1,) * 80, "x", stats))
    dash.on_api_event(LATER_API_ID, api_rounds(13, 1)[0])  # first seen during the reply: never followed
    dash.redraw()

    x, y = dash.throughput.round_curve.getData()
    assert x.tolist() == [r.index for r in chat]  # one series: every round of the reply, nothing else
    assert dash.acceptance.cumulative_curve.getData()[0].tolist() == [r.index for r in chat]
    footer = footer_text(asdict(stats))
    tile = dash.tiles["acceptance"].value.text()
    assert f"{tile} of drafted tokens accepted" in footer  # the tile says what the reply's footer says
    drafted, accepted = sum(r.drafted for r in chat), sum(r.accepted for r in chat)
    assert dash.tiles["acceptance"].sub.text().startswith(f"{accepted}\u00a0of\u00a0{drafted}\u00a0drafted")
    per_round = f"{stats.mean_accepted_per_round:.2f}"
    assert dash.tiles["per_round"].value.text() == per_round
    assert dash.acceptance.caption.text() == f"mean {per_round} accepted / round"  # the chart agrees
    assert dash.tiles["per_round"].sub.text() == "over 12 drafting rounds (+6 plain)"
    assert dash.status.text().startswith("Last chat reply: ")
    assert dash.tiles["speed"].value.text() == f"{stats.decode_tokens_per_s:.1f} tok/s"


def test_an_api_request_alone_is_followed_by_its_job_id(qtbot, paths):
    dash = make_dashboard(qtbot, paths)
    rounds = api_rounds()
    dash.on_api_event(LATER_API_ID, rounds[0])
    assert dash.status.text() == f"Generating API request #{LATER_API_ID}…"
    for r in rounds[1:]:
        dash.on_api_event(LATER_API_ID, r)
    dash.on_api_event(LATER_API_ID, Finished((1,) * 65, "x", stats_of(rounds, 65)))
    dash.redraw()
    assert dash.status.text().startswith(f"Last API request #{LATER_API_ID}: ")
    assert dash.tiles["speed"].sub.text().startswith(f"last API request #{LATER_API_ID} (")
    assert dash.tiles["acceptance"].value.text() == "100%"
    assert dash.tiles["per_round"].sub.text() == "over 13 rounds"


def test_a_plain_burst_count_is_never_negative(qtbot, paths):
    """Stats of another generation with more drafting rounds than the rounds on screen once gave '(+-4 plain)'."""
    dash = make_dashboard(qtbot, paths)
    chat = chat_rounds()[:4]  # rounds 0 and 3 are plain bursts, 1 and 2 drafted
    for r in chat:
        dash.on_request_event(CHAT_ID, r)
    dash.on_api_event(API_ID, Finished((1,) * 60, "x", stats_of(api_rounds(), 60)))  # not this reply's
    dash.on_request_event(CHAT_ID, Finished((1,) * 12, "x", stats_of(chat, 12)))
    dash.redraw()
    assert dash.tiles["per_round"].sub.text() == "over 2 drafting rounds (+2 plain)"
    assert all("-" not in tile.sub.text() for tile in dash.tiles.values())
