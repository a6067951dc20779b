"""The memory remedies the Learn page teaches, each with a before/after experiment.

Each experiment changes one thing (the knobs in ``change``) on a base chosen so
the effect is visible on this machine in seconds. ``phase`` names the phase whose
peak the remedy acts on: where the peak happens decides what a remedy can save.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svmcore.spec.config import RunConfig, validate


@dataclass(frozen=True)
class Remedy:
    key: str
    title: str
    what: str
    why: str
    cost: str
    base: dict
    change: dict
    phase: str | None = None
    knobs: tuple[str, ...] = field(default=())

    def configs(self, overrides: dict | None = None) -> tuple[RunConfig, RunConfig]:
        base = {**self.base, **(overrides or {})}
        return validate(base), validate({**base, **self.change})


_TEXT = dict(dataset="sparse-text", rows=200_000, nnz_per_row=50, epochs=2)

REMEDIES: tuple[Remedy, ...] = (
    Remedy("batch", "Smaller batches",
           "Trains on fewer rows at a time.",
           "Each step materialises one batch in compute form (here dense, 4,096 hashed columns): "
           "8,192 rows x 4,096 x 8 B is 256 MiB; 256 rows is 8 MiB. The data itself is streamed.",
           "More Python overhead per sample: throughput falls as batches shrink.",
           dict(_TEXT, mode="stream", representation="dense", hashing_bits=12, batch_size=8192),
           dict(batch_size=256), phase="train", knobs=("batch_size",)),
    Remedy("sparse", "Sparse instead of dense",
           "Stores only the nonzero values and their column ids (CSR).",
           "Text rows have ~50 nonzeros out of thousands of columns; dense storage pays for every zero. "
           "CSR costs 12 bytes per nonzero in float64 (8 value + 4 index), dense 8 bytes per cell.",
           "None for sparse data. For truly dense data CSR is larger (indices) and slower.",
           dict(_TEXT, rows=50_000, hashing_bits=11, representation="dense"),
           dict(representation="sparse"), phase="load", knobs=("representation",)),
    Remedy("stream", "Streaming from disk",
           "Reads the file a batch at a time every epoch instead of loading it all.",
           "Only one batch of rows is in memory at once, so the peak no longer grows with the rows.",
           "The first pass is bound by parsing text; later passes read a binary copy of the parsed rows "
           "that the first pass wrote to disk (a batch at a time), which costs disk space for the run.",
           dict(_TEXT), dict(mode="stream"), knobs=("mode",)),
    Remedy("memmap", "Memory-mapped binary data",
           "Converts the data once to a binary CSR file and maps it into memory.",
           "Mapped pages are file-backed: the kernel reads them on demand, and the trainer releases "
           "them from its mapping once a batch has passed (they stay in the page cache for the next "
           "epoch), so the process holds about one batch of them and no parse is needed.",
           "A one-off conversion and disk space; random access can be slow on cold disks.",
           dict(_TEXT), dict(mode="memmap"), knobs=("mode",)),
    Remedy("precision", "Lower precision",
           "Stores feature values in float32 (or float16) instead of float64.",
           "Values are 8 of the 12 bytes per nonzero in float64 CSR; float32 makes that 4.",
           "Fewer significant digits; float16 (~3 digits) is storage only and upcast per batch.",
           dict(_TEXT), dict(precision="float32"), phase="load", knobs=("precision",)),
    Remedy("threads", "Fewer threads",
           "Runs BLAS/OpenMP and the reader with one thread instead of several.",
           "Every thread has its own stack and buffers, and a reader thread keeps a queue of parsed "
           "batches ahead of training.",
           "Less parallelism: reading no longer overlaps training.",
           dict(_TEXT, mode="stream", threads=2), dict(threads=1), phase="train", knobs=("threads",)),
    Remedy("hashing", "Feature hashing",
           "Folds a million columns into 2^16 hashed columns.",
           "Model size is columns x hidden units: an MLP with 64 units over 2^20 columns holds 64M "
           "weights plus two Adam moments each; over 2^16 it holds 16x fewer.",
           "Colliding features share a weight, which can cost accuracy.",
           dict(_TEXT, rows=20_000, epochs=1, model="mlp", hidden="64"), dict(hashing_bits=16),
           phase="train", knobs=("hashing_bits",)),
    Remedy("model", "Approximate instead of exact kernel",
           "Replaces the exact RBF-kernel SVM by 256 Nystroem components and a linear SVM.",
           "libsvm keeps a kernel cache and all support vectors; the approximation keeps a fixed "
           "rows x 256 feature map and a 256-weight model.",
           "The approximation can lose some accuracy against the exact kernel.",
           dict(dataset="dense", rows=10_000, features=200, epochs=5, model="kernel-svm", cache_size_mb=500),
           dict(model="kernel-approx", n_components=256), phase="train", knobs=("model", "n_components")),
    Remedy("compiled", "Compiled parser and solver (a trade, not a saving)",
           "Parses svmlight text and runs the SGD steps in numba-compiled loops instead of scikit-learn.",
           "Speed, not memory: scikit-learn's parser is Python-bound and its partial_fit pays a fixed "
           "setup cost per batch, which dominates on rows of ~50 nonzeros. The compiled code does the "
           "same arithmetic (same weights to rounding) several times faster per sample.",
           "The compiler and its code add about 100 MiB to the worker's floor (~150 MiB on the run that "
           "first compiles them): on small data this remedy "
           "raises the peak. It pays off when time, not memory, is the constraint.",
           dict(_TEXT, mode="stream"), dict(parser="numba", solver="numba"), phase="imports",
           knobs=("parser", "solver")),
    Remedy("gc", "Periodic garbage collection",
           "Calls Python's garbage collector every 10 batches.",
           "Only frees objects caught in reference cycles; numpy and scipy buffers are freed as soon "
           "as their last reference goes, so expect little or no saving here. Measured, not assumed.",
           "A small time cost per collection.",
           dict(_TEXT), dict(gc_every=10), phase="train", knobs=("gc_every",)),
)
