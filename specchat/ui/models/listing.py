"""The models window's listing: the hub search, the local scan, and the table rebuilt from both.
A mixin of ModelsWindow."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from specchat.hub.search import SearchResult, catalog_hits, search_models
from specchat.hub.store import scan_local_models

from ..mixin_bases import WidgetPart
from .rows import build_rows
from .style import state_pill

if TYPE_CHECKING:
    from PySide6.QtCore import Signal
    from PySide6.QtWidgets import QLabel, QLineEdit

    from specchat.hub.catalog import Catalog
    from specchat.hub.config import HubConfig
    from specchat.hub.store import LocalModel
    from specchat.hub.tokenizer_info import VocabHashCache
    from specchat.settings import Settings

    from ..banner import Banner
    from ..tasks import TaskRunner
    from .downloads import DownloadRows
    from .pair_panel import PairPanel
    from .rows import ModelRow
    from .table_model import ModelTableModel
    from .table_view import ModelsTable


class ModelListing(WidgetPart):
    """Search the catalog and the hub, scan the local models, show both; ModelsWindow supplies the widgets."""

    # what ModelsWindow supplies (declared for the type checker; nothing is set here)
    settings: Settings
    config: HubConfig
    catalog: Catalog
    vocab: VocabHashCache
    runner: TaskRunner
    search_result: SearchResult
    hub_state: str
    hub_reachable: bool
    local: list[LocalModel]
    _query: str
    _search_seq: int
    _scan_seq: int
    search_box: QLineEdit
    state_label: QLabel
    banner: Banner
    table_model: ModelTableModel
    table: ModelsTable
    downloads: DownloadRows
    pair_panel: PairPanel
    footer: QLabel
    searchFinished: Signal
    localScanned: Signal
    selected_rows: Callable[[], list[ModelRow]]  # RowActions'
    _update_actions: Callable[..., None]  # RowActions'

    def search(self) -> None:
        """Search the catalog and the hub for the box's text, off the UI thread."""
        self._query = self.search_box.text().strip()
        self._search_seq += 1
        seq, query, catalog, config = self._search_seq, self._query, self.catalog, self.config
        self._set_hub_state("searching", "")
        self._rebuild()  # local models filter at once; hub hits follow
        self.runner.run(lambda: (seq, search_models(query, catalog, config)), self._search_done, self._search_failed)

    def _search_done(self, answer) -> None:
        seq, result = answer
        if seq != self._search_seq:
            return  # an older search answered late
        self.search_result = result
        self._set_hub_state(result.state, result.message)
        self._rebuild()
        self.searchFinished.emit(result)

    def _search_failed(self, message: str) -> None:
        self.search_result = SearchResult(tuple(catalog_hits(self.catalog, self._query)), False, message)
        self._set_hub_state("offline", message)
        self._rebuild()
        self.searchFinished.emit(self.search_result)

    def _set_hub_state(self, state: str, message: str) -> None:
        self.hub_state = state
        if state != "searching":
            self.hub_reachable = state == "online"
            self._update_actions()
        self.state_label.setText(state_pill(state))
        self.state_label.setToolTip(message or f"Hugging Face at {self.config.endpoint}")
        if state == "offline":
            detail = message.removeprefix("offline: ").removesuffix("; showing the catalog only")
            self.banner.show_message(
                "Hugging Face is not reachable, so the list shows the curated catalog and the models on this machine.",
                "warning",
                detail,
            )
        elif self.banner.level == "warning":
            self.banner.dismiss()

    def refresh_local(self) -> None:
        """Rescan the HF cache and the user's folders, off the UI thread."""
        self._scan_seq += 1
        seq, config, folders, vocab = self._scan_seq, self.config, list(self.settings.extra_model_dirs), self.vocab
        self.runner.run(
            lambda: (seq, scan_local_models(config, folders, vocab)),
            self._scan_done,
            lambda message: self.banner.show_message(f"Could not list the local models: {message}"),
        )

    def _scan_done(self, answer) -> None:
        seq, models = answer
        if seq != self._scan_seq:
            return
        self.local = models
        self.downloads.clear_done()
        self._rebuild()
        self.localScanned.emit(models)

    def _rebuild(self) -> None:
        selected = {r.key for r in self.selected_rows()}
        self.table_model.set_rows(build_rows(self.catalog, self.search_result.hits, self.local, self._query))
        self.table.select_keys(selected)
        self.pair_panel.set_models(self.table_model.rows())
        on_disk = sum(r.local is not None for r in self.table_model.rows())
        self.footer.setText(
            f"{len(self.table_model.rows())} models · {on_disk} on this machine · "
            f"downloads go to {self.config.cache_dir}"
        )
