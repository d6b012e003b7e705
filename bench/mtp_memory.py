"""Peak memory of MTP mode vs plain decoding of the same model without its head, and growth with length.

Issue 3: holding the head costs its weights only; rollback memory as in draft mode. Budget, as for
draft mode: peak(MTP mode) <= peak(baseline, no head loaded) x 1.05 + head weights + (K+1) recurrent
states, and MTP mode's overhead over baseline (MTP-mode peak minus baseline peak minus the head's own
KV cache) must not grow from 64 to 512 tokens. Not "peak minus every KV cache": a KV cache grows by
copying (old and new buffers briefly coexist), so that grows in plain decoding too. Both ways of
running the head: without history (the default) and with it (its own KV cache).
Run: python bench/mtp_memory.py [--k 4]
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import mlx.core as mx
from hybrid_memory import GB, memory_args, peak, recurrent_state_bytes, weight_bytes

from specchat.engine import Engine
from tests.fixtures.mtp_models import build_hybrid_mtp


def without_head(folder: Path, dest: Path) -> Path:
    """A copy of a model folder with its MTP sidecar left out: the same model, no head to load."""
    shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("mtp.safetensors"))
    return dest


def head_cache_bytes(engine: Engine) -> int:
    """Bytes held by the MTP head's own KV cache (empty without history)."""
    return sum(c.nbytes for c in engine.drafters["mtp"].cache)


def measure(folder: Path, plain: Path, ids, k: int, n: int, history: bool) -> dict:
    """Baseline (no head) and MTP-mode peaks of one length, and the parts of the budget."""
    base_engine = Engine.load(plain)
    assert base_engine.available_modes()["mtp"] is not None, "the baseline copy must not hold the head"
    base = peak(base_engine, ids, "baseline", k, n)
    plain_weights = weight_bytes(base_engine.target.model)
    del base_engine
    engine = Engine.load(folder)
    spec = peak(engine, ids, "mtp", k, n, mtp_history=history)
    assert spec.tokens == base.tokens, "MTP output differs from baseline"
    row = {
        "n": n,
        "base": base.stats.peak_memory_bytes,
        "spec": spec.stats.peak_memory_bytes,
        "head": weight_bytes(engine.target.model) - plain_weights,
        "states": recurrent_state_bytes(engine.runner),
        "head_kv": head_cache_bytes(engine),
        "acceptance": spec.stats.acceptance_rate,
    }
    row["budget"] = row["base"] * 1.05 + row["head"] + (k + 1) * row["states"]
    row["overhead"] = row["spec"] - row["base"] - row["head_kv"]
    return row


def main() -> None:
    args = memory_args(__doc__)
    root = Path(tempfile.mkdtemp(prefix="specchat-bench-mtp-memory-"))
    folder = build_hybrid_mtp(root / "model", head="agree", fc_noise=0.3, hidden=args.hidden, layers=args.layers)
    plain = without_head(folder, root / "no_head")
    ids = list(Engine.load(plain).tokenizer.encode("Write a long story about the sea."))
    print(
        f"hybrid qwen3_5 hidden={args.hidden} layers={args.layers} + 1 MTP layer (sidecar); depth {args.k}; "
        f"baseline = the same folder without the sidecar; MLX device {mx.default_device()}"
    )
    print(
        "| head history | tokens | baseline peak GB | MTP-mode peak GB | head weights GB | recurrent states MB "
        "| budget GB | within budget | head KV cache MB | MTP peak - baseline peak - head KV, MB | acceptance |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for history in (False, True):
        rows = [measure(folder, plain, ids, args.k, n, history) for n in (64, 512)]
        for r in rows:
            print(
                f"| {'on' if history else 'off'} | {r['n']} | {r['base'] / GB:.4f} | {r['spec'] / GB:.4f} | "
                f"{r['head'] / GB:.4f} | {r['states'] / 1e6:.3f} | {r['budget'] / GB:.4f} | "
                f"{'yes' if r['spec'] <= r['budget'] else 'NO'} | {r['head_kv'] / 1e6:.2f} | "
                f"{r['overhead'] / 1e6:.2f} | {r['acceptance']:.0%} |",
                flush=True,
            )
        growth = rows[1]["overhead"] - rows[0]["overhead"]
        print(
            f"history {'on' if history else 'off'}: MTP-mode overhead over baseline (head KV cache aside), "
            f"512 vs 64 tokens: {growth / 1e6:+.2f} MB"
        )


if __name__ == "__main__":
    main()
