"""A process-wide queue of runs: by default one at a time, so that runs do not
disturb each other's timings. Single launches and sweeps share it."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from svmcore.engine.admission import Admitted
from svmcore.engine.runner import Run
from svmcore.spec.config import RunConfig
from svmcore.store.sqlite import Store

log = logging.getLogger(__name__)


def in_background(name: str, lock: threading.Lock, state: dict, work: Callable[[], Any]) -> None:
    """Run ``work`` on a daemon thread of its own: ``state`` (under ``lock``) gets its ``result``,
    or the ``error`` it raised (logged), then ``running`` False and ``took_s``, its seconds."""
    started = time.monotonic()

    def run():
        try:
            result = work()
            with lock:
                state["result"] = result
        except Exception as e:  # shown on the page by the caller's state
            log.exception("%s failed", name)
            with lock:
                state["error"] = str(e)
        finally:
            with lock:
                state.update(running=False, took_s=time.monotonic() - started)

    threading.Thread(target=run, name=name, daemon=True).start()


class RunQueue:
    """Thread-safe FIFO of runs with at most ``slots`` running at once."""

    def __init__(self, store: Store, slots: int = 1):
        self.store = store
        self.slots = slots
        self._pending: deque[Run] = deque()
        self._running: list[Run] = []
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._dispatch, name="svmcore-queue", daemon=True)
        self._thread.start()

    def submit(self, launch: Admitted | RunConfig, sweep_id: int | None = None, extra_env: dict | None = None,
               label: str | None = None) -> Run:
        """Queue a run (``Run``'s launch); it is in the store (status queued) when this returns."""
        run = Run(self.store, launch, sweep_id=sweep_id, extra_env=extra_env, label=label)
        run.enqueue()
        with self._wake:
            self._pending.append(run)
            self._wake.notify()
        return run

    def position(self, run_id: int) -> int | None:
        """1-based place in the queue of a run still waiting, else None."""
        with self._lock:
            for i, run in enumerate(self._pending):
                if run.run_id == run_id:
                    return i + 1
        return None

    def cancel(self, run_id: int) -> bool:
        with self._lock:
            for run in list(self._pending):
                if run.run_id == run_id:
                    self._pending.remove(run)
                    run.cancel()
                    run.start()  # records `cancelled` without spawning anything
                    return True
            for run in self._running:
                if run.run_id == run_id:
                    run.cancel()
                    return True
        return False

    def pending(self) -> list[Run]:
        with self._lock:
            return list(self._pending)

    def _dispatch(self) -> None:
        while True:
            with self._wake:
                self._running = [r for r in self._running if not r.is_finished()]
                while not self._pending or len(self._running) >= self.slots:
                    self._wake.wait(0.2)
                    self._running = [r for r in self._running if not r.is_finished()]
                run = self._pending.popleft()
                self._running.append(run)
            try:
                run.start()
            except Exception as e:  # a store error must not stop the queue
                run._fail_to_start(f"the run could not start: {e}")
