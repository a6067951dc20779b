"""The values of the knobs that take one of a fixed set: model, mode, representation,
precision, parser, solver and monitor.

Each is a ``StrEnum``, so a member equals its text (``Model.LINEAR_SVM == "linear-svm"``)
and JSON, SQLite, the job file and the command line keep the same strings. The knob
registry (``knobs``) takes its ``choices`` from here, and ``config.validate`` turns a
value into its member. The named groups say what a set of values has in common, so a
test reads ``cfg.model in MIXABLE_MODELS`` rather than a tuple of strings.
"""

from __future__ import annotations

from enum import StrEnum


class Model(StrEnum):
    LINEAR_SVM = "linear-svm"
    KERNEL_APPROX = "kernel-approx"
    KERNEL_SVM = "kernel-svm"
    MLP = "mlp"
    MLP_NUMPY = "mlp-numpy"


class Mode(StrEnum):
    MEMORY = "memory"
    STREAM = "stream"
    MEMMAP = "memmap"


class Representation(StrEnum):
    SPARSE = "sparse"
    DENSE = "dense"


class Precision(StrEnum):
    FLOAT64 = "float64"
    FLOAT32 = "float32"
    FLOAT16 = "float16"


class Parser(StrEnum):
    SKLEARN = "sklearn"
    NUMBA = "numba"
    NATIVE = "native"


class Solver(StrEnum):
    SKLEARN = "sklearn"
    NUMBA = "numba"
    NATIVE = "native"
    FTRL = "ftrl"


class Monitor(StrEnum):
    FULL = "full"
    LIGHT = "light"
    OFF = "off"


# the knob each enumeration gives the values of
BY_KNOB: dict[str, type[StrEnum]] = {"model": Model, "mode": Mode, "representation": Representation,
                                     "precision": Precision, "parser": Parser, "solver": Solver,
                                     "monitor": Monitor}

# A linear classifier trained a batch at a time by the ``solver`` knob's trainer (SGD or
# FTRL): kernel-approx is one too, on the transformed columns.
LINEAR_MODELS = (Model.LINEAR_SVM, Model.KERNEL_APPROX)
MLP_MODELS = (Model.MLP, Model.MLP_NUMPY)
# trained by minibatches (with an L2 ``alpha``); kernel-svm fits once on every row
MINIBATCH_MODELS = LINEAR_MODELS + MLP_MODELS
# a data-parallel run (workers > 1) averages the weights of these across its workers
MIXABLE_MODELS = LINEAR_MODELS
# models a run exports for serving (worker.model_export; the memory model prices the export)
EXPORTABLE_MODELS = (Model.LINEAR_SVM,)
# teachers a linear-svm student can be distilled from (the distill knob)
DISTILLABLE_MODELS = (Model.KERNEL_APPROX, Model.KERNEL_SVM, Model.MLP, Model.MLP_NUMPY)
MIXABLE_SOLVERS = (Solver.SKLEARN, Solver.NUMBA)
# read a batch at a time from disk (stream: the text, then its spill; memmap: the binary copy)
DISK_MODES = (Mode.STREAM, Mode.MEMMAP)
BYTES_PER_VALUE = {Precision.FLOAT64: 8, Precision.FLOAT32: 4, Precision.FLOAT16: 2}


def values(enum: type[StrEnum]) -> tuple[str, ...]:
    """The members' text, in order: a knob's ``choices``."""
    return tuple(m.value for m in enum)
