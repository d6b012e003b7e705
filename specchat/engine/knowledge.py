"""What the engine's controllers learned about a pair on this machine, as plain data that outlives the
process: Auto K's measured costs and acceptance per mode, its confidence model, what each of Auto's
sources was worth, and the batch controller's cost table (its "batch" part; a file without one reads as
before). A new session starts from it instead of spending its first rounds learning; the file is kept per
pair, machine and power source by tuning/knowledge_store.py (costs differ on battery).
"""

from __future__ import annotations

from collections.abc import Mapping

from .auto_drafter import AutoDrafter, SourceRecord
from .autok import AutoK
from .batch.batch_costs import Cell, CostTable, Curve
from .batch.batch_k import BatchK, RowAcceptance
from .draft_stop import ConfidenceModel
from .json_types import JSONObject, JSONValue

VERSION = 1


def controller_knowledge(auto: AutoK) -> JSONObject:
    """An Auto K controller's costs, acceptance and confidence model."""
    return {
        "accepted": auto.accepted,
        "rejected": auto.rejected,
        "draft_step_s": auto.draft_step_s,
        "verify_s": {str(k): v for k, v in auto.verify_s.items()},
        "verify_rounds": {str(k): v for k, v in auto.verify_rounds.items()},
        "plain_s": auto.plain_s,
        "confidence": confidence_knowledge(auto.confidence),
        # the rate early-stopping rounds reached, and when plain decoding was last measured against them
        "rounds": [auto.round_count, auto.round_tokens, auto.round_s],
        "probe": {
            "costs": {str(k): v for k, v in (auto.probe.costs or {}).items()} if auto.probe.costs else None,
            "rounds": {str(k): v for k, v in auto.probe.rounds.items()},
            "tokens": auto.probe.tokens,
            "spent": auto.probe.spent,
        },
    }


def learn_controller(auto: AutoK, data: Mapping[str, JSONValue]) -> None:
    """Start a controller from what an earlier session learned (a field that does not read is left alone)."""
    auto.accepted = _float(data.get("accepted"), auto.accepted)
    auto.rejected = _float(data.get("rejected"), auto.rejected)
    auto.draft_step_s = _optional_float(data.get("draft_step_s"))
    auto.verify_s = {int(k): _float(v) for k, v in _map(data.get("verify_s")).items()}
    auto.verify_rounds = {int(k): int(_float(v)) for k, v in _map(data.get("verify_rounds")).items()}
    auto.plain_s = _optional_float(data.get("plain_s"))
    confidence = data.get("confidence")
    if isinstance(confidence, dict):
        learn_confidence(auto.confidence, confidence)
    rounds = data.get("rounds")
    if isinstance(rounds, list) and len(rounds) == 3:
        auto.round_count, auto.round_tokens, auto.round_s = int(_float(rounds[0])), _float(rounds[1]), _float(rounds[2])
    probe = _map(data.get("probe"))
    if probe:
        costs = probe.get("costs")
        auto.probe.costs = {int(k): _float(v) for k, v in costs.items()} if isinstance(costs, dict) else None
        auto.probe.rounds = {int(k): int(_float(v)) for k, v in _map(probe.get("rounds")).items()}
        auto.probe.tokens = int(_float(probe.get("tokens"), 0))
        auto.probe.spent = int(_float(probe.get("spent"), 0))


def confidence_knowledge(model: ConfidenceModel) -> JSONObject:
    """The confidence model's decayed counts and its calibration fit."""
    return {
        "hits": {f"{s}|{b}": v for (s, b), v in model.hits.items()},
        "trials": {f"{s}|{b}": v for (s, b), v in model.trials.items()},
        "state_hits": dict(model.state_hits),
        "state_trials": dict(model.state_trials),
        "next_hits": {str(b): v for b, v in model.next_hits.items()},
        "next_trials": {str(b): v for b, v in model.next_trials.items()},
        "overall": model.overall,
        "calibration": list(model.calibration),
    }


def learn_confidence(model: ConfidenceModel, data: Mapping[str, JSONValue]) -> None:
    """Start a confidence model from saved counts."""
    model.hits = {_state_bin(key): _float(v) for key, v in _map(data.get("hits")).items()}
    model.trials = {_state_bin(key): _float(v) for key, v in _map(data.get("trials")).items()}
    model.state_hits = {str(k): _float(v) for k, v in _map(data.get("state_hits")).items()}
    model.state_trials = {str(k): _float(v) for k, v in _map(data.get("state_trials")).items()}
    model.next_hits = {int(k): _float(v) for k, v in _map(data.get("next_hits")).items()}
    model.next_trials = {int(k): _float(v) for k, v in _map(data.get("next_trials")).items()}
    model.overall = _float(data.get("overall"), model.overall)
    calibration = data.get("calibration")
    if isinstance(calibration, list) and len(calibration) == 2:
        model.calibration = (_float(calibration[0]), _float(calibration[1]))


def sources_knowledge(auto: AutoDrafter) -> JSONObject:
    """What each of Auto's sources was worth: [accepted, checked] drafts, decayed."""
    return {name: [record.accepted, record.checked] for name, record in auto.records.items()}


def learn_sources(auto: AutoDrafter, data: Mapping[str, JSONValue]) -> None:
    """Start Auto's sources from saved counts (only the sources it has)."""
    for name, counts in data.items():
        if name in auto.records and isinstance(counts, list) and len(counts) == 2:
            auto.records[name] = SourceRecord(_float(counts[0]), _float(counts[1]))


def _state_bin(key: str) -> tuple[str, int]:
    state, _, bin_ = key.rpartition("|")
    return state, int(bin_)


def _map(value: JSONValue) -> dict[str, JSONValue]:
    """A saved map of counts or costs; {} when the field is missing or not a map."""
    return value if isinstance(value, dict) else {}


def _float(value: JSONValue, default: float | None = None) -> float:
    """A saved number (a string of one reads too, as float() does); the default, if given, for a missing one.
    ValueError for a value that is no number, as float() raises."""
    if value is None and default is not None:
        return default
    if isinstance(value, int | float | str):
        return float(value)
    raise ValueError(f"not a number: {value!r}")


def _optional_float(value: JSONValue) -> float | None:
    return None if value is None else _float(value)


def knowledge_of(controllers: dict[str, AutoK], auto: AutoDrafter | None) -> JSONObject:
    """Everything an engine's controllers learned: Auto K's per mode, and Auto's sources."""
    return {
        "version": VERSION,
        "auto_k": {mode: controller_knowledge(controller) for mode, controller in controllers.items()},
        "sources": sources_knowledge(auto) if auto is not None else {},
    }


def learn_all(controllers: dict[str, AutoK], auto: AutoDrafter | None, data: Mapping[str, JSONValue]) -> None:
    """Start an engine's controllers from saved knowledge (another version's is ignored: it may not fit)."""
    if data.get("version") != VERSION:
        return
    for mode, saved in _map(data.get("auto_k")).items():
        if isinstance(saved, dict):
            learn_controller(controllers.setdefault(str(mode), AutoK()), saved)
    sources = data.get("sources")
    if auto is not None and isinstance(sources, dict):
        learn_sources(auto, sources)


def batch_knowledge(batch: BatchK | None) -> JSONObject:
    """The batch controller's measured costs (each cell's decayed sums, per batch size and per drafting rows),
    explore state per size, last K, pooled acceptance and confidence model; {} without one."""
    if batch is None:
        return {}
    sizes: JSONObject = {
        str(rows): {"rounds": _cells(s.rounds), "verify": _cells(s.verify), "explore": [s.since, s.gap, s.tried]}
        for rows, s in batch.costs.sizes.items()
    }
    return {
        "last_k": batch.last_k,
        "pooled": [batch.pooled.accepted, batch.pooled.checked],
        "pooled_by_mode": {mode: [pool.accepted, pool.checked] for mode, pool in batch.by_mode.items()},
        "sizes": sizes,
        "draft_step": _cells(batch.costs.draft),
        "confidence": confidence_knowledge(batch.confidence),
    }


def learn_batch(batch: BatchK | None, data: Mapping[str, JSONValue]) -> BatchK | None:
    """The batch controller started from saved knowledge's "batch" part: `batch` (a new BatchK when None) with
    what was saved; `batch` as it was where nothing of this version was saved or the part does not read."""
    saved = _map(data.get("batch")) if data.get("version") == VERSION else {}
    if not saved:
        return batch
    learned = BatchK() if batch is None else batch
    try:
        costs, last_k, pooled = (
            _batch_costs(learned, saved),
            int(_float(saved.get("last_k"), learned.last_k)),
            saved.get("pooled"),
        )
        accepted, checked = (_float(pooled[0]), _float(pooled[1])) if isinstance(pooled, list) else (None, None)
        by_mode = {
            str(mode): RowAcceptance(_float(pair[0]), _float(pair[1]), learned.policy)
            for mode, pair in _map(saved.get("pooled_by_mode")).items()
            if isinstance(pair, list) and len(pair) == 2
        }
        confidence = ConfidenceModel(policy=learned.policy)
        learn_confidence(confidence, _map(saved.get("confidence")))
    except (ValueError, TypeError, IndexError):
        return batch
    learned.costs, learned.last_k, learned.confidence = costs, min(last_k, learned.k_max), confidence
    learned.by_mode = by_mode
    if accepted is not None and checked is not None:
        learned.pooled.accepted, learned.pooled.checked = accepted, checked
    return learned


def _batch_costs(batch: BatchK, saved: Mapping[str, JSONValue]) -> CostTable:
    """A cost table with the saved cells and explore state."""
    table = CostTable(batch.policy)
    for rows, part in _map(saved.get("sizes")).items():
        size, known = table.size(int(rows)), _map(part)
        _learn_cells(size.rounds, _map(known.get("rounds")))
        _learn_cells(size.verify, _map(known.get("verify")))
        explore = known.get("explore")
        if isinstance(explore, list) and len(explore) == 3:
            size.since, size.gap = int(_float(explore[0])), int(_float(explore[1]))
            size.tried = None if explore[2] is None else int(_float(explore[2]))
    _learn_cells(table.draft, _map(saved.get("draft_step")))
    return table


def _cells(curve: Curve) -> JSONObject:
    return {str(x): [c.weight, c.weight_sq, c.total, c.total_sq] for x, c in curve.cells.items()}


def _learn_cells(curve: Curve, saved: Mapping[str, JSONValue]) -> None:
    for x, sums in saved.items():
        if isinstance(sums, list) and len(sums) == 4:
            curve.cells[int(x)] = Cell(*(_float(v) for v in sums))
