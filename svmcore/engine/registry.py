"""The runs this process watches: local runs while their worker lives, and runs a Dask
worker runs for it. ``recover`` leaves both alone; the dashboard finds live runs here."""

from __future__ import annotations

import threading
from typing import Any

Run = Any  # engine.runner.Run; not imported here, which would make a cycle

_lock = threading.Lock()
_active: dict[int, Run] = {}
_remote: set[tuple[str, int]] = set()  # (store home, run id)


def register(run: Run) -> None:
    with _lock:
        _active[run.run_id] = run


def unregister(run_id: int) -> None:
    with _lock:
        _active.pop(run_id, None)


def active_runs() -> dict[int, Run]:
    with _lock:
        return dict(_active)


def get_active(run_id: int) -> Run | None:
    with _lock:
        return _active.get(run_id)


def watch_remote(home: str, run_id: int, watching: bool = True) -> None:
    """Mark a run as owned by this process though no local worker runs it (``recover``
    leaves it alone), or unmark it once its outcome is stored."""
    with _lock:
        (_remote.add if watching else _remote.discard)((home, run_id))


def is_watched(home: str, run_id: int) -> bool:
    """True if this process owns the run: a live local Run or a remote one it watches."""
    with _lock:
        return run_id in _active or (home, run_id) in _remote
