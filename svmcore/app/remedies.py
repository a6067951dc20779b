"""The memory remedies the Learn page teaches: the common advice on SVM and deep-learning
memory, each with the saving the advice claims and the experiments that measure it here.

A ``Remedy``'s ``experiments`` are before/after pairs of runs that change only its knobs,
each on a stated base: the product's default setup always, and a second base where that
setup cannot show the effect. ``acts_on`` names the phases whose memory it changes: where
the peak happens decides what a remedy can save. The claims table, the Learn page and the
reference benchmark (``bench/remedies.py``) read them from here; an experiment whose
configs do not validate is reported as not runnable, with the reason, rather than hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.data.sources import n_test_rows
from svmcore.spec.config import DEFAULT_FEATURES, RunConfig, shown, validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import MAX_KERNEL_SVM_ROWS, defaults

QUICK_ROWS_DIVISOR = 10  # "quick" measurements: a tenth of the rows of synthetic data
QUICK_MIN_ROWS = 2_000


@dataclass(frozen=True)
class Experiment:
    """One before/after pair: ``before`` over the knob defaults, then ``after`` on top."""

    key: str
    title: str
    before: dict
    after: dict
    default_setup: bool = False  # the product's default setup, only the remedy's own knobs moved
    why: str = ""  # why this base: what it shows that the other does not
    impossible: str | None = None  # this base cannot run at all, and why (then it is stated, not run)

    def configs(self, overrides: dict | None = None, quick: bool = False) -> tuple[RunConfig, RunConfig]:
        """The validated before and after configs (``overrides`` on the base; ``quick``
        divides the rows of synthetic data). Raises ConfigError if they cannot run."""
        if self.impossible:
            raise ConfigError("remedy", self.impossible)
        base = {**self.before, **(overrides or {})}
        if quick:
            base = quick_base(base)
        return validate(base), validate({**base, **self.after})

    def runnable(self) -> str | None:
        """None if both configs validate, else the reason they cannot run."""
        if self.impossible:
            return self.impossible
        try:
            self.configs()
        except ConfigError as e:
            return str(e)
        return None


def quick_base(base: dict) -> dict:
    """A tenth of the rows (at least ``QUICK_MIN_ROWS``) for synthetic data; a batch is
    kept no larger than the training rows."""
    cfg = validate(base)
    if not cfg.is_synthetic:
        return dict(base)
    rows = max(QUICK_MIN_ROWS, cfg.rows // QUICK_ROWS_DIVISOR)
    out = dict(base, rows=rows)
    train_rows = rows - n_test_rows(rows)
    if cfg.batch_size > train_rows:
        out["batch_size"] = train_rows
    return out


@dataclass(frozen=True)
class Remedy:
    key: str
    title: str
    what: str
    why: str
    cost: str
    claim: str  # the saving the usual advice claims, in its words
    claim_pct: tuple[float, float] | None  # that claim as a range of percent of the peak, where it gives one
    acts_on: tuple[str, ...] = ()  # phases whose memory it changes (the floor carries into every phase)
    experiments: tuple[Experiment, ...] = ()
    knobs: tuple[str, ...] = ()
    limits: str | None = None  # what the product's version of the remedy does not do, plainly
    in_advice: bool = True  # one of the common advice's remedies (else one this product adds)
    moves_to_file: bool = False  # moves memory from anonymous to file-backed pages (memmap)
    shows_model: bool = False  # its lessons give the model's nonzero weights and sparse size
    shows_upcast: bool = False  # its lessons give what the float16 upcast cost per batch
    measured_by: str | None = None  # a remedy that is no before/after pair of runs: its benchmark (bench/NAME.py)
    # the accumulation it stops, in words (doctor ranks these first for a run that grows pass after pass); None: none
    stops_growth: str | None = None
    see_also: str | None = None  # a benchmark of a kindred cost Learn shows beside it (bench/NAME.py)

    @property
    def runnable(self) -> bool:
        return any(e.runnable() is None for e in self.experiments)

    def experiment(self, key: str) -> Experiment:
        found = next((e for e in self.experiments if e.key == key), None)
        if found is None:
            raise ConfigError("experiment", f"{self.title} has no experiment {shown(key)}")
        return found


DEFAULT_SETUP: dict = {}  # the knob defaults: sparse-text, 100,000 rows x 2^20 columns, sparse, in memory
_TEXT = {"dataset": "sparse-text", "rows": 200_000, "nnz_per_row": 50, "epochs": 2}
_BIG = {"dataset": "sparse-text", "rows": 1_000_000, "nnz_per_row": 50, "epochs": 1}  # data well above the floor
_D = defaults()
_DEEP = {"dataset": "dense", "rows": 20_000, "epochs": 1, "model": "mlp-numpy",
         "hidden": ",".join(["1024"] * 8), "batch_size": 4096}  # a deep, wide MLP on large batches
_DENSE_STREAM = dict(_TEXT, mode="stream", representation="dense", hashing_bits=12, batch_size=4096)
# kernel-approx streamed: every pass transforms its batches again, unless a cache keeps them
_KERNEL_STREAM = {"dataset": "sparse-text", "rows": 30_000, "epochs": 3, "model": "kernel-approx", "mode": "stream"}


TRAINING = ("train", "evaluate")  # what training frees is often kept by the allocator into evaluate
HELD_DATA = ("load", "train", "evaluate")  # data loaded in memory is held to the end

REMEDIES: tuple[Remedy, ...] = (
    Remedy("batch", "Smaller batches",
           "Trains on fewer rows at a time.",
           "Each step holds one batch in compute form: dense batches of 4,096 hashed columns cost "
           "8,192 rows x 4,096 x 8 B = 256 MiB, 256 rows cost 8 MiB. A sparse batch of 1,024 text rows is "
           "about 0.6 MiB, next to 60 MiB of data held in memory: there is little to save.",
           "More Python overhead per sample: throughput falls as batches shrink.",
           "30–50%", (30, 50), TRAINING,
           (Experiment("default-1024", "default setup", {}, {"batch_size": 256}, default_setup=True,
                       why="the batch the default setup trains with: 1,024 rows"),
            Experiment("default", "default setup, 8,192-row batches", {"batch_size": 8192}, {"batch_size": 256},
                       default_setup=True, why="big batches on the default data"),
            Experiment("dense-stream", "dense batches, streamed",
                       dict(_TEXT, mode="stream", representation="dense", hashing_bits=12, batch_size=8192),
                       {"batch_size": 256}, why="where a batch is most of the memory")),
           knobs=("batch_size",)),
    Remedy("sparse", "Sparse representation",
           "Stores only the nonzero values and their column ids (CSR).",
           "Text rows have ~50 nonzeros out of a million columns; dense storage pays for every zero. "
           "CSR costs 12 bytes per nonzero in float64 (8 value + 4 index), dense 8 bytes per cell.",
           "None for sparse data. For truly dense data CSR is larger (indices) and slower.",
           "60–80%", (60, 80), HELD_DATA,
           (Experiment("default", "default setup", {"representation": "dense"},
                       {"representation": "sparse"}, default_setup=True,
                       impossible=f"it is already sparse; dense, its {_D['rows']:,} rows x 2^20 columns "
                                  f"would need {_D['rows'] * DEFAULT_FEATURES['sparse-text'] * 8 / 2**30:,.0f} GiB"),
            Experiment("hashed", "2^11 hashed columns", dict(_TEXT, rows=50_000, hashing_bits=11,
                                                                          representation="dense"),
                       {"representation": "sparse"}, why="small enough for dense to fit")),
           knobs=("representation",)),
    Remedy("checkpointing", "Gradient checkpointing",
           "Keeps only every k-th hidden layer's activations in the forward pass (mlp-numpy, checkpoint=k) and "
           "recomputes the layers between two kept ones in the backward pass.",
           "A step holds every hidden layer's activations for its batch until the backward pass has used them: "
           "batch x width x 8 bytes a layer, 32 MiB for 4,096 rows of 1,024 units. With 8 such layers the "
           "backward pass holds at its fullest 7 activations and 2 deltas (about 9 layers' worth, 290 MiB); with "
           "k = 2 about 6, with k = 3 about 5 (measured: the exact peak falls by 96 and 128 MiB, as the memory "
           "model says). Weights, Adam's two moments, the data and the interpreter are untouched: the saving on "
           "the peak is the activations' share of it.",
           "The dropped layers are computed twice: measured, 1.15x to 1.23x the CPU time per step for k = 2 to 4 "
           "on 8 layers of 1,024 (the weights come out bitwise the same).",
           "40%", (40, 40), ("train",),
           (Experiment("default", "default setup", DEFAULT_SETUP, {"checkpoint": 2}, default_setup=True,
                       impossible="the default setup trains a linear SVM: it has no hidden layers, so no "
                                  "activations to checkpoint"),
            Experiment("deep-wide", "deep, wide MLP, big batches", _DEEP, {"checkpoint": 2},
                       why="8 hidden layers of 1,024 units and batches of 4,096 rows: activations are the largest "
                           "part of a step's memory"),
            Experiment("deep-wide-sqrt", "deep, wide MLP, k = 3 (about the square root of the depth)", _DEEP,
                       {"checkpoint": 3}, why="the textbook choice of k, sqrt(depth)"),
            Experiment("wide-input", "an MLP over 2^16 hashed text columns", dict(
                _TEXT, rows=20_000, epochs=1, model="mlp-numpy", hashing_bits=16, hidden="256,256,256,256"),
                       {"checkpoint": 2}, why="where the weights, not the activations, are the memory")),
           knobs=("checkpoint",),
           limits="Checkpointing is built into the numpy MLP (model=mlp-numpy) only: scikit-learn's MLP keeps "
                  "every activation, and the linear models have none."),
    Remedy("stream", "Streaming from disk",
           "Reads the file a batch at a time every epoch instead of loading it all.",
           "Only one batch of rows is in memory at once, so the peak no longer grows with the rows.",
           "The first pass is bound by parsing text; later passes read a binary copy of the parsed rows "
           "that the first pass wrote to disk (a batch at a time), which costs disk space for the run.",
           "90%+", (90, 100), ("prepare",) + HELD_DATA,
           (Experiment("default", "default setup", DEFAULT_SETUP, {"mode": "stream"}, default_setup=True),
            Experiment("1m", "1M rows", _BIG, {"mode": "stream"},
                       why="ten times the data: the saving grows with the rows")),
           knobs=("mode",)),
    Remedy("precision", "Mixed precision (FP16)",
           "Stores feature values in float32 or float16 instead of float64.",
           "Values are 8 of the 12 bytes per nonzero in float64 CSR; float32 makes that 4, float16 2.",
           "Fewer significant digits; float16 (~3 digits) is storage only: every batch's values are copied to "
           "float32 to compute, which each run measures (bytes exact, time per batch measured).",
           "50%", (50, 50), HELD_DATA,
           (Experiment("default-float32", "default setup, float32", DEFAULT_SETUP, {"precision": "float32"},
                       default_setup=True),
            Experiment("default-float16", "default setup, float16 storage", DEFAULT_SETUP,
                       {"precision": "float16"}, default_setup=True, why="the advice's FP16, as storage")),
           knobs=("precision",), shows_upcast=True,
           limits="Float16 here is storage only: each batch is upcast to float32 to compute, and every float16 run "
                  "records that copy's bytes (exact) and the time it took per batch (measured); the float16 "
                  "experiment below shows them. Computing in FP16 (mixed-precision training) needs hardware with "
                  "fast half-precision units (GPU tensor cores, or CPUs with AVX512-FP16) and libraries that "
                  "compute on them (e.g. PyTorch's automatic mixed precision); this product trains on the CPU with "
                  "scikit-learn and the native library, which compute in float32 and float64."),
    Remedy("logging", "Turning off logging and visualisation callbacks",
           "Stops the training process from reporting while it trains: monitor=off (final evaluation only) or "
           "light (progress once a second, no live accuracy) instead of full.",
           "The product's own callback is the worker's live monitoring: it scores a held-out sample of 2,000 rows "
           "every second and reports progress 10 times a second. The sample is a copy of test rows (about "
           "1 MiB of sparse text) and, for dense batches, is densified to score it (2,000 x 4,096 columns x "
           "8 B = 62.5 MiB): measured, turning it off lowers the exact peak of dense streamed batches by 15% "
           "(406 to 344 MiB) and leaves the default setup's where it was (253 MiB). The charts' memory curve "
           "costs the worker nothing: it is sampled from /proc by the parent process, and the worker's exact "
           "peak (its kernel high-water mark) stayed within 252-254 MiB whether the parent sampled it 5, 50 or "
           "200 times a second (bench/results/monitoring.md).",
           "You see no live accuracy (and with off, no progress) until the run ends.",
           "10–20%", (10, 20), ("train",),
           (Experiment("default", "default setup", DEFAULT_SETUP, {"monitor": "off"}, default_setup=True),
            Experiment("default-light", "default setup, light", DEFAULT_SETUP, {"monitor": "light"},
                       default_setup=True, why="progress only, no live accuracy"),
            Experiment("dense-stream", "dense batches, streamed", _DENSE_STREAM, {"monitor": "off"},
                       why="where the live evaluation's sample is large: 2,000 dense rows of 4,096 columns")),
           knobs=("monitor",), see_also="trace_overhead"),
    Remedy("threads", "Fewer threads",
           "Runs BLAS/OpenMP and the reader with one thread instead of two.",
           "Every thread has its own stack and buffers, and a reader thread keeps a queue of parsed "
           "batches ahead of training.",
           "Less parallelism: reading no longer overlaps training.",
           "25%", (25, 25), ("train",),
           (Experiment("default", "default setup", {"threads": 2}, {"threads": 1}, default_setup=True),
            Experiment("stream", "streamed", dict(_TEXT, mode="stream", threads=2), {"threads": 1},
                       why="where a reader thread queues batches")),
           knobs=("threads",)),
    Remedy("gc", "Periodic gc.collect()",
           "Calls Python's garbage collector every 10 batches.",
           "Only frees objects caught in reference cycles; numpy and scipy buffers are freed as soon "
           "as their last reference goes, so expect little or no saving here. Measured, not assumed: nothing on "
           "the default setup (218 MiB either way) nor with a history of plain references (406 either way: "
           "nothing is garbage); 16% of the peak (261 to 218 MiB, the train phase 25%) where the same history is "
           "kept in reference cycles (both pairs are the history remedy's, below), which Python's own collector reaches only after a count of new objects "
           "(it let at most 131 batches' copies, 72 MiB, wait between two of its runs). The seed's 15-30% is true only where the "
           "garbage is cyclic.",
           "A full collection every 10 batches: measured, the default setup's train phase took 3.0 s instead of "
           "2.0, and 5.9 instead of 1.6 with a cyclic history (each collection walks every object).",
           "15–30%", (15, 30), TRAINING,
           (Experiment("default", "default setup", DEFAULT_SETUP, {"gc_every": 10}, default_setup=True),),
           knobs=("gc_every",),
           stops_growth="what reference cycles hold, which Python's collector reaches late when few, large arrays "
                        "make the cycles; what plain references hold, no collection frees"),
    Remedy("memmap", "Memory-mapped files (memmap)",
           "Converts the data once to a binary CSR file and maps it into memory.",
           "Mapped pages are file-backed: the kernel reads them on demand, and the trainer releases "
           "them from its mapping once a batch has passed (they stay in the page cache for the next "
           "epoch), so the process holds about one batch of them and no parse is needed.",
           "A one-off conversion and disk space; random access can be slow on cold disks.",
           "70%", (70, 70), ("prepare",) + HELD_DATA,
           (Experiment("default", "default setup", DEFAULT_SETUP, {"mode": "memmap"}, default_setup=True),
            Experiment("1m", "1M rows", _BIG, {"mode": "memmap"},
                       why="ten times the data: the saving grows with the rows")),
           knobs=("mode",), moves_to_file=True),
    Remedy("ddp", "Distributed data parallel",
           "Splits one training run's rows into N shards; N Dask workers each train a copy of the model on "
           "theirs, and the weights are averaged after every epoch (iterative parameter mixing).",
           "Each worker holds its share of the data, one batch at a time when streaming, and one copy of the "
           "model; the run's own process coordinates.",
           "Every worker pays its own floor (Python, numpy, scikit-learn and Dask) and a full model copy; "
           "starting the cluster takes seconds; weights travel every epoch; averaging can cost accuracy.",
           "linear (1/N per worker)", None, HELD_DATA,
           (Experiment("default", "default setup, 2 workers", DEFAULT_SETUP, {"workers": 2},
                       default_setup=True, why="each worker holds half the rows"),
            Experiment("4-workers", "1M rows in memory, 4 workers", _BIG, {"workers": 4},
                       why="data well above the floor: the share each worker no longer holds is largest")),
           knobs=("workers",),
           limits="The workers here are processes on this one machine (a LocalCluster); on a real cluster "
                  "each would be a machine, and the per-worker figure is what each machine needs."),
    Remedy("hashing", "Feature hashing",
           "Folds a million columns into 2^16 hashed columns.",
           "Model size is columns x outputs: a linear SVM over 2^20 columns holds 8 MiB of weights (two "
           "copies with averaging), an MLP with 64 hidden units 64M weights plus Adam's two moments each; "
           "over 2^16 columns they hold 16x fewer. The data's nonzeros stay the same.",
           "Colliding features share a weight, which can cost accuracy.",
           "no figure given", None, TRAINING,
           (Experiment("default", "default setup", DEFAULT_SETUP, {"hashing_bits": 16}, default_setup=True),
            Experiment("mlp", "an MLP",
                       dict(_TEXT, rows=20_000, epochs=1, model="mlp", hidden="64"), {"hashing_bits": 16},
                       why="where the model is most of the memory")),
           knobs=("hashing_bits",)),
    Remedy("ftrl", "FTRL instead of SGD",
           "Trains the linear model with FTRL-Proximal (logistic loss, per-coordinate learning rates, L1 and "
           "L2) instead of SGD; its L1 term keeps many weights at exactly zero.",
           "The advice says FTRL fits sparse data with a smaller footprint. A sparse model can be saved as its "
           "nonzero weights only (an index and a value each). While training, though, FTRL keeps two float64 "
           "numbers per feature (z and n), and to score computes from them just the weights a row needs; averaged "
           "SGD keeps the weights and their average. Every linear run reports its nonzero weights and a sparse copy's bytes.",
           "The logistic loss instead of the hinge; four more knobs to tune (l1, l2, ftrl_alpha, ftrl_beta).",
           "no figure given", None, TRAINING,
           (Experiment("default", "default setup", DEFAULT_SETUP, {"solver": "ftrl"},
                       default_setup=True, why="scikit-learn's SGD before"),
            Experiment("2^24", "2^24 columns, against the compiled SGD",
                       dict(_TEXT, features=1 << 24, solver="native"), {"solver": "ftrl"},
                       why="where the model is most of the memory, with the same compiled floor on both sides")),
           knobs=("solver", "l1", "l2", "ftrl_alpha", "ftrl_beta"), shows_model=True),
    Remedy("model_state", "Model state in float32",
           "Keeps the linear model's trained state (the weights and their running average) in float32 instead of "
           "float64: the half-precision idea applied to the model rather than the data (model_state=float32; the "
           "native solver).",
           "Averaged SGD holds two weight-sized arrays, 16 bytes a column in float64: 16 MiB at 2^20 columns, "
           "256 MiB at 2^24. In float32 they take half. The steps are the same float64 arithmetic, each weight "
           "rounded to float32 where it is stored, so the model keeps its accuracy; and a step reads half the "
           "bytes. scikit-learn's SGD takes its weights' type from the data's and has no such setting; FTRL's "
           "running sums would stall in float32.",
           "The weights round to 7 significant digits at every update: they no longer match scikit-learn's "
           "averaged SGD to rounding (the float64 default's promise). The native solver instead of "
           "scikit-learn's (it adds nothing to the floor).",
           "half of the model", None, TRAINING,
           (Experiment("default", "default setup, native solver", {"solver": "native"}, {"model_state": "float32"},
                       default_setup=True, why="the default setup with the compiled solver the remedy needs "
                                               "(scikit-learn's SGD keeps no float32 state of its own)"),
            Experiment("2^24", "2^24 columns, native solver", dict(_TEXT, features=1 << 24, solver="native"),
                       {"model_state": "float32"}, why="where the model is most of the memory")),
           knobs=("model_state", "solver"), in_advice=False,
           limits="Linear models trained by the native SGD only: scikit-learn's solver keeps float32 "
                  "weights only for float32 data (the precision knob), FTRL keeps float64 z and n, and the "
                  "MLPs' weights follow the precision knob."),
    Remedy("model", "Approximate instead of exact kernel",
           "Replaces the exact RBF-kernel SVM by 256 Nystroem components and a linear SVM.",
           "libsvm keeps a kernel cache and all support vectors; the approximation keeps a fixed "
           "rows x 256 feature map and a 256-weight model.",
           "The approximation can lose some accuracy against the exact kernel.",
           "not in the advice", None, ("transform",) + TRAINING,
           (Experiment("default", "default setup", {"model": "kernel-svm"}, {"model": "kernel-approx"},
                       default_setup=True,
                       impossible=f"the exact kernel SVM takes at most {MAX_KERNEL_SVM_ROWS:,} rows, the default "
                                  f"setup has {_D['rows']:,}"),
            Experiment("dense-10k", "dense, 10k rows",
                       {"dataset": "dense", "rows": 10_000, "features": 200, "epochs": 5, "model": "kernel-svm",
                        "cache_size_mb": 500},
                       {"model": "kernel-approx", "n_components": 256}, why="the largest the exact kernel takes")),
           knobs=("model", "n_components"), in_advice=False),
    Remedy("compiled", "Compiled parser and solver (speed first)",
           "Parses svmlight text and runs the SGD steps in the native library's C loops instead of scikit-learn.",
           "Speed, not memory: scikit-learn's parser is Python-bound and its partial_fit pays a fixed "
           "setup cost per batch, which dominates on rows of ~50 nonzeros. The compiled code does the "
           "same arithmetic (same weights to rounding) several times faster per sample.",
           "A 24 KiB library, built by gcc once; outside the lean path the worker still loads scikit-learn, so "
           "the floor stays; in stream mode the C parser's blocks hold less than scikit-learn's chunks of lines.",
           "not in the advice", None, ("imports",),
           (Experiment("default", "default setup", DEFAULT_SETUP, {"solver": "native"},
                       default_setup=True, why="in memory only the solver applies"),
            Experiment("stream", "streamed", dict(_TEXT, mode="stream"),
                       {"parser": "native", "solver": "native"}, why="where parsing text is the bottleneck")),
           knobs=("parser", "solver"), in_advice=False),
)

CACHE = Remedy(
    "cache", "No growing cache of transformed rows",
    "Stops keeping kernel-approx's transformed rows in memory from the first pass for the later ones: keeps them "
    "on disk instead (transform_cache=disk), or not at all (none).",
    "A cache in memory grows by one row's components (n_components x 8 bytes in float64, 4 in float32) for every "
    "training row through the first pass, and is held to the end of training: 24,000 rows x 256 components is "
    "47 MiB, a million rows 1.9 GiB. On disk, the later passes read the same rows back a batch at a time and hold "
    "one batch; without a cache they transform every batch again. Measured (30,000 rows, 3 passes): the cache "
    "took the train phase from 161 to 202-216 MiB, and the later passes ran at 133-235k rows/s from the cache in "
    "memory, 207-243k from disk, 58-77k transforming again (the first pass, parsing and transforming: 10-13k).",
    "On disk: the cache's size in disk space (deleted when the run ends) and a batch's reads per step. Without a "
    "cache: the transform's time in every pass, which is what the cache saved (the later passes' speed below).",
    "no figure given", None, ("train",),
    (Experiment("default", "default setup", {"transform_cache": "memory"}, {"transform_cache": "none"},
                default_setup=True, impossible="the default setup trains a linear SVM in memory: it has no "
                                               "transform, so nothing to cache"),
     Experiment("kernel-stream-none", "kernel-approx streamed, cache in memory → none",
                dict(_KERNEL_STREAM, transform_cache="memory"), {"transform_cache": "none"},
                why="every pass transforms again: the cache's memory against the transform's time"),
     Experiment("kernel-stream-disk", "kernel-approx streamed, cache in memory → on disk",
                dict(_KERNEL_STREAM, transform_cache="memory"), {"transform_cache": "disk"},
                why="the later passes' speed kept, one batch of the cache in memory")),
    knobs=("transform_cache",), in_advice=False,
    stops_growth="a cache of transformed rows, which grows through the first pass and is held to the end",
    limits="The cache keeps kernel-approx's transformed rows, in stream or memmap mode: memory mode transforms "
           "every row once and holds them anyway, and feature hashing is applied as rows are read (stream mode's "
           "spill already keeps the hashed rows on disk for later passes).")

HISTORY = Remedy(
    "history", "No history of intermediate arrays",
    "Stops keeping each batch's arrays after its step, as a progress plot over the batches might (history=none).",
    "A history holds a copy of every batch it was given: with plain references, the whole training data again for "
    "every pass, held to the end of training (gc.collect() frees none of it: nothing is garbage). Kept in "
    "reference cycles and dropped at once, the copies are garbage that only Python's collector frees, and it runs "
    "after a count of new objects, not bytes: one record a batch, so up to 700 batches can wait for it. Measured on "
    "the default setup (395 batches, 0.55 MiB of copies each): references held all of them, 216 MiB, and the peak "
    "was 406 MiB against 218 (the first copies reused memory the load phase had freed); cycles at most 131 at a time "
    "(72 MiB), a peak of 261 MiB. Keep the numbers the plot needs (a loss, an accuracy), not the arrays.",
    "None for training; the plot keeps scalars only.",
    "no figure given", None, TRAINING,
    (Experiment("default-refs", "default setup, a history of references", {"history": "refs"}, {"history": "none"},
                default_setup=True, why="memory that grows with every batch of every pass"),
     Experiment("default-cycles", "default setup, a history in cycles", {"history": "cycles"}, {"history": "none"},
                default_setup=True, why="the same arrays, garbage the collector has not reached"),
     # the seed's "gc.collect every 10 batches saves 15-30%", where there is garbage to collect and where there is not
     Experiment("refs-gc", "default setup, a history of references, gc.collect every 10 batches", {"history": "refs"},
                {"gc_every": 10}, default_setup=True,
                why="memory held by plain references: the collector has nothing to free"),
     Experiment("cycles-gc", "default setup, a history in cycles, gc.collect every 10 batches", {"history": "cycles"},
                {"gc_every": 10}, default_setup=True,
                why="the same arrays in reference cycles: only the collector frees them")),
    knobs=("history", "gc_every"), in_advice=False,
    stops_growth="a history of batch copies, which grows with every batch of every pass")

SERVE = Remedy(
    "serve", "Train offline, serve light",
    "Trains in the full process as before, then exports the linear model (sparse where that is smaller, float32 "
    "where no checked prediction changes) and scores new rows with `python -m svmcore predict --model RUN_ID "
    "--data FILE` in a separate process that loads only numpy and the native library.",
    "Scoring needs the weights and one block of parsed rows: not the training data, the optimiser's state "
    "(averaged SGD's second copy of the weights, FTRL's z and n), scikit-learn or scipy. The serving "
    "process's floor is Python and numpy; the model is a few MiB at most (one float32 per column, or an index "
    "and a value per nonzero weight).",
    "An export at the end of every linear run (one weight-sized float64 copy while it is written, a few MiB on "
    "disk in the run's folder); svmlight input only; a second process to run.",
    "no figure given", None, (),
    in_advice=True, measured_by="serve",
    limits="Linear SVMs only (every solver: scikit-learn, native, FTRL). Kernel-approx, the MLPs and the "
           "exact kernel SVM are not exportable yet: their runs say so, and predict refuses them. The serving "
           "process reads svmlight files (a run trained on raw text cannot be served).")

POOL = Remedy(
    "pool", "A memory pool for batches",
    "Reuses one set of preallocated batch buffers across batches and epochs instead of new arrays per batch; "
    "measured before it is built in, on the lean and the classic path's loops, with and without returning freed "
    "memory to the system (malloc_trim) after each epoch.",
    "It saves nothing measurable here: a sparse batch of 1,024 text rows is under 1 MiB, and when it is freed "
    "numpy's allocator and glibc's malloc hand the same blocks to the next batch of equal size, so per-batch "
    "arrays already behave as a pool. What does move the peak is the allocator's settings (the lean worker's "
    "mallopt) and, between epochs, malloc_trim.",
    "Buffers sized to the largest batch held for the whole run; code that must not keep a batch past its step.",
    "no figure given", None, TRAINING,
    in_advice=True, measured_by="memory_pool",
    limits="Measured on copies of the two training loops (bench/memory_pool.py), not built into the worker: "
           "there is no knob for it, because it saves nothing measurable.")

DISTILL = Remedy(
    "distill", "Distillation: a compact student from a big teacher",
    "Trains the big model (the teacher: kernel approximation, exact kernel SVM or an MLP) as before, then, with "
    "`distill` on, a linear SVM (the student) on the same rows labelled with the teacher's predictions; the student "
    "is the model the run scores, exports and serves.",
    "The teacher's memory is its transform or its layers (components x columns, or columns x width weights and "
    "their optimiser state) and the libraries that compute them; the student is one weight per column, scored with "
    "numpy alone. If the teacher's decisions are close to linear in the columns, the student keeps most of its "
    "accuracy at a fraction of its serving memory.",
    "Training costs more, not less: a second stage over the rows that holds both models. The student can only "
    "learn what a linear model can: where the teacher's edge is non-linear it is lost.",
    "no figure given", None, (),
    in_advice=True, measured_by="distill", knobs=("distill",),
    limits="The student is a linear SVM trained on the teacher's predicted classes (hard targets: the product's "
           "solvers take classes, not scores); a small MLP student is not built. The teacher is not exportable, so "
           "its serving memory is a lower bound (its libraries' floor plus its arrays), not a served process.")

REMEDIES = REMEDIES + (CACHE, HISTORY, SERVE, POOL, DISTILL)

ADVICE = tuple(r for r in REMEDIES if r.in_advice)
BY_KEY = {r.key: r for r in REMEDIES}


def remedy(key: str) -> Remedy:
    found = BY_KEY.get(key)
    if found is None:
        raise ConfigError("remedy", f"unknown remedy {shown(key)}; known: {', '.join(r.key for r in REMEDIES)}")
    return found
