"""The dashboard's one entry point into svmcore: each user action is one method.

A ``Lab`` owns a store and the process-wide run queue. It is thread-safe and meant
to be shared by every browser session of one server (runs outlive their tab).
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
import uuid
from dataclasses import dataclass

from svmcore.app.paths import confine, is_inside
from svmcore.app.remedies import REMEDIES, Remedy
from svmcore.data.readers import FORMAT_EXT, sniff_format
from svmcore.engine.admission import admit
from svmcore.engine.queue import RunQueue
from svmcore.engine.recovery import recover
from svmcore.engine.registry import get_active
from svmcore.engine.runner import MemorySample, release_leftovers
from svmcore.predict.launch import forecast
from svmcore.spec.config import shown, validate
from svmcore.spec.errors import ConfigError, DataError
from svmcore.spec.knobs import BUILTIN_DATASETS, KNOBS
from svmcore.store.export import run_export, samples_csv
from svmcore.store.sqlite import RunRecord, RunStatus, Store
from svmcore.sweeps.frontier import TradeoffPoint, best_under, tradeoff_points
from svmcore.sweeps.grid import expand, parse_grid
from svmcore.sweeps.sweep import Sweep, start_sweep

UPLOAD_LIMIT_MB = 200
DATA_EXT = (".svm", ".svmlight", ".libsvm", ".txt", ".csv", ".npz", ".tsv")  # dropped from upload names
PATH_KNOBS = ("dataset", "test_file")  # knobs naming files: confined to the data folders (Lab._confined)


@dataclass(frozen=True)
class RunView:
    """Everything a page needs to draw one run, live or finished."""

    id: int
    status: RunStatus
    config: dict
    summary: dict
    samples: list[MemorySample]
    events: list[dict]
    label: str | None
    created_at: float
    phase: str | None = None
    elapsed_s: float | None = None
    queue_position: int | None = None
    prediction: dict | None = None
    host: str | None = None
    remote: bool = False  # a Dask worker runs it: its samples and events arrive when it ends

    @property
    def is_live(self) -> bool:
        return not self.status.is_finished()


class Lab:
    def __init__(self, home: str, slots: int = 1):
        self.home = os.path.abspath(home)
        self.store = Store(self.home)
        self.recovered = recover(self.store)
        self.queue = RunQueue(self.store, slots=slots)
        self.sweeps: dict[int, Sweep] = {}
        self._lock = threading.Lock()
        self.upload_dir = os.path.join(self.home, "uploads")
        self.data_dir = os.path.join(self.home, "datasets")
        self.data_roots = [self.upload_dir, self.data_dir] + [
            os.path.abspath(p) for p in os.environ.get("SVMCORE_DATA_DIRS", "").split(os.pathsep) if p]
        self._calibration = {"running": False, "done": 0, "total": 0, "error": None}
        self.cache_dir = os.path.join(self.home, "cache")

    # ------------------------------------------------------------- train
    def launch(self, values: dict, label: str | None = None) -> int:
        """Validate and queue a run; returns its id. Raises ConfigError/DataError."""
        cfg = admit(self._confined(values), self.cache_dir)
        return self.queue.submit(cfg, label=label, prediction=forecast(cfg, self.home)).run_id

    def cancel(self, run_id: int) -> bool:
        if self.queue.cancel(run_id):
            return True
        for sweep in list(self.sweeps.values()):
            if sweep.executor.kind != "local" and sweep.executor.cancel(run_id):
                return True
        run = get_active(run_id)
        if run is not None:
            run.cancel()
            return True
        return False

    def view(self, run_id: int) -> RunView | None:
        """A live run from its in-memory buffers, a finished one from the store."""
        run = get_active(run_id)
        if run is not None and run.run_id == run_id and not run.is_finished():
            snap = run.snapshot()
            return RunView(run_id, snap.status, run.config.to_dict(), snap.summary, snap.samples, snap.events,
                           run.label, run.started_at or 0.0, snap.phase, snap.elapsed_s if snap.status == RunStatus.RUNNING
                           else None, self.queue.position(run_id), run.prediction)
        rec = self.store.get_run(run_id)
        if rec is None:
            return None
        samples = [MemorySample(*s) for s in self.store.samples(run_id)]
        remote = rec.sweep_id in self.sweeps and self.sweeps[rec.sweep_id].executor.kind != "local"
        return RunView(rec.id, rec.status, rec.config, rec.summary, samples, self.store.events(run_id),
                       rec.label, rec.created_at, None, None, self.queue.position(run_id),
                       rec.summary.get("prediction"), rec.host, remote)

    def latest_run_id(self) -> int | None:
        runs = self.store.list_runs(limit=1)
        return runs[0].id if runs else None

    def data_size(self, values: dict) -> dict:
        """Bytes the training data will take in memory for these knobs, before launch."""
        from svmcore.data.files import memory_sizes
        from svmcore.data.sources import Source, n_test_rows, scan

        cfg = validate(self._confined(values))
        info = scan(Source(cfg), os.path.join(self.home, "cache"))
        rows = info.rows - (n_test_rows(info.rows) if cfg.test_file is None else 0)
        nnz = int(info.nnz * rows / max(1, info.rows))
        sizes = memory_sizes(rows, info.features, nnz)
        chosen = sizes[cfg.precision][cfg.representation]
        batch = memory_sizes(cfg.batch_size, info.features, int(nnz / max(1, rows) * cfg.batch_size))
        return {"rows": rows, "features": info.features, "nnz": nnz, "exact": info.exact,
                "bytes": chosen, "sizes": sizes, "batch_bytes": batch[cfg.precision][cfg.representation],
                "resident": cfg.mode == "memory"}

    # ------------------------------------------------------------- prediction
    def forecast(self, values: dict) -> dict | None:
        """The calibrated memory model's prediction for these knobs, or None before the
        machine has been calibrated."""
        from svmcore.predict import calibration as calib
        from svmcore.predict import model as estimate
        values = self._confined(values)
        cal = calib.load_calibration(self.home)
        if cal is None:
            return None
        cfg = validate(values)
        return estimate.predict(cfg, cal, cache_dir=os.path.join(self.home, "cache"))

    def launch_warnings(self, values: dict) -> list[str]:
        """Reasons to think twice before launching these knobs, one sentence each: the
        forecast peak (a lower bound before calibration) above the memory available
        now or the run's cap, or a train phase forecast to last more than a few minutes.
        They never block a launch. Raises ConfigError/DataError like ``launch``."""
        from svmcore.engine.hostinfo import available_memory_bytes
        from svmcore.predict import launch
        cfg = validate(self._confined(values))
        return launch.launch_warnings(cfg, launch.launch_forecast(cfg, self.home), available_memory_bytes())

    def recommend(self, values: dict, budget_mb: float, objective: str = "accuracy") -> dict:
        """The setting expected to do best within ``budget_mb`` (needs the calibration)."""
        from svmcore.predict import calibration as calib
        from svmcore.predict.recommend import recommend
        values = self._confined(values)
        cal = calib.load_calibration(self.home)
        if cal is None:
            raise ConfigError("budget", "calibrate the memory model first (one time, a few minutes)")
        return recommend(values, budget_mb, cal, objective, os.path.join(self.home, "cache"),
                         self.store.list_runs())

    def calibration_state(self) -> dict:
        from svmcore.predict import calibration as calib
        with self._lock:
            state = dict(self._calibration)
        state["calibrated"] = calib.load_calibration(self.home) is not None
        return state

    def start_calibration(self) -> None:
        """Fit the memory model in the background (a few minutes of small real runs)."""
        from svmcore.predict import calibration as calib
        with self._lock:
            if self._calibration["running"]:
                return
            self._calibration.update(running=True, done=0, total=len(calib.calibration_configs()), error=None)

        def progress(i, n, cfg):
            with self._lock:
                self._calibration.update(done=i, total=n)

        def work():
            try:
                calib.calibrate(self.home, progress)
            except Exception as e:  # shown on the page; the app goes on without a model
                with self._lock:
                    self._calibration["error"] = str(e)
            finally:
                with self._lock:
                    self._calibration["running"] = False

        threading.Thread(target=work, name="svmcore-calibrate", daemon=True).start()

    # ------------------------------------------------------------- history / compare
    def history(self) -> list[dict]:
        rows = []
        for r in self.store.list_runs():
            s = r.summary
            rows.append({
                "id": r.id, "status": r.status.value, "started": r.created_at, "label": r.label or "",
                "dataset": os.path.basename(str(r.config.get("dataset"))), "mode": r.config.get("mode"),
                "model": r.config.get("model"), "precision": r.config.get("precision"),
                "representation": r.config.get("representation"), "batch_size": r.config.get("batch_size"),
                "threads": r.config.get("threads"), "peak_mb": s.get("peak_rss_mb"),
                "peak_phase": s.get("peak_phase"), "accuracy": s.get("accuracy"),
                "balanced_accuracy": s.get("balanced_accuracy"), "baseline_accuracy": s.get("baseline_accuracy"),
                "samples_per_s": s.get("samples_per_s"), "wall_s": s.get("wall_s"),
                "cap": s.get("cap"), "sweep_id": r.sweep_id, "host": r.host})
        return rows

    def views(self, run_ids: list[int]) -> list[RunView]:
        return [v for v in (self.view(i) for i in run_ids) if v is not None]

    def differing_knobs(self, run_ids: list[int]) -> dict[str, list]:
        recs = [r for r in (self.store.get_run(i) for i in run_ids) if r is not None]
        if len(recs) < 2:
            return {}
        out = {}
        for k in KNOBS:
            vals = [r.config.get(k) for r in recs]
            if len(set(map(json.dumps, vals))) > 1:
                out[k] = vals
        return out

    def export(self, run_ids: list[int], fmt: str = "json") -> bytes:
        records = [run_export(self.store, i) for i in run_ids if self.store.get_run(i) is not None]
        if fmt == "json":
            return json.dumps(records, indent=1).encode()
        out = io.StringIO()
        for i, rec in enumerate(records):
            text = samples_csv(rec)
            out.write(text if i == 0 else text.split("\n", 1)[1])
        return out.getvalue().encode()

    def delete(self, run_id: int) -> None:
        rec = self.store.get_run(run_id)
        if rec is None:
            raise ConfigError("run", f"there is no run {run_id}")
        if not rec.status.is_finished():
            raise ConfigError("run", f"run {run_id} is still {rec.status.value}; cancel it first")
        self.store.delete_run(run_id)
        release_leftovers(rec.run_dir, self.home, delete_folder=True)

    # ------------------------------------------------------------- sweep
    def start_sweep(self, base: dict, grid: dict[str, list] | list[str], executor: str = "local",
                    scheduler: str | None = None) -> int:
        """Queue a grid; ``executor`` 'dask' runs it on the Dask scheduler at ``scheduler``
        (none: a local cluster). Raises an SvmcoreError naming the problem."""
        base, grid = self._confined_grid(base, grid)
        sweep = start_sweep(self.store, base, grid, executor, (scheduler or "").strip() or None, self.queue)
        with self._lock:
            self.sweeps[sweep.sweep_id] = sweep
        return sweep.sweep_id

    def sweep_preview(self, base: dict, grid: dict[str, list] | list[str]) -> list:
        """The grid's combinations over ``base`` (each with its config or the reason it is
        skipped), without queueing anything: what the Sweep page shows before Start."""
        base, grid = self._confined_grid(base, grid)
        return expand(base, grid, self.cache_dir)

    def _confined_grid(self, base: dict, grid: dict[str, list] | list[str]) -> tuple[dict, dict]:
        if isinstance(grid, list):
            grid = parse_grid(grid)
        if not grid:
            raise ConfigError("grid", "choose at least one knob to vary")
        base = self._confined(base)
        grid = {k: [self._confined({k: v})[k] for v in vals] if k in PATH_KNOBS else vals
                for k, vals in grid.items()}
        return base, grid

    def sweep_points(self, sweep_id: int, host: str | None = None) -> list[TradeoffPoint]:
        """The sweep's finished runs as trade-off points; with ``host``, only the runs on
        that host (the frontier among them: peaks and speeds compare like with like)."""
        return tradeoff_points([r for r in self.store.list_runs(sweep_id=sweep_id) if host is None or r.host == host])

    def sweep_hosts(self, sweep_id: int) -> list[str]:
        return sorted({r.host for r in self.store.list_runs(sweep_id=sweep_id) if r.host})

    def sweep_status(self, sweep_id: int) -> dict:
        runs = self.store.list_runs(sweep_id=sweep_id)
        sweep = self.sweeps.get(sweep_id)
        skipped = [{"values": p.values, "reason": p.error} for p in sweep.points if p.error] if sweep else []
        done = sum(r.status.is_finished() for r in runs)
        return {"sweep_id": sweep_id, "total": len(runs), "done": done,
                "running": [r.id for r in runs if r.status == RunStatus.RUNNING],
                "statuses": {r.id: r.status.value for r in runs}, "skipped": skipped}

    def cancel_sweep(self, sweep_id: int) -> None:
        sweep = self.sweeps.get(sweep_id)
        if sweep:
            sweep.cancel()
        else:
            for r in self.store.list_runs(sweep_id=sweep_id):
                if not r.status.is_finished():
                    self.cancel(r.id)

    def sweeps_list(self) -> list[dict]:
        return self.store.sweeps()

    def best_under(self, budget_mb: float, objective: str = "accuracy", sweep_id: int | None = None,
                   host: str | None = None) -> TradeoffPoint | None:
        recs = self.store.list_runs(sweep_id=sweep_id) if sweep_id else self.store.list_runs()
        return best_under(tradeoff_points([r for r in recs if host is None or r.host == host]), budget_mb, objective)

    # ------------------------------------------------------------- learn
    def remedies(self) -> list[Remedy]:
        return list(REMEDIES)

    def run_remedy(self, key: str, base: dict | None = None) -> tuple[int, int]:
        """Queue the remedy's before and after runs; returns their ids."""
        remedy = next((r for r in REMEDIES if r.key == key), None)
        if remedy is None:
            raise ConfigError("remedy", f"unknown remedy {shown(key)}")
        before, after = remedy.configs(self._confined(base))
        for cfg in (before, after):
            admit(cfg, self.cache_dir)
        return (self.queue.submit(before, label=f"{remedy.title}: before", prediction=forecast(before, self.home)).run_id,
                self.queue.submit(after, label=f"{remedy.title}: after", prediction=forecast(after, self.home)).run_id)

    def remedy_results(self) -> list[dict]:
        """For each remedy, its latest finished before/after pair and the measured saving."""
        out = []
        recs = self.store.list_runs()
        for remedy in REMEDIES:
            before = next((r for r in recs if r.label == f"{remedy.title}: before" and r.status.is_finished()), None)
            after = next((r for r in recs if r.label == f"{remedy.title}: after" and r.status.is_finished()
                          and (before is None or r.id > before.id)), None)
            row = {"remedy": remedy.title, "key": remedy.key, "before_id": before.id if before else None,
                   "after_id": after.id if after else None}
            if before and after:
                for name, key in (("peak_mb", "peak_rss_mb"), ("accuracy", "accuracy"),
                                  ("balanced_accuracy", "balanced_accuracy"),
                                  ("samples_per_s", "samples_per_s")):
                    row[f"before_{name}"] = before.summary.get(key)
                    row[f"after_{name}"] = after.summary.get(key)
                b, a = before.summary.get("peak_rss_mb"), after.summary.get("peak_rss_mb")
                row["saving_pct"] = 100 * (b - a) / b if a and b else None
                bt = _phase_peak(before, remedy.phase) if remedy.phase else None
                at = _phase_peak(after, remedy.phase) if remedy.phase else None
                row["phase"] = remedy.phase
                row["phase_saving_pct"] = 100 * (bt - at) / bt if bt and at else None
            out.append(row)
        return out

    # ------------------------------------------------------------- data
    def resolve_path(self, path: str, knob: str = "dataset") -> str:
        """A user-typed path, confined to the data folders (no '..', no symlinks out)."""
        return confine(path, self.data_roots, knob)

    def _confined(self, values: dict | None) -> dict:
        """A copy of knob values whose file knobs (``PATH_KNOBS``) are resolved inside the
        data folders. Every Lab method that takes knob values from the browser passes them
        through here first, so no file outside the data folders is ever opened."""
        out = dict(values or {})
        for knob in PATH_KNOBS:
            value = out.get(knob)
            if value is None or (isinstance(value, str) and not value.strip()):
                continue  # unset: validate() applies the default or refuses the empty value
            if not isinstance(value, str):
                raise ConfigError(knob, "expected a file name")
            if knob == "dataset" and value.strip() in BUILTIN_DATASETS:
                out[knob] = value.strip()
                continue
            out[knob] = self.resolve_path(value.strip(), knob)
        return out

    def save_upload(self, name: str, data: bytes) -> str:
        """Store an upload under the data folder with a generated name; returns its path.

        The format is read from the content, not the name (libsvm files come as ``a9a``
        or ``a9a.t``); the saved file's extension says the format. Binary files and
        files that do not parse are refused and not kept."""
        if len(data) > UPLOAD_LIMIT_MB * 2**20:
            raise DataError(f"the upload is {len(data) / 2**20:,.1f} MB, above the {UPLOAD_LIMIT_MB} MB limit; "
                            "for larger data, put the file in a data folder on the server and name it")
        if not data:
            raise DataError("the uploaded file is empty")
        shown = os.path.basename(name.replace("\\", "/"))[:80] or "the upload"
        stem, ext = os.path.splitext(shown)
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", stem if ext.lower() in DATA_EXT else shown)[:40] or "data"
        os.makedirs(self.upload_dir, exist_ok=True)
        base = os.path.join(self.upload_dir, f"{safe}-{uuid.uuid4().hex[:8]}")
        tmp, path = base + ".tmp", None  # .tmp files are never listed
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            path = base + FORMAT_EXT[sniff_format(tmp, by_content=True)]
            os.replace(tmp, path)
            self.inspect(path)
        except BaseException as e:
            for p in (tmp, path):
                if p and os.path.exists(p):
                    os.remove(p)
            if isinstance(e, DataError) and e.path:  # name the file as the user knows it
                raise DataError(e.reason, shown, e.line) from None
            raise
        return path

    def generate(self, kind: str, rows: int, features: int | None, nnz_per_row: int, seed: int,
                 fmt: str = "svmlight", positive_fraction: float = 0.5, sort_by_label: bool = False) -> str:
        from svmcore.data.files import make_dataset

        os.makedirs(self.data_dir, exist_ok=True)
        ext = {"svmlight": ".svm", "npz": ".npz", "text": ".txt"}[fmt]
        feats = features if features is not None else "auto"
        extra = (f"-p{positive_fraction:g}" if positive_fraction != 0.5 else "") + ("-sorted" if sort_by_label else "")
        path = os.path.join(self.data_dir, f"{kind}-{rows}x{feats}-s{seed}{extra}{ext}")
        make_dataset(kind, rows=rows, features=features, nnz_per_row=nnz_per_row, seed=seed, out=path, fmt=fmt,
                     positive_fraction=positive_fraction, sort_by_label=sort_by_label)
        return path

    def inspect(self, dataset: str, **knobs) -> dict:
        from svmcore.data.files import inspect_dataset

        values = self._confined({**knobs, "dataset": dataset})
        ds = values.pop("dataset")
        return inspect_dataset(ds, cache_dir=os.path.join(self.home, "cache"), **values)

    def datasets(self) -> list[str]:
        """Files in the data folders, newest first. A symlink is listed only if it leads
        to a file inside the data folders (never one outside, nor a broken one)."""
        real_roots = [os.path.realpath(r) for r in self.data_roots]
        files = []
        for root in self.data_roots:
            if os.path.isdir(root):
                for name in os.listdir(root):
                    p = os.path.join(root, name)
                    if name.endswith(".tmp") or not is_inside(os.path.realpath(p), real_roots):
                        continue
                    if os.path.isfile(p):
                        files.append(p)
        return sorted(files, key=os.path.getmtime, reverse=True)


def _phase_peak(rec: RunRecord, phase: str) -> float | None:
    return next((p.get("peak_rss_mb") for p in rec.summary.get("phases") or [] if p["name"] == phase), None)




