"""The dashboard's bandwidth line: how much of this machine's memory bandwidth plain decoding uses (each token
reads every weight once; system/bandwidth.py), and speculation's speed as a multiple of the one-token-per-pass
limit that bandwidth sets. The machine's copy bandwidth is measured once (an engine job: nothing else runs
beside it), kept per machine, and measured again on request."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from specchat.paths import AppPaths
from specchat.system.bandwidth import Bandwidth, decode_limit, load_bandwidth, save_bandwidth

from .. import theme
from ..theme_switch import follow

log = logging.getLogger(__name__)
WEIGHT_FILES = "model*.safetensors"
MEASURE, REMEASURE, MEASURING = "Measure", "Re-measure", "Measuring…"  # the tooltip says what
HELP = (
    "Plain decoding reads every weight of the target once per token, so it cannot beat memory bandwidth: "
    "reached = weight bytes × plain tok/s, shown as a share of this machine's measured copy bandwidth "
    "(a large buffer copied: bytes read plus written per second). The one-token limit is plain decoding at that "
    "bandwidth (bandwidth ÷ weight bytes); speculation checks several tokens per pass over the weights, so it "
    "can go past it. Weight bytes are the target folder's model*.safetensors files (a mixture-of-experts "
    "model reads fewer per token)."
)


def bandwidth_file(paths: AppPaths) -> Path:
    """Where this machine's copy bandwidth is kept."""
    return paths.data_dir / "bandwidth.json"


def weight_bytes_of(folder: str | Path | None) -> int | None:
    """The size of a model folder's weight files (what plain decoding reads per token); None without any."""
    if not folder:
        return None
    try:
        total = sum(f.stat().st_size for f in Path(folder).glob(WEIGHT_FILES) if f.is_file())
    except OSError:
        return None
    return total or None


@dataclass(frozen=True)
class BandwidthInputs:
    """What the line is computed from (the dashboard provides them)."""

    weight_bytes: int | None  # the target's weights: read once per plain-decoded token
    plain_tps: float | None  # plain decoding's speed (the dashboard's reference)
    spec_tps: float | None  # the last speculative reply's decode speed (None: no such reply)
    bandwidth: Bandwidth | None  # this machine's measured copy bandwidth


def rate_words(bytes_per_s: float) -> str:
    """A byte rate in GB/s, or MB/s below one GB/s (10^9 and 10^6 bytes)."""
    return f"{bytes_per_s / 1e9:.1f} GB/s" if bytes_per_s >= 1e9 else f"{bytes_per_s / 1e6:.0f} MB/s"


def bandwidth_words(inputs: BandwidthInputs) -> str:
    """The line: reached bandwidth, its share of the machine's, the one-token limit and speculation's multiple."""
    if inputs.bandwidth is None:
        return "Memory bandwidth: not measured on this machine yet."
    machine = rate_words(inputs.bandwidth.bytes_per_s)
    if not inputs.weight_bytes:
        return f"Memory bandwidth: {machine} measured; the target's weight size is unknown."
    if not inputs.plain_tps:
        limit = inputs.bandwidth.bytes_per_s / inputs.weight_bytes
        return f"Memory bandwidth: {machine} measured · one-token limit {limit:.1f} tok/s (plain not measured)."
    figures = decode_limit(inputs.weight_bytes, inputs.plain_tps, inputs.bandwidth)
    text = (
        f"Plain decode reads {rate_words(figures.reached_bytes_per_s)}: {figures.share * 100:.0f}% of the "
        f"{machine} measured · one-token limit {figures.one_token_limit_tps:.1f} tok/s"
    )
    if round(figures.share * 100) > 100:  # as shown: a rounding error past 100% is no finding
        text += " (more than measured: re-measure the bandwidth)"
    if inputs.spec_tps:
        text += f" · speculation at {inputs.spec_tps / figures.one_token_limit_tps:.2f}× that limit"
    return text + "."


class BandwidthLine(QWidget):
    """One line under the tiles and a measure button; refresh() asks the provider for its inputs."""

    measureRequested = Signal()  # measure this machine's copy bandwidth (an engine job), then call set_bandwidth

    def __init__(self, file: Path, machine: str, provider: Callable[[], BandwidthInputs] | None = None, parent=None):
        super().__init__(parent)
        self.file, self.machine = file, machine
        self.provider = provider
        self.bandwidth = load_bandwidth(file, machine)  # None: not measured on this machine yet
        self.measuring = False
        self.label = QLabel("", objectName="dashStatus", wordWrap=True)  # type: ignore[call-overload]
        self.label.setToolTip(HELP)
        self.button = QPushButton(REMEASURE if self.bandwidth else MEASURE, clicked=self.request)  # type: ignore[call-overload]
        self.button.setToolTip(
            "Measure this machine's memory bandwidth again: copy a large buffer a few times, as a job after the "
            "engine's queued work"
        )
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.button)
        follow(self, lambda: self.label.setStyleSheet(f"color: {theme.MUTED};"))
        self.label.setText(bandwidth_words(BandwidthInputs(None, None, None, self.bandwidth)))  # refresh() fills it

    def request(self) -> None:
        """Ask (measureRequested) for a measurement, unless one is under way."""
        if not self.measuring:
            self.measuring = True
            self.button.setEnabled(False)
            self.button.setText(MEASURING)
            self.measureRequested.emit()

    def set_bandwidth(self, bandwidth: Bandwidth) -> None:
        """A fresh measurement: kept for this machine (a disk that refuses only costs a measurement next time)."""
        self.bandwidth, self.measuring = bandwidth, False
        try:
            save_bandwidth(self.file, bandwidth)
        except OSError as exc:
            log.warning("could not keep the measured bandwidth in %s: %s", self.file, exc)
        self._button_idle()
        self.refresh()

    def measure_failed(self, message: str) -> None:
        """The measurement did not run (said in the log; the button offers it again)."""
        log.warning("the bandwidth measurement failed: %s", message)
        self.measuring = False
        self._button_idle()

    def _button_idle(self) -> None:
        self.button.setEnabled(True)
        self.button.setText(REMEASURE if self.bandwidth else MEASURE)

    def inputs(self) -> BandwidthInputs:
        """The provider's inputs (without one: only the bandwidth)."""
        if self.provider is None:
            return BandwidthInputs(None, None, None, self.bandwidth)
        return self.provider()

    def refresh(self) -> None:
        """Recompute the line from the provider's inputs."""
        self.label.setText(bandwidth_words(self.inputs()))
