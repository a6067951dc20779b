"""The registry of what a run is made of: one entry per model, solver, mode and parser.

An entry says what differs by its name, so that no other module compares a name to a
string: the factory the worker makes it from and the code it warms up in the imports
phase (``"module:attribute"``, resolved by ``load`` in the process that runs it: spec
imports neither the worker nor the memory model), the memory model's pricing of the
model's parts and work, what the export holds per weight, and what the entry can be combined
with (and why not). ``validate`` (``config``), the worker (``worker.models``,
``worker.solvers.make``), the memory model (``predict``), doctor and fit read it here;
the named groups (``LINEAR_MODELS``, ...) are derived from the entries.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from svmcore.spec.choices import BYTES_PER_VALUE, Mode, Model, Parser, Solver


def load(ref: str) -> Any:
    """The attribute an entry names (``"package.module:name"``), its module imported."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class ModelEntry:
    name: Model
    factory: str  # worker: ``(trainer) -> model``
    pricing: str  # predict: the memory model's ``parts`` and ``work`` of it (``predict.model_parts``)
    imports: tuple[str, ...] = ()  # modules the imports phase loads for it
    linear: bool = False  # trained a batch at a time by the ``solver`` knob's solver
    incremental: bool = True  # learns a batch at a time (else one fit on every row)
    transform: bool = False  # a transform fitted on a sample first (kernel-approx)
    layers: bool = False  # hidden layers (the ``hidden`` knob)
    exportable: bool = False  # exported for serving (``worker.model_export``)
    not_mixable: str = ""  # why data-parallel workers cannot average it ("" : they can)

    @property
    def mixable(self) -> bool:
        return not self.not_mixable

    @property
    def distillable(self) -> bool:
        """A teacher a linear-svm student can be distilled from: any but the exported student itself."""
        return not self.exportable


@dataclass(frozen=True)
class SolverEntry:
    name: Solver
    factory: str  # worker: a ``LinearModel`` class with ``from_config(cfg, width, classes, alpha, l2)``
    warm_up: str | None = None  # loads its code in the imports phase
    family: str = ""  # runs alike in time and bytes per weight ("compiled": the native SGD); "" : scikit-learn's
    state_arrays: int = 1  # weight-sized arrays it trains (FTRL: z and n)
    averages: bool = False  # one more when the ``average`` knob is on
    float32_state: str = ""  # why it cannot keep its state in float32 ("" : it can)
    not_mixable: str = ""  # why data-parallel workers cannot run it ("" : they can)
    export_bytes: float = 12.0  # bytes per weight the export adds above the state (float64 state)
    loss: str = "hinge"

    @property
    def mixable(self) -> bool:
        return not self.not_mixable

    def arrays(self, average: bool) -> int:
        return self.state_arrays + (1 if average and self.averages else 0)

    @property
    def model_part(self) -> str:
        """The memory model's feature its weights are priced under (its bytes cost alike)."""
        return f"model_linear_{self.family}" if self.family else "model_linear"


@dataclass(frozen=True)
class ModeEntry:
    name: Mode
    holds_rows: bool = False  # every training row in memory
    parses_text: bool = False  # training reads the text (its first pass; later passes the spill)
    maps_copy: bool = False  # batches are sliced from a memory-mapped binary copy

    @property
    def reads_disk(self) -> bool:
        return not self.holds_rows


@dataclass(frozen=True)
class ParserEntry:
    name: Parser
    warm_up: str | None = None
    compiled: bool = False  # reads svmlight text in blocks (``nativesvm``), not a chunk of lines at a time


MODELS = {e.name: e for e in (
    ModelEntry(Model.LINEAR_SVM, "svmcore.worker.models:linear", "svmcore.predict.model_parts:Linear",
               linear=True, exportable=True),
    ModelEntry(Model.KERNEL_APPROX, "svmcore.worker.models:linear", "svmcore.predict.model_parts:KernelApprox",
               ("sklearn.kernel_approximation",), linear=True, transform=True),
    ModelEntry(Model.KERNEL_SVM, "svmcore.worker.models:kernel_svm", "svmcore.predict.model_parts:KernelSVM",
               ("sklearn.svm",), incremental=False,
               not_mixable="trains on all the rows at once and cannot be split into shards"),
    ModelEntry(Model.MLP, "svmcore.worker.models:mlp", "svmcore.predict.model_parts:MLP",
               ("sklearn.neural_network",), layers=True,
               not_mixable="has no weight averaging here (its layers would need mixing of their own)"),
    ModelEntry(Model.MLP_NUMPY, "svmcore.worker.models:mlp_numpy", "svmcore.predict.model_parts:MLPNumpy",
               ("svmcore.worker.mlp_numpy",), layers=True,
               not_mixable="has no weight averaging here (its layers would need mixing of their own)"),
)}

SOLVERS = {e.name: e for e in (
    SolverEntry(Solver.SKLEARN, "svmcore.worker.sklearn_sgd:SklearnSGD", averages=True,
                float32_state="scikit-learn's SGDClassifier takes its weights' type from the data's (float32 with "
                              "the precision knob at float32 or float16) and has no setting of its own for it"),
    SolverEntry(Solver.NATIVE, "svmcore.worker.native_sgd:NativeSGD", "svmcore.data.native.binding:library", "compiled",
                averages=True, export_bytes=4.0,
                not_mixable="the native solver's C library is loaded in each process and is not shipped to Dask "
                            "workers"),
    SolverEntry(Solver.FTRL, "svmcore.worker.ftrl:NativeFTRL", "svmcore.data.native.binding:library", "ftrl",
                state_arrays=2, export_bytes=0.0, loss="logistic",
                float32_state="FTRL's n sums every squared gradient of its feature: in float32 an addition stops "
                              "counting once n is 2^24 times it, and the feature's learning rate stops falling",
                not_mixable="FTRL's state is per-coordinate z and n, which averaging weights across workers would "
                            "not mix"),
)}

MODES = {e.name: e for e in (
    ModeEntry(Mode.MEMORY, holds_rows=True),
    ModeEntry(Mode.STREAM, parses_text=True),
    ModeEntry(Mode.MEMMAP, maps_copy=True),
)}

PARSERS = {e.name: e for e in (
    ParserEntry(Parser.SKLEARN),
    ParserEntry(Parser.NATIVE, "svmcore.data.native.binding:library", compiled=True),
)}

# The named groups, from the entries: a test reads ``cfg.model in MIXABLE_MODELS``.
LINEAR_MODELS = tuple(m for m, e in MODELS.items() if e.linear)
MLP_MODELS = tuple(m for m, e in MODELS.items() if e.layers)
MINIBATCH_MODELS = tuple(m for m, e in MODELS.items() if e.incremental)  # trained by minibatches, with an L2 alpha
MIXABLE_MODELS = tuple(m for m, e in MODELS.items() if e.mixable)
DISTILLABLE_MODELS = tuple(m for m, e in MODELS.items() if e.distillable)
MIXABLE_SOLVERS = tuple(s for s, e in SOLVERS.items() if e.mixable)
FLOAT32_STATE_SOLVERS = tuple(s for s, e in SOLVERS.items() if not e.float32_state)
DISK_MODES = tuple(m for m, e in MODES.items() if e.reads_disk)


def state_bytes(cfg, width: int, nvec: int) -> float:
    """Bytes of a linear model's trained state over ``width`` columns (``nvec`` vectors): its
    solver's weight-sized arrays in the ``model_state`` type."""
    solver = SOLVERS[cfg.solver]
    return float(nvec * width * BYTES_PER_VALUE[cfg.model_state] * solver.arrays(cfg.average))


def imports(model: Model, parser: Parser, solver: Solver, distill: bool = False) -> list[str]:
    """What the imports phase loads for a run, in order: the parser's and (for a linear
    model, or a distilled run's linear student) the solver's code, scikit-learn's linear
    models and threadpoolctl, the model's own modules (``import_all`` loads them)."""
    linear = MODELS[model].linear or distill
    out = [w for w in (PARSERS[parser].warm_up, SOLVERS[solver].warm_up if linear else None) if w]
    return out + ["sklearn.linear_model", "threadpoolctl", *MODELS[model].imports]


def import_all(refs: list[str]) -> None:
    """Import each module; call each ``module:function`` (a warm-up: loads code)."""
    for ref in refs:
        if ":" in ref:
            load(ref)()
        else:
            importlib.import_module(ref)
