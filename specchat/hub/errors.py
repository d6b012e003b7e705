"""Errors of the model manager, each with a message a user can act on."""

from __future__ import annotations


class HubError(Exception):
    """Base class: something about models, downloads or the hub went wrong."""


class OfflineError(HubError):
    """The hub could not be reached (no network, wrong endpoint, or it did not answer in time)."""


class AuthRequiredError(HubError):
    """The repo is gated or private and the request was not authorised."""


class RepoNotFoundError(HubError):
    """No such repo (or a private one the user cannot see)."""


class NotEnoughDiskError(HubError):
    """The download does not fit on the disk; missing_bytes says by how much."""

    def __init__(self, message: str, missing_bytes: int):
        super().__init__(message)
        self.missing_bytes = missing_bytes


class CorruptFileError(HubError):
    """A downloaded file does not match the size or hash the hub lists for it."""


class DownloadCancelled(HubError):
    """The user cancelled; partial files stay on disk so the download can resume."""


class ConfirmationRequired(HubError):
    """A destructive action was asked for without confirm=True."""
