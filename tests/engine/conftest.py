"""Session fixtures for engine tests: tiny hybrid qwen3_5 models WITH an MTP head."""

from pathlib import Path

import pytest

from tests.fixtures.mtp_models import build_hybrid_mtp


@pytest.fixture(scope="session")
def mtp_agree(tiny_root) -> Path:
    """Hybrid target whose MTP head (a sidecar) agrees with it on every draft."""
    return build_hybrid_mtp(tiny_root / "mtp_agree", head="agree")


@pytest.fixture(scope="session")
def mtp_partial(tiny_root) -> Path:
    """The agreeing pair with noise in the head's fc (sidecar under optiq/): partial accept."""
    return build_hybrid_mtp(tiny_root / "mtp_partial", head="agree", fc_noise=0.25,
                            sidecar="optiq/mtp.safetensors")


@pytest.fixture(scope="session")
def mtp_random_embedded(tiny_root) -> Path:
    """A peaky random hybrid target with a random MTP head embedded in model.safetensors."""
    return build_hybrid_mtp(tiny_root / "mtp_random_embedded", head="random", layout="embedded")
