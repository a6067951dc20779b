"""The values of the knobs that take one of a fixed set: model, mode, representation,
precision, parser, solver, model state, monitor, and the two accumulation causes (the cache
of transformed rows, the history of batch arrays).

Each is a ``StrEnum``, so a member equals its text (``Model.LINEAR_SVM == "linear-svm"``)
and JSON, SQLite, the job file and the command line keep the same strings. The knob
registry (``knobs``) takes its ``choices`` from here, and ``config.validate`` turns a
value into its member. What each model, solver, mode and parser is, and the named groups
of them, are their entries in ``registry``.
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
    NATIVE = "native"


class Solver(StrEnum):
    SKLEARN = "sklearn"
    NATIVE = "native"
    FTRL = "ftrl"


class ModelState(StrEnum):
    FLOAT64 = "float64"
    FLOAT32 = "float32"


class Monitor(StrEnum):
    FULL = "full"
    LIGHT = "light"
    OFF = "off"


class TransformCache(StrEnum):
    NONE = "none"
    MEMORY = "memory"
    DISK = "disk"


class History(StrEnum):
    NONE = "none"
    REFS = "refs"
    CYCLES = "cycles"


# the knob each enumeration gives the values of
BY_KNOB: dict[str, type[StrEnum]] = {"model": Model, "mode": Mode, "representation": Representation,
                                     "precision": Precision, "parser": Parser, "solver": Solver,
                                     "monitor": Monitor, "model_state": ModelState,
                                     "transform_cache": TransformCache, "history": History}

BYTES_PER_VALUE = {Precision.FLOAT64: 8, Precision.FLOAT32: 4, Precision.FLOAT16: 2}


def values(enum: type[StrEnum]) -> tuple[str, ...]:
    """The members' text, in order: a knob's ``choices``."""
    return tuple(m.value for m in enum)
