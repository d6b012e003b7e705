"""Shared pytest fixtures: tiny real-architecture model folders, built once per session."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.fixtures import tiny_models as tm  # noqa: E402
from tests.fixtures.mtp_models import build_hybrid_mtp  # noqa: E402

SMOLLM_DIR = Path(__file__).resolve().parents[2] / "shared/models/smollm2-135m-instruct-4bit"
# Test files outside the fast subset (-m "not slow") that carry no `pytestmark = pytest.mark.slow` of their own:
# each launches ranks of a cluster as processes. The cluster's in-process protocol tests stay in the subset.
SLOW_FILES = frozenset(
    f"cluster/{name}.py" for name in ("test_batch", "test_batch_faults", "test_faults", "test_lockstep")
)
TESTS_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    """Mark the tests of SLOW_FILES slow."""
    for item in items:
        if item.path.is_relative_to(TESTS_DIR) and item.path.relative_to(TESTS_DIR).as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _temporary_home(monkeypatch, tmp_path_factory):
    """AppPaths.default() (the CLI's log file, a window made without paths) never reaches the real user folders."""
    monkeypatch.setenv("SPECCHAT_HOME", str(tmp_path_factory.mktemp("specchat-home")))


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory) -> Path:
    """Session folder that holds every tiny model."""
    return tmp_path_factory.mktemp("tiny_models")


@pytest.fixture(scope="session")
def tok_dir(tiny_root) -> Path:
    """A folder with only the base tokenizer files."""
    tm.build_tokenizer(tiny_root / "tokenizer")
    return tiny_root / "tokenizer"


@pytest.fixture(scope="session")
def dense_target(tiny_root) -> Path:
    """Tiny qwen3 target (seed 0)."""
    return tm.build_dense(tiny_root / "dense_target", seed=0)


@pytest.fixture(scope="session")
def dense_draft_partial(tiny_root, dense_target) -> Path:
    """dense_target plus DENSE_PARTIAL_NOISE: agrees on roughly 40-80% of tokens."""
    return tm.build_dense(tiny_root / "dense_draft_partial", seed=1, base=dense_target)


@pytest.fixture(scope="session")
def dense_draft_unrelated(tiny_root) -> Path:
    """A different random qwen3 with the same tokenizer: near-zero agreement."""
    return tm.build_dense(tiny_root / "dense_draft_unrelated", seed=2)


@pytest.fixture(scope="session")
def hybrid_target(tiny_root) -> Path:
    """Tiny qwen3_5 target (linear + full attention layers, seed 0)."""
    return tm.build_hybrid(tiny_root / "hybrid_target", seed=0)


@pytest.fixture(scope="session")
def hybrid_draft_partial(tiny_root, hybrid_target) -> Path:
    """hybrid_target plus HYBRID_PARTIAL_NOISE: agrees on roughly 40-80% of tokens."""
    return tm.build_hybrid(tiny_root / "hybrid_draft_partial", seed=1, base=hybrid_target)


@pytest.fixture(scope="session")
def hybrid_draft_unrelated(tiny_root) -> Path:
    """A different random qwen3_5 with the same tokenizer: near-zero agreement."""
    return tm.build_hybrid(tiny_root / "hybrid_draft_unrelated", seed=2)


@pytest.fixture(scope="session")
def dense_other_vocab(tiny_root) -> Path:
    """dense_target's weights with a tokenizer of a different token->id mapping."""
    return tm.build_dense(tiny_root / "dense_other_vocab", seed=0, tokenizer_variant="other")


@pytest.fixture(scope="session")
def dense_other_eos(tiny_root) -> Path:
    """dense_target's weights and vocabulary, but eos is <|endoftext|>."""
    return tm.build_dense(tiny_root / "dense_other_eos", seed=0, tokenizer_variant="special")


@pytest.fixture(scope="session")
def smollm_dir() -> Path:
    """The real SmolLM2-135M 4-bit folder from shared/, or skip when absent."""
    if not (SMOLLM_DIR / "config.json").is_file():
        pytest.skip(f"real model not found at {SMOLLM_DIR}")
    return SMOLLM_DIR


@pytest.fixture(scope="session")
def mtp_agree(tiny_root) -> Path:
    """Hybrid target whose MTP head (a sidecar) agrees with it on every draft."""
    return build_hybrid_mtp(tiny_root / "mtp_agree", head="agree")


@pytest.fixture(scope="session")
def mtp_partial(tiny_root) -> Path:
    """The agreeing pair with noise in the head's fc (sidecar under optiq/): partial accept."""
    return build_hybrid_mtp(tiny_root / "mtp_partial", head="agree", fc_noise=0.25, sidecar="optiq/mtp.safetensors")


@pytest.fixture(scope="session")
def mtp_random_embedded(tiny_root) -> Path:
    """A peaky random hybrid target with a random MTP head embedded in model.safetensors."""
    return build_hybrid_mtp(tiny_root / "mtp_random_embedded", head="random", layout="embedded")
