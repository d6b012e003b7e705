"""What speculation does on battery (Preferences ▸ On battery): nothing special, a one-time note, or
plain decoding. Reads the power source at most every MAX_AGE_S seconds through the reader it is given
(the window passes the dashboard's last off-thread reading)."""

from __future__ import annotations

import time
from collections.abc import Callable

from specchat.system.power import PowerStatus, read_power

MAX_AGE_S = 30.0
WARN = (
    "On battery power: speculative decoding runs as usual, but speeds vary with the power source "
    "(Preferences ▸ On battery can switch speculation off on battery)."
)
PLAIN = (
    "On battery power: replies use plain decoding, as set in Preferences ▸ On battery; "
    "speculation comes back on mains power."
)


class PowerPolicy:
    """Decides a reply's mode from the policy and the power source; notes each battery spell once."""

    def __init__(
        self,
        policy: str = "warn",
        read: Callable[[], PowerStatus] = read_power,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.policy = policy
        self._read, self._clock = read, clock
        self._status: PowerStatus | None = None
        self._read_at = 0.0
        self._noted = False  # the note for this battery spell was given

    def on_battery(self) -> bool:
        """True when the machine runs on battery (read again when the last reading is old)."""
        now = self._clock()
        if self._status is None or now - self._read_at > MAX_AGE_S:
            self._status, self._read_at = self._read(), now
        return self._status.source == "battery"

    def reply_mode(self, mode: str) -> tuple[str, str | None]:
        """(the mode the reply uses, a note to show once or None)."""
        if mode == "baseline" or self.policy == "ignore":
            return mode, None
        if not self.on_battery():
            self._noted = False
            return mode, None
        note = None if self._noted else (PLAIN if self.policy == "plain_on_battery" else WARN)
        self._noted = True
        return ("baseline" if self.policy == "plain_on_battery" else mode), note
