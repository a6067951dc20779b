"""The diagnosis loop as the dashboard runs it: ``diagnose`` a run, and ``start`` a
"Make it fit" loop (``svmcore.app.fit``) in the background, its attempts through the
run queue like any launch, its progress readable from any session (``state``)."""

from __future__ import annotations

import itertools
import logging
import threading

from svmcore.app.doctor import diagnose
from svmcore.app.fit import fit
from svmcore.app.folders import DataFolders
from svmcore.app.reference import remedies_reference
from svmcore.engine.admission import admit
from svmcore.engine.queue import RunQueue
from svmcore.predict import calibration as calib
from svmcore.predict.launch import forecast
from svmcore.spec.errors import ConfigError
from svmcore.store.sqlite import Store

log = logging.getLogger(__name__)
RUN_TIMEOUT_S = 3600.0


class Fits:
    def __init__(self, store: Store, queue: RunQueue, folders: DataFolders):
        self.store = store
        self.queue = queue
        self.folders = folders
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loops: dict[int, dict] = {}

    def diagnose(self, run_id: int, budget_mb: float | None = None) -> dict:
        """Why run ``run_id`` did not fit (``budget_mb``: default an oom run's cap). Raises
        ConfigError for an unknown or unfinished run."""
        rec = self.store.get_run(run_id)
        if rec is None:
            raise ConfigError("run", f"there is no run {run_id}")
        if not rec.status.is_finished():
            raise ConfigError("run", f"run {run_id} is still {rec.status.value}")
        return diagnose(rec, budget_mb, calib.load_calibration(self.store.home), remedies_reference(),
                        self.folders.cache_dir)

    def budget_of(self, run_id: int) -> float | None:
        """The budget a run was launched under: the fit's that launched it, else its cap."""
        rec = self.store.get_run(run_id)
        if rec is None:
            return None
        return (rec.change or {}).get("budget_mb") or rec.config.get("memory_cap_mb")

    def start(self, values: dict, budget_mb: float) -> int:
        """Start the loop for these knobs in the background; returns its id for ``state``.
        Raises ConfigError/DataError at once if the knobs cannot run at all."""
        values = self.folders.confined(values)
        admit(values, self.folders.cache_dir)
        fit_id = next(self._ids)
        state = {"running": True, "steps": [], "runs": [], "result": None, "error": None, "budget_mb": budget_mb}
        with self._lock:
            self._loops[fit_id] = state

        def launch(cfg, parent, change):
            admit(cfg, self.folders.cache_dir)
            run = self.queue.submit(cfg, label="fit", prediction=forecast(cfg, self.store.home))
            self.store.set_lineage(run.run_id, parent, change)
            with self._lock:
                state["runs"].append(run.run_id)
            run.wait(RUN_TIMEOUT_S)
            if not run.is_finished():  # a stuck attempt ends the loop as cancelled, not hanging it
                run.cancel()
                run.wait(30)
            return self.store.get_run(run.run_id)

        def step(text: str) -> None:
            with self._lock:
                state["steps"].append(text)

        def work():
            try:
                result = fit(values, budget_mb, launch, calib.load_calibration(self.store.home), remedies_reference(),
                             self.folders.cache_dir, progress=step)
                with self._lock:
                    state["result"] = result
            except Exception as e:  # shown on the page; the runs made so far stay in the history
                log.exception("fit failed")
                with self._lock:
                    state["error"] = str(e)
            finally:
                with self._lock:
                    state["running"] = False

        threading.Thread(target=work, name=f"svmcore-fit-{fit_id}", daemon=True).start()
        return fit_id

    def state(self, fit_id: int) -> dict | None:
        """running, steps (one sentence each), runs launched so far, result, error."""
        with self._lock:
            s = self._loops.get(fit_id)
            return None if s is None else {**s, "steps": list(s["steps"]), "runs": list(s["runs"])}
