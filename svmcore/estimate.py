"""Predict a run's exact peak before running it.

The model is structural: for every phase the worker goes through, the bytes it holds
are the worker's floor (interpreter and libraries, measured per library set) plus
named parts computed from the config and the data's shape:

- ``data``: the training rows held in memory (memory mode only), in storage form;
- ``test``: the held-out rows, in compute form;
- ``batch``: one minibatch in compute form (two more in the reader thread's queue);
- ``model``: the weights (and their average, and the copies a solver keeps; for the
  MLP, scikit-learn's Adam state and each step's gradient and update temporaries);
- ``transform``: a kernel approximation and the rows it produced;
- ``io``: what reading holds at once: a generated chunk, a parser block;
- ``shuffle``: what shuffling holds: a permutation of the rows (memory mode), a
  window of mapped rows (memmap), a shuffle buffer of parsed rows (stream).

How many bytes of RSS each byte of a part costs (copies, allocator slack, the
temporaries of a conversion) is not guessed: ``calibrate`` runs a fixed set of small
real runs on this machine and fits one non-negative coefficient per (phase, part)
feature to their exact per-phase peaks. The fit is cached in ``$SVMCORE_HOME`` keyed
by this machine and the library versions, so it is done once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import time
from dataclasses import dataclass, field

import numpy as np

from .config import BYTES_PER_VALUE, RunConfig, validate
from .datasets import MAX_TEST_ROWS, Source, n_test_rows, scan

MiB = 2**20
CHUNK_ROWS = 10_000  # rows per generated or parsed chunk in loading (training.py)
PARSER_BLOCK = 8 * MiB  # fastsvm.DEFAULT_BLOCK_BYTES
MODES = ("memory", "stream", "memmap")
PHASES = ("prepare", "load", "transform", "train", "evaluate")
CALIBRATION_VERSION = 4  # 3: the MLP priced as scikit-learn holds it; 4: shuffling priced
NUMBA_FLOOR_MB = 100.0  # what numba adds to the floor here, for a calibration that never measured it


# ---------------------------------------------------------------- sizes of the parts

@dataclass(frozen=True)
class Shape:
    rows: int
    train_rows: int
    test_rows: int
    width: int  # columns after hashing
    nnz_per_row: float
    classes: int
    dense_source: bool


def data_shape(cfg: RunConfig, cache_dir: str | None = None) -> Shape:
    """Rows, width and nonzeros per row of the data as a run would see them. Synthetic
    sparse data is measured on one generated chunk (duplicate tokens and hashing
    collisions make it a little sparser than ``nnz_per_row``); files are scanned once
    (the scan is cached like the worker's)."""
    src = Source(cfg)
    if cfg.is_synthetic:
        width = (1 << cfg.hashing_bits) if cfg.hashing_bits else cfg.features
        if cfg.dataset == "dense":
            nnz_row = float(width)
        else:
            sample = validate(dataset=cfg.dataset, rows=min(cfg.rows, 2000), features=cfg.features, seed=cfg.seed,
                              nnz_per_row=cfg.nnz_per_row, hashing_bits=cfg.hashing_bits, batch_size=1)
            nnz_row = _synthetic_nnz_per_row(sample, width)  # keyed by the data knobs alone
        rows, classes, dense_src = cfg.rows, 2, cfg.dataset == "dense"
    else:
        info = scan(src, cache_dir)
        width, rows = info.features, info.rows
        nnz_row = info.nnz / max(1, rows)
        classes, dense_src = max(2, len(info.classes)), info.dense_source
    if cfg.test_file:
        tinfo = scan(Source(validate(cfg.to_dict(), dataset=cfg.test_file, test_file=None)), cache_dir)
        test_rows, train_rows = tinfo.rows, rows
        width = max(width, tinfo.features)
    else:
        test_rows = n_test_rows(rows)
        train_rows = rows - test_rows
    return Shape(rows, train_rows, test_rows, width, nnz_row, classes, dense_src)


@functools.lru_cache(maxsize=64)
def _synthetic_nnz_per_row(sample_cfg: RunConfig, width: int) -> float:
    """Nonzeros per row of a generated sample chunk (a sweep forecasts many runs over the
    same data: measured once)."""
    X, _ = next(iter(Source(sample_cfg).iter_chunks(2000, width)))
    return X.nnz / max(1, X.shape[0])


def parts(cfg: RunConfig, shape: Shape) -> dict[str, float]:
    """Bytes of each part of the run, before any calibration."""
    vb = BYTES_PER_VALUE[cfg.precision]
    cb = 8 if cfg.precision == "float64" else 4
    dense = cfg.representation == "dense"
    z, w = shape.nnz_per_row, shape.width
    sparse_row = lambda b: z * (b + 4) + 8  # noqa: E731 (value + int32 id, int64 row pointer)
    row_store = w * vb if dense else sparse_row(vb)
    nvec = 1 if shape.classes == 2 else shape.classes
    incremental = cfg.model != "kernel-svm"
    test_rows = min(shape.test_rows, MAX_TEST_ROWS if not cfg.test_file else shape.test_rows)
    dense_test = dense and cfg.mode == "memmap" and not cfg.test_file  # kept as stored: dense
    p = {
        "data": shape.train_rows * row_store if cfg.mode == "memory" else 0.0,
        "test": test_rows * (w * cb if dense_test else sparse_row(cb)),
        "batch": min(cfg.batch_size, shape.train_rows) * (w * cb if dense else sparse_row(cb)) if incremental else 0.0,
        "model_linear": 0.0, "model_linear_numba": 0.0, "model_mlp": 0.0, "model_mlp_step": 0.0, "model_svm": 0.0,
        "transform_nystroem": 0.0, "transform_rff": 0.0, "transformed": 0.0, "batch_transformed": 0.0,
        "io_generate": 0.0, "io_parse": 0.0, "io_parse_numba": 0.0, "io_build": 0.0,
        "io_parse_batch": 0.0, "io_densify": 0.0,
    }
    p["shuffle"] = 0.0
    if cfg.shuffle and incremental:
        window = min(cfg.shuffle_buffer, shape.train_rows)
        if cfg.mode == "memory":
            p["shuffle"] = shape.train_rows * 8.0  # the permutation of row ids
        elif cfg.mode == "memmap":
            p["shuffle"] = window * row_store  # the window's mapped pages
        else:
            p["shuffle"] = window * (w * 8 if shape.dense_source else sparse_row(8))  # parsed rows in the pool
    # loading stacks the chunks into one array: two copies at that moment, unless one chunk
    p["data_stacked"] = p["data"] * (2 if shape.rows > CHUNK_ROWS else 1)
    copies = 2 if cfg.average else 1
    if cfg.model == "linear-svm":
        p["model_linear_numba" if cfg.solver == "numba" else "model_linear"] = nvec * w * 8 * copies
    elif cfg.model == "kernel-approx":
        C = cfg.n_components
        p["model_linear_numba" if cfg.solver == "numba" else "model_linear"] = nvec * C * 8 * copies
        if cfg.approximation == "nystroem":
            p["transform_nystroem"] = C * sparse_row(8) + 3 * C * C * 8
        else:
            p["transform_rff"] = w * C * 8
        if cfg.mode == "memory":
            p["transformed"] = shape.train_rows * C * cb
        else:
            p["batch_transformed"] = min(cfg.batch_size, shape.train_rows) * C * 8
    elif cfg.model == "mlp":
        p["model_mlp"], p["model_mlp_step"] = mlp_bytes(cfg, w, nvec)
    else:
        p["model_svm"] = min(cfg.cache_size_mb * MiB, shape.train_rows ** 2 * 8) + shape.train_rows * sparse_row(8)
    source_is_text = not cfg.is_builtin or cfg.mode == "stream"
    chunk = min(CHUNK_ROWS, shape.rows)
    # a chunk as read, and (memmap builds, dense loads) as converted to its stored form
    chunk_bytes = chunk * (w * 8 if shape.dense_source else sparse_row(8))
    if dense and cfg.mode != "stream":
        p["io_densify"] = chunk * w * vb
    if source_is_text and cfg.parser == "numba" and not _csv_or_text(cfg):
        p["io_parse_numba"] = PARSER_BLOCK
    elif source_is_text:
        row_read = w * 8 if shape.dense_source else sparse_row(8)
        p["io_parse"] = chunk * row_read  # loading (and stream mode's test rows) parse by chunks
        if cfg.mode == "stream":
            p["io_parse_batch"] = min(cfg.batch_size, shape.train_rows) * row_read  # training parses by batches
    else:
        p["io_generate"] = chunk_bytes
    if cfg.mode == "memmap" or (cfg.mode == "stream" and cfg.is_builtin):
        p["io_build"] = chunk_bytes  # prepare: the binary (memmap) or text (stream) copy, chunk by chunk
    return p


def mlp_bytes(cfg: RunConfig, width: int, outputs: int) -> tuple[float, float]:
    """What scikit-learn's MLPClassifier (solver adam) holds: (between steps, added
    during a step). Weights are in the batch's dtype (float64, or float32 for float32
    and float16 storage). Per weight it keeps ``coefs_``, ``_best_coefs`` (a copy made
    at the first partial_fit) and Adam's first and second moments: 4 copies. A step
    adds the dense gradient (``X.T @ delta`` is layer-sized even for sparse X) and,
    while Adam builds the update, 16 bytes per weight of the largest layer in
    temporaries: Adam's learning rate is a numpy float64, so the update is computed in
    float64 whatever the weights' dtype. Measured: 2^20 x 64 float64 (512 MiB of
    weights) held 4.0x between steps and 7.0x at a step's peak; tests/unit/test_estimate.py
    checks both counts against scikit-learn with tracemalloc."""
    cb = 8 if cfg.precision == "float64" else 4
    sizes = [width, *cfg.hidden_sizes, outputs]
    layers = [a * b for a, b in zip(sizes, sizes[1:])]
    biases = sum(sizes[1:])
    return 4.0 * (sum(layers) + biases) * cb, (sum(layers) + biases) * cb + 2.0 * max(layers) * 8


def _csv_or_text(cfg: RunConfig) -> bool:
    return not cfg.is_builtin and os.path.splitext(cfg.dataset)[1].lower() in (".csv", ".tsv", ".txt", ".npz")


def features(cfg: RunConfig, p: dict[str, float]) -> dict[str, dict[str, float]]:
    """The regression features of each phase the run goes through: its parts, split by
    mode where the mode changes what a byte costs, and a constant (1 MiB)."""
    m = cfg.mode
    one = {f"const_{m}": MiB}
    reader = cfg.threads > 1 and m == "stream"
    data_kind = "data_dense" if cfg.representation == "dense" else f"data_{cfg.precision}"
    stacked = p["data_stacked"]
    tf = {k: p[k] for k in ("transform_nystroem", "transform_rff", "transformed")}
    held = {"test": p["test"], data_kind: p["data"]}
    model = {k: p[k] for k in ("model_linear", "model_linear_numba", "model_mlp", "model_svm")}
    # the train phase's peak is during a step: what the MLP holds between steps plus what a step adds
    trained = {**model, "model_mlp": p["model_mlp"] + p["model_mlp_step"]}
    io = {f"{k}_{m}": p[k] for k in ("io_generate", "io_parse", "io_parse_numba", "io_densify")}
    phases = {
        "prepare": {**one, f"io_build_{m}": p["io_build"], f"io_densify_{m}": p["io_densify"]},
        "load": {**one, **io, "test": p["test"], f"load_{data_kind}": stacked},
        "train": {**one, **held, **trained, f"batch_{m}": p["batch"],
                  "batch_queue": 2 * p["batch"] if reader else 0.0,
                  "io_parse_batch": p["io_parse_batch"], "io_parse_numba_stream": p["io_parse_numba"] if m == "stream" else 0.0,
                  **tf, "batch_transformed": p["batch_transformed"], f"shuffle_{m}": p["shuffle"]},
        # what training freed is often kept by the allocator, so it shows here too
        "evaluate": {**one, **held, **model, **tf, f"batch_{m}": p["batch"], "io_parse_batch": p["io_parse_batch"],
                     f"shuffle_{m}": p["shuffle"]},
    }
    if cfg.model == "kernel-approx":
        phases["transform"] = {**one, **held, **tf, f"batch_{m}": p["batch"]}
    return {ph: {k: v for k, v in f.items() if v} for ph, f in phases.items()}


def floor_key(cfg: RunConfig) -> str:
    numba = cfg.parser == "numba" or (cfg.solver == "numba" and cfg.model in ("linear-svm", "kernel-approx"))
    return f"{cfg.model}+{'numba' if numba else 'base'}"


# ---------------------------------------------------------------- train time (rough)

def time_family(cfg: RunConfig) -> str:
    """Runs whose per-sample and per-step costs are alike."""
    numba = cfg.solver == "numba" and cfg.model in ("linear-svm", "kernel-approx")
    return cfg.model + ("+numba" if numba else "")


def time_features(cfg: RunConfig, shape: Shape) -> dict[str, float]:
    """Units of work of the train phase, whose seconds each the calibration fits:

    - ``sample_<family>``: samples trained x the values each one touches (nonzeros, or
      the width for dense batches; kernel-approx: its components, and the transform of
      each row outside memory mode);
    - ``step_<family>``: optimizer steps x the model's weights (an SGD ``partial_fit``
      call per batch; an MLP step per 200 rows, each one passing over every weight
      about 15 times: the dense gradient and Adam's moments and update);
    - ``parse_<parser>``: stream mode parses the text once (later passes read the
      binary spill): rows x nonzeros;
    - ``svm``: the exact kernel SVM, rows^2 x nonzeros;
    - ``const``: one per run."""
    fam = time_family(cfg)
    f = {"const": 1.0}
    n, z = shape.train_rows, shape.nnz_per_row
    if cfg.model == "kernel-svm":
        f["svm"] = float(n) ** 2 * z
        return f
    nvec = 1 if shape.classes == 2 else shape.classes
    row_work = shape.width if cfg.representation == "dense" else z
    batch = min(cfg.batch_size, max(1, n))
    steps = cfg.epochs * -(-n // batch)
    if cfg.model == "kernel-approx":
        C = cfg.n_components
        work, weights = C + (row_work * C if cfg.mode != "memory" else 0), nvec * C
    elif cfg.model == "mlp":
        sizes = [shape.width, *cfg.hidden_sizes, nvec]
        work, weights = row_work * cfg.hidden_sizes[0], sum(a * b for a, b in zip(sizes, sizes[1:]))
        step_rows = min(batch, 200)  # the MLP's own batch size (models.Trainer)
        steps = cfg.epochs * (n // batch * -(-batch // step_rows) + -(-(n % batch) // step_rows))
    else:
        work, weights = row_work, nvec * shape.width
    f[f"sample_{fam}"] = float(n) * cfg.epochs * work
    f[f"step_{fam}"] = float(steps) * weights
    if cfg.mode == "stream":
        f[f"parse_{cfg.parser}"] = float(n) * z
    return f


def fit_train_time(observations: list[tuple[RunConfig, dict]]) -> dict[str, float]:
    """Seconds per unit of each time feature: a non-negative least-squares fit to the
    measured ``train_s`` of the calibration runs, each weighted by its relative error
    (runs under half a second count less: their timings are mostly noise)."""
    from scipy.optimize import nnls

    rows, ys = [], []
    for cfg, s in observations:
        if s.get("train_s") is None:
            continue
        rows.append(time_features(cfg, _shape_from_summary(cfg, s)))
        ys.append(float(s["train_s"]))
    names = sorted({k for r in rows for k in r})
    if not names:
        return {}
    w = 1.0 / (np.array(ys) + 0.5)
    A = np.array([[r.get(n, 0.0) for n in names] for r in rows])
    scale = np.maximum(A.max(axis=0), 1e-300)  # columns of like size, for a well-conditioned fit
    x, _ = nnls(A / scale * w[:, None], np.array(ys) * w)
    return {n: float(c / sc) for n, c, sc in zip(names, x, scale)}


def predict_train_s(cfg: RunConfig, shape: Shape, time_coefs: dict[str, float]) -> float | None:
    """The train phase's seconds from fitted costs, or None if a cost this run needs
    was never fitted (its model family was not in the calibration)."""
    f = time_features(cfg, shape)
    if not time_coefs or any(k not in time_coefs for k in f):
        return None
    return sum(v * time_coefs[k] for k, v in f.items())


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"about {seconds:,.0f} s"
    if seconds < 90 * 60:
        return f"about {seconds / 60:,.0f} minutes"
    return f"about {seconds / 3600:,.1f} hours"


# ---------------------------------------------------------------- calibration

def calibration_configs() -> list[dict]:
    """Small real runs that, together, move every feature of every phase on its own."""
    t = dict(dataset="sparse-text", features=1 << 18, nnz_per_row=50, rows=100_000, epochs=1, seed=7)
    d = dict(dataset="dense", rows=100_000, features=200, epochs=1, seed=7)
    return [
        {**t, "mode": "memory"},
        {**t, "mode": "memory", "rows": 300_000, "precision": "float32"},
        {**t, "mode": "memory", "rows": 200_000, "precision": "float16", "average": False},
        {**t, "mode": "memory", "features": 1 << 22, "batch_size": 16_384},
        {**t, "mode": "memory", "solver": "numba", "parser": "numba", "features": 1 << 22},
        {**t, "mode": "memory", "rows": 10_000, "representation": "dense", "hashing_bits": 12, "batch_size": 512},
        {**t, "mode": "memory", "rows": 40_000, "representation": "dense", "hashing_bits": 10},
        {**t, "mode": "memory", "rows": 40_000, "nnz_per_row": 150},
        {**d, "mode": "memory", "representation": "dense"},
        {**d, "mode": "memory", "rows": 200_000, "precision": "float32"},
        {**t, "mode": "stream"},
        {**t, "mode": "stream", "batch_size": 32_768, "features": 1 << 20},
        {**t, "mode": "stream", "parser": "numba", "solver": "numba", "threads": 2, "batch_size": 8192},
        {**t, "mode": "stream", "representation": "dense", "hashing_bits": 12, "batch_size": 4096},
        {**t, "mode": "stream", "epochs": 2, "shuffle_buffer": 100_000, "nnz_per_row": 100},
        {**t, "mode": "memmap", "shuffle_buffer": 100_000, "nnz_per_row": 100},
        {**d, "mode": "stream", "rows": 30_000, "batch_size": 16_384},
        {**t, "mode": "memmap"},
        {**t, "mode": "memmap", "precision": "float32", "batch_size": 32_768, "features": 1 << 21},
        {**t, "mode": "memmap", "rows": 30_000, "representation": "dense", "hashing_bits": 11, "batch_size": 4096},
        {**t, "mode": "memmap", "solver": "numba", "features": 1 << 22},
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
        {**t, "mode": "memory", "rows": 5000, "model": "kernel-svm", "features": 1 << 16},
        {"dataset": "digits", "model": "linear-svm", "epochs": 1},
        {"dataset": "digits", "model": "mlp", "epochs": 1, "mode": "stream"},
    ]


@dataclass
class Calibration:
    floors: dict[str, float]  # MiB per floor key
    coefs: dict[str, dict[str, float]]  # phase -> feature -> RSS bytes per byte
    fingerprint: str
    created: float
    runs: int
    fit_error: dict[str, float]
    time_coefs: dict[str, float] = field(default_factory=dict)  # seconds per unit of time_features

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def fingerprint() -> str:
    """This machine and the versions that shape memory use."""
    from importlib.metadata import version  # no import of numba itself: it costs the caller ~65 MiB

    from .config import physical_memory_bytes
    parts_ = [platform.machine(), platform.python_version(), np.__version__, version("scipy"),
              version("scikit-learn"), version("numba"), str(os.cpu_count()), str(physical_memory_bytes() // MiB),
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


def calibrate(home: str, progress=None) -> Calibration:
    """Run the calibration set in a store of its own (not the user's history), fit, cache."""
    from .runner import Run
    from .store import RunStatus, Store

    store = Store(os.path.join(home, "calibration"))
    observations = []
    configs = calibration_configs()
    for i, values in enumerate(configs):
        cfg = validate(values)
        if progress:
            progress(i, len(configs), cfg)
        run = Run(store, cfg, label="calibration").start()
        if run.wait(600) != RunStatus.COMPLETED:
            raise RuntimeError(f"calibration run {values} ended {run.status.value}: {run.summary.get('error')}")
        observations.append((cfg, run.summary))
    cal = fit(observations)
    tmp = calibration_path(home) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cal.to_dict(), f, indent=1)
    os.replace(tmp, calibration_path(home))
    if progress:
        progress(len(configs), len(configs), None)
    return cal


def fit(observations: list[tuple[RunConfig, dict]]) -> Calibration:
    """Floors by library set (the imports phase, exact), then per phase a non-negative
    least-squares fit of (phase peak - floor) on the phase's features, weighted so that
    each run counts by its relative error, which is what the prediction promises."""
    from scipy.optimize import nnls

    floors: dict[str, list[float]] = {}
    for cfg, s in observations:
        floors.setdefault(floor_key(cfg), []).append(s["floor_mb"])
    floor_mb = {k: float(np.median(v)) for k, v in floors.items()}
    coefs, errors = {}, {}
    for phase in PHASES:
        rows, ys, ws = [], [], []
        for cfg, s in observations:
            peak = next((p["peak_rss_mb"] for p in s["phases"] if p["name"] == phase), None)
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


def _shape_from_summary(cfg: RunConfig, s: dict) -> Shape:
    """The shape a finished run actually saw (exact rows and nonzeros)."""
    d = s.get("data") or {}
    rows = d.get("rows") or cfg.rows
    width = s.get("features") or d.get("features") or cfg.features
    nnz = d.get("nnz") or rows * cfg.nnz_per_row
    classes = len(d.get("classes") or [0, 1])
    train_rows = s.get("train_rows") or rows - n_test_rows(rows)
    test_rows = s.get("test_rows") or n_test_rows(rows)
    if d.get("exact") is False and cfg.dataset == "sparse-text":
        nnz = None  # the scan's upper bound: measure as a prediction would
    shape = Shape(rows, train_rows, test_rows, width,
                  (nnz / rows) if nnz else data_shape(cfg).nnz_per_row, max(2, classes),
                  bool(d.get("dense_source", cfg.dataset == "dense")))
    return shape


# ---------------------------------------------------------------- prediction

def predict(cfg: RunConfig, cal: Calibration, shape: Shape | None = None, cache_dir: str | None = None) -> dict:
    """``predicted_peak_mb`` and its parts, per phase."""
    shape = shape or data_shape(cfg, cache_dir)
    p = parts(cfg, shape)
    floor = _floor(cal, cfg)
    phases = {}
    for phase, f in features(cfg, p).items():
        coefs = cal.coefs.get(phase, {})
        contrib = {k: v * coefs.get(k, 0.0) / MiB for k, v in f.items()}
        phases[phase] = {"predicted_mb": floor + sum(contrib.values()), "parts_mb": _group(contrib)}
    phases = {"imports": {"predicted_mb": floor, "parts_mb": {}}, **phases}
    peak_phase = max(phases, key=lambda k: phases[k]["predicted_mb"])
    return {
        "predicted_peak_mb": round(phases[peak_phase]["predicted_mb"], 1),
        "peak_phase": peak_phase,
        "parts": {"floor": round(floor, 1), **{k: round(v, 1) for k, v in phases[peak_phase]["parts_mb"].items()}},
        "phases": {k: {"predicted_mb": round(v["predicted_mb"], 1),
                       "parts_mb": {n: round(x, 1) for n, x in v["parts_mb"].items()}} for k, v in phases.items()},
        "predicted_train_s": _round(predict_train_s(cfg, shape, cal.time_coefs)),
        "raw_bytes": {k: int(v) for k, v in p.items() if v},
        "shape": shape.__dict__,
        "calibration": {"fingerprint": cal.fingerprint, "runs": cal.runs},
    }


def _round(v: float | None, digits: int = 1) -> float | None:
    return None if v is None else round(v, digits)


def _group(contrib: dict[str, float]) -> dict[str, float]:
    """Features folded back into the parts named in the output."""
    out = {"data": 0.0, "test": 0.0, "batch": 0.0, "model": 0.0, "transforms": 0.0, "io": 0.0, "shuffle": 0.0,
           "other": 0.0}
    for k, v in contrib.items():
        if k == "test":
            out[k] += v
        elif k.startswith("data") or k.startswith("load_data"):
            out["data"] += v
        elif k.startswith("batch") and k != "batch_transformed":
            out["batch"] += v
        elif k.startswith("model"):
            out["model"] += v
        elif k.startswith("transform") or k == "batch_transformed":
            out["transforms"] += v
        elif k.startswith("io_"):
            out["io"] += v
        elif k.startswith("shuffle"):
            out["shuffle"] += v
        else:
            out["other"] += v
    return out


def _floor(cal: Calibration, cfg: RunConfig) -> float:
    key = floor_key(cfg)
    if key in cal.floors:
        return cal.floors[key]
    model, libs = key.split("+")
    base = cal.floors.get(f"{model}+base", cal.floors.get("linear-svm+base", 0.0))
    if libs == "numba":
        f = cal.floors
        have = "linear-svm+numba" in f and "linear-svm+base" in f
        base += f["linear-svm+numba"] - f["linear-svm+base"] if have else NUMBA_FLOOR_MB
    return base


def forecast(cfg: RunConfig, home: str) -> dict | None:
    """The compact prediction stored with a run, or None when this machine has no
    calibration yet (a run never waits for one) or the data cannot be described."""
    cal = load_calibration(home)
    if cal is None:
        return None
    try:
        pred = predict(cfg, cal, cache_dir=os.path.join(home, "cache"))
    except Exception:  # the worker reports bad data properly; a forecast is optional
        return None
    return {k: pred[k] for k in ("predicted_peak_mb", "peak_phase", "parts", "predicted_train_s")} | {
        "phases_mb": {k: v["predicted_mb"] for k, v in pred["phases"].items()}}


# ---------------------------------------------------------------- warnings before launch

LONG_TRAIN_S = 180.0  # a forecast train phase longer than this is worth a warning
# Seconds per unit of time_features, fitted on the calibration runs of the 2-core
# development machine (svmcore 2026, scikit-learn 1.9): the time forecast of a machine
# without its own calibration, and labelled as such.
REFERENCE_TIME_COEFS = {
    "const": 0.0427, "parse_numba": 0.0, "parse_sklearn": 8.82e-07, "sample_kernel-approx": 1.19e-09,
    "sample_linear-svm": 5.66e-09, "sample_linear-svm+numba": 5.29e-08, "sample_mlp": 2.28e-09,
    "step_kernel-approx": 1.04e-05, "step_linear-svm": 6.5e-09, "step_linear-svm+numba": 1.57e-09,
    "step_mlp": 1.92e-08, "svm": 1.96e-08,
}


def lower_bound(cfg: RunConfig, shape: Shape) -> dict:
    """Without a calibration: the largest phase's parts, each byte counted once, with
    no floor and no allocator overhead. Every run needs at least this much."""
    p = parts(cfg, shape)
    phases = {ph: {k: v / MiB for k, v in f.items() if not k.startswith("const_")}
              for ph, f in features(cfg, p).items()}
    peak_phase = max(phases, key=lambda ph: sum(phases[ph].values()))
    return {"peak_mb": round(sum(phases[peak_phase].values()), 1), "peak_phase": peak_phase,
            "parts": {k: round(v, 1) for k, v in _group(phases[peak_phase]).items()}}


def launch_forecast(cfg: RunConfig, home: str, shape: Shape | None = None) -> dict:
    """What a warning before launch needs: the calibrated forecast of the exact peak
    and of the train phase's seconds when this machine has a calibration; otherwise
    the lower bound of the peak (``lower_bound`` True) and the time at the reference
    machine's rates (``time_basis`` 'reference')."""
    shape = shape or data_shape(cfg, os.path.join(home, "cache"))
    cal = load_calibration(home)
    if cal is not None:
        pred = predict(cfg, cal, shape)
        parts_mb = {k: v for k, v in pred["parts"].items() if k != "floor"}
        return {"peak_mb": pred["predicted_peak_mb"], "peak_phase": pred["peak_phase"], "lower_bound": False,
                "parts": parts_mb, "train_s": pred["predicted_train_s"], "time_basis": "calibrated"}
    lb = lower_bound(cfg, shape)
    return {"peak_mb": lb["peak_mb"], "peak_phase": lb["peak_phase"], "lower_bound": True, "parts": lb["parts"],
            "train_s": _round(predict_train_s(cfg, shape, REFERENCE_TIME_COEFS)), "time_basis": "reference"}


def launch_warnings(cfg: RunConfig, forecast: dict, available_bytes: int | None) -> list[str]:
    """One sentence per reason to think twice before launching: the forecast peak above
    the memory available now or above the run's memory cap, or a train phase forecast
    longer than ``LONG_TRAIN_S``. ``forecast`` is ``launch_forecast``'s. Pure."""
    out = []
    peak = forecast["peak_mb"]
    if forecast["lower_bound"]:
        what = (f"needs at least {peak:,.0f} MiB (a lower bound: the parts' sizes alone, without the "
                "interpreter's floor or any overhead; calibrate for a forecast)")
    else:
        what = f"is forecast to peak at {peak:,.0f} MiB (exact peak, calibrated memory model)"
    parts_mb = {k: v for k, v in (forecast.get("parts") or {}).items() if v}
    if parts_mb:
        big = max(parts_mb, key=parts_mb.get)
        what += f", most of it {big} ({parts_mb[big]:,.0f} MiB) in the {forecast['peak_phase']} phase"
    if available_bytes is not None and peak * MiB > available_bytes:
        out.append(f"Memory: this run {what}; this machine has {available_bytes / MiB:,.0f} MiB available now. "
                   "It may be killed by the kernel's out-of-memory killer or slow the machine down.")
    if cfg.memory_cap_mb is not None and peak > cfg.memory_cap_mb:
        out.append(f"Memory: this run {what}; its memory cap is {cfg.memory_cap_mb:,} MiB, so it will "
                   "likely end out of memory.")
    train_s = forecast.get("train_s")
    if train_s is not None and train_s > LONG_TRAIN_S:
        basis = ("fitted on this machine's calibration runs" if forecast["time_basis"] == "calibrated" else
                 "measured on a reference machine, not this one; calibrate for this machine's")
        out.append(f"Time: training alone is forecast to take {duration_text(train_s)} (a rough forecast from "
                   f"per-sample and per-step costs {basis}).")
    return out
