"""The dashboard's one entry point into svmcore: each user action is one method.

A ``Lab`` owns a store and the process-wide run queue. It is thread-safe and meant
to be shared by every browser session of one server (runs outlive their tab).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import threading
import uuid
from dataclasses import dataclass

from .cli import run_export, samples_csv
from .config import validate
from .datasets import preflight
from .errors import ConfigError, DataError
from .executors import make_executor
from .knobs import BUILTIN_DATASETS, KNOBS
from .remedies import REMEDIES, Remedy
from .run_queue import RunQueue
from .runner import MemorySample, get_active, recover
from .store import RunRecord, RunStatus, Store
from .sweep import Sweep, TradeoffPoint, best_under, expand, parse_grid, tradeoff_points

UPLOAD_LIMIT_MB = 200
ALLOWED_UPLOAD_EXT = (".svm", ".svmlight", ".libsvm", ".txt", ".csv", ".npz", ".tsv")


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

    # ------------------------------------------------------------- train
    def launch(self, values: dict, label: str | None = None) -> int:
        """Validate and queue a run; returns its id. Raises ConfigError/DataError."""
        values = dict(values)
        if values.get("dataset") and values["dataset"] not in BUILTIN_DATASETS:
            values["dataset"] = self.resolve_path(values["dataset"])
        if values.get("test_file"):
            values["test_file"] = self.resolve_path(values["test_file"])
        cfg = validate(values)
        preflight(cfg, os.path.join(self.home, "cache"))  # what only the data can refuse, before anything is stored
        return self.queue.submit(cfg, label=label).run_id

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
                           run.label, run._t0 or 0.0, snap.phase, snap.elapsed_s if snap.status == RunStatus.RUNNING
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
        from .datasets import Source, n_test_rows, scan
        from .datasets_io import memory_sizes

        cfg = validate(dict(values, dataset=self._resolve_or_builtin(values.get("dataset", "sparse-text"))))
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
        from . import estimate
        cal = estimate.load_calibration(self.home)
        if cal is None:
            return None
        cfg = validate(dict(values, dataset=self._resolve_or_builtin(values.get("dataset", "sparse-text"))))
        return estimate.predict(cfg, cal, cache_dir=os.path.join(self.home, "cache"))

    def launch_warnings(self, values: dict) -> list[str]:
        """Reasons to think twice before launching these knobs, one sentence each: the
        forecast peak (a lower bound before calibration) above the memory available
        now or the run's cap, or a train phase forecast to last more than a few minutes.
        They never block a launch. Raises ConfigError/DataError like ``launch``."""
        from . import estimate
        from .hostinfo import available_memory_bytes
        values = dict(values, dataset=self._resolve_or_builtin(values.get("dataset", "sparse-text")))
        if values.get("test_file"):
            values["test_file"] = self.resolve_path(values["test_file"])
        cfg = validate(values)
        return estimate.launch_warnings(cfg, estimate.launch_forecast(cfg, self.home), available_memory_bytes())

    def recommend(self, values: dict, budget_mb: float, objective: str = "accuracy") -> dict:
        """The setting expected to do best within ``budget_mb`` (needs the calibration)."""
        from . import estimate
        from .recommend import recommend
        cal = estimate.load_calibration(self.home)
        if cal is None:
            raise ConfigError("budget", "calibrate the memory model first (one time, a few minutes)")
        values = dict(values, dataset=self._resolve_or_builtin(values.get("dataset", "sparse-text")))
        return recommend(values, budget_mb, cal, objective, os.path.join(self.home, "cache"),
                         self.store.list_runs())

    def calibration_state(self) -> dict:
        from . import estimate
        with self._lock:
            state = dict(self._calibration)
        state["calibrated"] = estimate.load_calibration(self.home) is not None
        return state

    def start_calibration(self) -> None:
        """Fit the memory model in the background (a few minutes of small real runs)."""
        from . import estimate
        with self._lock:
            if self._calibration["running"]:
                return
            self._calibration.update(running=True, done=0, total=len(estimate.calibration_configs()), error=None)

        def progress(i, n, cfg):
            with self._lock:
                self._calibration.update(done=i, total=n)

        def work():
            try:
                estimate.calibrate(self.home, progress)
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
        if rec.run_dir and os.path.isdir(rec.run_dir) and rec.run_dir.startswith(self.home):
            shutil.rmtree(rec.run_dir, ignore_errors=True)

    # ------------------------------------------------------------- sweep
    def start_sweep(self, base: dict, grid: dict[str, list] | list[str], executor: str = "local",
                    scheduler: str | None = None) -> int:
        """Queue a grid; ``executor`` 'dask' runs it on the Dask scheduler at ``scheduler``
        (none: a local cluster). Raises an SvmcoreError naming the problem."""
        if isinstance(grid, list):
            grid = parse_grid(grid)
        if not grid:
            raise ConfigError("grid", "choose at least one knob to vary")
        base = dict(base)
        if base.get("dataset") and base["dataset"] not in BUILTIN_DATASETS:
            base["dataset"] = self.resolve_path(base["dataset"])
        points = expand(base, grid, os.path.join(self.home, "cache"))
        if all(p.config is None for p in points):
            raise ConfigError("grid", "no combination is valid: " + points[0].error)
        threads = max(p.config.threads for p in points if p.config)
        ex = make_executor(executor, self.store, self.queue, (scheduler or "").strip() or None, threads)
        sweep = Sweep(self.store, ex, base, grid)
        with self._lock:
            self.sweeps[sweep.sweep_id] = sweep
        return sweep.sweep_id

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
            raise ConfigError("remedy", f"unknown remedy {key!r}")
        before, after = remedy.configs(base or {})
        for cfg in (before, after):
            preflight(cfg, os.path.join(self.home, "cache"))
        return (self.queue.submit(before, label=f"{remedy.title}: before").run_id,
                self.queue.submit(after, label=f"{remedy.title}: after").run_id)

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
    def resolve_path(self, path: str) -> str:
        """A user-typed path, confined to the data folders (no '..', no symlinks out)."""
        return confine(path, self.data_roots)

    def _resolve_or_builtin(self, dataset: str) -> str:
        return dataset if dataset in BUILTIN_DATASETS else self.resolve_path(dataset)

    def save_upload(self, name: str, data: bytes) -> str:
        """Store an upload under the data folder with a generated name; returns its path."""
        if len(data) > UPLOAD_LIMIT_MB * 2**20:
            raise DataError(f"the upload is {len(data) / 2**20:,.1f} MB, above the {UPLOAD_LIMIT_MB} MB limit; "
                            "for larger data, put the file in a data folder on the server and name it")
        if not data:
            raise DataError("the uploaded file is empty")
        ext = os.path.splitext(name)[1].lower()
        if ext not in ALLOWED_UPLOAD_EXT:
            raise DataError(f"files ending in {ext or '(nothing)'} are not accepted; use one of "
                            f"{', '.join(ALLOWED_UPLOAD_EXT)}")
        os.makedirs(self.upload_dir, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.splitext(os.path.basename(name))[0])[:40] or "data"
        path = os.path.join(self.upload_dir, f"{safe}-{uuid.uuid4().hex[:8]}{ext}")
        with open(path, "wb") as f:
            f.write(data)
        try:
            self.inspect(path)
        except DataError:
            os.remove(path)
            raise
        return path

    def generate(self, kind: str, rows: int, features: int | None, nnz_per_row: int, seed: int,
                 fmt: str = "svmlight") -> str:
        from .datasets_io import make_dataset

        os.makedirs(self.data_dir, exist_ok=True)
        ext = {"svmlight": ".svm", "npz": ".npz", "text": ".txt"}[fmt]
        feats = features if features is not None else "auto"
        path = os.path.join(self.data_dir, f"{kind}-{rows}x{feats}-s{seed}{ext}")
        make_dataset(kind, rows=rows, features=features, nnz_per_row=nnz_per_row, seed=seed, out=path, fmt=fmt)
        return path

    def inspect(self, dataset: str, **knobs) -> dict:
        from .datasets_io import inspect_dataset

        ds = self._resolve_or_builtin(dataset)
        return inspect_dataset(ds, cache_dir=os.path.join(self.home, "cache"), **knobs)

    def datasets(self) -> list[str]:
        """Files in the data folders, newest first."""
        files = []
        for root in self.data_roots:
            if os.path.isdir(root):
                for name in os.listdir(root):
                    p = os.path.join(root, name)
                    if os.path.isfile(p) and not name.endswith(".tmp"):
                        files.append(p)
        return sorted(files, key=os.path.getmtime, reverse=True)


def _phase_peak(rec: RunRecord, phase: str) -> float | None:
    return next((p.get("peak_rss_mb") for p in rec.summary.get("phases") or [] if p["name"] == phase), None)


def confine(path: str, roots: list[str]) -> str:
    """Resolve ``path`` (relative paths against the first root) and refuse anything
    outside ``roots`` after symlinks are followed."""
    if not path or "\x00" in path:
        raise ConfigError("dataset", "a file path is required")
    candidate = path if os.path.isabs(path) else os.path.join(roots[0], path)
    real = os.path.realpath(candidate)
    for root in roots:
        root_real = os.path.realpath(root)
        if real == root_real or real.startswith(root_real + os.sep):
            if not os.path.isfile(real):
                raise ConfigError("dataset", f"no such file in the data folders: {os.path.basename(path)}")
            return real
    raise ConfigError("dataset", "that path is outside the data folders (the data home's datasets and "
                      "uploads folders, and SVMCORE_DATA_DIRS); copy the file there (symlinks that lead outside are refused)")
