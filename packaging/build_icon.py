"""Build SpecChat.icns from the source icon specchat/assets/icon/specchat.png.

On macOS it uses Apple's tools (`sips` to scale, `iconutil` to pack an .iconset); elsewhere, or with
`--method pillow`, Pillow writes the .icns itself. Usage:
    python packaging/build_icon.py [--source PNG] [--output ICNS] [--method auto|iconutil|pillow]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_ICON = REPO_ROOT / "specchat" / "assets" / "icon" / "specchat.png"
DEFAULT_ICNS = REPO_ROOT / "build" / "icon" / "SpecChat.icns"
MIN_SOURCE_SIZE = 1024
# (point size, scale) pairs that iconutil expects in an .iconset folder.
ICONSET_SLOTS = ((16, 1), (16, 2), (32, 1), (32, 2), (128, 1), (128, 2), (256, 1), (256, 2), (512, 1), (512, 2))
METHODS = ("auto", "iconutil", "pillow")


def iconset_files() -> dict[str, int]:
    """File name -> pixel size for every image of an .iconset."""
    files = {}
    for points, scale in ICONSET_SLOTS:
        suffix = "@2x" if scale == 2 else ""
        files[f"icon_{points}x{points}{suffix}.png"] = points * scale
    return files


def check_source(source: Path) -> None:
    """Fail with a clear message unless `source` is a square PNG of at least 1024 px."""
    if not source.is_file():
        raise SystemExit(f"icon source {source} does not exist (run packaging/draw_icon.py)")
    from PIL import Image

    with Image.open(source) as im:
        if im.format != "PNG" or im.width != im.height or im.width < MIN_SOURCE_SIZE:
            raise SystemExit(
                f"icon source {source} must be a square PNG of at least "
                f"{MIN_SOURCE_SIZE} px, got {im.format} {im.width}x{im.height}"
            )


def apple_tools_available() -> bool:
    """True where `sips` and `iconutil` exist (macOS)."""
    return sys.platform == "darwin" and bool(shutil.which("sips")) and bool(shutil.which("iconutil"))


def build_with_iconutil(source: Path, output: Path) -> None:
    """Scale with sips into an .iconset, then pack it with iconutil."""
    with tempfile.TemporaryDirectory() as tmp:
        iconset = Path(tmp) / "SpecChat.iconset"
        iconset.mkdir()
        for name, pixels in iconset_files().items():
            subprocess.run(
                ["sips", "-z", str(pixels), str(pixels), str(source), "--out", str(iconset / name)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        subprocess.run(["iconutil", "--convert", "icns", "--output", str(output), str(iconset)], check=True)


def build_with_pillow(source: Path, output: Path) -> None:
    """Let Pillow write the .icns, from Lanczos-scaled copies of the source."""
    from PIL import Image

    with Image.open(source) as im:
        icon = im.convert("RGBA")
    sizes = sorted(set(iconset_files().values()))
    scaled = [icon.resize((px, px), Image.Resampling.LANCZOS) for px in sizes]
    scaled[-1].save(output, format="ICNS", append_images=scaled[:-1])


def build_icns(source: Path = SOURCE_ICON, output: Path = DEFAULT_ICNS, method: str = "auto") -> str:
    """Write `output` from `source`; returns the method used ("iconutil" or "pillow")."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    check_source(source)
    if method == "auto":
        method = "iconutil" if apple_tools_available() else "pillow"
    if method == "iconutil" and not apple_tools_available():
        raise SystemExit("--method iconutil needs macOS (sips and iconutil); use --method pillow")
    output.parent.mkdir(parents=True, exist_ok=True)
    (build_with_iconutil if method == "iconutil" else build_with_pillow)(source, output)
    return method


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description="Build SpecChat.icns from the source PNG.")
    parser.add_argument("--source", type=Path, default=SOURCE_ICON)
    parser.add_argument("--output", type=Path, default=DEFAULT_ICNS)
    parser.add_argument("--method", choices=METHODS, default="auto")
    args = parser.parse_args(argv)
    used = build_icns(args.source, args.output, args.method)
    print(f"wrote {args.output} ({used})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
