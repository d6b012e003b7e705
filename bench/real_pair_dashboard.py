"""Do the dashboard's break-even line and "vs plain decode" tile agree with a side-by-side measurement?

On the real Qwen pair (see real_pair.py), the real Dashboard widget (offscreen Qt) is fed what the
app feeds it: the plain-decode measurement the worker takes for a new target (the break-even line),
then, per prompt kind, a plain reply and an auto-K reply, caches reset before each. The script prints
what the dashboard shows beside the same figures computed from the two replies' own stats, and
exits 1 when they disagree:

    source ../shared/tools/real-qwen-pair.env
    QT_QPA_PLATFORM=offscreen python bench/real_pair_dashboard.py --screenshot /tmp/dashboard.png
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from common import chat_ids
from real_pair import PROMPTS

from specchat.engine import Engine, GenerationConfig
from specchat.paths import AppPaths
from specchat.tuning.baseline import measure_baseline_tps


def reply(engine: Engine, dash, kind: str, mode: str, n: int):
    """One reply from empty caches, every event fed to the dashboard; its stats."""
    engine.reset()
    ids = chat_ids(engine, PROMPTS[kind])
    cfg = GenerationConfig(mode=mode, num_draft_tokens="auto", max_tokens=n)
    for event in engine.stream(ids, cfg):
        dash.on_event(event)
    dash.redraw()
    return dash.last_stats


def shown(dash) -> tuple[str, float | None]:
    """The vs-plain tile's value as shown, and where the throughput chart draws the break-even line."""
    line = dash.throughput.baseline_line
    return dash.tiles["vs_plain"].value.text(), (line.value() if line.isVisible() else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default=os.environ.get("QWEN_TARGET"))
    parser.add_argument("--draft", default=os.environ.get("QWEN_DRAFT"))
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--screenshot", help="save the dashboard after the last reply as this PNG")
    args = parser.parse_args()
    if not (args.target and args.draft and Path(args.target).is_dir() and Path(args.draft).is_dir()):
        sys.exit("no real pair: run ../shared/tools/real-qwen-pair.sh, then source real-qwen-pair.env")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from specchat.ui.dashboard.dashboard import Dashboard

    app = QApplication.instance() or QApplication([])
    engine = Engine.load(args.target, args.draft)
    dash = Dashboard(AppPaths.under(Path(tempfile.mkdtemp())), start_polling=False)
    dash.resize(1280, 800)
    key = str(Path(args.target).resolve())
    dash.set_model(key)
    measured = measure_baseline_tps(engine)  # what EngineClient.measure_baseline runs for the dashboard
    dash.set_baseline_tps(key, measured, sampling="greedy")
    dash.redraw()
    print(f"break-even line: {shown(dash)[1]:.2f} tok/s (measured plain decode {measured:.2f})")
    print(
        "\n| prompt | plain decode tok/s | auto decode tok/s | auto / plain (own stats) | dashboard vs plain "
        "| its reference | break-even line |\n|---|---|---|---|---|---|---|"
    )
    failures, plain_speeds = [], []
    for kind in PROMPTS:
        plain = reply(engine, dash, kind, "baseline", args.tokens)
        plain_speeds.append(plain.decode_tokens_per_s)
        auto = reply(engine, dash, kind, "draft", args.tokens)
        tile, line = shown(dash)
        reference = sum(plain_speeds) / len(plain_speeds)  # the session's plain replies so far (same target)
        expected = auto.decode_tokens_per_s / reference
        print(
            f"| {kind} | {plain.decode_tokens_per_s:.2f} | {auto.decode_tokens_per_s:.2f} | "
            f"{auto.decode_tokens_per_s / plain.decode_tokens_per_s:.2f} | {tile} | "
            f"{dash.reference().describe(dash.plain.clock())} | {line:.2f} |",
            flush=True,
        )
        if tile != f"{expected:.2f}×":
            failures.append(f"{kind}: the tile shows {tile}, the replies give {expected:.2f}×")
        if line is None or abs(line - reference) > 1e-6:
            failures.append(f"{kind}: the break-even line is at {line}, plain decoding ran at {reference:.2f} tok/s")
    if args.screenshot:
        dash.grab().save(args.screenshot)
    dash.stop()
    app.processEvents()
    print("\n" + ("\n".join(failures) if failures else "the dashboard agrees with the replies' own figures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
