"""The model half of the main window: load a pair and its DFlash drafter (transactionally, on the engine
thread), show what loaded or why not, offer the drafts that fit, remember folders. A mixin of MainWindow."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from specchat.engine.modes import SpecMode
from specchat.hub.chat_template import has_thinking_switch

from .engine_client import EngineClient, LoadedPair, loaded_dflash
from .model_folders import local_models
from .plain_words import draft_refusal

if TYPE_CHECKING:
    from PySide6.QtGui import QAction

    from specchat.settings import Settings

    from .analysis_docks import AnalysisDocks
    from .banner import Banner
    from .chat.composer import Composer
    from .chat.controller import ChatController
    from .chat.transcript import TranscriptView
    from .model_bar import ModelBar
    from .server_link import ServerLink
    from .speculation_menu import SpeculationMenu

NO_THINKING = "This model's chat template has no thinking switch (enable_thinking), so it cannot be told to think"


class PairControl:
    """Loading and offering models; MainWindow supplies the widgets, settings and client it uses."""

    # what MainWindow supplies (declared for the type checker; nothing is set here)
    settings: Settings
    client: EngineClient
    pair: LoadedPair | None
    chat: ChatController
    composer: Composer
    model_bar: ModelBar
    transcript: TranscriptView
    speculation: SpeculationMenu
    banner: Banner
    server: ServerLink
    docks: AnalysisDocks
    thinking_action: QAction
    _load_banner: bool
    _cli_target: str | None
    _cli_dflash: str | None
    save: Callable[[], None]
    _update_mode_label: Callable[[], None]
    _refresh_tuned_k: Callable[[], None]  # SpeculationControl's

    def load_models(self, target: str, draft: str | None = None, dflash: str | None = None) -> None:
        """Load a target, optional draft and optional DFlash drafter on the engine thread, beside the pair in use.

        The current pair stays loaded (a reply queued before still uses it) until the new one has
        loaded; only then does it replace it and go into the settings. A failed load keeps it."""
        self.composer.set_ready(False, "Models are loading")
        self.model_bar.set_loading(f"Loading {Path(target).name}…")
        self.client.load_pair(target, draft, dflash)

    def load_pressed(self, target: str, draft: str | None) -> None:
        """The toolbar's Load: the chosen pair, keeping the DFlash drafter when the target stays the same."""
        self.load_models(target, draft, self.dflash_for(target))

    def dflash_for(self, target: str | None) -> str | None:
        """The DFlash drafter loaded now when `target` is the loaded target (a drafter belongs to its target)."""
        dflash = loaded_dflash(self.pair)
        if dflash is None or target is None or self.pair is None:
            return None
        return dflash if Path(target).resolve() == Path(self.pair.target).resolve() else None

    def drop_dflash(self) -> None:
        """Load the pair in use again without its DFlash drafter."""
        if self.pair is not None and loaded_dflash(self.pair) is not None:
            self.load_models(self.pair.target, self.pair.draft, None)

    def _on_loaded(self, pair: LoadedPair) -> None:
        previous = self.pair
        previous_draft = previous.draft if previous else None
        previous_dflash = loaded_dflash(previous)
        self.pair = pair
        dflash = loaded_dflash(pair)
        self.model_bar.set_dflash(dflash)
        self.chat.decode = pair.decode
        names = _pair_names(pair)
        self.model_bar.set_loaded(f"Ready · {names}")
        self.model_bar.set_memory(pair.memory_bytes)
        self.composer.set_ready(True)
        self._offer_thinking(pair.target, pair.remote is not None)
        self.transcript.empty.set_model_state(True, names)
        self.speculation.set_available(pair.available_modes)
        if self._load_banner:
            self.banner.dismiss()
            self._load_banner = False
        # a drafter just chosen (the Models window, --dflash) is what the user wants to use; the saved one
        # loaded at start keeps the saved mode
        chosen = previous is not None or dflash == self._cli_dflash or self.settings.mode == "baseline"
        if dflash and dflash != previous_dflash and chosen:
            self.settings.mode = SpecMode.DFLASH
        elif pair.draft and pair.draft != previous_draft and self.settings.mode == "baseline":
            self.settings.mode = SpecMode.DRAFT
        mode = self.settings.mode if pair.available_modes.get(self.settings.mode) is None else SpecMode.BASELINE
        self.speculation.set_mode(mode)
        self._refresh_tuned_k()
        if pair.remote is None:  # a server's pair is not a local folder to reload next time
            self.settings.target_path, self.settings.draft_path = pair.target, pair.draft
            self.settings.dflash_path = dflash
        self.server.loaded(pair)
        if pair.draft_error:
            self.model_bar.select_draft(None)
            plain, detail = draft_refusal(pair.draft_error)
            self.banner.show_message(f"The draft was not loaded: {plain}.", "error", detail)
            self._load_banner = True
        if self._cli_target and pair.target == self._cli_target:
            self._remember_model(pair.target)
        self.save()
        self._update_mode_label()
        self.docks.set_loaded(pair)

    def _on_load_failed(self, message: str) -> None:
        """The new pair did not load: the previous one (if any) stays loaded and in the settings."""
        self.docks.set_loaded(None)
        if self.pair is not None:
            names = _pair_names(self.pair)
            self.model_bar.set_targets(self._model_folders(), self.pair.target)
            self._offer_drafts(self.pair.target, self.pair.draft)
            self.model_bar.set_loaded(f"Ready · {names}")
            self.composer.set_ready(True)
            message += f". Still using {names}."
        else:
            self.model_bar.set_loaded("Load failed")
            self.composer.set_ready(False, "No model is loaded")
        self.banner.show_message(message, "error")
        self._load_banner = True

    def _model_folders(self, *also: str | None) -> list[str]:
        """Folders beside the models in use, and every model found on disk (HF cache, LM Studio, yours)."""
        roots = []
        for path in (self.settings.target_path, self.settings.draft_path, *also):
            if path:
                roots.append(str(Path(path).parent))
        found = local_models(roots, self.settings.extra_model_dirs)
        self.model_bar.names.update(found)
        return list(found)

    def _offer_drafts(self, target: str, draft: str | None = None) -> None:
        candidates = [f for f in self._model_folders(target, draft) if Path(f) != Path(target)]
        self.model_bar.set_drafts(candidates, {}, draft or self.settings.draft_path)
        self.client.check_drafts(target, candidates)

    def _on_drafts_checked(self, target: str, results) -> None:
        if target != self.model_bar.target_path():
            return
        keep = self.model_bar.draft_path()
        reasons = {r.path: r.reason for r in results if not r.compatible}
        self.model_bar.set_drafts([r.path for r in results], reasons, keep)

    def use_models(self, target: str, draft: str | None, dflash: str | None = None) -> None:
        """Pick a target (and draft) in the toolbar and load them, with a DFlash drafter when given (from the
        Models window)."""
        self.model_bar.set_targets(self._model_folders(target, draft), target)
        self._offer_drafts(target, draft)
        self.load_models(target, draft, dflash)

    def _remember_model(self, folder: str) -> None:
        """Keep a model folder given on the command line among the folders the pickers list."""
        known = [str(Path(d).expanduser().resolve()) for d in self.settings.extra_model_dirs]
        if str(Path(folder).resolve()) not in known and str(Path(folder).parent.resolve()) not in known:
            self.settings.extra_model_dirs.append(folder)

    def _offer_thinking(self, target: str, remote: bool = False) -> None:
        available = remote or has_thinking_switch(Path(target))  # a server's template is not read here
        self.composer.set_thinking_available(available, NO_THINKING)
        self.thinking_action.setEnabled(available)
        self.thinking_action.setToolTip("" if available else NO_THINKING)

    def _remember_folder(self, folder: str) -> None:
        parent = str(Path(folder).parent)
        if parent not in self.settings.extra_model_dirs:
            self.settings.extra_model_dirs.append(parent)
            self.save()


def _pair_names(pair: LoadedPair) -> str:
    """'target' or 'target + draft', folder names only (and 'on URL' for a server's pair)."""
    names = Path(pair.target).name + (f" + {Path(pair.draft).name}" if pair.draft else "")
    return names + (f" on {pair.remote}" if pair.remote else "")
