"""What the engine's controllers learned about a pair (engine/knowledge.py), kept on disk per pair, machine
and power source: a new session's first reply starts from the last one's costs and acceptance, and a change
of machine or a switch to battery starts afresh (its costs differ)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from specchat.engine.errors import EngineError
from specchat.engine.owner import EngineHost, knowledge_job, learn_job
from specchat.jsonfile import write_json_atomic
from specchat.paths import AppPaths
from specchat.system.machine import chip_name
from specchat.system.power import read_power

from .best_k import model_key

log = logging.getLogger(__name__)


def knowledge_file(paths: AppPaths, folders: list[str | Path | None], machine: str, power: str) -> Path:
    """The file for this pair (target, draft, DFlash drafter folders), machine and power source."""
    parts = [model_key(f) if f else "-" for f in folders] + [machine, power]
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]
    return paths.knowledge_dir / f"{digest}.json"


def load_knowledge(file: Path) -> dict[str, Any]:
    """The saved knowledge, {} when there is none or it does not read (said once in the log)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("the speculation knowledge in %s does not read (%s): starting afresh", file, exc)
        return {}
    return data if isinstance(data, dict) else {}


def save_knowledge(file: Path, data: dict[str, Any]) -> bool:
    """Write the knowledge atomically; False (said in the log) when the disk refuses."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(file, data)
    except OSError as exc:
        log.warning("could not keep the speculation knowledge in %s: %s", file, exc)
        return False
    return True


class RememberedPair:
    """The knowledge of the pair a host has loaded: learned at the start of a session, kept at its end.
    Both run as jobs on the host (the engine belongs to its thread)."""

    def __init__(self, host: EngineHost, file: Path):
        self.host, self.file = host, file

    @classmethod
    def here(cls, host: EngineHost, paths: AppPaths, folders: list[str | Path | None]) -> RememberedPair:
        """The pair's file on this machine, on its current power source."""
        return cls(host, knowledge_file(paths, folders, chip_name(), str(read_power().source)))

    def learn(self) -> None:
        """Start the loaded engine's controllers from the file (nothing to do without one)."""
        data = load_knowledge(self.file)
        if data:
            self.host.submit("learn", learn_job(data)).result()

    def keep(self) -> bool:
        """Save what the loaded engine's controllers know now; False (said in the log) when the engine is gone."""
        try:
            data = self.host.submit("knowledge", knowledge_job()).result(timeout=60)
        except (EngineError, TimeoutError) as exc:
            log.warning("could not read what the speculation controllers learned: %s", exc)
            return False
        return bool(data) and save_knowledge(self.file, data)
