"""Engine test fixtures shared by more than one module: tiny targets with a random DFlash drafter."""

import pytest

from specchat.engine import Engine
from tests.fixtures.dflash_models import build_dflash


@pytest.fixture(scope="module")
def dflash_root(tmp_path_factory):
    return tmp_path_factory.mktemp("dflash")


@pytest.fixture(scope="module")
def dense_engine(dense_target, dflash_root):
    """The tiny dense target with a random DFlash drafter."""
    return Engine.load(dense_target, dflash=build_dflash(dflash_root / "dense", dense_target))


@pytest.fixture(scope="module")
def hybrid_engine(hybrid_target, dflash_root):
    """The tiny hybrid target with a random DFlash drafter reading layers 1 and 3."""
    return Engine.load(hybrid_target, dflash=build_dflash(dflash_root / "hybrid", hybrid_target, layer_ids=[1, 3]))
