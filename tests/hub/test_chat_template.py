"""Whether a model's chat template has a thinking switch, from its files alone."""

import json

from specchat.hub.chat_template import has_thinking_switch


def test_the_thinking_switch_is_found_wherever_the_template_lives(tmp_path):
    plain = "{% for m in messages %}{{ m.content }}{% endfor %}"
    thinking = "{%- if enable_thinking is defined and enable_thinking is false %}<think></think>{%- endif %}"
    cases = {
        "config_string": ("tokenizer_config.json", json.dumps({"chat_template": thinking}), True),
        "config_plain": ("tokenizer_config.json", json.dumps({"chat_template": plain}), False),
        "named": (
            "tokenizer_config.json",
            json.dumps(
                {"chat_template": [{"name": "default", "template": plain}, {"name": "think", "template": thinking}]}
            ),
            True,
        ),
        "jinja": ("chat_template.jinja", thinking, True),
        "template_json": ("chat_template.json", json.dumps({"chat_template": thinking}), True),
        "broken": ("tokenizer_config.json", "{not json", False),
    }
    for name, (file, text, expected) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / file).write_text(text)
        assert has_thinking_switch(folder) is expected, name
    assert has_thinking_switch(tmp_path / "missing") is False


def test_the_tiny_fixture_target_has_the_switch(dense_target):
    assert has_thinking_switch(dense_target)
