"""What a training run reports: ``TrainResult``, written by the worker into its outcome
event (``to_dict``) and read back by the parent's summary (``reported``). Standard
library only: the engine imports it without loading anything of the worker's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# fields the parent takes from elsewhere (the events, the phases), not from the worker's result
_NOT_REPORTED = {"metadata": {"reported": False}}


@dataclass
class TrainResult:
    # the final evaluation (spec.scores.scores); the summary reads accuracy from the final eval event
    accuracy: float | None = field(default=None, **_NOT_REPORTED)
    balanced_accuracy: float | None = field(default=None, **_NOT_REPORTED)
    f1: float | None = None
    f1_of: str | None = None
    baseline_accuracy: float | None = None
    per_class_recall: dict | None = None
    confusion: dict | None = None
    # the training loop
    samples: int = field(default=0, **_NOT_REPORTED)
    batches: int = 0
    train_s: float | None = field(default=None, **_NOT_REPORTED)
    samples_per_s: float | None = field(default=None, **_NOT_REPORTED)
    epoch_samples_per_s: list = field(default_factory=list)  # samples/s of each pass: the first parses
    shuffle: bool | None = None
    monitor: str | None = None
    spill: dict | None = None  # rows, read_back, failed (stream mode with more than one pass)
    upcast: dict | None = None  # float16 batches' upcast cost (upcast.METER)
    threads: dict | None = None  # requested, blas pools, os_threads, reader_thread
    parallel: dict | None = None  # a data-parallel run's workers and their memory
    # the data and the model
    train_rows: int | None = None
    test_rows: int | None = None
    features: int | None = None
    train_data_bytes: int | None = None
    model_bytes: int | None = None
    regularisation: dict | None = None
    recomputed_layers: list | None = None
    nonzero_weights: int | None = None
    weights: int | None = None
    sparse_model_bytes: int | None = None
    distillation: dict | None = None  # a distilled run's teacher and student: scores, agreement, sizes
    model_export: dict | None = None  # what svmcore.worker.model_export wrote for serving, or why not
    data: dict | None = field(default=None, **_NOT_REPORTED)  # the summary takes it from the data event
    pid: int | None = field(default=None, **_NOT_REPORTED)
    lean: bool = field(default=False, **_NOT_REPORTED)  # the lean configuration (numpy and the native library only)

    def to_dict(self) -> dict[str, Any]:
        """The outcome event's ``summary``: every field; ``parallel`` only for a data-parallel run."""
        out = dataclasses.asdict(self)
        if out["parallel"] is None:
            del out["parallel"]
        return out

    @classmethod
    def reported(cls, worker: dict) -> dict[str, Any]:
        """The fields of an outcome's ``summary`` (a TrainResult's dict, or the part a failed
        run wrote) that a run's summary shows as the worker reported them."""
        return {f.name: worker[f.name] for f in dataclasses.fields(cls)
                if f.metadata.get("reported", True) and f.name in worker}
