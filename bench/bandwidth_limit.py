"""The physical limit of plain decoding on this machine: copy bandwidth, what plain decoding reaches of it
(every weight read once per token) and speculation's speed as a multiple of the one-token-per-pass limit.

Run: python bench/bandwidth_limit.py --target T [--draft D] [--tokens 64] [--k 3]
"""

from __future__ import annotations

import argparse

from common import chat_ids
from real_pair import PROMPTS

from specchat.engine import Engine, GenerationConfig
from specchat.engine.loading import weight_bytes
from specchat.system.bandwidth import decode_limit, measure_copy_bandwidth
from specchat.system.machine import chip_name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--k", type=int, default=3)
    args = parser.parse_args()
    engine = Engine.load(args.target, args.draft)
    ids = chat_ids(engine, PROMPTS["code"])
    bandwidth = measure_copy_bandwidth(chip_name())
    engine.generate(ids, GenerationConfig(max_tokens=8))  # warm up
    plain = engine.generate(ids, GenerationConfig(max_tokens=args.tokens)).stats.decode_tokens_per_s
    limit = decode_limit(weight_bytes(engine.target), plain, bandwidth)
    print(f"{bandwidth.machine}: copy bandwidth {bandwidth.gb_per_s:.1f} GB/s (read + written)")
    print(f"target weights {weight_bytes(engine.target) / 1e9:.2f} GB; plain decoding {plain:.2f} tok/s")
    print(f"plain decoding reads {limit.reached_bytes_per_s / 1e9:.1f} GB/s: {limit.share:.0%} of the copy bandwidth")
    print(f"one token per pass cannot beat {limit.one_token_limit_tps:.2f} tok/s here")
    if args.draft:
        cfg = GenerationConfig(mode="draft", num_draft_tokens=args.k, max_tokens=args.tokens)
        spec = engine.generate(ids, cfg).stats.decode_tokens_per_s
        print(f"speculation at K={args.k}: {spec:.2f} tok/s, {spec / limit.one_token_limit_tps:.2f}x that limit")


if __name__ == "__main__":
    main()
