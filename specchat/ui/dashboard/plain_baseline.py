"""What the dashboard's 'vs plain decode' compares with: the target's plain-decode speed, from a cached or fresh
measurement or from this session's plain replies, kept apart per sampling and power source. A mixin of Dashboard."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from specchat.tuning.reference import EARLIER, MEASURED, MIN_REPLY_TOKENS, parse_time

from .bandwidth_line import BandwidthInputs, weight_bytes_of

if TYPE_CHECKING:
    from PySide6.QtWidgets import QPushButton

    from specchat.engine.events import GenerationStats
    from specchat.system.power import PowerStatus
    from specchat.tuning.baseline import BaselineCache
    from specchat.tuning.reference import PlainReference, PlainSample, Reference

    from .bandwidth_line import BandwidthLine

log = logging.getLogger(__name__)
MIN_TOKENS_FOR_BASELINE = MIN_REPLY_TOKENS  # a plain-decode reply this long counts as a plain-decode sample
REMEASURE = "Re-measure plain decode"


class PlainBaseline:
    """The plain-decode reference of the current target; Dashboard supplies the state and widgets it uses."""

    # what Dashboard supplies (declared for the type checker; nothing is set here)
    baselines: BaselineCache
    plain: PlainReference
    last_plain_sample: PlainSample | None
    model_key: str | None
    target_weight_bytes: int | None
    last_stats: GenerationStats | None
    last_power: tuple[PowerStatus, bool | None] | None
    remeasure: QPushButton
    bandwidth_line: BandwidthLine
    _dirty: bool
    request_baseline: Callable[[], None]

    if TYPE_CHECKING:  # Dashboard's

        @property
        def generating(self) -> bool: ...

    def set_model(self, model_key: str | None) -> None:
        """The current target (e.g. its resolved folder); asks for a measurement when none is cached."""
        self.model_key = model_key
        self.target_weight_bytes = weight_bytes_of(model_key)  # None for a server's model: no folder here
        self.last_plain_sample = None
        entry = self.baselines.get(model_key) if model_key else None
        known = any(s.model_key == model_key for s in self.plain.samples)
        if model_key and entry is not None and not known:
            self.plain.add_measurement(
                model_key,
                entry.tokens_per_s,
                EARLIER,
                parse_time(entry.measured_at),
                entry.sampling,
                entry.power_source,
            )
        self.remeasure.setEnabled(model_key is not None)
        self.remeasure.setText(REMEASURE if entry or known else "Measure plain decode")
        self._dirty = True
        if model_key and entry is None and not known:
            self.request_baseline()  # model_key is self.model_key, set above

    def set_baseline_tps(
        self, model_key: str, tps: float, source: str = "measured", sampling: str | None = None
    ) -> None:
        """A fresh plain-decode measurement of a model: cached, and at once the one reference of this target
        (until plain replies newer than it): what the session had before it, it replaces."""
        power = self.power_source()
        self._remember(model_key, tps, source, power, sampling)
        self.plain.samples = [s for s in self.plain.samples if s.model_key != model_key]
        if self.last_plain_sample is not None and self.last_plain_sample.model_key == model_key:
            self.last_plain_sample = None
        self.plain.add_measurement(model_key, tps, MEASURED, sampling=sampling, power_source=power)
        if model_key == self.model_key:
            self.remeasure.setText(REMEASURE)
        self._dirty = True

    @property
    def baseline_tps(self) -> float | None:
        """The plain-decode speed the last reply is compared with (None: nothing for this target)."""
        ref = self.reference()
        return ref.tokens_per_s if ref else None

    def reference(self) -> Reference | None:
        """The plain-decode reference for the last reply (or the next one): same target, sampling and power."""
        stats = self.last_stats
        return self.plain.reference(
            self.model_key,
            stats.sampling if stats else None,
            self.power_source(),
            stats.prompt_tokens if stats else None,
            self.last_plain_sample,
        )

    def power_source(self) -> str | None:
        """'ac' or 'battery' from the last power reading; None while unknown."""
        source = self.last_power[0].source if self.last_power else None
        return source if source in ("ac", "battery") else None

    def bandwidth_inputs(self) -> BandwidthInputs:
        """What the bandwidth line is computed from: the target's weight bytes, the plain-decode reference, the
        last speculative reply's speed and the machine's measured bandwidth."""
        stats = self.last_stats
        speculative = stats is not None and stats.mode != "baseline" and not self.generating
        spec_tps = stats.decode_tokens_per_s if speculative and stats is not None else None
        return BandwidthInputs(self.target_weight_bytes, self.baseline_tps, spec_tps, self.bandwidth_line.bandwidth)

    def _take_plain_reply(self, stats: GenerationStats, cancelled: bool) -> None:
        """A finished reply's own plain-decode sample: a plain-decode reply long enough and not stopped is this
        target's newest sample, its speed cached for the next start; any other reply has none."""
        self.last_plain_sample = None
        if (
            stats.mode == "baseline"
            and not cancelled
            and self.model_key
            and stats.generated_tokens >= MIN_TOKENS_FOR_BASELINE
        ):
            self.last_plain_sample = self.plain.add_reply(
                self.model_key,
                stats.decode_tokens_per_s,
                stats.generated_tokens,
                stats.prompt_tokens,
                stats.sampling,
                self.power_source(),
            )
            if self.last_plain_sample is not None:  # the next app start finds this target's plain speed
                self._remember(
                    self.model_key, stats.decode_tokens_per_s, "plain-decode reply", self.power_source(), stats.sampling
                )
                self.remeasure.setText(REMEASURE)

    def _remember(self, model_key: str, tps: float, source: str, power: str | None, sampling: str | None) -> None:
        """Cache a plain-decode speed for the next start; a cache that cannot be written (a full disk) only
        costs a measurement next time: logged, not raised."""
        try:
            self.baselines.put(model_key, tps, source, power, sampling)
        except OSError as error:
            log.warning("could not cache the plain-decode speed of %s: %s", model_key, error)
