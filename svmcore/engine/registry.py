"""The runs this process watches: local runs while their worker lives, and runs a Dask
worker runs for it. ``recover`` leaves both alone; the dashboard finds live runs here.
A run is known by its store's home and its id: a server holds runs of more than one
store (the history's, and the calibration's ids 1-45 in a folder of their own), and by
id alone a calibration run was drawn as the history run of the same id."""

from __future__ import annotations

import os
import threading
from typing import Any

Run = Any  # engine.runner.Run; not imported here, which would make a cycle

_lock = threading.Lock()
_active: dict[tuple[str, int], Run] = {}  # (store home, run id)
_remote: set[tuple[str, int]] = set()  # (store home, run id)


def _key(home: str, run_id: int) -> tuple[str, int]:
    return os.path.abspath(home), run_id


def register(run: Run) -> None:
    with _lock:
        _active[_key(run.store.home, run.run_id)] = run


def unregister(run: Run) -> None:
    with _lock:
        key = _key(run.store.home, run.run_id)
        if _active.get(key) is run:
            del _active[key]


def active_runs() -> dict[tuple[str, int], Run]:
    with _lock:
        return dict(_active)


def get_active(home: str, run_id: int) -> Run | None:
    with _lock:
        return _active.get(_key(home, run_id))


def watch_remote(home: str, run_id: int, watching: bool = True) -> None:
    """Mark a run as owned by this process though no local worker runs it (``recover``
    leaves it alone), or unmark it once its outcome is stored."""
    with _lock:
        (_remote.add if watching else _remote.discard)(_key(home, run_id))


def is_watched(home: str, run_id: int) -> bool:
    """True if this process owns the run: a live local Run or a remote one it watches."""
    with _lock:
        return _key(home, run_id) in _active or _key(home, run_id) in _remote
