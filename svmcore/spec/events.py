"""The worker's event kinds: one JSON object per line of RUN_DIR/events.jsonl, each with
``kind`` and ``ts``. Written by the worker, read by the engine and the charts."""

STARTED = "started"          # pid, cap_kind, cap_bytes
PHASE_START = "phase_start"  # phase, rss_bytes
PHASE_END = "phase_end"      # phase, wall_s, peak_rss_bytes (the kernel's high-water mark of the phase)
DATA = "data"                # info (the scan), n_features, text_path, binary_path
LOADED = "loaded"            # train_rows, test_rows, train_data_bytes, test_data_bytes
TRANSFORMED = "transformed"  # components
PROGRESS = "progress"        # samples, batches, epoch, epochs, total, train_elapsed_s[, epoch_samples_per_s]
EVAL = "eval"                # samples, accuracy, balanced_accuracy, rows, train_elapsed_s[, final]
WORKER_MEMORY = "worker_memory"  # worker (1-based), address, pid, epoch, mix, start_ts, started_ago_s (the task
#                                  began that long before this event), dt (s after the task began),
#                                  rss_bytes (50 Hz, same length as dt), hwm_bytes, rows, seconds: one Dask
#                                  worker's epoch of a data-parallel run (workers > 1)
OUTCOME = "outcome"          # status, phase, error, summary, peak_rss_bytes

PHASES = ("imports", "prepare", "load", "transform", "train", "evaluate")


def last(events: list[dict], kind: str, **match) -> dict | None:
    """The latest event of ``kind`` (whose fields equal ``match``), or None."""
    return next((e for e in reversed(events) if e["kind"] == kind
                 and all(e.get(k) == v for k, v in match.items())), None)
