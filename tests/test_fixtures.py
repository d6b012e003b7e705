"""Tests of the tiny model fixtures themselves (tests/fixtures/tiny_models.py)."""

import json

import mlx.core as mx
import pytest
from mlx_lm import load
from mlx_lm.models.cache import ArraysCache, KVCache
from tokenizers import Tokenizer
from transformers import AutoTokenizer

from tests.fixtures import tiny_models as tm

MODEL_FIXTURES = [
    "dense_target",
    "dense_draft_partial",
    "dense_draft_unrelated",
    "hybrid_target",
    "hybrid_draft_partial",
    "hybrid_draft_unrelated",
    "dense_other_vocab",
    "dense_other_eos",
]
MULTIBYTE = "Un café naïve: 日本語 🙂🚀 ❤️ — привет"
PROMPTS = [
    "The quick brown fox",
    "def fibonacci(n):",
    "Bonjour café 日本語",
    "Please summarize the",
    "import json\nx = ",
]


@pytest.mark.parametrize("name", MODEL_FIXTURES)
def test_models_load_through_mlx_lm(request, name):
    folder = request.getfixturevalue(name)
    model, tok, config = load(str(folder), return_config=True)
    logits = model(mx.array(tok.encode("hello world"))[None])
    assert logits.shape[-1] == config.get("text_config", config)["vocab_size"]
    assert len(tok._tokenizer) == 384
    assert tok.eos_token_ids == {config["eos_token_id"]}


def test_tokenizer_round_trips_multibyte(dense_target):
    _, tok = load(str(dense_target))
    ids = tok.encode(MULTIBYTE)
    assert tok.decode(ids) == MULTIBYTE
    assert len(tok.encode("🙂")) > 1  # byte-level: pieces that are not whole chars
    detok = tok.detokenizer
    detok.reset()
    for i in ids:
        detok.add_token(i)
    detok.finalize()
    assert detok.text == MULTIBYTE
    assert AutoTokenizer.from_pretrained(dense_target).encode(MULTIBYTE) == ids
    raw = Tokenizer.from_file(str(dense_target / "tokenizer.json"))
    assert raw.encode(MULTIBYTE).ids == ids


def test_chat_template_renders_qwen3_style(dense_target):
    _, tok = load(str(dense_target))
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    expected = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert text == expected
    off = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert off == expected + "<think>\n\n</think>\n\n"
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True)
    assert ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 3
    think = tok.encode("<think>\n\n</think>")
    assert think[0] == tok.convert_tokens_to_ids("<think>")


def test_tokenizer_files_are_deterministic(tmp_path, tok_dir):
    tm.build_tokenizer(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (tmp_path / name).read_bytes() == (tok_dir / name).read_bytes()


def test_other_vocab_differs_in_mapping(dense_target, dense_other_vocab):
    base = AutoTokenizer.from_pretrained(dense_target)
    other = AutoTokenizer.from_pretrained(dense_other_vocab)
    a, b = base.encode("The quick brown fox"), other.encode("The quick brown fox")
    first = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    assert first == 0
    assert base.convert_ids_to_tokens(a) != other.convert_ids_to_tokens(a)
    assert base.eos_token == other.eos_token == "<|im_end|>"
    assert base.eos_token_id != other.eos_token_id
    assert len(base) == len(other)


def test_other_eos_keeps_vocab(dense_target, dense_other_eos):
    _, base = load(str(dense_target))
    _, special = load(str(dense_other_eos))
    assert base._tokenizer.get_vocab() == special._tokenizer.get_vocab()
    assert base.eos_token == "<|im_end|>" and special.eos_token == "<|endoftext|>"
    assert base.eos_token_ids != special.eos_token_ids


def test_hybrid_cache_has_linear_and_attention_layers(hybrid_target):
    model, _ = load(str(hybrid_target))
    kinds = [type(c) for c in model.make_cache()]
    assert kinds == [ArraysCache, KVCache, ArraysCache, KVCache]
    config = json.loads((hybrid_target / "config.json").read_text())
    assert config["model_type"] == "qwen3_5" and "text_config" in config


@pytest.mark.parametrize("name", ["dense_target", "hybrid_target"])
def test_loaded_logits_equal_in_memory(request, name):
    folder = request.getfixturevalue(name)
    loaded, tok = load(str(folder))
    x = mx.array(tok.encode(MULTIBYTE))[None]
    assert mx.array_equal(tm.fresh_model(folder, seed=0)(x), loaded(x))
    assert not mx.array_equal(tm.fresh_model(folder, seed=1)(x), loaded(x))


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_partial_draft_is_a_noisy_copy(request, kind):
    target = request.getfixturevalue(f"{kind}_target")
    draft = request.getfixturevalue(f"{kind}_draft_partial")
    noise = tm.DENSE_PARTIAL_NOISE if kind == "dense" else tm.HYBRID_PARTIAL_NOISE
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (target / name).read_bytes() == (draft / name).read_bytes()
    w0, w1 = mx.load(str(target / "model.safetensors")), mx.load(str(draft / "model.safetensors"))
    assert w0.keys() == w1.keys()
    for key, w in w0.items():
        if w.size > 16 and mx.std(w).item() > 0:
            ratio = (mx.std(w1[key] - w) / mx.std(w)).item()
            assert 0.7 * noise < ratio < 1.3 * noise, key


def test_padded_vocab_rows_are_zero(tmp_path):
    folder = tm.build_dense(tmp_path / "padded", vocab_size=512)
    model, tok = load(str(folder))
    assert model.model.embed_tokens.weight.shape == (512, 64)
    assert not mx.any(model.model.embed_tokens.weight[384:]).item()
    path = tm.greedy_path(model, tok.encode("The quick brown fox"), 32)
    assert max(path) < 384


def _mean_agreement(target_dir, draft_dir):
    """(min distinct tokens, mean agreement) over PROMPTS."""
    (target, tok), (draft, _) = load(str(target_dir)), load(str(draft_dir))
    stats = [tm.agreement(target, draft, tok.encode(p), 64) for p in PROMPTS]
    return min(s[0] for s in stats), sum(s[1] for s in stats) / len(stats)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_draft_agreement_is_in_documented_band(request, kind):
    target = request.getfixturevalue(f"{kind}_target")
    distinct, partial = _mean_agreement(target, request.getfixturevalue(f"{kind}_draft_partial"))
    _, unrelated = _mean_agreement(target, request.getfixturevalue(f"{kind}_draft_unrelated"))
    _, itself = _mean_agreement(target, target)
    print(f"{kind}: distinct>={distinct} partial={partial:.2f} unrelated={unrelated:.2f}")
    assert distinct > 10
    assert tm.AGREEMENT_BAND[0] <= partial <= tm.AGREEMENT_BAND[1]
    assert unrelated < 0.15
    assert itself == 1.0


def test_smollm_dir_points_at_a_model_folder(smollm_dir):
    config = json.loads((smollm_dir / "config.json").read_text())
    assert config["model_type"] == "llama"
    assert (smollm_dir / "tokenizer.json").is_file()
