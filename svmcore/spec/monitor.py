"""What the ``monitor`` knob means in the worker: how often it reports while training.
One place for both worker paths (the classic loop and the lean one) and the memory model;
and how often memory is sampled (by the engine, and by each Dask worker of a run)."""

SAMPLE_HZ = 50  # RSS samples per second

from svmcore.spec.choices import Monitor

EVAL_SAMPLE_ROWS = 2000  # held-out rows, drawn at random, scored live during training (monitor=full)
EVAL_EVERY_S = 1.0
PROGRESS_EVERY_S = {Monitor.FULL: 0.1, Monitor.LIGHT: 1.0}  # by the monitor knob; off: no progress events while training


def live_evaluation(monitor: str) -> bool:
    return monitor == Monitor.FULL
