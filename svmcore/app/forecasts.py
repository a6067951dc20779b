"""What the dashboard says before a launch: the data's size in memory, the memory
model's forecast and warnings, the best setting for a budget, and the one-time
calibration that makes forecasts possible on this machine."""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass

import numpy as np

from svmcore.app.folders import DataFolders
from svmcore.app.reference import reference_under_forecasts
from svmcore.data.files import memory_sizes
from svmcore.data.sources import DataInfo, FileStamp, n_test_rows
from svmcore.engine import hostinfo
from svmcore.engine.admission import Admitted, scanned
from svmcore.engine.queue import in_background
from svmcore.engine.runner import resolve_cap
from svmcore.predict import calibration as calib
from svmcore.predict import launch
from svmcore.predict.floors import cap_below_floor, floor_for, import_costs
from svmcore.predict.recommend import recommend
from svmcore.spec.choices import Mode
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import ConfigError
from svmcore.store.sqlite import Store

PREVIEWS_KEPT = 32  # previews kept for page reruns (every session's knobs)


@dataclass(frozen=True)
class DataSize:
    """The training data's size in memory for a set of knobs, before launch."""

    rows: int  # training rows (the held-out ones left out)
    features: int
    nnz: int
    exact: bool  # False: ``nnz`` is an upper bound from a quick scan
    bytes: int  # as the knobs store it (precision, representation)
    sizes: dict  # precision -> {"sparse": bytes, "dense": bytes}
    batch_bytes: int  # one batch as stored
    resident: bool  # memory mode holds it all; stream and memmap hold a batch


@dataclass(frozen=True)
class CalibrationState:
    """Where the one-time calibration is: its runs done of the total, its error, and the
    time elapsed and left while it runs (None until two runs have ended)."""

    running: bool
    done: int
    total: int
    error: str | None
    calibrated: bool
    samples: int  # training samples of all the calibration runs
    elapsed_s: float | None
    left_s: float | None


@dataclass(frozen=True)
class Preview:
    """What the knobs in the sidebar would take, before launch."""

    launch: Admitted  # the config and its data's scans, with the forecast (None: the model failed, logged)
    size: DataSize


def data_size(cfg: RunConfig, info: DataInfo) -> DataSize:
    """Bytes the training data of ``info`` will take in memory for these knobs."""
    rows = info.rows - (n_test_rows(info.rows) if cfg.test_file is None else 0)
    nnz = int(info.nnz * rows / max(1, info.rows))
    sizes = memory_sizes(rows, info.features, nnz)
    chosen = sizes[cfg.precision][cfg.representation]
    batch = memory_sizes(cfg.batch_size, info.features, int(nnz / max(1, rows) * cfg.batch_size))
    return DataSize(rows=rows, features=info.features, nnz=nnz, exact=info.exact, bytes=chosen, sizes=sizes,
                    batch_bytes=batch[cfg.precision][cfg.representation], resident=cfg.mode == Mode.MEMORY)


class Forecasts:
    def __init__(self, store: Store, folders: DataFolders):
        self.store = store
        self.home = store.home
        self.folders = folders
        self._lock = threading.Lock()
        self._previews: dict[tuple, Preview] = {}  # the last ``PREVIEWS_KEPT``, oldest first
        self._calibration = {"running": False, "done": 0, "total": 0, "error": None}

    def preview(self, values: dict) -> Preview:
        """The knobs in the sidebar before launch: validated once, their data scanned once (data
        a launch would refuse on sight, such as the lean path on raw text, raises ConfigError/
        DataError like ``launch``), its size in memory and the one forecast (a lower bound before
        calibration). Kept by the knobs, the data files' identities and the calibration, so a
        page rerun with nothing changed forecasts nothing."""
        cfg = validate(self.folders.confined(values))
        cal = calib.load_calibration(self.home)
        key = (cfg, *(FileStamp.of(p) for p in (cfg.dataset, cfg.test_file) if p), cal and cal.created)
        with self._lock:
            kept = self._previews.get(key)
        if kept is not None:
            return kept
        seen = launch.forecast_of(scanned(cfg, self.folders.cache_dir), cal)
        made = Preview(seen, data_size(cfg, seen.scan))
        with self._lock:
            self._previews[key] = made
            while len(self._previews) > PREVIEWS_KEPT:
                self._previews.pop(next(iter(self._previews)))
        return made

    @staticmethod
    def launch_warnings(preview: Preview) -> list[str]:
        """Reasons to think twice before launching the previewed knobs, one sentence each: the
        forecast peak (a lower bound before calibration) above the memory available now or the
        run's cap, a train phase forecast to last more than a few minutes, or more threads than
        this machine's CPUs. They never block a launch."""
        seen = preview.launch
        return [] if seen.forecast is None else launch.launch_warnings(
            seen.config, seen.forecast, hostinfo.available_memory_bytes(), hostinfo.usable_cpus())

    def floor_warning(self, configs: list) -> str | None:
        """For a sweep's valid combinations (RunConfigs): the warning when some have a memory
        cap below the floor (what the libraries hold before any data), else None."""
        cal = calib.load_calibration(self.home)
        bad = [text for c in configs if (text := cap_below_floor(c, *floor_for(c, cal), resolve_cap(c)[0]))]
        return f"{len(bad)} of {len(configs)} combinations: " + bad[0].removeprefix("Memory: ") if bad else None

    def import_costs(self) -> list[dict]:
        """What importing costs per library set: this machine's calibrated floors, else
        the reference measurement (each row says which)."""
        return import_costs(calib.load_calibration(self.home))

    def recommend(self, values: dict, budget_mb: float, objective: str = "accuracy") -> dict:
        """The setting expected to do best within ``budget_mb`` (needs the calibration)."""
        values = self.folders.confined(values)
        cal = calib.load_calibration(self.home)
        if cal is None:
            raise ConfigError("budget", "calibrate the memory model first (one time, a few minutes)")
        return recommend(values, budget_mb, cal, objective, self.folders.cache_dir, self.store.list_runs(damaged=False),
                         reference_under_forecasts())

    def calibration_state(self) -> CalibrationState:
        """running, done and total runs, error, whether this machine is calibrated, the
        training samples of all its runs, and while it runs: seconds elapsed and the
        seconds left forecast from the runs done so far (None until two have ended)."""
        with self._lock:
            state = dict(self._calibration)
            ends = list(state.pop("ends", ()))
        work = calibration_work()
        elapsed = left = None
        if not state["running"]:
            state["total"] = len(work)
        elif ends:
            elapsed = time.monotonic() - ends[0]
            left = time_left(ends, work, now=time.monotonic())
        return CalibrationState(running=state["running"], done=state["done"], total=state["total"],
                                error=state["error"], calibrated=calib.load_calibration(self.home) is not None,
                                samples=sum(work), elapsed_s=elapsed, left_s=left)

    def start_calibration(self) -> None:
        """Fit the memory model in the background (a few minutes of small real runs)."""
        with self._lock:
            if self._calibration["running"]:
                return
            # ends: when it started, then when each run ended (the forecast of the time left)
            self._calibration.update(running=True, done=0, total=len(calibration_work()), error=None,
                                     ends=[time.monotonic()])

        def progress(i, n, cfg):
            with self._lock:
                self._calibration.update(done=i, total=n)
                if i:
                    self._calibration["ends"].append(time.monotonic())

        # on failure the app goes on without a model
        in_background("svmcore-calibrate", self._lock, self._calibration, lambda: calib.calibrate(self.home, progress))


@functools.cache
def calibration_work() -> tuple[int, ...]:
    """Training samples of each calibration run (rows x passes), the measure of its work."""
    out = []
    for values in calib.calibration_configs():
        cfg = validate(values)
        rows = cfg.rows if cfg.is_synthetic else 1_800  # the built-in sets are small
        out.append(rows * cfg.epochs)
    return tuple(out + calib.lean_training_rows())  # then the lean runs (one pass each)


def time_left(ends: list[float], work: tuple[int, ...], now: float) -> float | None:
    """Seconds the calibration still needs: each run's time fitted as a fixed cost (a
    process, its imports) plus a cost per training sample, by least squares over the
    runs done so far (``ends``: the start, then each run's end), applied to the runs
    left, less what the current run has already spent. None before two runs ended."""
    took = np.diff(ends)
    done = len(took)
    if done < 2:
        return None
    w = np.asarray(work[:done], dtype=float)
    if np.ptp(w) > 0:
        per_sample, fixed = np.polyfit(w, took, 1)
        if per_sample < 0 or fixed < 0:  # noise on few runs: one mean cost per run instead
            per_sample, fixed = 0.0, float(took.mean())
    else:
        per_sample, fixed = 0.0, float(took.mean())
    left = sum(fixed + per_sample * x for x in work[done:])
    return max(0.0, left - (now - ends[-1]))

