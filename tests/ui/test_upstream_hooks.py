"""A changed mlx-lm hook greys the speculative modes with its reason; chatting still works."""

from importlib import metadata

import mlx_lm.models.gated_delta as gated_delta
import mlx_lm.models.qwen3_5 as qwen3_5
import pytest

from .conftest import send

KERNEL = gated_delta.gated_delta_update


def renamed_mask(q, k, v, a, b, A_log, dt_bias, state=None, attn_mask=None, **kwargs):
    """gated_delta_update with `mask` renamed, same arithmetic."""
    return KERNEL(q, k, v, a, b, A_log, dt_bias, state, attn_mask, **kwargs)


@pytest.mark.slow
def test_the_menu_greys_speculation_with_the_hook_and_version(
    qtbot, open_window, monkeypatch, hybrid_target, hybrid_draft_partial
):
    monkeypatch.setattr(qwen3_5, "gated_delta_update", renamed_mask)
    window = open_window(hybrid_target, hybrid_draft_partial)
    assert window.pair is not None and window.pair.draft is not None
    for mode in ("draft", "lookup"):
        action = window.speculation.mode_actions[mode]
        assert not action.isEnabled()
        assert action.toolTip().startswith(
            "Unavailable: the installed mlx-lm version does not support this mode (speculation for this model "
            f"is off: mlx-lm {metadata.version('mlx-lm')} changed gated_delta_update: it no longer takes `mask`"
        )
    assert window.speculation.checked_mode() == "baseline"
    assert send(qtbot, window, "still works").stats.mode == "baseline"
