"""Fitting the memory and time model on this machine: a fixed set of small real runs
(through the engine, in a store of their own), non-negative least squares per phase,
cached in ``$SVMCORE_HOME/calibration.json`` keyed by machine and library versions."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time

import numpy as np

from svmcore.data.sources import n_test_rows
from svmcore.predict.model import (
    PHASES,
    Calibration,
    Shape,
    data_shape,
    features,
    floor_key,
    parts,
    time_features,
)
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.result import DataInfo, RunSummary
from svmcore.spec.units import MiB

log = logging.getLogger(__name__)


def fit_train_time(observations: list[tuple[RunConfig, RunSummary]]) -> dict[str, float]:
    """CPU seconds per unit of each time feature: a non-negative least-squares fit to the
    train phase's CPU time of the calibration runs (``train_cpu_s``), each weighted by its
    relative error (runs under half a second count less: their timings are mostly noise).
    Wall seconds measured the machine's load too: calibrated while other processes shared the
    two cores, an MLP's forecast came out 2.4x the run's time on a quiet machine (issue 40)."""
    from scipy.optimize import nnls

    rows, ys = [], []
    for cfg, s in observations:
        seconds = train_cpu_s(s)
        if seconds is None:
            continue
        rows.append(time_features(cfg, _shape_from_summary(cfg, s)))
        ys.append(seconds)
    names = sorted({k for r in rows for k in r})
    if not names:
        return {}
    w = 1.0 / (np.array(ys) + 0.5)
    A = np.array([[r.get(n, 0.0) for n in names] for r in rows])
    scale = np.maximum(A.max(axis=0), 1e-300)  # columns of like size, for a well-conditioned fit
    x, _ = nnls(A / scale * w[:, None], np.array(ys) * w)
    return {n: float(c / sc) for n, c, sc in zip(names, x, scale)}


def train_cpu_s(summary: RunSummary) -> float | None:
    """The train phase's CPU seconds (every thread of the worker), or, for a run recorded before
    phases carried them, its train seconds."""
    cpu_s = next((p.cpu_s for p in summary.phases if p.name == "train"), None)
    return summary.train_s if cpu_s is None else cpu_s


def calibration_configs() -> list[dict]:
    """Small real runs that, together, move every feature of every phase on its own."""
    t = dict(dataset="sparse-text", features=1 << 18, nnz_per_row=50, rows=100_000, epochs=1, seed=7)
    d = dict(dataset="dense", rows=100_000, features=200, epochs=1, seed=7)
    return [
        {**t, "mode": "memory"},
        {**t, "mode": "memory", "rows": 300_000, "precision": "float32"},
        {**t, "mode": "memory", "rows": 200_000, "precision": "float16", "average": False},
        {**t, "mode": "memory", "features": 1 << 22, "batch_size": 16_384},
        {**t, "mode": "memory", "solver": "native", "parser": "native", "features": 1 << 22},
        {**t, "mode": "memory", "rows": 10_000, "representation": "dense", "hashing_bits": 12, "batch_size": 512},
        {**t, "mode": "memory", "rows": 40_000, "representation": "dense", "hashing_bits": 10},
        {**t, "mode": "memory", "rows": 40_000, "nnz_per_row": 150},
        {**d, "mode": "memory", "representation": "dense"},
        {**d, "mode": "memory", "rows": 200_000, "precision": "float32"},
        {**t, "mode": "stream"},
        {**t, "mode": "stream", "batch_size": 32_768, "features": 1 << 20},
        {**t, "mode": "stream", "parser": "native", "solver": "native", "threads": 2, "batch_size": 8192},
        {**t, "mode": "stream", "representation": "dense", "hashing_bits": 12, "batch_size": 4096},
        {**t, "mode": "stream", "epochs": 2, "shuffle_buffer": 100_000, "nnz_per_row": 100},
        {**t, "mode": "memmap", "shuffle_buffer": 100_000, "nnz_per_row": 100},
        {**d, "mode": "stream", "rows": 30_000, "batch_size": 16_384},
        {**t, "mode": "memmap"},
        {**t, "mode": "memmap", "precision": "float32", "batch_size": 32_768, "features": 1 << 21},
        {**t, "mode": "memmap", "rows": 30_000, "representation": "dense", "hashing_bits": 11, "batch_size": 4096},
        {**t, "mode": "memmap", "solver": "native", "features": 1 << 22},
        {**t, "mode": "memory", "solver": "ftrl", "features": 1 << 22},
        {**t, "mode": "stream", "solver": "ftrl", "rows": 50_000, "average": False},
        {**d, "mode": "memmap", "representation": "dense", "batch_size": 8192},
        {**t, "mode": "memory", "rows": 50_000, "model": "kernel-approx", "n_components": 512},
        {**t, "mode": "stream", "rows": 50_000, "model": "kernel-approx", "approximation": "rff",
         "n_components": 256, "hashing_bits": 14},
        {**t, "mode": "memmap", "rows": 50_000, "model": "kernel-approx", "n_components": 1024},
        {**t, "mode": "memory", "rows": 30_000, "model": "kernel-approx", "approximation": "rff",
         "n_components": 128, "hashing_bits": 15},
        {**t, "mode": "memory", "rows": 30_000, "model": "mlp", "hashing_bits": 14, "hidden": "64"},
        {**t, "mode": "stream", "rows": 30_000, "model": "mlp", "hashing_bits": 15, "hidden": "128"},
        {**t, "mode": "memmap", "rows": 5000, "model": "mlp", "hashing_bits": 17, "hidden": "64"},  # 64 MiB layer
        {**t, "mode": "stream", "representation": "dense", "hashing_bits": 12, "batch_size": 4096, "monitor": "off"},
        {**d, "mode": "memory", "rows": 10_000, "model": "mlp-numpy", "hidden": "1024,1024,1024,1024",
         "batch_size": 4096},  # activations most of the step: 4,096 rows x 1,024 units x 8 B = 32 MiB a layer
        {**t, "mode": "stream", "rows": 20_000, "model": "mlp-numpy", "hashing_bits": 14,
         "hidden": "256,256,256,256,256,256", "checkpoint": 2, "batch_size": 8192},
        {**t, "mode": "memory", "rows": 5000, "model": "kernel-svm", "features": 1 << 16},
        {"dataset": "digits", "model": "linear-svm", "epochs": 1},
        {"dataset": "digits", "model": "mlp", "epochs": 1, "mode": "stream"},
        # the model's export (12 bytes per weight) apart from the weights themselves: in every averaged run the
        # two move together (16 bytes per weight), here the weights are 8 and the export 48 MiB
        {**t, "mode": "memory", "rows": 50_000, "features": 1 << 22, "average": False},
    ]


LEAN_FILES = {"lean-20k.svm": (20_000, 1 << 18), "lean-40k-wide.svm": (40_000, 1 << 21)}  # rows, features
# the lean runs: (training file, test file or None, knobs besides the lean pair's)
LEAN_RUNS = [
    ("lean-20k.svm", None, {}),
    ("lean-20k.svm", None, {"shuffle": False}),
    ("lean-20k.svm", None, {"batch_size": 8192}),
    ("lean-40k-wide.svm", None, {}),
    ("lean-40k-wide.svm", None, {"shuffle_buffer": 40_000}),
    ("lean-40k-wide.svm", "lean-20k.svm", {}),
    ("lean-20k.svm", None, {"monitor": "off"}),  # no evaluation sample: apart from the constant
]


def lean_calibration_configs(home: str) -> list[dict]:
    """The lean path's runs (svmlight files, native parser and solver): its floor on this
    machine and its own coefficients (``model.lean_features``), moved one at a time: the
    model's width (2^18 and 2^21 features), the batch, the shuffle window, a separate test
    file, the live evaluation's sample. The files are written once in the calibration folder."""
    folder = os.path.join(home, "calibration")
    lean = {"mode": "stream", "parser": "native", "solver": "native", "epochs": 1}
    out = []
    for train, test, knobs in LEAN_RUNS:
        run = {**lean, "dataset": _lean_file(folder, train), **knobs}
        out.append({**run, "test_file": _lean_file(folder, test)} if test else run)
    return out


def lean_training_rows() -> list[int]:
    """Training rows of each lean run (its work), without writing its files."""
    return [LEAN_FILES[train][0] if test else LEAN_FILES[train][0] - n_test_rows(LEAN_FILES[train][0])
            for train, test, _ in LEAN_RUNS]


def _lean_file(folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        from svmcore.data.files import make_dataset

        rows, features = LEAN_FILES[name]
        os.makedirs(folder, exist_ok=True)
        make_dataset("sparse-text", rows=rows, features=features, nnz_per_row=50, seed=7, out=path)
    return path


def fingerprint() -> str:
    """This machine and the versions that shape memory use."""
    from importlib.metadata import version

    from svmcore.spec.config import physical_memory_bytes
    parts_ = [platform.machine(), platform.python_version(), np.__version__, version("scipy"),
              version("scikit-learn"), str(os.cpu_count()), str(physical_memory_bytes() // MiB),
              str(CALIBRATION_VERSION)]
    return hashlib.sha1("|".join(parts_).encode()).hexdigest()[:16]


def calibration_path(home: str) -> str:
    return os.path.join(home, "calibration.json")


def load_calibration(home: str) -> Calibration | None:
    try:
        with open(calibration_path(home)) as f:
            cal = Calibration(**json.load(f))
    except (OSError, ValueError, TypeError):
        return None
    return cal if cal.fingerprint == fingerprint() else None


def calibrate(home: str, progress=None, configs: list[dict] | None = None, at_once: int = 1,
              reuse: bool = False) -> Calibration:
    """Run the calibration set (or ``configs``) in a store of its own (not the user's history),
    fit, cache. ``at_once`` > 1 runs that many at a time: each run's peak is its own process's
    exact high-water mark, so they do not move each other's memory, only their timings (the test
    suite does this; the product calibrates one run at a time). ``reuse`` fits on the runs of the
    same configs already measured in that store and runs only the missing ones (a change of the
    model's features then needs no new runs; the benchmark uses it)."""
    from concurrent.futures import ThreadPoolExecutor

    from svmcore.engine.runner import Run
    from svmcore.spec.status import RunStatus
    from svmcore.store.sqlite import Store

    store = Store(os.path.join(home, "calibration"))
    configs = calibration_configs() + lean_calibration_configs(home) if configs is None else configs

    done = _completed_runs(store) if reuse else {}

    def measure(i: int) -> tuple[RunConfig, dict]:
        cfg = validate(configs[i])
        if cfg.to_json() in done:
            return cfg, done[cfg.to_json()]
        if progress:
            progress(i, len(configs), cfg)
        run = Run(store, cfg, label="calibration").start()
        if run.wait(600) != RunStatus.COMPLETED:
            raise RuntimeError(f"calibration run {configs[i]} ended {run.status.value}: {run.summary.error_message}")
        return cfg, run.summary

    if at_once <= 1:
        observations = [measure(i) for i in range(len(configs))]
    else:
        pool = ThreadPoolExecutor(max_workers=at_once)
        try:
            observations = [f.result() for f in [pool.submit(measure, i) for i in range(len(configs))]]
        finally:
            pool.shutdown(cancel_futures=True)  # after a failed run, start no more
    cal = fit(observations)
    tmp = calibration_path(home) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cal.to_dict(), f, indent=1)
    os.replace(tmp, calibration_path(home))
    if progress:
        progress(len(configs), len(configs), None)
    return cal


def _completed_runs(store) -> dict[str, RunSummary]:
    """The newest completed run's summary per config in the calibration store."""
    from svmcore.spec.status import RunStatus

    out: dict[str, dict] = {}
    for rec in store.list_runs(status=[RunStatus.COMPLETED], damaged=False):  # newest first
        try:
            out.setdefault(validate(rec.config).to_json(), rec.summary)
        except ConfigError as e:  # a knob value since retired (numba): none of the set's configs
            log.info("calibration run %s not reused: %s", rec.id, e)
    return out


def fit(observations: list[tuple[RunConfig, RunSummary]]) -> Calibration:
    """Floors by library set (the imports phase, exact), then per phase a non-negative
    least-squares fit of (phase peak - floor) on the phase's features, weighted so that
    each run counts by its relative error, which is what the prediction promises."""
    from scipy.optimize import nnls

    floors: dict[str, list[float]] = {}
    for cfg, s in observations:
        floors.setdefault(floor_key(cfg), []).append(s.floor_mb)
    floor_mb = {k: float(np.median(v)) for k, v in floors.items()}
    coefs, errors = {}, {}
    for phase in PHASES:
        rows, ys, ws = [], [], []
        for cfg, s in observations:
            peak = s.phase_peak(phase)
            if peak is None:
                continue
            f = features(cfg, parts(cfg, _shape_from_summary(cfg, s))).get(phase)
            if f is None:
                continue
            rows.append(f)
            ys.append(max(0.0, peak - floor_mb[floor_key(cfg)]) * MiB)
            ws.append(1.0 / (peak * MiB))
        names = sorted({k for r in rows for k in r})
        if not names:
            continue
        A = np.array([[r.get(n, 0.0) for n in names] for r in rows]) * np.array(ws)[:, None]
        b = np.array(ys) * np.array(ws)
        x, _ = nnls(A, b)
        coefs[phase] = {n: float(c) for n, c in zip(names, x)}
        errors[phase] = float(np.max(np.abs(A @ x - b))) if len(b) else 0.0
    return Calibration(floor_mb, coefs, fingerprint(), time.time(), len(observations), errors,
                       fit_train_time(observations))


def _shape_from_summary(cfg: RunConfig, s: RunSummary) -> Shape:
    """The shape a finished run actually saw (exact rows and nonzeros)."""
    d = s.data or DataInfo()
    rows = d.rows or cfg.rows
    width = s.features or d.features or cfg.features
    nnz = d.nnz or rows * cfg.nnz_per_row
    classes = len(d.classes or [0, 1])
    train_rows = s.train_rows or rows - n_test_rows(rows)
    test_rows = s.test_rows or n_test_rows(rows)
    if not d.exact and cfg.dataset == "sparse-text":
        nnz = None  # the scan's upper bound: measure as a prediction would
    return Shape(rows, train_rows, test_rows, width, (nnz / rows) if nnz else data_shape(cfg).nnz_per_row,
                 max(2, classes), cfg.dense_builtin if d.dense_source is None else d.dense_source)


CALIBRATION_VERSION = 15  # what each version changed: docs/memory-model.md (a new version refits)
