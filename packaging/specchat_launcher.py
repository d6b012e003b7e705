"""Main script of SpecChat.app: runs the app (or `--self-test`, which checks the bundle works).

py2app copies this file into Contents/Resources and runs it with sys.frozen = "macosx_app".
`SpecChat.app/Contents/MacOS/SpecChat --self-test` is what build_macos.sh runs after a build;
`python packaging/specchat_launcher.py --self-test` runs the same checks from a checkout.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from pathlib import Path

SELF_TEST_FLAG = "--self-test"
# Model modules mlx-lm imports by name when it loads a Qwen3 / Qwen3.5 folder.
MODEL_MODULES = ("mlx_lm.models.qwen3", "mlx_lm.models.qwen3_5")
TRACKED_DISTRIBUTIONS = ("mlx", "mlx-lm", "PySide6-Essentials", "transformers")


def user_args(argv: list[str]) -> list[str]:
    """Command line arguments, without the -psn_... that older Finder launches add."""
    return [arg for arg in argv if not arg.startswith("-psn_")]


def check_resources() -> str:
    """The package's assets (catalog, icon) are where specchat.resources looks, inside the bundle, and load."""
    from specchat.hub.catalog import load_catalog
    from specchat.resources import assets_root, resource_path

    paths = [resource_path("catalog.json"), resource_path("icon/specchat.png")]
    if getattr(sys, "frozen", None):  # Contents/MacOS/SpecChat -> Contents
        contents = Path(sys.executable).resolve().parent.parent
        outside = [str(p) for p in paths if not p.resolve().is_relative_to(contents)]
        if outside:
            raise RuntimeError(f"resources read from outside the bundle {contents}: {', '.join(outside)}")
    return f"{len(paths)} files in {assets_root()}, a catalog of {len(load_catalog().models)} models"


def check_mlx() -> str:
    """MLX computes on its default device; on macOS that must be the GPU (Metal kernels found)."""
    import mlx.core as mx

    values = mx.arange(8)
    total = mx.sum(values * values).item()
    if total != 140:
        raise RuntimeError(f"sum of squares 0..7 gave {total}, expected 140")
    device = mx.default_device()
    if sys.platform == "darwin" and device != mx.gpu:
        raise RuntimeError(f"default device is {device}, expected the Metal GPU")
    return f"mlx {mx.__version__} on {device}"


def check_model_modules() -> str:
    """mlx-lm's model modules import by name, as mlx_lm.utils does."""
    for name in MODEL_MODULES:
        importlib.import_module(name)
    return ", ".join(MODEL_MODULES)


def check_tokenizers() -> str:
    """transformers resolves its lazy attributes (AutoTokenizer) and tokenizers imports."""
    import tokenizers
    import transformers

    return (
        f"transformers {transformers.__version__} ({transformers.AutoTokenizer.__name__}), "
        f"tokenizers {tokenizers.__version__}"
    )


def check_qt() -> str:
    """PySide6 imports and finds a platform plugin."""
    from PySide6 import QtCore, QtWidgets  # noqa: F401  (QtWidgets: the GUI needs it)

    plugins = Path(QtCore.QLibraryInfo.path(QtCore.QLibraryInfo.LibraryPath.PluginsPath))
    platforms = sorted(p.name for p in (plugins / "platforms").glob("*")) if plugins.is_dir() else []
    if not platforms:
        raise RuntimeError(f"no Qt platform plugin under {plugins}")
    return f"Qt {QtCore.qVersion()}, platform plugins {', '.join(platforms)}"


def check_metadata() -> str:
    """Package metadata is present (versions for the About box; transformers checks its own)."""
    return ", ".join(f"{name} {importlib.metadata.version(name)}" for name in TRACKED_DISTRIBUTIONS)


CHECKS = (check_resources, check_mlx, check_model_modules, check_tokenizers, check_qt, check_metadata)


def self_test() -> int:
    """Run every check, print one line each; 0 when all pass."""
    failures = 0
    for check in CHECKS:
        name = check.__name__.removeprefix("check_")
        try:
            print(f"ok   {name}: {check()}", flush=True)
        except Exception as exc:  # report every failing part, not just the first
            failures += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
    print("self-test passed" if not failures else f"self-test failed: {failures} check(s)")
    return 1 if failures else 0


def main() -> int:
    """Run the self-test, or hand the arguments to SpecChat's command line (no arguments: the app)."""
    if not getattr(sys, "frozen", None):  # run from a checkout: the repo root holds `app`
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    args = user_args(sys.argv[1:])
    if args == [SELF_TEST_FLAG]:
        return self_test()
    from specchat.cli import main as app_main

    return app_main(args)


if __name__ == "__main__":
    sys.exit(main())
