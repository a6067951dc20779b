"""Predict a run's exact peak before running it.

The model is structural: for every phase the worker goes through, the bytes it holds are the
worker's floor (interpreter and libraries, measured per library set) plus named parts computed from
the config and the data's shape (``parts``: data, test, batch, model, model_export, transform, io,
shuffle, activations, eval_sample, kept; docs/memory-model.md says what each holds).

How many bytes of RSS each byte of a part costs (copies, allocator slack, the temporaries of a
conversion) is not guessed: ``calibrate`` runs a fixed set of small real runs on this machine and
fits one non-negative coefficient per (phase, part) feature to their exact per-phase peaks. The fit
is cached in ``$SVMCORE_HOME`` keyed by this machine and the library versions, so it is done once.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from svmcore.data.shuffle_order import order_bytes
from svmcore.data.sources import CHUNK_ROWS, MAX_TEST_ROWS, DataInfo, Source, n_test_rows
from svmcore.engine.admission import scanned
from svmcore.spec.result import Forecast, ParallelForecast
from svmcore.spec.choices import History, TransformCache
from svmcore.spec.config import BYTES_PER_VALUE, RunConfig, validate
from svmcore.spec.monitor import EVAL_SAMPLE_ROWS, live_evaluation
from svmcore.spec.registry import load, state_bytes
from svmcore.spec.units import MiB

PHASES = ("prepare", "load", "transform", "train", "distill", "evaluate")
PARSER_BLOCK = 2 * MiB  # the native parser's 1 MiB text block and its parsed arrays
# Bytes of RSS per byte of the features no calibration run moves (it is synthetic, never lean), measured on
# the reference machine (docs/memory-model.md says how); a calibration that fits one overrides it.
FIXED_COEFS = {"shuffle_lean": 1.25, "test_lean_file": 2.0, "io_densify_chunk": 1.0, "io_convert_file": 1.0,
               "model_export": 1.0, "kept_cache": 1.0, "kept_history": 1.0}
# Python's collector looks for cycles once this many new container objects outlive their step (gc's first
# threshold, 700): a cyclic history adds one a batch, so without gc_every that many batches can wait for it
GC_FIRST_GENERATION = 700
LEAN_FLOOR_MB = 30.0  # the lean path's floor (Python, numpy, the native library; no OpenSSL or numpy.random), 29.2-29.4 measured here
# Data-parallel runs (workers > 1), measured on the 2-core development machine on 2026-12-01 with
# 2,000-row runs: a LocalCluster worker process once it has run a shard's task (Python, numpy, scipy,
# scikit-learn, dask.distributed), and what Dask's scheduler, nannies and client add to the run's
# own process during training.
DASK_WORKER_FLOOR_MB = 250.0
# What tracing adds to the floor (the trace knob): the imports phase's exact peak traced against
# untraced, median of 2 pairs, bench/results/trace-overhead.md (2026-12-06). The run's exact peak rose
# by as much on the lean path (+14.9) and by more on scikit-learn's (+29.7 at 100,000 rows: the
# tracker's tables grow with the allocations it records), so a traced run there is priced up to ~4% low.
TRACER_MB = {"base": 20.0, "lean": 14.0}
DASK_COORDINATOR_MB = 18.0


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
    file_format: str = ""  # a file's format (svmlight, text, csv, npz); "" for synthetic and shipped data
    text_bytes_per_row: float = 0.0  # a text file's bytes per row (its lines as a reader holds them)

    def sparse_row(self, value_bytes: int) -> float:
        """Bytes of a CSR row: a value and an int32 column id per nonzero, an int64 row pointer."""
        return self.nnz_per_row * (value_bytes + 4) + 8


def data_shape(cfg: RunConfig, cache_dir: str | None = None, scans: tuple[DataInfo, DataInfo | None] | None = None
               ) -> Shape:
    """Rows, width and nonzeros per row of the data as a run would see them. Synthetic
    sparse data is measured on one generated chunk (duplicate tokens and hashing
    collisions make it a little sparser than ``nnz_per_row``); files are described by
    ``scans`` (the data's and the test file's, as a launch's admission read them), else
    by admission's ``scanned`` (cached like the worker's scan; a file the lean path cannot
    read is refused as the launch refuses it: no forecast of a run that would not start)."""
    info, tinfo = scans or scanned(cfg, cache_dir).scans
    src = Source(cfg)
    if cfg.is_synthetic:
        width = (1 << cfg.hashing_bits) if cfg.hashing_bits else cfg.features
        if cfg.dense_builtin:
            nnz_row = float(width)
        else:
            nnz_row = _synthetic_nnz_per_row(cfg.dataset, min(cfg.rows, 2000), cfg.features, cfg.seed, cfg.nnz_per_row,
                                             cfg.hashing_bits, width)  # keyed by the data knobs alone
        rows, classes, dense_src = cfg.rows, 2, cfg.dense_builtin
    else:
        width, rows = info.features, info.rows
        nnz_row = info.nnz / max(1, rows)
        classes, dense_src = max(2, len(info.classes)), info.dense_source
    file_format = src.fmt if src.is_file else ""
    text_row = os.path.getsize(src.path) / max(1, rows) if file_format in ("svmlight", "text", "csv") else 0.0
    if tinfo is not None:
        test_rows, train_rows = tinfo.rows, rows
        width = max(width, tinfo.features)
    else:
        test_rows = n_test_rows(rows)
        train_rows = rows - test_rows
    return Shape(rows, train_rows, test_rows, width, nnz_row, classes, dense_src, file_format, text_row)


@functools.lru_cache(maxsize=64)
def _synthetic_nnz_per_row(dataset: str, rows: int, features: int, seed: int, nnz_per_row: int,
                           hashing_bits: int | None, width: int) -> float:
    """Nonzeros per row of a generated sample chunk (a sweep forecasts many runs over the
    same data: measured once)."""
    sample = validate(dataset=dataset, rows=rows, features=features, seed=seed, nnz_per_row=nnz_per_row,
                      hashing_bits=hashing_bits, batch_size=1)
    X, _ = next(iter(Source(sample).iter_chunks(2000, width)))
    return X.nnz / max(1, X.shape[0])


def parts(cfg: RunConfig, shape: Shape) -> dict[str, float]:
    """Bytes of each part of the run, before any calibration."""
    vb = BYTES_PER_VALUE[cfg.precision]
    cb = cfg.compute_bytes
    dense, mode = cfg.dense, cfg.mode_entry
    w = shape.width
    sparse_row = shape.sparse_row
    row_store = w * vb if dense else sparse_row(vb)
    nvec = 1 if shape.classes == 2 else shape.classes
    incremental = cfg.model_entry.incremental
    test_rows = min(shape.test_rows, MAX_TEST_ROWS if not cfg.test_file else shape.test_rows)
    dense_test = dense and mode.maps_copy and not cfg.test_file  # kept as stored: dense
    ddp = cfg.workers > 1  # the run's process coordinates: it neither holds nor trains on the rows
    p = {
        "data": shape.train_rows * row_store if mode.holds_rows and not ddp else 0.0,
        "test": test_rows * (w * cb if dense_test else sparse_row(cb)),
        "batch": min(cfg.batch_size, shape.train_rows) * (w * cb if dense else sparse_row(cb))
        if incremental and not ddp else 0.0,
        "model_linear": 0.0, "model_linear_compiled": 0.0, "model_linear_ftrl": 0.0, "model_mlp": 0.0,
        "model_mlp_step": 0.0, "model_svm": 0.0, "activations": 0.0, "eval_sample": 0.0,
        "transform_nystroem": 0.0, "transform_rff": 0.0, "transformed": 0.0, "batch_transformed": 0.0,
        "io_generate": 0.0, "io_parse": 0.0, "io_parse_compiled": 0.0, "io_build": 0.0, "io_build_dense": 0.0,
        "io_parse_batch": 0.0, "io_densify": 0.0, "test_lean_file": 0.0,
    }
    if cfg.lean:
        # the lean worker leaves the held-out rows on disk and scores them a slice at a time; with
        # live monitoring it holds the evaluation sample; it parses 1 MiB blocks
        p["test"] = min(test_rows, EVAL_SAMPLE_ROWS) * sparse_row(cb) if live_evaluation(cfg.monitor) else 0.0
        p["test_lean_file"] = lean_test_file_bytes(cfg, shape)
    p["shuffle"] = shuffle_bytes(cfg, shape, row_store, sparse_row(8)) if incremental and not ddp else 0.0
    p["kept_cache"], p["kept_history"] = kept_bytes(cfg, shape)
    # loading stacks the chunks into one array: two copies at that moment, unless one chunk
    p["data_stacked"] = p["data"] * (2 if shape.rows > CHUNK_ROWS else 1)
    # the model's own parts (its registry entry's pricing): for a linear model its solver's state, in the
    # model_state type (the weights and their average for SGD; for FTRL z and n, from which the compiled
    # solvers score rows with no copy of the weights)
    p.update(load(cfg.model_entry.pricing).parts(cfg, shape, nvec))
    # distill: the linear-svm student's weights over the input columns, beside the teacher
    p["model_student"] = state_bytes(cfg, w, nvec) if cfg.distill else 0.0
    # the export at the end of the run (evaluate phase; ``model_export._export``), of the student for a distilled
    # run: the solver's bytes a weight (``export_bytes``); the lean path's is left to its own calibration
    p["model_export"] = nvec * w * cfg.solver_entry.export_bytes if exports(cfg, shape) and not cfg.lean else 0.0
    if live_evaluation(cfg.monitor) and incremental and not cfg.lean:  # (the lean path's is its "test" above)
        # the live evaluation's sample, as a copy of test rows, and densified a slice at a time for dense runs
        ev = min(EVAL_SAMPLE_ROWS, test_rows)
        p["eval_sample"] = ev * (w * cb if dense_test else sparse_row(cb)) + (ev * w * cb if dense else 0.0)
    source_is_text = not cfg.is_builtin or (mode.parses_text and not ddp)
    chunk = min(CHUNK_ROWS, shape.rows)
    # a chunk as read, and (memmap builds, dense loads) as converted to its stored form
    chunk_bytes = chunk * (w * 8 if shape.dense_source else sparse_row(8))
    if dense and not mode.parses_text:
        p["io_densify"] = chunk * w * (8.0 if mode.holds_rows and not shape.dense_source else vb)
    p["load_held"], p["io_densify_chunk"] = load_chunk_moment(cfg, shape, chunk) if dense and not ddp else (0.0, 0.0)
    if source_is_text and cfg.parser_entry.compiled and shape.file_format in ("svmlight", ""):
        p["io_parse_compiled"] = PARSER_BLOCK
    elif source_is_text:
        row_read = w * 8 if shape.dense_source else sparse_row(8)
        p["io_parse"] = chunk * row_read  # loading (and stream mode's test rows) parse by chunks
        if mode.parses_text and not ddp:
            p["io_parse_batch"] = min(cfg.batch_size, shape.train_rows) * row_read  # training parses by batches
    else:
        p["io_generate"] = chunk_bytes
    if mode.maps_copy or (mode.parses_text and cfg.is_builtin and not ddp):
        # prepare: the binary (memmap) or text (stream) copy, chunk by chunk; a sparse chunk costs many
        # times its bytes while it is generated or parsed, a dense source's about its bytes: apart
        p["io_build_dense" if shape.dense_source else "io_build"] = chunk_bytes
    p["io_convert_file"] = convert_file_bytes(cfg, shape, chunk) if mode.maps_copy and dense else 0.0
    return p


def shuffle_bytes(cfg: RunConfig, shape: Shape, row_store: float, parsed_row: float) -> float:
    """What shuffling holds: memory mode's permutation of row ids; memmap's window of mapped pages;
    stream's pool of parsed rows; and memmap's piece order (``shuffle_order``; the spill keeps its
    order and piece index on disk)."""
    if not cfg.shuffle:
        return 0.0
    window = min(cfg.shuffle_buffer, shape.train_rows)
    if cfg.mode_entry.holds_rows:
        return shape.train_rows * 8.0
    if cfg.mode_entry.maps_copy:
        return window * row_store + order_bytes(shape.train_rows, cfg.shuffle_buffer)
    return window * (shape.width * 8 if shape.dense_source else parsed_row)


def kept_bytes(cfg: RunConfig, shape: Shape) -> tuple[float, float]:
    """What the accumulation knobs keep at their fullest (``worker.accumulation``): the cache in
    memory, every training row's components and int32 class code; the history, a copy of each
    batch as its step took it (CSR parts, or dense rows: the components where rows are transformed)
    and its class codes, for every batch of every pass (references), or for the batches between two
    collections (cycles: every gc_every batches, else when the collector's first generation fills)."""
    n, cb = shape.train_rows, cfg.compute_bytes
    cache = n * (cfg.n_components * cb + 4.0) if cfg.transform_cache == TransformCache.MEMORY else 0.0
    if cfg.history == History.NONE:
        return cache, 0.0
    steps = -(-n // max(1, min(cfg.batch_size, n)))
    transformed = cfg.model_entry.transform and (cfg.transform_cache != TransformCache.NONE
                                                 or (cfg.mode_entry.holds_rows and not cfg.distill))
    width = cfg.n_components if transformed else shape.width
    row = width * cb if transformed or cfg.dense else shape.sparse_row(cb)
    per_batch = n / steps * (row + 4.0) + 8.0
    batches = cfg.epochs * steps
    if cfg.history == History.CYCLES:
        batches = min(batches, cfg.gc_every or GC_FIRST_GENERATION)
    return cache, batches * per_batch


def exports(cfg: RunConfig, shape: Shape) -> bool:
    """Whether the run exports its model at the end (``model_export.not_exportable`` is None): a linear-svm
    model, or a distilled run's linear-svm student, not trained on raw text."""
    return (cfg.model_entry.exportable or cfg.distill) and shape.file_format != "text"


def reads_lines(cfg: RunConfig, shape: Shape) -> bool:
    """Whether the data is a sparse text file read a chunk of lines at a time (``readers._iter_format``:
    svmlight with scikit-learn's parser, or raw text), the reader keeping the chunk's lines while
    the chunk is used. (The native parser reads 1 MiB blocks; CSV rows are dense.)"""
    if shape.file_format == "text":
        return True
    return shape.file_format == "svmlight" and not cfg.parser_entry.compiled


def convert_file_bytes(cfg: RunConfig, shape: Shape, chunk: int) -> float:
    """What a dense memmap build from a text file holds while it converts a chunk (``copies.binary_copy``),
    its peak: the chunk's lines (the reader keeps them while the chunk is used), the chunk as parsed
    (CSR), its training part's CSR copy (``X[mask]``), that part made dense in float64 (``toarray``)
    and its copy in the storage precision (``astype`` copies, float64 too). The parse's own peak,
    before, is ``other_moment``'s. 0 for other builds (a generated chunk's temporaries stay in RSS:
    ``io_build`` and ``io_densify`` add up, as the calibration fitted them)."""
    if not reads_lines(cfg, shape) or shape.dense_source:
        return 0.0
    sparse_row = shape.nnz_per_row * 12 + 8  # float64 value + int32 id, int64 row pointer
    train_part = chunk * shape.train_rows / max(1, shape.rows)  # every row with a separate test file
    dense_row = shape.width * (8 + BYTES_PER_VALUE[cfg.precision])
    return chunk * (shape.text_bytes_per_row + sparse_row) + train_part * (sparse_row + dense_row)


def load_chunk_moment(cfg: RunConfig, shape: Shape, chunk: int) -> tuple[float, float]:
    """The load phase's other moment in a dense memory run from sparse rows (``training._gather``): while
    a chunk is stored, the chunks stored before it are held beside the chunk made dense in float64
    (``toarray``) and its copy in the storage precision (none for float64). The worst chunk is the last
    full one or the last one; returns (the stored chunks held, the chunk's dense forms). Where it
    outweighs the stacking moment (float32 and float16: the float64 chunk is 2-4 times its stored
    form) the phase peaks here. (0, 0) for other runs and for one chunk (no stacking moment either)."""
    if not cfg.mode_entry.holds_rows or shape.dense_source or shape.rows <= chunk:
        return 0.0, 0.0
    vb = BYTES_PER_VALUE[cfg.precision]
    per_chunk = max(1, round(chunk * shape.train_rows / shape.rows))  # a chunk's training rows
    full, rest = divmod(shape.train_rows, per_chunk)
    dense_row = shape.width * (8 + (vb if cfg.precision != "float64" else 0))
    candidates = [((full - 1) * per_chunk, per_chunk)] + ([(full * per_chunk, rest)] if rest else [])
    held, rows = max(candidates, key=lambda c: c[0] * shape.width * vb + c[1] * dense_row)
    return held * shape.width * vb, rows * dense_row


def lean_test_file_bytes(cfg: RunConfig, shape: Shape) -> float:
    """The lean path's separate test file, read whole: its rows as the native parser
    gives them (float64 values, int32 ids, int64 row pointers). The parsed blocks are
    held next to their concatenation (``FIXED_COEFS``: two bytes of RSS per byte)."""
    if not cfg.test_file:
        return 0.0
    return shape.test_rows * (shape.nnz_per_row * 12.0 + 8.0)


def features(cfg: RunConfig, p: dict[str, float]) -> dict[str, dict[str, float]]:
    """The regression features of each phase the run goes through: its parts, split by
    mode where the mode changes what a byte costs, and a constant (1 MiB)."""
    if cfg.lean:
        return lean_features(cfg, p)
    m = cfg.mode
    shuffle_key = f"shuffle_{m}"
    one = {f"const_{m}": MiB}
    text = cfg.mode_entry.parses_text
    reader = cfg.threads > 1 and text
    data_kind = "data_dense" if cfg.dense else f"data_{cfg.precision}"
    stacked = p["data_stacked"]
    tf = {k: p[k] for k in ("transform_nystroem", "transform_rff", "transformed")}
    held = {"test": p["test"], data_kind: p["data"]}
    model = {k: p[k] for k in ("model_linear", "model_linear_compiled", "model_linear_ftrl", "model_mlp", "model_svm")}
    # activations are held during a step only; the live evaluation's sample while training only
    # the train phase's peak is during a step: what the MLP holds between steps plus what a step adds
    trained = {**model, "model_mlp": p["model_mlp"] + p["model_mlp_step"]}
    io = {f"{k}_{m}": p[k] for k in ("io_generate", "io_parse", "io_parse_compiled", "io_densify")}
    prepare = {**one, f"io_build_{m}": p["io_build"], f"io_build_dense_{m}": p["io_build_dense"],
               f"io_densify_{m}": p["io_densify"]}
    if p.get("io_convert_file"):
        # a dense build from a text file peaks while it converts a chunk: the chunk's lines and arrays
        # beside its dense copies (the parse's own peak, before, is ``other_moment``'s)
        prepare = {**one, "io_convert_file": p["io_convert_file"]}
    phases = {
        "prepare": prepare,
        "load": {**one, **io, "test": p["test"], f"load_{data_kind}": stacked},
        "train": {**one, **held, **trained, f"batch_{m}": p["batch"],
                  "batch_queue": 2 * p["batch"] if reader else 0.0,
                  "io_parse_batch": p["io_parse_batch"],
                  "io_parse_compiled_stream": p["io_parse_compiled"] if text else 0.0,
                  **tf, "batch_transformed": p["batch_transformed"], shuffle_key: p["shuffle"],
                  "activations": p["activations"], "eval_sample": p["eval_sample"],
                  "kept_cache": p["kept_cache"], "kept_history": p["kept_history"]},
        # what training freed is often kept by the allocator, so it shows here too
        "evaluate": {**one, **held, **model, **tf, f"batch_{m}": p["batch"], "io_parse_batch": p["io_parse_batch"],
                     shuffle_key: p["shuffle"], "model_export": p["model_export"]},
    }
    if cfg.model_entry.transform:
        phases["transform"] = {**one, **held, **tf, f"batch_{m}": p["batch"]}
    if cfg.distill:
        # the student trains over the same batches while the teacher labels them: what the train phase
        # holds, plus the student's weights (at a linear model's cost per byte); both models to the end
        student = {cfg.solver_entry.model_part: p["model_student"]}
        phases["distill"] = _plus({k: v for k, v in phases["train"].items() if k != "activations"}, student)
        phases["evaluate"] = _plus(phases["evaluate"], student)
    return {ph: {k: v for k, v in f.items() if v} for ph, f in phases.items()}


def other_moment(cfg: RunConfig, p: dict[str, float], phase: str) -> dict[str, float] | None:
    """A phase's other moment where ``features`` prices one of two; the phase peaks at the larger.
    Prepare, in a dense memmap build from a text file (``features`` prices the chunk's conversion):
    reading the chunk, priced as any build's read. Load, in a dense memory run from sparse rows
    (``features`` prices the stacking): a chunk made dense beside the chunks stored before it
    (``load_chunk_moment``). None for other runs and phases."""
    if cfg.lean:
        return None
    m = cfg.mode
    if phase == "prepare" and p.get("io_convert_file"):
        return {f"const_{m}": MiB, f"io_build_{m}": p["io_build"]}
    if phase == "load" and p.get("io_densify_chunk"):
        io = {f"{k}_{m}": p[k] for k in ("io_generate", "io_parse", "io_parse_compiled")}
        return {f"const_{m}": MiB, **io, "test": p["test"], "load_data_dense": p["load_held"],
                "io_densify_chunk": p["io_densify_chunk"]}
    return None


def _plus(features: dict[str, float], more: dict[str, float]) -> dict[str, float]:
    return {**features, **{k: features.get(k, 0.0) + v for k, v in more.items()}}


def lean_features(cfg: RunConfig, p: dict[str, float]) -> dict[str, dict[str, float]]:
    """The lean path's features, apart from the classic path's (its allocator is tuned, its
    floor is a third of theirs, it shares no code with them): fitted on the calibration's
    lean runs. Its batches come a few at a time (the text block's rows, the rebatching, the
    reader thread's queue), its held-out rows stay on disk but for the live evaluation's sample
    (``test``), a separate test file is read whole (``test_lean_file``)."""
    one = {"const_lean": MiB}
    batch = p["batch"] * (5 if cfg.threads > 1 else 1)  # the parse-ahead queue: four blocks and the one parsed
    held = {"test_lean_sample": p["test"], "test_lean_file": p["test_lean_file"]}
    phases = {
        "prepare": one,
        "load": {**one, **held},
        "train": {**one, **held, "model_lean": p["model_linear_compiled"], "batch_lean": batch,
                  "shuffle_lean": p["shuffle"], "kept_history": p["kept_history"]},
        "evaluate": {**one, **held, "model_lean": p["model_linear_compiled"], "shuffle_lean": p["shuffle"]},
    }
    return {ph: {k: v for k, v in f.items() if v} for ph, f in phases.items()}


def floor_key(cfg: RunConfig) -> str:
    if cfg.lean:
        return f"{cfg.model}+lean"
    return f"{cfg.model}+base"


# ---------------------------------------------------------------- train time (rough)

def time_family(cfg: RunConfig) -> str:
    """Runs whose per-sample and per-step costs are alike (the solver entry's ``family``)."""
    if cfg.model_entry.linear and cfg.solver_entry.family:
        return f"{cfg.model}+{cfg.solver_entry.family}"
    return cfg.model


def time_features(cfg: RunConfig, shape: Shape) -> dict[str, float]:
    """Units of work of the train phase, whose seconds each the calibration fits:

    - ``sample_<family>``: samples trained x the values each one touches (nonzeros, or
      the width for dense batches; kernel-approx: its components, and the transform of
      each row outside memory mode);
    - ``step_<family>``: optimizer steps x the model's weights (an SGD ``partial_fit``
      call per batch; an MLP step per 200 rows, each one passing over every weight
      about 15 times: the dense gradient and Adam's moments and update; the numpy MLP:
      one step per batch, and per sample its forward, backward and recomputed layers);
    - ``fresh_<family>``: for the MLPs, steps x the weights of their layers of
      ``FRESH_LAYER_BYTES`` or more, whose gradient and update temporaries come from the
      kernel as new zeroed pages at every step;
    - ``parse_<parser>``: stream mode parses the text once (later passes read the
      binary spill): rows x nonzeros;
    - ``svm``: the exact kernel SVM, rows^2 x nonzeros;
    - ``const``: one per run."""
    fam = time_family(cfg)
    n = shape.train_rows
    nvec = 1 if shape.classes == 2 else shape.classes
    row_work = shape.width if cfg.dense else shape.nnz_per_row
    batch = min(cfg.batch_size, max(1, n))
    steps = cfg.epochs * -(-n // batch)
    units = load(cfg.model_entry.pricing).work(cfg, shape, fam, nvec, row_work, batch, steps)
    f = {"const": 1.0, **{k: v for k, v in units.items() if v or not k.startswith("fresh_")}}
    if cfg.mode_entry.parses_text:
        f[f"parse_{cfg.parser}"] = float(n) * shape.nnz_per_row
    return f


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


# Seconds per unit of time_features, fitted on the calibration runs of the 2-core
# development machine (svmcore 2026, scikit-learn 1.9): the time forecast of a machine
# without its own calibration, and labelled as such.
REFERENCE_TIME_COEFS = {
    "const": 0.0427, "parse_sklearn": 8.82e-07, "sample_kernel-approx": 1.19e-09,
    "sample_linear-svm": 5.66e-09, "sample_linear-svm+compiled": 5.29e-08, "sample_mlp": 2.28e-09,
    "step_kernel-approx": 1.04e-05, "step_linear-svm": 6.5e-09, "step_linear-svm+compiled": 1.57e-09,
    "step_mlp": 1.92e-08, "svm": 1.96e-08,
    "fresh_mlp": 0.0,  # (fitted before the time model priced it apart: within step_mlp there)
}


# ---------------------------------------------------------------- prediction

def predict(cfg: RunConfig, cal: Calibration | None, shape: Shape | None = None, cache_dir: str | None = None
            ) -> Forecast:
    """The calibrated forecast: the exact peak, per phase, and its parts. Without a calibration, a lower
    bound: each phase's parts, each byte counted once, with no floor and no allocator overhead (every run
    needs at least this much), and the train time at the reference machine's rates."""
    shape = shape or data_shape(cfg, cache_dir)
    p = parts(cfg, shape)
    if cal is None:
        floor, time_coefs = 0.0, REFERENCE_TIME_COEFS
        phases = {ph: group_parts({k: v / MiB for k, v in f.items() if not k.startswith("const_")})
                  for ph, f in features(cfg, p).items()}
    else:
        floor, time_coefs, phases = floor_mb(cal, cfg), cal.time_coefs, {"imports": {}}
        for phase, f in sorted(features(cfg, p).items(), key=lambda kv: PHASES.index(kv[0])):
            coefs = cal.coefs.get("train" if phase == "distill" else phase, {})  # no calibration run distills
            contrib = {k: v * coefs.get(k, FIXED_COEFS.get(k, 0.0)) / MiB for k, v in f.items()}
            moment = other_moment(cfg, p, phase)
            if moment:  # the phase's peak is the larger of its two moments
                other = {k: v * coefs.get(k, FIXED_COEFS.get(k, 0.0)) / MiB for k, v in moment.items() if v}
                contrib = other if sum(other.values()) > sum(contrib.values()) else contrib
            if cfg.workers > 1 and phase in ("train", "evaluate"):
                # the scheduler, nannies and client in the run's process, and every worker's returned
                # model while it mixes them (one byte of RSS per byte: not calibrated)
                returned = cfg.workers * (p["model_linear"] + p["model_linear_compiled"]) / MiB
                contrib["dask"] = DASK_COORDINATOR_MB + returned
            phases[phase] = group_parts(contrib)
    totals = {k: floor + sum(v.values()) for k, v in phases.items()}
    peak_phase = max(totals, key=totals.get)
    calibrated_parallel = cal is not None and cfg.workers > 1
    train_s = None if calibrated_parallel else predict_train_s(cfg, shape, time_coefs)
    return Forecast(
        predicted_peak_mb=round(totals[peak_phase], 1), peak_phase=peak_phase,
        parts={"floor": round(floor, 1), **_rounded(phases[peak_phase])} if cal else _rounded(phases[peak_phase]),
        phases_mb={k: round(v, 1) for k, v in totals.items()},
        phase_parts={k: _rounded(v) for k, v in phases.items()}, lower_bound=cal is None,
        predicted_train_s=None if train_s is None else round(train_s, 1),
        floor_mb=round(floor, 1) if cal else None, width=shape.width,
        parallel=parallel_estimate(cfg, shape, totals[peak_phase]) if calibrated_parallel else None)


def _rounded(parts_mb: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 1) for k, v in parts_mb.items()}


def parallel_estimate(cfg: RunConfig, shape: Shape, coordinator_mb: float) -> ParallelForecast:
    """A data-parallel run's memory per Dask worker and in total (structural, not
    calibrated: the worker's floor as measured, plus its parts at one byte of RSS each).

    A worker holds its floor, the model twice (as received and trained in place, and
    serialized to be sent back), one batch in compute form and as converted, and in memory mode its whole shard
    as stored; stream mode with shuffling holds a window of its shard's rows (read, and
    stacked). The total is the coordinator (the run's process) plus every worker."""
    vb = BYTES_PER_VALUE[cfg.precision]
    cb = cfg.compute_bytes
    w, sparse_row, transform = shape.width, shape.sparse_row, cfg.model_entry.transform
    shard_rows = -(-shape.train_rows // cfg.workers)
    nvec = 1 if shape.classes == 2 else shape.classes
    parts_b = {
        "model": 2 * state_bytes(cfg, cfg.n_components if transform else w, nvec),
        "batch": 2 * min(cfg.batch_size, shard_rows) * (w * cb if cfg.dense else sparse_row(cb)),
        "data": shard_rows * sparse_row(vb) if cfg.mode_entry.holds_rows else 0.0,
        "shuffle": 2 * min(cfg.shuffle_buffer, shard_rows) * sparse_row(vb)
        if cfg.shuffle and cfg.mode_entry.parses_text else (shard_rows * 8.0 if cfg.shuffle else 0.0),
    }
    if transform:
        parts_b["transforms"] = (cfg.n_components * sparse_row(8) + 3 * cfg.n_components ** 2 * 8
                                 if cfg.approximation == "nystroem" else w * cfg.n_components * 8)
        parts_b["batch"] += min(cfg.batch_size, shard_rows) * cfg.n_components * 8
    per_worker = DASK_WORKER_FLOOR_MB + sum(parts_b.values()) / MiB
    return ParallelForecast(
        workers=cfg.workers, per_worker_mb=round(per_worker, 1),
        per_worker_parts_mb={"floor": DASK_WORKER_FLOOR_MB, **{k: round(v / MiB, 1) for k, v in parts_b.items()}},
        coordinator_mb=round(coordinator_mb, 1), total_mb=round(coordinator_mb + cfg.workers * per_worker, 1),
        basis="per worker: its measured floor plus its parts (not calibrated); coordinator: the calibrated "
              "model of the run's process; total: the coordinator plus every worker, as if all peaked at once")


# the part a feature folds back into: the first of these its name starts with, else "other"
_GROUPS = (("activations", "activations"), ("eval_sample", "monitor"), ("test", "test"), ("data", "data"),
           ("load_data", "data"), ("batch_transformed", "transforms"), ("batch", "batch"), ("model", "model"),
           ("transform", "transforms"), ("io_", "io"), ("shuffle", "shuffle"), ("kept", "kept"))


def group_parts(contrib: dict[str, float]) -> dict[str, float]:
    """Features folded back into the parts named in the output."""
    out = dict.fromkeys(("data", "test", "batch", "model", "activations", "transforms", "io", "shuffle", "monitor",
                         "kept", "other"), 0.0)
    for k, v in contrib.items():
        out[next((part for prefix, part in _GROUPS if k.startswith(prefix)), "other")] += v
    return out


def floor_mb(cal: Calibration, cfg: RunConfig) -> float:
    """The floor (MiB) of a run of ``cfg``: its library set's measured floor, or the nearest one,
    and the tracker's when the run is traced."""
    key = floor_key(cfg)
    if key in cal.floors:
        return cal.floors[key] + tracer_mb(cfg)
    if cfg.lean:  # calibration runs are synthetic, never lean: the reference measurement
        return LEAN_FLOOR_MB + tracer_mb(cfg)
    return cal.floors.get(f"{cfg.model}+base", cal.floors.get("linear-svm+base", 0.0)) + tracer_mb(cfg)


def tracer_mb(cfg: RunConfig) -> float:
    """What the trace knob adds to the floor, and so to every phase: memray's library and its
    tracker's tables in the worker (none when the knob is off)."""
    return (TRACER_MB["lean"] if cfg.lean else TRACER_MB["base"]) if cfg.trace else 0.0


# ---------------------------------------------------------------- calibration

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
