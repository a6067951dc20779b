"""The one registry of knobs.

Validation (``config``), the command line (``cli``) and the dashboard's widgets
and Learn page are all generated from ``KNOBS``. A knob says what it is, what it
allows, its unit, and what it trades, so every surface explains it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svmcore.spec.choices import (
    History, Mode, Model, ModelState, Monitor, Parser, Precision, Representation, Solver, TransformCache, values,
)
from svmcore.spec.registry import (
    DISTILLABLE_MODELS, FLOAT32_STATE_SOLVERS, LINEAR_MODELS, MINIBATCH_MODELS, MIXABLE_MODELS, MLP_MODELS,
)
from svmcore.spec.regularisation import AUTO_L2_TEXT, AUTO_RULE_TEXT, MLP_ALPHA

BUILTIN_DATASETS = ("sparse-text", "dense", "digits", "breast-cancer")
DENSE_DATASETS = ("dense", "digits", "breast-cancer")  # built-in datasets whose rows are dense
MAX_FEATURES = 1 << 26  # 67M columns; a model over more would not fit this machine class
MAX_KERNEL_SVM_ROWS = 10_000


@dataclass(frozen=True)
class Knob:
    name: str
    type: type
    default: Any
    help: str
    trades: str
    unit: str = ""
    choices: tuple | None = None
    min: float | None = None
    max: float | None = None
    optional: bool = False  # None allowed (means "off"/"not set")
    group: str = "training"
    applies_to: tuple[str, ...] = ()  # models this knob matters for; () = all
    free_text: bool = False  # dataset: a builtin name or a file path
    only_with: tuple[str, Any] | None = None  # (knob, value): it matters only when that knob has that value
    auto: str = ""  # for an optional knob: what unset ("auto") means; the value "auto" is accepted as unset
    # values taken away, each with its replacement and why: old runs keep them, a new config is refused them
    retired: tuple[tuple[str, str, str], ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def describe_allowed(self) -> str:
        if self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            if self.free_text:
                allowed += ", or a file path"
            return allowed
        if self.name == "scheduler":
            return "a Dask scheduler address (tcp://HOST:PORT), or unset"
        if self.type is str:
            return "a file path, or unset" if self.optional else "comma-separated whole numbers"
        if self.type is bool:
            return "true or false"

        def num(v):
            return "" if v is None else (str(int(v)) if self.type is int else f"{v:g}")

        lo, hi = num(self.min), num(self.max)
        text = f"{self.type.__name__} in [{lo}, {hi}]"
        if self.auto:
            text += " or auto"
        elif self.optional:
            text += " or unset"
        return text


# numba's parser and SGD were twins of the native ones (the same output) and cost ~100 MiB of floor
_NUMBA = (("numba", "native", "same output, faster"),)

_KNOBS = [
    # --- data -----------------------------------------------------------
    Knob("dataset", str, "sparse-text", group="data", choices=BUILTIN_DATASETS, free_text=True,
         help="What to train on: synthetic text-like sparse data (Zipf token ids, tf-idf-like "
              "values, a hidden sparse linear model with label noise), synthetic dense data, "
              "a dataset scikit-learn ships, or a file (svmlight/libsvm, CSV with a label "
              "column, .npz CSR with y, or raw text 'label<TAB>text').",
         trades="Bigger and denser data costs memory in proportion; it is the thing being tamed."),
    Knob("test_file", str, None, group="data", optional=True,
         help="Optional separate test file in the same format; otherwise every 5th row "
              "(up to 20,000) is held out.",
         trades="A separate test file is read fully into memory for evaluation."),
    Knob("rows", int, 100_000, group="data", min=50, max=100_000_000, unit="rows",
         help="Rows of synthetic data (sparse-text, dense). Ignored for files and shipped datasets.",
         trades="Memory mode grows linearly with rows; stream and memmap do not."),
    Knob("features", int, None, group="data", optional=True, min=2, max=MAX_FEATURES, unit="columns",
         help="Columns of synthetic data; unset = 2^20 for sparse-text (text-like data has about a "
              "million), 200 for dense.",
         trades="Dense memory and model size grow with features; sparse data does not."),
    Knob("nnz_per_row", int, 50, group="data", min=1, max=100_000, unit="nonzeros",
         help="Nonzero values per row of sparse-text data.",
         trades="Sparse memory grows with nonzeros: 12 bytes each in float64 (8 value + 4 index)."),
    Knob("seed", int, 0, group="data", min=0, max=2**31 - 1,
         help="Random seed for data generation and training.",
         trades="None; fixes the randomness so runs can be compared."),
    # --- representation ----------------------------------------------------
    Knob("mode", str, "memory", group="memory", choices=values(Mode),
         help="memory: load everything. stream: read the file from disk a batch at a time, "
              "never the whole file; the first epoch also writes the parsed rows to a binary "
              "spill that later epochs read. memmap: a binary CSR copy on disk (built once, "
              "reused) is memory-mapped, batches are sliced from it and released behind.",
         trades="stream/memmap bound memory by the batch, at the cost of disk reads and disk "
                "space; stream's first epoch is bound by parsing text."),
    Knob("workers", int, 1, group="memory", min=1, max=64, unit="workers",
         help="Data-parallel training on Dask: 1 = this one process. N > 1 = the training rows are split "
              "into N shards on disk (row i to shard i mod N) and N Dask worker processes each train a copy "
              "of the model on their shard; the weights are averaged after every epoch (iterative parameter "
              "mixing) and scored on the held-out rows as usual. In stream mode a worker reads its shard a "
              "batch at a time; in memory mode it holds its shard. linear-svm and kernel-approx only.",
         trades="Each worker holds one shard's batch (or shard) and one copy of the model, plus its own floor "
                "(Python, numpy, scikit-learn and Dask: about 260 MiB a worker, measured here); the run's process coordinates "
                "(Dask's scheduler, one pass over the data to write the shards). The total grows with N; the "
                "peak of each process shrinks only by the share of the data it no longer holds. Averaging per "
                "epoch can cost accuracy, and starting the cluster costs seconds.",
         applies_to=MIXABLE_MODELS),
    Knob("mix_every", int, 0, group="memory", min=0, max=1_000_000, unit="batches",
         help="With workers > 1: average the workers' weights every k batches of each shard instead of "
              "after every epoch (0). Each Dask worker keeps its place in its shard between mixes. Ignored "
              "with workers = 1.",
         trades="Mixing more often keeps the copies closer together (accuracy nearer one process's) and ships "
                "the model to and from every worker at every mix: more network traffic and time.",
         applies_to=MIXABLE_MODELS),
    Knob("scheduler", str, None, group="memory", optional=True,
         help="Address of a Dask scheduler (e.g. tcp://HOST:8786) whose workers train the shards; unset = "
              "a LocalCluster of `workers` single-threaded processes started for the run and closed after "
              "it. Needs workers > 1, and at least that many Dask workers that can read the data's path.",
         trades="A cluster adds machines (and their memory); a worker's peak there is sampled, not exact "
                "(its process did other work before). Weights travel over the network every epoch.",
         applies_to=MIXABLE_MODELS),
    Knob("representation", str, "sparse", group="memory", choices=values(Representation),
         help="sparse keeps only nonzeros (CSR); dense stores every cell.",
         trades="Dense costs rows x features x bytes; it only pays off for dense data."),
    Knob("precision", str, "float64", group="memory", choices=values(Precision),
         help="Storage precision of feature values. float16 is storage only: each batch is "
              "upcast to float32 for compute (scikit-learn, scipy.sparse and the native solvers "
              "cannot compute in float16). Computing in half precision would need hardware and "
              "libraries this product does not use (GPU tensor cores or AVX512-FP16, and a framework "
              "that computes in half precision). A run records the upcast's exact bytes and its "
              "measured time per batch.",
         trades="Halving precision halves value memory; float16 loses digits (~3 significant) and "
                "pays a float32 copy of each batch's values, and the time to make it."),
    Knob("hashing_bits", int, 0, group="memory", min=0, max=26, unit="bits",
         help="Feature hashing: 0 = off, k = fold features into 2^k hashed columns. Raw text "
              "files are always hashed (2^20 when off).",
         trades="Fewer columns shrink the model and dense batches; collisions can cost accuracy."),
    Knob("parser", str, "sklearn", group="memory", choices=values(Parser), retired=_NUMBA,
         help="How svmlight text is parsed: scikit-learn's parser or the native C parser (identical output, "
              "~15x faster; built by gcc once). native with solver native is the lean worker path: "
              "linear-svm in stream or memory mode on a svmlight file loads neither scipy nor scikit-learn.",
         trades="native makes streaming from text several times faster and adds only a 24 KiB library."),
    Knob("gc_every", int, 0, group="memory", min=0, max=1_000_000, unit="batches",
         help="Run Python's garbage collector every k batches; 0 = never force it.",
         trades="Frees cyclic garbage sooner, at the time of a full collection each time; numpy buffers are freed "
                "anyway. Measured: it saves nothing on the default setup, 16% of the peak where a history is kept "
                "in reference cycles (history=cycles), nothing where it is kept by plain references."),
    Knob("memory_cap_mb", int, None, group="memory", optional=True, min=64, max=1_000_000, unit="MB",
         help="Optional memory cap for the training process. Hitting it ends the run as 'oom'.",
         trades="Protects the machine; a run that needs more ends early."),
    Knob("cap_kind", str, "auto", group="memory", choices=("auto", "rlimit", "cgroup"),
         help="How to cap: rlimit (RLIMIT_DATA on the worker: a clean MemoryError; it counts "
              "reserved address space, which runs ahead of RSS), cgroup (the whole process tree, "
              "like a real machine: the kernel kills it), auto = cgroup where this machine allows "
              "it, else rlimit.",
         trades="cgroup is faithful to a real machine; rlimit reports the failing allocation."),
    # --- training ----------------------------------------------------------
    Knob("model", str, "linear-svm", choices=values(Model),
         help="linear-svm: hinge loss by minibatch SGD. kernel-approx: Nystroem or random "
              "Fourier features, then a linear SVM. kernel-svm: exact libsvm SVC (small data "
              f"only, up to {MAX_KERNEL_SVM_ROWS:,} rows, memory mode). mlp: a small neural net "
              "trained by minibatches (scikit-learn's MLPClassifier, 200 rows a step). mlp-numpy: the "
              "same kind of net written with numpy here: one Adam step per batch, and gradient "
              "checkpointing (the checkpoint knob).",
         trades="Richer models can be more accurate and cost more memory and time."),
    Knob("batch_size", int, 1024, min=1, max=10_000_000, unit="rows",
         help="Rows per minibatch (and per chunk read in stream/memmap mode).",
         trades="Smaller batches use less memory per step but run slower per sample."),
    Knob("epochs", int, 5, min=1, max=1000, unit="passes",
         help="Passes over the training data (kernel-svm trains once).",
         trades="More passes cost time; accuracy plateaus after a few."),
    Knob("shuffle", bool, True,
         help="Visit the training rows in a new random order every epoch (drawn from the seed: the same "
              "seed gives the same order). memory: a full permutation. memmap: a window of shuffle_buffer "
              "rows at a time, drawn from small pieces (shuffle_buffer / 256 rows, at least 64) picked "
              "across the whole file, shuffled together. stream: a shuffle buffer of shuffle_buffer rows "
              "over the text, then windows drawn the same way from the spill (a file whose labels come "
              "in long runs, as a file sorted by label does, is copied to the spill first: every pass "
              "reads it so).",
         trades="Files are often sorted by label; without shuffling SGD ends on one class and accuracy can "
                "hide a useless model. Costs 8 bytes a row in memory mode and a window of rows in stream "
                "and memmap mode, and random rather than sequential reads within a window."),
    Knob("shuffle_buffer", int, 16_384, min=1, max=10_000_000, unit="rows",
         help="Rows held to shuffle in stream mode (a shuffle buffer: it mixes rows within about this "
              "distance of each other in the file) and the window of memory-mapped blocks shuffled "
              "together in memmap mode.",
         trades="A bigger buffer mixes rows from further apart (a file sorted by label needs it) and holds "
                "that many more rows in memory.", applies_to=MINIBATCH_MODELS),
    Knob("alpha", float, None, min=1e-9, max=10.0, optional=True,
         auto=f"chosen for the data: {AUTO_RULE_TEXT} for linear-svm and kernel-approx (measured in "
              f"bench/alpha.py), {MLP_ALPHA:g} for the MLPs",
         help="L2 regularisation strength of the SGD-trained models (larger = simpler model). auto (the default) "
              "picks it from the number of training rows and the class balance: SGD weighs the penalty against "
              "the mean loss, so a bigger file needs a smaller alpha (best on sparse-text: ~3e-6 at 200,000 rows, "
              "~1e-6 at 1,000,000), and a small class brings only its share of that mean, so imbalanced classes "
              "need a smaller one (w8a, 3% positive: 5.1e-7, not 8.6e-6); a run records the alpha it used and "
              "why. FTRL has its own l2.",
         trades="Too small overfits noise, too large underfits; a fixed value that suits one size of data "
                "over-regularises a bigger file (4-6 points lost at 10^6 rows with 1e-5).",
         applies_to=MINIBATCH_MODELS),
    Knob("average", bool, True,
         help="Averaged SGD: predict with the mean of the weights seen, which is steadier.",
         trades="One extra copy of the weights in memory.", applies_to=LINEAR_MODELS),
    Knob("model_state", str, "float64", group="memory", choices=values(ModelState),
         help="The type the linear model's trained state is kept in: the weights and their running average "
              "(averaged SGD). float64 keeps scikit-learn's averaged SGD to rounding. float32 halves it: the same "
              "steps in float64 arithmetic, each weight rounded to float32 where it is stored (the half-precision "
              "idea applied to the model, not the data). Solvers "
              f"{' and '.join(FLOAT32_STATE_SOLVERS)} only.",
         trades="float32 holds 4 bytes a weight instead of 8 (with averaging, 8 MiB less at 2^20 columns, 128 MiB "
                "at 2^24) and reads half the bytes per step; its weights round to 7 significant digits at every "
                "update, so they are no longer scikit-learn's to rounding.",
         applies_to=LINEAR_MODELS),
    Knob("solver", str, "sklearn", choices=values(Solver), retired=_NUMBA,
         help="Who trains the linear model. sklearn: scikit-learn's SGDClassifier.partial_fit (hinge "
              "loss). native: a compiled loop in C (built by gcc, loaded with ctypes) with the same algorithm "
              "(same weights to rounding; rows in the order given) and no per-batch setup. ftrl: FTRL-proximal "
              "(McMahan et al. 2013), in C too, with the logistic "
              "loss (the standard for FTRL; still a linear classifier) and per-coordinate learning rates, "
              "L1 and L2 (knobs l1, l2, ftrl_alpha, ftrl_beta; alpha and average are SGD's and do not apply).",
         trades="native trains several times faster per sample on sparse rows and adds nothing to the floor; "
                "with the native parser, it lets the worker skip scipy and "
                "scikit-learn (see parser). ftrl holds two float64 arrays per feature (z and n) where "
                "averaged SGD holds the weights and their average, and computes from them just the weights a "
                "scored row needs; its L1 makes the model sparse (see the nonzero weights a run reports).",
         applies_to=LINEAR_MODELS),
    Knob("l1", float, 0.1, min=0.0, max=1e6,
         help="FTRL's L1 strength (solver ftrl only): a weight stays exactly zero while the "
              "accumulated gradient of its feature is within l1, so larger values give sparser models.",
         trades="Fewer nonzero weights (a smaller sparse copy of the model); too large drops useful "
                "features and costs accuracy. It does not shrink the z and n arrays held while training.",
         applies_to=LINEAR_MODELS, only_with=("solver", Solver.FTRL)),
    Knob("l2", float, None, min=0.0, max=1e6, optional=True,
         auto=f"chosen for the data: {AUTO_L2_TEXT} (measured in bench/alpha.py)",
         help="FTRL's L2 strength (solver ftrl only): shrinks the weights towards zero. auto (the default) "
              "picks it from the number of training rows: FTRL adds it to a sum over rows, so a bigger file "
              "needs a larger l2 (best on sparse-text: ~0.03 at 5,000 rows, 0.3-1 at 200,000, 1 at 1,000,000).",
         trades="Too small overfits noise, too large underfits; a fixed 0.1 lost 1.5 points at 10^6 rows.",
         applies_to=LINEAR_MODELS, only_with=("solver", Solver.FTRL)),
    Knob("ftrl_alpha", float, 2.0, min=1e-6, max=100.0,
         help="FTRL's learning-rate scale alpha (solver ftrl only): a feature's rate is "
              "alpha / (ftrl_beta + sqrt(sum of its squared gradients)).",
         trades="Larger learns faster and noisier.",
         applies_to=LINEAR_MODELS, only_with=("solver", Solver.FTRL)),
    Knob("ftrl_beta", float, 1.0, min=0.0, max=1e6,
         help="FTRL's learning-rate smoothing beta (solver ftrl only): keeps the first steps of a "
              "rarely seen feature from being huge.",
         trades="Larger damps the early steps of every feature.",
         applies_to=LINEAR_MODELS, only_with=("solver", Solver.FTRL)),
    Knob("c", float, 1.0, min=1e-6, max=1e6,
         help="Inverse regularisation of the exact kernel SVM.",
         trades="Larger C fits the training data harder.", applies_to=(Model.KERNEL_SVM,)),
    Knob("approximation", str, "nystroem", choices=("nystroem", "rff"),
         help="Kernel approximation: Nystroem (landmark rows) or random Fourier features.",
         trades="Nystroem adapts to the data; RFF needs no data to fit.", applies_to=(Model.KERNEL_APPROX,)),
    Knob("n_components", int, 256, min=2, max=20_000, unit="components",
         help="Size of the kernel approximation (columns of the transformed data).",
         trades="More components approximate the kernel better and cost rows x components memory.",
         applies_to=(Model.KERNEL_APPROX,)),
    Knob("cache_size_mb", int, 200, min=1, max=100_000, unit="MB",
         help="libsvm's kernel cache for the exact kernel SVM.",
         trades="A bigger cache trains faster and holds that much more memory.",
         applies_to=(Model.KERNEL_SVM,)),
    Knob("hidden", str, "64",
         help="Hidden layer sizes of the MLP, comma separated (e.g. 128,64).",
         trades="Wider layers hold features x width weights.", applies_to=MLP_MODELS),
    Knob("distill", bool, False,
         help="Distillation: after the model (the teacher) has trained, a linear-svm student trains on the same "
              "rows labelled with the teacher's predictions (hard targets), with the run's solver and epochs. The "
              "run's accuracy and its exported model are the student's; the teacher's scores are reported beside.",
         trades="A second training stage holding both models; the student serves in a lean process (numpy and "
                "a linear model) where the teacher would need its libraries and its whole model.",
         applies_to=DISTILLABLE_MODELS),
    Knob("checkpoint", int, 0, min=0, max=8, unit="layers",
         help="Gradient checkpointing of mlp-numpy: 0 = off (the forward pass keeps every hidden layer's "
              "activations for the backward pass); k = keep only every k-th layer's and recompute the "
              "layers between two kept ones in the backward pass (1 keeps every layer, like 0).",
         trades="Activations are batch x width x 8 bytes per layer: with k, about depth/k + k - 1 layers "
                "of them are held instead of depth, for up to one more forward pass of compute per step. "
                "The weights come out bitwise the same.", applies_to=(Model.MLP_NUMPY,)),
    Knob("monitor", str, "full", choices=values(Monitor),
         help="What the training process reports while it trains: full = progress events 10 times a "
              "second and accuracy on a held-out sample of 2,000 rows every second (the live charts); "
              "light = progress events once a second, no live accuracy; off = nothing until the final "
              "evaluation on every test row. Memory is sampled by the parent process in every case.",
         trades="full holds the held-out sample (dense batches: 2,000 rows x width) and spends time "
                "scoring it; light and off train blind but keep the final scores."),
    Knob("threads", int, 1, min=1, max=64, unit="threads",
         help="BLAS/OpenMP threads of the worker, and the reader thread in stream/memmap mode "
              "when above 1 (loading overlaps training).",
         trades="More threads can be faster; each holds its own stack and buffers."),
    # --- accumulation: two real causes of memory that grows, to switch on and see -------------
    Knob("transform_cache", str, "none", group="memory", choices=values(TransformCache),
         help="Keep kernel-approx's transformed rows (each batch through the kernel approximation: rows x "
              "n_components) from the first pass for the later passes, which then skip the transform. memory: "
              "in a list that grows through the first pass and is held to the end of training; disk: written "
              "to the run's folder as they are made (a spill of the transformed rows, deleted when the run "
              "ends) and read back a batch at a time; none: every pass transforms every batch again. Stream "
              "and memmap mode: memory mode transforms every row once, up front, and holds them already.",
         trades="memory: later passes skip the transform, and the cache holds training rows x n_components x "
                "4 bytes (8 in float64) until training ends; disk: the same skip for that much disk space and a "
                "batch's reads; none: no memory, the transform's time in every pass.",
         applies_to=(Model.KERNEL_APPROX,)),
    Knob("history", str, "none", group="memory", choices=values(History),
         help="Keep each batch's arrays after its step (a copy of its values, column ids, row starts and "
              "class codes), as a progress plot over the batches might. refs: in a list, plain references held "
              "to the end of training: gc.collect() frees none of it. cycles: each batch's record refers to "
              "itself and is dropped after its step; reference counting cannot free a cycle, so it waits for "
              "Python's garbage collector (see gc_every). none: nothing kept.",
         trades="refs: memory grows by a batch's copy at every step, through every pass. cycles: the garbage "
                "waits for the collector, which runs after a count of new objects, not bytes (each record is one "
                "object holding a whole batch); gc_every = k frees it every k batches. A teaching knob: the "
                "two ways intermediate arrays are kept by mistake."),
    Knob("trace", bool, False, group="memory",
         help="Run the training process under memray's allocation tracker (Python and native frames): the run "
              "then names the code that held its memory at its peak and at each phase's peak (the top "
              "allocation sites), reconciled with the exact peak, and keeps memray's file in the run's folder "
              "for its flame graph. Off by default: it costs speed; one process only (workers = 1).",
         trades="Every allocation is recorded with its stack: training runs slower (measured in "
                "bench/trace_overhead.py) and the process holds memray's library and buffers; the file grows "
                "with the number of allocations."),
]

KNOBS: dict[str, Knob] = {k.name: k for k in _KNOBS}


def knob(name: str) -> Knob:
    return KNOBS[name]


def defaults() -> dict[str, Any]:
    return {k.name: k.default for k in _KNOBS}
