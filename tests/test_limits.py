"""One table of limits: GenerationConfig, the settings file and the CLI accept exactly the same values,
and every accepted value gives a working generation."""

import math

import mlx.core as mx
import numpy as np
import pytest

from specchat.cli import main
from specchat.engine import ConfigError, Engine, GenerationConfig
from specchat.engine.config import LIMITS, SAMPLING_FIELDS
from specchat.engine.sampling import Sampler
from specchat.settings import settings_from_dict
from specchat.settings_checks import SettingsError


def edges(name: str) -> list:
    """The values at the ends of a limit (and its off value)."""
    limit = LIMITS[name]
    kind = int if limit.integer else float
    values = [kind(limit.high)] + ([] if limit.low_open else [kind(limit.low)])
    if limit.low_open:
        values.append(kind(limit.low) + 10**-6)
    if limit.off is not None:
        values.append(kind(limit.off))
    return values


def just_outside(name: str) -> list:
    """Values a hair outside the limit, and values no limit accepts."""
    limit = LIMITS[name]
    step = 1 if limit.integer else 1e-6
    outside = [limit.high + step, limit.low if limit.low_open else limit.low - step]
    if limit.off is not None:
        outside = [value for value in outside if value != limit.off] + [limit.off - step]
    if limit.integer:
        outside.append(limit.low + 0.5)
    return outside + [math.nan, math.inf, -math.inf, True]


@pytest.mark.parametrize("name", SAMPLING_FIELDS)
def test_config_settings_and_cli_accept_the_same_values(name, capsys):
    limit = LIMITS[name]
    for value in edges(name):
        GenerationConfig(**{name: value})
        assert getattr(settings_from_dict({name: value}), name) == value
        assert limit.parse(repr(value)) == value
    for value in just_outside(name):
        with pytest.raises(ConfigError, match=f"{limit.label} must be"):
            GenerationConfig(**{name: value})
        with pytest.raises(SettingsError, match=f"{name} must be"):
            settings_from_dict({name: value})


def test_the_message_names_the_setting_and_its_range():
    with pytest.raises(ConfigError, match=r"^temperature must be between 0.01 and 2, or 0 \(greedy\), got nan$"):
        GenerationConfig(temperature=math.nan)
    with pytest.raises(ConfigError, match=r"^top-p must be above 0 and up to 1, got 0$"):
        GenerationConfig(top_p=0)
    with pytest.raises(ConfigError, match=r"^top-k must be a whole number between 1 and 1000, or 0 \(off\), got -1$"):
        GenerationConfig(top_k=-1)
    with pytest.raises(SettingsError, match=r"^min_p must be between 0 and 1, got 1.5$"):
        settings_from_dict({"min_p": 1.5})


def test_k_and_mtp_depth_share_the_table():
    GenerationConfig(mode="draft", num_draft_tokens=LIMITS["num_draft_tokens"].high)
    GenerationConfig(mode="mtp", num_draft_tokens=LIMITS["mtp_depth"].high)
    with pytest.raises(
        ConfigError, match=r"draft tokens \(K\) must be a whole number between 1 and 16 or 'auto', got 17"
    ):
        GenerationConfig(mode="draft", num_draft_tokens=17)
    with pytest.raises(ConfigError, match=r"MTP depth \(K\) must be a whole number between 1 and 4 or 'auto', got 5"):
        GenerationConfig(mode="mtp", num_draft_tokens=5)
    with pytest.raises(SettingsError, match="num_draft_tokens"):
        settings_from_dict({"num_draft_tokens": 17})


@pytest.mark.parametrize(
    "flag,text",
    [
        ("--temperature", "nan"),
        ("--temperature", "inf"),
        ("--temperature", "-0.5"),
        ("--min-p", "1.01"),
        ("--top-p", "0"),
        ("--top-k", "2.5"),
        ("--max-tokens", "0"),
        ("--draft-tokens", "17"),
    ],
)
def test_the_cli_refuses_a_bad_number_in_one_line_with_status_2(flag, text, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--target", str(tmp_path), "--prompt", "x", f"{flag}={text}"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.count("\n") == 1 and err.startswith(f"specchat generate: error: argument {flag}: ")
    name = {"--draft-tokens": "num_draft_tokens"}.get(flag, flag[2:].replace("-", "_"))
    assert f"{LIMITS[name].label} must be" in err and (text in err or "inf" in err)


def extreme_configs() -> list[GenerationConfig]:
    """Every sampling setting at the ends of its limit, alone and together."""
    t_lo, t_hi = LIMITS["temperature"].low, LIMITS["temperature"].high
    return [
        GenerationConfig(temperature=t_lo),
        GenerationConfig(temperature=t_hi),
        GenerationConfig(temperature=1.0, top_p=1e-6),
        GenerationConfig(temperature=1.0, min_p=1.0),
        GenerationConfig(temperature=1.0, top_k=1),
        GenerationConfig(temperature=1.0, top_k=LIMITS["top_k"].high),
        GenerationConfig(temperature=t_lo, top_p=1e-6, min_p=1.0, top_k=1),
        GenerationConfig(temperature=t_hi, top_p=1.0, min_p=0.0, top_k=LIMITS["top_k"].high),
    ]


def test_every_accepted_extreme_gives_a_probability_vector():
    rng = np.random.default_rng(0)
    logits = mx.array((rng.normal(0, 8, size=(3, 64))).astype(np.float32))  # sharp and flat rows alike
    for cfg in extreme_configs():
        probs = np.array(Sampler(cfg).probs(logits))
        assert np.isfinite(probs).all() and np.allclose(probs.sum(axis=-1), 1.0, atol=1e-5), cfg
        assert (probs.argmax(axis=-1) == np.array(mx.argmax(logits, axis=-1))).all(), cfg


def test_min_p_one_generates_a_reply(dense_target, dense_draft_partial):
    """min-p 1 used to pass the settings and then fail every reply; it now samples the likeliest token."""
    engine = Engine.load(dense_target, dense_draft_partial)
    ids = engine.tokenizer.encode("def f(x):")
    greedy = engine.generate(ids, GenerationConfig(max_tokens=8)).tokens
    for mode in ("baseline", "draft"):
        cfg = GenerationConfig(mode=mode, max_tokens=8, temperature=1.0, min_p=1.0, seed=0)
        assert engine.generate(ids, cfg).tokens == greedy


def test_the_seed_takes_what_mlx_random_keys_take():
    from specchat.engine.sampling import KeyStream

    for seed in (0, 2**64 - 1):
        KeyStream(GenerationConfig(temperature=0.7, seed=seed).seed).next()
    for seed in (-5, 2**64, 1.5, True, 10**400):
        with pytest.raises(ConfigError, match=r"^seed must be a whole number between 0 and 18446744073709551615"):
            GenerationConfig(seed=seed)


def test_an_integer_past_any_float_is_refused_by_name_not_by_overflow():
    for name in ("temperature", "max_tokens", "top_k"):
        with pytest.raises(ConfigError, match=f"^{LIMITS[name].label} must be"):
            GenerationConfig(**{name: 10**400})
