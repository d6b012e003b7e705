"""Argument types the subcommands share: argparse refuses a bad value in one line, before any model work."""

from __future__ import annotations

import argparse
from pathlib import Path

from specchat.engine.modes import SpecMode

MAX_PORT = 65535


def whole_number(low: int, high: int | None = None):
    """An argparse type: a whole number from low to high (no upper bound when high is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"of at least {low}"
            raise argparse.ArgumentTypeError(f"expected a whole number {span}, got {value}")
        return value

    return parse


port_number = whole_number(1, MAX_PORT)


def utf8_text(text: str) -> str:
    """An argparse type: text that is valid UTF-8 (Python keeps undecodable argv bytes as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        at = len(text[: exc.start].encode("utf-8", "surrogateescape"))
        byte = text[exc.start].encode("utf-8", "surrogateescape")[0]
        raise argparse.ArgumentTypeError(f"not valid UTF-8 text: byte {at} is 0x{byte:02x}") from None
    return text


def model_folder(text: str) -> str:
    """An argparse type: an existing folder (a model folder is a directory, not one of its files)."""
    path = Path(text).expanduser()
    if path.is_file():
        raise argparse.ArgumentTypeError(f"{text} is a file; give the model's folder (the one holding config.json)")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"model folder not found: {text}")
    return text


def default_mode(args: argparse.Namespace) -> SpecMode:
    """--mode, else the drafter the command line loads: DFlash, then the draft model, else plain decoding."""
    if args.mode:
        return SpecMode(args.mode)
    if getattr(args, "dflash", None):
        return SpecMode.DFLASH
    return SpecMode.DRAFT if args.draft else SpecMode.BASELINE


def utf8_file(text: str) -> str:
    """The text of the file named `text`, checked as UTF-8; ArgumentTypeError naming the file and its fault."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text}: {exc.strerror or exc}") from None
    return utf8_bytes(data, text)


def utf8_bytes(data: bytes, source: str) -> str:
    """Bytes read from a file or stdin as text; ArgumentTypeError naming the source and the first bad byte."""
    try:
        return utf8_text(data.decode("utf-8", "surrogateescape"))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{source}: {exc}") from None
