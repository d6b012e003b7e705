"""The speculation half of the main window: the next reply's config (mode, K, sampling, the battery
policy), the Speculation menu's choices and the pair's tuned K. A mixin of MainWindow."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from specchat.engine import GenerationConfig, SpecMode
from specchat.engine.config import LIMITS, MTP_MAX_DEPTH

from .speculation_menu import AUTO, TUNED_OFF, KChoice, tuned_k

if TYPE_CHECKING:
    from specchat.paths import AppPaths
    from specchat.settings import Settings

    from .banner import Banner
    from .chat.composer import Composer
    from .engine_client import LoadedPair
    from .preferences_link import PreferencesLink
    from .settings_panel import SettingsPanel
    from .speculation_menu import SpeculationMenu


class SpeculationControl:
    """What the next reply runs with; MainWindow supplies the menu, panel, settings and paths."""

    # what MainWindow supplies (declared for the type checker; nothing is set here)
    settings: Settings
    paths: AppPaths
    pair: LoadedPair | None
    panel: SettingsPanel
    speculation: SpeculationMenu
    preferences: PreferencesLink
    banner: Banner
    composer: Composer
    save: Callable[[], None]
    _update_mode_label: Callable[[], None]

    def reply_settings(self) -> tuple[GenerationConfig, bool]:
        """The config and thinking switch of the next reply."""
        self.panel.flush()
        s = self.settings
        sampling = self.panel.reply_values()  # max tokens is the chat's own: the panel's, never Settings' default
        k = self.speculation.current_k
        mode, note = self.preferences.power.reply_mode(self.speculation.checked_mode())  # Preferences ▸ On battery
        if note:
            self.banner.show_message(note, "info")
        if mode == "mtp" and k != AUTO:
            k = min(k, MTP_MAX_DEPTH)  # the head drafts at most this deep
        cfg = GenerationConfig(
            mode=SpecMode(mode),
            num_draft_tokens=k,
            max_tokens=sampling["max_tokens"],
            temperature=s.temperature,
            top_p=s.top_p,
            top_k=s.top_k,
            min_p=s.min_p,
            mtp_history=s.mtp_history,
        )
        return cfg, self.composer.thinking.isChecked() and self.composer.thinking.isEnabled()

    def _mode_chosen(self, mode: SpecMode) -> None:
        self.settings.mode = mode
        self._refresh_tuned_k()
        self.save()
        self._update_mode_label()

    def _mtp_history_chosen(self, on: bool) -> None:
        self.settings.mtp_history = on
        self.save()

    def _k_chosen(self, k: KChoice) -> None:
        self.settings.num_draft_tokens = k if k == AUTO else min(k, int(LIMITS["num_draft_tokens"].high))
        self.save()
        self._update_mode_label()

    def _refresh_tuned_k(self) -> None:
        """Show the tuned K of the pair the checked mode uses (target + draft, or target + MTP head)."""
        pair, mode = self.pair, self.speculation.checked_mode()
        drafter = None if pair is None or mode == "lookup" else "mtp" if mode == "mtp" else pair.draft
        self.speculation.set_tuned_k(tuned_k(self.paths, pair.target if pair else None, drafter))

    def _best_k_saved(self, _best: dict) -> None:
        self._refresh_tuned_k()
        k = self.speculation.tuned_k
        if k == TUNED_OFF:  # no K beat plain decoding: "Use best" switches speculation off
            if self.speculation.checked_mode() != "baseline":
                self.speculation.mode_actions[SpecMode.BASELINE].trigger()
            return
        if k is not None and self.speculation.current_k != AUTO:
            self.speculation.set_k(k)
            self._k_chosen(k)
