"""Fixtures for the store tests."""

import pytest

from specchat.paths import AppPaths
from specchat.store import ConversationStore


@pytest.fixture
def store(tmp_path):
    """A conversation store in this test's app folders, closed after it."""
    opened = ConversationStore(AppPaths.under(tmp_path).conversations_db)
    yield opened
    opened.close()
