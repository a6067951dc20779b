"""Run configuration: the one validation of knob values.

``validate`` turns values into a frozen ``RunConfig`` or raises ``ConfigError`` naming
the knob. It is pure, so whatever builds a config from values calls it (the launch
boundary ``engine.admission.admit``, the worker reading its job file, sweeps, the
candidates of ``recommend``), and code that holds a ``RunConfig`` trusts it."""

from __future__ import annotations

import dataclasses
import json
import numbers
import os
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Mapping, NamedTuple

from svmcore.spec.choices import (
    BY_KNOB, BYTES_PER_VALUE, History, Mode, Model, ModelState, Monitor, Parser, Precision, Representation, Solver,
    TransformCache,
)
from svmcore.spec.registry import (
    DISTILLABLE_MODELS, FLOAT32_STATE_SOLVERS, MIXABLE_MODELS, MIXABLE_SOLVERS, MODELS, MODES, PARSERS, SOLVERS, ModeEntry, ModelEntry,
    ParserEntry, SolverEntry,
)
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import BUILTIN_DATASETS, DENSE_DATASETS, KNOBS, MAX_KERNEL_SVM_ROWS
from svmcore.spec.scheduler import parse_address

DEFAULT_FEATURES = {"sparse-text": 1 << 20, "dense": 200}
MAX_SHOWN = 80  # characters of a user's value echoed in an error message


@dataclass(frozen=True)
class RunConfig:
    dataset: str = "sparse-text"
    test_file: str | None = None
    rows: int = 100_000
    features: int | None = None
    nnz_per_row: int = 50
    seed: int = 0
    mode: Mode = Mode.MEMORY
    workers: int = 1
    scheduler: str | None = None
    mix_every: int = 0
    representation: Representation = Representation.SPARSE
    precision: Precision = Precision.FLOAT64
    hashing_bits: int = 0
    parser: Parser = Parser.SKLEARN
    gc_every: int = 0
    memory_cap_mb: int | None = None
    cap_kind: str = "auto"
    model: Model = Model.LINEAR_SVM
    batch_size: int = 1024
    epochs: int = 5
    shuffle: bool = True
    shuffle_buffer: int = 16_384
    alpha: float | None = None  # None = auto: chosen from the training rows (spec.regularisation)
    average: bool = True
    model_state: ModelState = ModelState.FLOAT64
    solver: Solver = Solver.SKLEARN
    l1: float = 0.1
    l2: float | None = None  # None = auto: chosen from the training rows (spec.regularisation)
    ftrl_alpha: float = 2.0
    ftrl_beta: float = 1.0
    c: float = 1.0
    approximation: str = "nystroem"
    n_components: int = 256
    cache_size_mb: int = 200
    hidden: str = "64"
    checkpoint: int = 0
    distill: bool = False
    monitor: Monitor = Monitor.FULL
    threads: int = 1
    transform_cache: TransformCache = TransformCache.NONE
    history: History = History.NONE
    trace: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The knobs as plain values: a choice knob's member as its text (the wire form, also what
        a Streamlit widget's state holds)."""
        return {k: v.value if isinstance(v, StrEnum) else v for k, v in dataclasses.asdict(self).items()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def lean(self) -> bool:
        """The lean floor, a configuration of the worker's one run (worker/training.py):
        linear-svm in stream or memory mode with the native parser and solver, sparse rows,
        no hashing, on a file. The run then loads only numpy and the native library. The path reads svmlight only:
        a file whose content is anything else is refused before launch, whatever its name
        (``data.sources.check_lean``)."""
        return (self.model == Model.LINEAR_SVM and self.mode in (Mode.STREAM, Mode.MEMORY)
                and self.parser == Parser.NATIVE and self.solver == Solver.NATIVE
                and self.representation == Representation.SPARSE and not self.hashing_bits
                and not self.is_builtin)

    @property
    def accumulates(self) -> "Accumulates":
        """Which of the two accumulation causes the run switches on (falsy: neither)."""
        return Accumulates(self.transform_cache != TransformCache.NONE, self.history != History.NONE)

    @property
    def model_entry(self) -> ModelEntry:
        return MODELS[self.model]

    @property
    def solver_entry(self) -> SolverEntry:
        return SOLVERS[self.solver]

    @property
    def mode_entry(self) -> ModeEntry:
        return MODES[self.mode]

    @property
    def parser_entry(self) -> ParserEntry:
        return PARSERS[self.parser]

    @property
    def is_builtin(self) -> bool:
        return self.dataset in BUILTIN_DATASETS

    @property
    def dense_builtin(self) -> bool:
        """A built-in dataset of dense rows (synthetic dense data, or a shipped set)."""
        return self.dataset in DENSE_DATASETS

    @property
    def dense(self) -> bool:
        """Rows stored and batched dense (the representation knob)."""
        return self.representation == Representation.DENSE

    @property
    def compute_bytes(self) -> int:
        """Bytes of a value as training computes on it: float64, or float32 for float32 and float16 storage."""
        return 8 if self.precision == Precision.FLOAT64 else 4

    @property
    def is_synthetic(self) -> bool:
        return self.dataset in ("sparse-text", "dense")

    @property
    def hidden_sizes(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.hidden.split(","))


class Accumulates(NamedTuple):
    cache: bool
    history: bool

    def __bool__(self) -> bool:
        return self.cache or self.history


def kept_layers(depth: int, checkpoint: int) -> list[int]:
    """Hidden layers (1..depth) whose activations mlp-numpy's forward pass keeps (the
    ``checkpoint`` knob): the worker's model and the memory model's price both read it here."""
    if checkpoint <= 1:
        return list(range(1, depth + 1))
    return [i for i in range(1, depth + 1) if i % checkpoint == 0]


assert {f.name for f in dataclasses.fields(RunConfig)} == set(KNOBS), "RunConfig and KNOBS disagree"


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, cut to ``MAX_SHOWN`` characters with an
    ellipsis and the value's full length: a 100 KB value must not come back whole."""
    text = repr(value)
    if len(text) <= MAX_SHOWN:
        return text
    size = len(value) if isinstance(value, (str, bytes)) else len(text)
    return f"{text[:MAX_SHOWN]}… ({size:,} characters)"


def shown_name(name: str) -> str:
    """A knob name as given by the user, cut like :func:`shown` (without quotes)."""
    return name if len(name) <= MAX_SHOWN else f"{name[:MAX_SHOWN]}… ({len(name):,} characters)"


def coerce(name: str, value: Any) -> Any:
    k = KNOBS[name]
    if k.auto and isinstance(value, str) and value.strip().lower() == "auto":
        return None
    if value is None or (isinstance(value, str) and value.strip() == "" and k.optional):
        if k.optional:
            return None
        raise ConfigError(name, f"a value is required (allowed: {k.describe_allowed()})")
    if k.type is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(name, f"expected true or false, got {shown(value)}")
    if k.type is int:
        if isinstance(value, bool):
            raise ConfigError(name, f"expected a whole number, got {shown(value)}")
        if isinstance(value, numbers.Integral):
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str):
            try:
                value = int(value.strip().replace("_", ""))
            except ValueError:
                raise ConfigError(name, f"expected a whole number, got {shown(value)}") from None
        if not isinstance(value, int):
            raise ConfigError(name, f"expected a whole number, got {shown(value)}")
    elif k.type is float:
        if isinstance(value, bool):
            raise ConfigError(name, f"expected a number, got {shown(value)}")
        try:
            value = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(name, f"expected a number, got {shown(value)}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(name, f"expected a finite number, got {shown(value)}")
    elif k.type is str:
        if not isinstance(value, str):
            raise ConfigError(name, f"expected text, got {shown(value)}")
        value = value.strip()
    for old, new, why in k.retired:
        if value == old:
            raise ConfigError(name, f"{shown(value)} is retired: use {new} ({why})", fix={name: new})
    if k.choices and not k.free_text and value not in k.choices:
        raise ConfigError(name, f"{shown(value)} is not one of: {k.describe_allowed()}")
    if name in BY_KNOB:
        value = BY_KNOB[name](value)
    if k.min is not None and value < k.min or k.max is not None and value > k.max:
        raise ConfigError(name, f"{shown(value)} is out of range; allowed: {k.describe_allowed()}")
    return value


def validate(values: Mapping[str, Any] | None = None, **overrides: Any) -> RunConfig:
    """Build a RunConfig from user values, checking each knob and every combination.

    Unknown knobs, bad types, out-of-range values and impossible combinations all
    raise ``ConfigError`` naming the knob. Things that need the data itself (rows of
    a file, batch size above the data) and what this machine can do (a cgroup cap)
    are checked at launch by ``engine.admission.admit``; this function is pure.
    """
    merged: dict[str, Any] = dict(values or {})
    merged.update(overrides)
    unknown = sorted(set(merged) - set(KNOBS))
    if unknown:
        raise ConfigError(shown_name(str(unknown[0])), f"unknown knob; known knobs: {', '.join(KNOBS)}")
    clean = {name: coerce(name, merged[name]) for name in merged}
    if clean.get("features") is None:
        clean["features"] = DEFAULT_FEATURES.get(clean.get("dataset", "sparse-text"), DEFAULT_FEATURES["sparse-text"])
    cfg = RunConfig(**clean)
    _check_combinations(cfg)
    return cfg


def physical_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _check_combinations(cfg: RunConfig) -> None:
    if not cfg.is_builtin:
        if not cfg.dataset:
            raise ConfigError("dataset", "a dataset name or a file path is required")
        if not os.path.isfile(cfg.dataset):
            raise ConfigError("dataset", f"{shown(cfg.dataset)} is neither a built-in dataset "
                              f"({', '.join(BUILTIN_DATASETS)}) nor a readable file")
    if cfg.test_file is not None and not os.path.isfile(cfg.test_file):
        raise ConfigError("test_file", f"{shown(cfg.test_file)} is not a readable file")
    if cfg.dataset == "sparse-text" and cfg.nnz_per_row > cfg.features:
        raise ConfigError("nnz_per_row", f"{cfg.nnz_per_row} nonzeros per row cannot fit in "
                          f"{cfg.features} features")
    if cfg.is_synthetic and cfg.batch_size > cfg.rows:
        raise ConfigError("batch_size", f"{cfg.batch_size} is larger than the data ({cfg.rows} rows)")
    try:
        sizes = cfg.hidden_sizes
    except ValueError:
        raise ConfigError("hidden", f"expected comma-separated layer sizes like 128,64, got {shown(cfg.hidden)}") from None
    if not sizes or any(s < 1 or s > 100_000 for s in sizes) or len(sizes) > 8:
        raise ConfigError("hidden", "between 1 and 8 layers of 1 to 100,000 units each")
    if cfg.model == Model.KERNEL_SVM:
        if cfg.mode != Mode.MEMORY:
            raise ConfigError("mode", "kernel-svm trains on all the data at once; use mode=memory",
                              fix={"mode": "memory"})
        if cfg.is_synthetic and cfg.rows > MAX_KERNEL_SVM_ROWS:
            raise ConfigError("model", f"kernel-svm is exact and quadratic in rows; {cfg.rows:,} rows "
                              f"is above its limit of {MAX_KERNEL_SVM_ROWS:,}. Use kernel-approx.")
    _check_workers(cfg)
    _check_accumulation(cfg)
    reason = cfg.solver_entry.float32_state
    if cfg.model_state != ModelState.FLOAT64 and reason and (cfg.model_entry.linear or cfg.distill):
        raise ConfigError("model_state", f"{reason}; float32 state needs solver {' or '.join(FLOAT32_STATE_SOLVERS)}",
                          fix={"model_state": ModelState.FLOAT64.value})
    if cfg.distill and cfg.model not in DISTILLABLE_MODELS:
        raise ConfigError("distill", f"distill trains a linear-svm student on a teacher's labels: the teacher is "
                          f"{' or '.join(DISTILLABLE_MODELS)}; {cfg.model} is already the student",
                          fix={"distill": False})
    if cfg.distill and cfg.workers > 1:
        raise ConfigError("distill", "the student trains in the run's own process on the teacher's labels; "
                          "use workers=1", fix={"workers": 1})
    if cfg.trace and cfg.workers > 1:
        raise ConfigError("trace", "the tracker follows the run's own process; the Dask workers that train a "
                          "data-parallel run's shards are not traced: use workers=1", fix={"workers": 1})
    if cfg.cap_kind != "auto" and cfg.memory_cap_mb is None:
        raise ConfigError("cap_kind", "set memory_cap_mb to choose how to cap")
    if cfg.representation == Representation.DENSE:
        width = (1 << cfg.hashing_bits) if cfg.hashing_bits else cfg.features
        if cfg.is_synthetic:
            rows = cfg.rows if cfg.mode == Mode.MEMORY else cfg.batch_size
            need = rows * width * BYTES_PER_VALUE[cfg.precision]
            limit = (cfg.memory_cap_mb * 2**20) if cfg.memory_cap_mb else int(physical_memory_bytes() * 0.8)
            if need > limit:
                what = "the data" if cfg.mode == Mode.MEMORY else "one batch"
                raise ConfigError("representation", f"dense {what} would need {need / 2**30:,.1f} GiB "
                                  f"({rows:,} rows x {width:,} features x {BYTES_PER_VALUE[cfg.precision]} B), "
                                  f"above the {'cap' if cfg.memory_cap_mb else 'machine memory'} "
                                  f"({limit / 2**30:,.1f} GiB). Use sparse, hashing or stream mode.")


def _check_workers(cfg: RunConfig) -> None:
    if cfg.scheduler is not None:
        try:
            parse_address(cfg.scheduler)
        except ValueError as e:
            raise ConfigError("scheduler", str(e)) from None
    if cfg.scheduler is not None and cfg.workers == 1:
        raise ConfigError("scheduler", "a scheduler trains shards on Dask workers: set workers to 2 or more")
    if cfg.workers == 1:
        return
    if not cfg.model_entry.mixable:
        raise ConfigError("workers", f"workers={cfg.workers} trains {' or '.join(MIXABLE_MODELS)} only; "
                          f"{cfg.model} {cfg.model_entry.not_mixable}. Use workers=1.")
    if not cfg.solver_entry.mixable:
        raise ConfigError("workers", f"{cfg.solver_entry.not_mixable}; use solver {' or '.join(MIXABLE_SOLVERS)} "
                          "with workers above 1")
    if cfg.mode == Mode.MEMMAP:
        raise ConfigError("workers", "with workers above 1 the shards are the on-disk copy: use mode=stream "
                          "(each worker reads its shard a batch at a time) or memory (each worker holds its shard)")
    if cfg.is_synthetic and cfg.rows < cfg.workers * cfg.batch_size:
        raise ConfigError("workers", f"{cfg.rows:,} rows in {cfg.workers} shards give less than one batch "
                          f"({cfg.batch_size:,} rows) each; use fewer workers or a smaller batch_size")


def _check_accumulation(cfg: RunConfig) -> None:
    """The cache of transformed rows needs a transform made again every pass; the history needs batches."""
    if cfg.transform_cache != TransformCache.NONE:
        off = {"transform_cache": TransformCache.NONE.value}
        if not cfg.model_entry.transform:
            raise ConfigError("transform_cache", f"{cfg.model} has no transform to cache: the cache keeps kernel-approx's "
                              "transformed rows. (Feature hashing is applied as rows are read: memory mode holds the "
                              "hashed rows, stream mode's spill keeps them for later passes.)", fix=off)
        if cfg.mode_entry.holds_rows and not cfg.distill:
            raise ConfigError("transform_cache", "memory mode transforms every training row once, before the first "
                              "pass, and holds them: there is no transform in later passes to cache; use mode=stream "
                              "or memmap", fix=off)
        if cfg.workers > 1:
            raise ConfigError("transform_cache", "data-parallel shards are transformed on their Dask workers; the "
                              "cache is the run's own process's: use workers=1", fix=off)
    if cfg.history != History.NONE:
        off = {"history": History.NONE.value}
        if not cfg.model_entry.incremental:
            raise ConfigError("history", f"{cfg.model} trains once on all rows: there are no batches to keep a "
                              "history of", fix=off)
        if cfg.workers > 1:
            raise ConfigError("history", "data-parallel shards train on their Dask workers; the history is kept by "
                              "the run's own process: use workers=1", fix=off)
