"""Draw SpecChat's source icon (1024x1024 PNG) with Pillow: a speech bubble holding a fast-forward mark.

The first arrow is solid (tokens the target verified), the second is lighter (tokens a draft guessed
ahead): speculative decoding in one glyph. Run `python packaging/draw_icon.py` to redraw
specchat/assets/icon/specchat.png; the .icns is built from that file by packaging/build_icon.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO_ROOT / "specchat" / "assets" / "icon" / "specchat.png"  # package data of specchat

SIZE = 1024
SUPERSAMPLE = 4  # draw large, scale down: smooth edges without per-shape anti-aliasing
# macOS (Big Sur and later) icon grid: an 824 px rounded square centred on the 1024 px canvas.
TILE_MARGIN = 100
TILE_RADIUS = 185
TOP_LEFT_COLOR = (67, 56, 202)  # indigo
BOTTOM_RIGHT_COLOR = (13, 148, 136)  # teal
BUBBLE_COLOR = (255, 255, 255)
VERIFIED_COLOR = (67, 56, 202)
DRAFTED_COLOR = (45, 212, 191)


def diagonal_gradient(size: int, start: tuple, end: tuple) -> Image.Image:
    """An RGB square going from `start` (top left) to `end` (bottom right)."""
    ramp = np.add.outer(np.arange(size), np.arange(size)) / (2 * (size - 1))
    rgb = np.stack([s + (e - s) * ramp for s, e in zip(start, end)], axis=-1)
    return Image.fromarray(rgb.round().astype(np.uint8), "RGB")


def tile_mask(size: int, scale: int) -> Image.Image:
    """The rounded-square silhouette of the icon."""
    mask = Image.new("L", (size, size), 0)
    m, r = TILE_MARGIN * scale, TILE_RADIUS * scale
    ImageDraw.Draw(mask).rounded_rectangle((m, m, size - m, size - m), radius=r, fill=255)
    return mask


def drop_shadow(mask: Image.Image, scale: int) -> Image.Image:
    """A soft shadow below the tile, as an RGBA layer."""
    shadow = Image.new("RGBA", mask.size, (0, 0, 0, 0))
    offset = Image.new("L", mask.size, 0)
    offset.paste(mask, (0, 10 * scale))
    alpha = offset.point(lambda v: v * 90 // 255).filter(ImageFilter.GaussianBlur(18 * scale))
    shadow.putalpha(alpha)
    return shadow


def bubble_mask(size: int, scale: int) -> Image.Image:
    """A speech bubble with its tail at the lower left."""
    s = scale
    mask = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(mask)
    draw.rounded_rectangle((232 * s, 270 * s, 792 * s, 680 * s), radius=120 * s, fill=255)
    draw.polygon([(330 * s, 640 * s), (470 * s, 660 * s), (290 * s, 790 * s)], fill=255)
    return mask


def fast_forward(draw: ImageDraw.ImageDraw, scale: int) -> None:
    """Two right-pointing arrows: verified (solid) then drafted (lighter)."""
    s = scale
    top, bottom, mid = 365 * s, 585 * s, 475 * s
    draw.polygon([(352 * s, top), (352 * s, bottom), (522 * s, mid)], fill=VERIFIED_COLOR)
    draw.polygon([(502 * s, top), (502 * s, bottom), (672 * s, mid)], fill=DRAFTED_COLOR)


def draw_icon(size: int = SIZE) -> Image.Image:
    """The icon as an RGBA image of `size` x `size` pixels."""
    scale = SUPERSAMPLE * size // SIZE if size >= SIZE else SUPERSAMPLE
    big = SIZE * scale
    canvas = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    mask = tile_mask(big, scale)
    canvas.alpha_composite(drop_shadow(mask, scale))
    tile = diagonal_gradient(big, TOP_LEFT_COLOR, BOTTOM_RIGHT_COLOR).convert("RGBA")
    canvas.paste(tile, (0, 0), mask)
    canvas.paste(Image.new("RGBA", (big, big), BUBBLE_COLOR + (255,)), (0, 0), bubble_mask(big, scale))
    fast_forward(ImageDraw.Draw(canvas), scale)
    return canvas.resize((size, size), Image.Resampling.LANCZOS)


def main(argv: list[str] | None = None) -> int:
    """Write the source icon PNG."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    draw_icon().save(args.output, optimize=True)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
