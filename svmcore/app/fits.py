"""The diagnosis loop as the dashboard runs it: ``diagnose`` a run, and ``start`` a
"Make it fit" loop (``svmcore.app.fit``) in the background, its attempts through the
run queue like any launch, its progress readable from any session (``state``)."""

from __future__ import annotations

import itertools
import logging
import threading
import time

from svmcore.app.doctor import diagnose
from svmcore.app.fit import fit
from svmcore.app.fit_views import FIT_HARNESS, FitCard, fit_card
from svmcore.app.headlines import RunFacts
from svmcore.app.folders import DataFolders
from svmcore.app.reference import remedies_reference
from svmcore.engine import admission
from svmcore.engine.queue import RunQueue
from svmcore.predict import calibration as calib
from svmcore.predict.launch import admit
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import KNOBS
from svmcore.spec.status import RunStatus
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

    def failed_budget(self, run_id: int) -> float | None:
        """The budget a finished run did not fit: an oom run's cap, or the budget (of its fit,
        else its cap) that it completed above; None for a run that fitted, or is not over."""
        rec = self.store.get_run(run_id)
        if rec is None or not rec.status.is_finished():
            return None
        fit_budget = (rec.change or {}).get("budget_mb")
        peak = rec.summary.run_peak.mb  # a data-parallel run: all its processes
        if rec.status == RunStatus.OOM:
            return fit_budget or rec.summary.cap_mb
        # a fit's budget judges the run's peak; a cap alone was met by a run that completed under it (a
        # cgroup cap limits the charge, which RSS may pass: docs/runs.md)
        if rec.status == RunStatus.COMPLETED and fit_budget is not None and peak is not None and peak > fit_budget:
            return fit_budget
        return None

    def fitting_knobs(self, fit_id: int) -> dict | None:
        """The knobs the loop started from, with the fitting run's changes (not the budget as
        a cap: the user's own cap stays as it was); None until a run fits."""
        state, card = self.state(fit_id), self.card(fit_id)
        if state is None or card is None or not card.fits:
            return None
        return {**state["values"], **card.apply}

    def budget_of(self, run_id: int) -> float | None:
        """The budget a run was launched under: the fit's that launched it, else its cap."""
        rec = self.store.get_run(run_id)
        if rec is None:
            return None
        return (rec.change or {}).get("budget_mb") or rec.config.get("memory_cap_mb")

    def start(self, values: dict, budget_mb: float, origin: int | None = None) -> int:
        """Start the loop for these knobs in the background; returns its id for ``state``.
        ``origin``: the run shown, set beside the result (``card``) if it did not fit this budget
        with the same knobs (else the loop's first attempt that did not fit is).
        Raises ConfigError/DataError at once if the knobs cannot run at all."""
        values = self.folders.confined(values)
        first = admission.admit(values, self.folders.cache_dir)  # refused at once if the knobs cannot run at all
        fit_id = next(self._ids)
        rec = self.store.get_run(origin) if origin is not None else None
        # the run that did not fit is set beside the result when the loop starts from its setting and it did not fit
        # this budget (out of memory, or an exact peak above it)
        missed = rec is not None and (rec.status == RunStatus.OOM or (rec.status == RunStatus.COMPLETED and (
            rec.summary.run_peak.mb or 0) > budget_mb))
        origin = origin if missed and _same_setting(rec.config, first.config.to_dict()) else None
        state = {"running": True, "steps": [], "runs": [], "result": None, "error": None, "budget_mb": budget_mb,
                 "origin": origin, "values": dict(values), "started_at": time.monotonic(), "took_s": None}
        with self._lock:
            self._loops[fit_id] = state

        def launch(cfg, parent, change):
            run = self.queue.submit(admit(cfg, self.store.home), label="fit")
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
                    state["took_s"] = time.monotonic() - state["started_at"]

        threading.Thread(target=work, name=f"svmcore-fit-{fit_id}", daemon=True).start()
        return fit_id

    def card(self, fit_id: int) -> FitCard | None:
        """The result card of an ended loop (None while it runs, or when it failed): the run
        that did not fit (its ``origin``, else its first attempt that did not) beside the one
        that fits."""
        state = self.state(fit_id)
        if state is None or state["running"] or state["result"] is None:
            return None
        result, budget = state["result"], state["budget_mb"]
        recs = {i: self.store.get_run(i) for i in [state["origin"], *state["runs"]] if i is not None}
        facts = {i: RunFacts.of(i, r.status.value, r.summary, label=r.name or "") for i, r in recs.items() if r}
        missed = [a["run_id"] for a in result["attempts"]
                  if a["status"] != "completed" or (a["peak_mb"] or 0) > budget]
        failed = facts.get(state["origin"]) or next((facts[i] for i in missed if i in facts), None)
        fitting = facts.get(result["attempts"][-1]["run_id"]) if result["attempts"] else None
        return fit_card(result, failed, fitting, state["took_s"])

    def state(self, fit_id: int) -> dict | None:
        """running, steps (one sentence each), runs launched so far, result, error."""
        with self._lock:
            s = self._loops.get(fit_id)
            return None if s is None else {**s, "steps": list(s["steps"]), "runs": list(s["runs"])}


def _same_setting(a: dict, b: dict) -> bool:
    """Two configs alike in every knob but the memory cap (which a fit sets to its budget)."""
    return all(a.get(k) == b.get(k) for k in KNOBS if k not in FIT_HARNESS)
