"""What the controllers learned outlives the session: saved per pair, machine and power source, and a new
session's first reply starts from it instead of learning again."""

import json

from specchat.engine import Engine, GenerationConfig
from specchat.engine.autok import AutoK
from specchat.engine.owner import EngineHost, adopt_job
from specchat.paths import AppPaths
from specchat.tuning.knowledge_store import RememberedPair, knowledge_file, load_knowledge

AUTO = GenerationConfig(mode="draft", num_draft_tokens="auto", max_tokens=24)


def test_a_learned_controller_round_trips_through_its_knowledge(dense_target, dense_draft_partial):
    first = Engine.load(dense_target, dense_draft_partial)
    ids = list(first.tokenizer.encode("def fibonacci(n):"))
    first.generate(ids, AUTO)
    first.generate(ids, GenerationConfig(mode="auto", num_draft_tokens=3, max_tokens=16))
    saved = json.loads(json.dumps(first.knowledge()))  # through JSON, as on disk
    second = Engine.load(dense_target, dense_draft_partial)
    second.learn(saved)
    assert json.loads(json.dumps(second.knowledge())) == saved
    learned = second.auto_k["draft"]
    assert learned.draft_step_s is not None and learned.verify_s  # costs measured in the first session
    assert (learned.accepted, learned.rejected) != (AutoK().accepted, AutoK().rejected)  # not the prior
    assert second._auto_drafter().records["draft"].checked > 1  # Auto's sources too
    # the rate its rounds reached, so the first reply needs no rounds to measure it again
    was = first.auto_k["draft"]
    assert (learned.round_count, learned.round_s, learned.probe.tokens) == (
        was.round_count,
        was.round_s,
        was.probe.tokens,
    )


def test_other_versions_and_unreadable_files_start_afresh(tmp_path, dense_target):
    engine = Engine.load(dense_target)
    engine.learn({"version": 999, "auto_k": {"draft": {"draft_step_s": 1.0}}})
    assert not engine.auto_k
    bad = tmp_path / "k.json"
    bad.write_text("{not json", encoding="utf-8")
    assert load_knowledge(bad) == {} and load_knowledge(tmp_path / "missing.json") == {}


def test_the_file_differs_by_pair_machine_and_power(tmp_path, dense_target, dense_draft_partial):
    paths = AppPaths.under(tmp_path)
    a = knowledge_file(paths, [dense_target, dense_draft_partial, None], "M4 Max", "ac")
    assert a == knowledge_file(paths, [str(dense_target), str(dense_draft_partial), None], "M4 Max", "ac")
    assert a != knowledge_file(paths, [dense_target, dense_draft_partial, None], "M4 Max", "battery")
    assert a != knowledge_file(paths, [dense_target, dense_draft_partial, None], "M1", "ac")
    assert a != knowledge_file(paths, [dense_target, None, None], "M4 Max", "ac")


def test_a_session_keeps_what_it_learned_and_the_next_starts_from_it(tmp_path, dense_target, dense_draft_partial):
    paths = AppPaths.under(tmp_path)
    folders = [dense_target, dense_draft_partial, None]
    host = EngineHost()
    try:
        host.submit("adopt", adopt_job(Engine.load(dense_target, dense_draft_partial))).result(timeout=120)
        remembered = RememberedPair.here(host, paths, folders)
        remembered.learn()  # nothing kept yet
        ids = list(host.engine.tokenizer.encode("def fibonacci(n):"))
        host.submit("reply", lambda ctx: ctx.engine.generate(ids, AUTO)).result(timeout=120)
        assert remembered.keep() and remembered.file.is_file()
        host.submit("adopt", adopt_job(Engine.load(dense_target, dense_draft_partial))).result(timeout=120)
        RememberedPair.here(host, paths, folders).learn()
        steps = host.submit("read", lambda ctx: ctx.engine.auto_k["draft"].draft_step_s).result(timeout=60)
        assert steps is not None  # the new session's controller starts with the measured costs
    finally:
        host.shutdown()
