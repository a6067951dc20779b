"""The trace knob: the run under memray's tracker, every allocation recorded with its Python and
native frames into the run's folder (``spec.result.TRACE_FILE``), read back by the parent
(``engine.traces``). Imported only when the knob is on: an untraced run never loads memray."""

from __future__ import annotations

import os

import memray

from svmcore.spec.result import TRACE_FILE


def traced(run_dir: str, run):
    """``run`` under the tracker. All allocations, not memray's aggregated format: the aggregated
    file holds only the run's high-water mark, where a phase's peak needs the heap over time."""

    def traced_run(*args):
        with memray.Tracker(os.path.join(run_dir, TRACE_FILE), native_traces=True,
                            file_format=memray.FileFormat.ALL_ALLOCATIONS, memory_interval_ms=10):
            return run(*args)

    return traced_run
