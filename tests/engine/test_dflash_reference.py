"""Logit parity with z-lab's reference MLX drafter (the `dflash` package, 0.1.0, dflash/model_mlx.py, MIT).

The same random drafter folder (published layout) is read by our loader and by the reference's `load_draft`.
Every block our drafter runs in a generation (context catch-up, blocks after partial rejections) is replayed
on the reference's DFlashDraftModel, fed the very context rows ours received: the logits must agree. On the
dense target the reference's own generation loop (its target-side capture and rollback) is compared too; not
on a hybrid one, where the reference's verify pass runs its own copy of mlx-lm 0.31's Gated DeltaNet call:
its q/k normalisation eps (1e-6, where mlx-lm 0.32's normalize_qk uses 1e-6 / head_k_dim) moves the
target's logits by ~1e-3 from the model's own call, so its context rows drift from the target's.

Sliding-window drafters (DFlash and DFlash2, a window of 8, shorter than the context) are compared the same
way; on the reference's own loop its rotating cache is kept in temporal order (see the comment there).

The reference is installed without its dependencies (`pip install --no-deps dflash==0.1.0`: its Requires-Dist
pins datasets, requests and tqdm, none of which model_mlx.py needs); these tests skip where it does not import.
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import pytest
from mlx_lm import load as mlx_load

from specchat.engine import Engine, RoundResult
from specchat.engine import dflash as dflash_module
from specchat.engine.dflash_model import DFlashConfig, DFlashModel
from specchat.engine.errors import ModelLoadError
from tests.fixtures.dflash2_models import build_dflash2
from tests.fixtures.dflash_models import build_dflash, dflash_config

from .helpers import greedy, prompt_ids

TOLERANCE = 1e-5  # measured: 0.0 on CPU (the same MLX ops in the same order)


@pytest.fixture(scope="module")
def reference():
    """z-lab's dflash/model_mlx.py; the tests that use it skip where it does not import."""
    return pytest.importorskip("dflash.model_mlx")


@pytest.fixture(scope="module")
def ref_root(tmp_path_factory):
    return tmp_path_factory.mktemp("dflash_reference")


def load_reference(reference, folder: Path, target_model):
    """The reference's drafter for a local folder (its loader otherwise downloads), bound to the target."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reference, "snapshot_download", lambda repo, **_: repo)
        draft = reference.load_draft(str(folder))
    return draft.bind(target_model)


class Traffic:
    """Records, in order, what the engine's DFlash drafter does: context rows put into its cache, the sequence
    of each block, and each block's draft logits. With `full`, the drafts the engine sees become the target's
    own continuation except at every `wrong`-th position: rounds then keep part of each block."""

    def __init__(self, monkeypatch, engine: Engine, full: list[int] | None = None, wrong: int = 5):
        self.events: list[tuple[str, object]] = []
        self.full, self.wrong, self.seq = full, wrong, []
        drafter = engine.drafters["dflash"]
        self.vocab = drafter._vocab()
        add_context, propose, project = DFlashModel.add_context, drafter.propose, dflash_module.project_logits

        def adding(model, features, caches):
            self.events.append(("context", features))
            add_context(model, features, caches)

        def proposing(request):
            self.seq = list(request.seq)
            self.events.append(("block", self.seq))
            return propose(request)

        def projecting(model, hidden):
            logits = project(model, hidden)
            self.events.append(("logits", logits))
            return logits if self.full is None else self.oracle(logits.shape[0])

        monkeypatch.setattr(DFlashModel, "add_context", adding)
        monkeypatch.setattr(drafter, "propose", proposing)
        monkeypatch.setattr(dflash_module, "project_logits", projecting)

    def oracle(self, rows: int) -> mx.array:
        """Logits whose argmax is the target's token at each drafted position, or the next id where wrong."""
        positions = mx.arange(len(self.seq), len(self.seq) + rows)
        full = self.full + [0] * (len(self.seq) + rows)
        right = mx.array(full)[positions]
        tokens = mx.where(positions % self.wrong == 0, (right + 1) % self.vocab, right)
        return mx.where(mx.arange(self.vocab)[None] == tokens[:, None], 30.0, -30.0)


def replay_on_reference(draft, events) -> list[tuple[int, mx.array, mx.array]]:
    """(block start, our logits, the reference's) for each recorded block, the reference's context cache fed
    exactly the rows ours received since the block before."""
    cfg = draft.config
    width = len(cfg.target_layer_ids) * cfg.hidden_size
    cache, pending, seq, out = draft.make_cache(), [], [], []
    for kind, value in events:
        if kind == "context":
            pending.append(value)
        elif kind == "block":
            seq = value
        else:
            context = mx.concatenate(pending, axis=0)[None] if pending else mx.zeros((1, 0, width))
            block = mx.array([[seq[-1]] + [cfg.mask_token_id] * (cfg.block_size - 1)])
            theirs = draft(block, context, cache, logits_start=1)[0]
            assert cache[0].offset == len(seq) - 1, "the reference's context does not end before the block"
            out.append((len(seq) - 1, value, theirs[: value.shape[0]]))
            pending = []
    return out


def max_difference(pairs) -> float:
    return max(mx.abs(ours - theirs).max().item() for _, ours, theirs in pairs)


def causal(config, weights):
    config["is_causal"] = True


def scaled_embeddings(config, weights):
    config["dflash_config"]["input_embedding_scale"] = 0.5


WINDOW = 8  # shorter than the prompt's context and than the block: later block rows see less context


def sliding(config, weights):
    """A sliding layer then a full one; the block causal in the sliding layer (is_causal unset)."""
    config.update(layer_types=["sliding_attention", "full_attention"], sliding_window=WINDOW)


def sliding_bidirectional(config, weights):
    """Every layer sliding, the block bidirectional (is_causal false, as z-lab/Qwen3.8-27B-DFlash2 sets)."""
    config.update(layer_types=["sliding_attention"] * 2, sliding_window=WINDOW, is_causal=False)


@pytest.mark.parametrize(
    ("family", "edit", "build"),
    [
        ("dense", None, build_dflash),
        ("hybrid", None, build_dflash),
        ("dense", causal, build_dflash),
        ("hybrid", scaled_embeddings, build_dflash),
        ("dense", sliding, build_dflash),
        ("hybrid", sliding_bidirectional, build_dflash),
        ("dense", sliding_bidirectional, build_dflash2),
        ("hybrid", sliding, build_dflash2),
        ("dense", None, build_dflash2),
    ],
)
def test_every_block_of_a_generation_matches_the_reference_drafter(
    monkeypatch, request, reference, ref_root, family, edit, build
):
    target = request.getfixturevalue(f"{family}_target")
    ids = [1, 3] if family == "hybrid" else None
    folder = ref_root / f"{family}_{edit.__name__ if edit else 'plain'}_{build.__name__}"
    engine = Engine.load(target, dflash=build(folder, target, layer_ids=ids, edit=edit))
    prompt = prompt_ids(engine)
    baseline = engine.generate(prompt, greedy(n=40)).tokens
    traffic = Traffic(monkeypatch, engine, full=prompt + baseline)
    events = list(engine.stream(prompt, greedy("dflash", 15, n=40)))
    assert list(events[-1].tokens) == baseline
    rounds = [e for e in events if isinstance(e, RoundResult)]
    accepted = [r.accepted for r in rounds]
    assert any(0 < a < 15 for a in accepted), f"no partial rejection exercised: {accepted}"

    pairs = replay_on_reference(load_reference(reference, folder, engine.target.model), traffic.events)
    assert len(pairs) == len(accepted) >= 3
    starts = [len(prompt) - 1 + sum(r.emitted for r in rounds[:i]) for i in range(len(rounds))]
    assert [start for start, _, _ in pairs] == starts
    assert max_difference(pairs) <= TOLERANCE


@pytest.mark.parametrize("edit", [None, sliding])
def test_the_reference_generation_loop_drafts_the_same_logits_on_a_dense_target(
    monkeypatch, reference, ref_root, dense_target, edit
):
    """The reference's own loop (its layer hooks on the target, its trims) against the engine's, greedy, with a
    random drafter: both emit the same tokens, and every block whose context both reach agrees."""
    folder = ref_root / f"loop_{edit.__name__ if edit else 'plain'}"
    engine = Engine.load(dense_target, dflash=build_dflash(folder, dense_target, edit=edit))
    prompt = prompt_ids(engine)
    traffic = Traffic(monkeypatch, engine)
    ours = engine.generate(prompt, greedy("dflash", 15, n=24)).tokens
    our_blocks = blocks_of(traffic.events)

    model, tokenizer = mlx_load(str(dense_target))  # its own copy: the reference wraps the target's layers
    draft = load_reference(reference, folder, model)
    theirs, their_blocks = [], {}
    call = type(draft).__call__

    def recording(self, inputs, hidden, cache, logits_start=0):
        logits = call(self, inputs, hidden, cache, logits_start)
        their_blocks[cache[0].offset] = logits[0]
        return logits

    monkeypatch.setattr(type(draft), "__call__", recording)
    if edit is not None:
        # Single rows go into the reference's RotatingKVCache in place, leaving its buffer in rotated order,
        # while its sliding mask assumes temporal order (the key at index j is j places after the oldest):
        # after a block that kept one row, its rows 1.. would read the wrong context. Concatenating keeps
        # the order, which is the window its mask means.
        monkeypatch.setattr(reference.RotatingKVCache, "update_and_fetch", reference.RotatingKVCache._update_concat)
    for response in reference.stream_generate(model, draft, tokenizer, mx.array(prompt), max_tokens=60):
        theirs += response.tokens
        if len(theirs) >= len(ours):
            break
    assert theirs[: len(ours)] == ours
    common = sorted(set(our_blocks) & set(their_blocks))
    assert len(common) >= 10
    pairs = [(s, our_blocks[s], their_blocks[s][: our_blocks[s].shape[0]]) for s in common]
    assert max_difference(pairs) <= TOLERANCE


def blocks_of(events) -> dict[int, mx.array]:
    """Our logits of each recorded block, by the block's start."""
    out, seq = {}, []
    for kind, value in events:
        if kind == "block":
            seq = value
        elif kind == "logits":
            out[len(seq) - 1] = value
    return out


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda c: c["dflash_config"].update(output_multiplier=2.0), "output_multiplier 2.0"),
        (lambda c: c.update(final_logit_softcapping=30.0), "final_logit_softcapping 30.0"),
    ],
)
def test_what_the_reference_runs_and_we_do_not_is_refused_by_name(dense_target, edit, named):
    config = dflash_config(dense_target)
    edit(config)
    with pytest.raises(ModelLoadError, match=named):
        DFlashConfig.from_dict(config)


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda c: c.update(layer_types=["sliding_attention"] * 2), "need a sliding_window of at least 1, not None"),
        (lambda c: c.update(layer_types=["sliding_attention"] * 2, sliding_window=0), "not 0"),
        (lambda c: c.update(layer_types=["chunked_attention"] * 2), r"\['chunked_attention'\] are not supported"),
        (lambda c: c.update(layer_types=["sliding_attention"], sliding_window=8), "1 layer_types for 2 layers"),
    ],
)
def test_layer_types_the_reference_refuses_are_refused_by_name(dense_target, edit, named):
    """Only full and sliding layers exist, as many as the layers, and sliding ones need a window of at least 1
    (the reference refuses a missing one; with none below 1 a row would read no context at all)."""
    config = dflash_config(dense_target)
    edit(config)
    with pytest.raises(ModelLoadError, match=named):
        DFlashConfig.from_dict(config)


@pytest.mark.parametrize(("is_causal", "causal_layers"), [(None, [True, False]), (False, [False, False])])
def test_a_sliding_config_reads_as_the_reference_reads_it(dense_target, is_causal, causal_layers):
    """The window reaches the sliding layers only; the block is causal in sliding layers unless is_causal says."""
    config = dflash_config(dense_target)
    config.update(layer_types=["sliding_attention", "full_attention"], sliding_window=2048)
    if is_causal is not None:
        config["is_causal"] = is_causal
    model = DFlashModel(DFlashConfig.from_dict(config))
    assert [layer.self_attn.window for layer in model.layers] == [2048, None]
    assert [layer.self_attn.causal for layer in model.layers] == causal_layers
