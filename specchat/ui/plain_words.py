"""Reasons shown to the user, in plain words; the technical reason stays available as the detail.

Each function returns (plain, detail): the plain sentence goes in the banner, the menu tooltip or the
Models window; the detail (file names, tensor names, hook versions) sits behind a "Details" toggle.
"""

from __future__ import annotations

import sys

NO_MTP_HEAD = "this model has no multi-token-prediction head"
MTP_UNREADABLE = "could not tell whether this model has a multi-token-prediction head"
NO_DRAFT = "no draft model loaded: choose one in the toolbar"
NO_DFLASH = "no DFlash drafter loaded: pick one in the Models window (Use as DFlash drafter) or start with --dflash DIR"
NOT_LOADED = "no model is loaded yet: choose one in the toolbar or open Models…"
UPSTREAM = "the installed mlx-lm version does not support this mode"
SELF_DRAFT = "the target drafting for itself always agrees but cannot be faster: useful only as an exactness check"


def this_machine(platform: str = sys.platform) -> str:
    """What the app calls the computer it runs on: "this Mac" on macOS, "this computer" elsewhere."""
    return "this Mac" if platform == "darwin" else "this computer"


def mtp_reason(available: bool | None, reason: str) -> tuple[str, str]:
    """What the MTP detector found, in plain words (available: True, False or None = unknown)."""
    if available:
        return "this model has a multi-token-prediction head", reason
    if available is None:
        return MTP_UNREADABLE, reason
    return NO_MTP_HEAD, reason


def mode_reason(mode: str, reason: str | None) -> tuple[str, str]:
    """Why a speculation mode is unavailable (reason from the engine's available_modes)."""
    if reason is None:
        return "", ""
    text = reason.lower()
    if mode == "draft" and "no draft model loaded" in text:
        return NO_DRAFT, ""
    if "no model is loaded" in text:
        return NOT_LOADED, ""
    if mode == "dflash" and "no dflash drafter loaded" in text:
        return NO_DFLASH, ""
    if mode == "mtp" and text.startswith("no mtp head"):
        return NO_MTP_HEAD, reason.split(":", 1)[-1].strip()
    if any(word in text for word in ("hook", "upstream", "mlx-lm", "mlx_lm")):
        return UPSTREAM, reason
    return "not available with the loaded model", reason


def draft_refusal(error: str) -> tuple[str, str]:
    """Why a draft was not loaded beside its target."""
    text = error.lower()
    if "vocabular" in text:
        plain = "the draft does not share the target's vocabulary, so it cannot draft for it"
    elif "special token" in text:
        plain = "the draft's special tokens (such as end-of-text) differ from the target's"
    elif "no such file" in text or "not found" in text or "does not exist" in text:
        plain = "the draft's folder is missing files"
    else:
        plain = "the draft could not be loaded"
    return plain, error
