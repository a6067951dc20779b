"""The task a Dask worker runs for one run of a sweep.

It starts and monitors the training worker on the Dask worker's host exactly as the
local runner does (``runner.Run``, 50 Hz sampling, caps, cancel), in a throwaway
data home, and returns the whole record as plain data: the app that submitted the
task is the only writer of the real store.

Names shared with the app side (``dask_executor``), from the sweep's prefix and the run id:
event ``started`` (set by the first attempt: a second one, after its worker died, reports the
run ``lost`` without running it), events ``cancel`` and ``cancel-RUN`` (polled while the run
goes), and a topic that tells the app the host the run started on.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import shutil
import tempfile
import time

from svmcore.engine.hostinfo import this_host
from svmcore.engine.runner import Run
from svmcore.spec.config import RunConfig
from svmcore.spec.result import DaskPlacement
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store

POLL_S = 0.5
RESOURCE = "svmcore_run"  # one unit per Dask worker: one run per worker at a time


def topic(prefix: str) -> str:
    return f"svmcore-{prefix}"


def started_event(prefix: str, run_id: int) -> str:
    return f"svmcore-{prefix}-started-{run_id}"


def cancel_event(prefix: str, run_id: int | None = None) -> str:
    return f"svmcore-{prefix}-cancel" + (f"-{run_id}" if run_id is not None else "")


def _home_prefix(prefix: str, run_id: int) -> str:
    return f"svmcore-{prefix}-{run_id}-"


def _dask_environ() -> dict[str, None]:
    """The variables a Dask nanny sets for its worker (e.g. MALLOC_TRIM_THRESHOLD_, which
    changes when glibc returns memory), to leave out of the training worker's environment:
    its memory must behave as in a local run."""
    import dask  # runs on a Dask worker, which has it

    preset = dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {}
    return {k: None for k, v in preset.items() if os.environ.get(k) == str(v)}


def run_on_worker(config: dict, extra_env: dict, prefix: str, run_id: int) -> dict:
    """Run one configuration here; returns {status, summary, samples, events, host}."""
    from distributed import Event, get_worker  # runs on a Dask worker, which has it

    worker = get_worker()
    host = this_host()
    started = Event(started_event(prefix, run_id))
    if started.is_set():
        # a first attempt's folder on this host is garbage now (its worker is gone)
        for old in glob.glob(os.path.join(tempfile.gettempdir(), _home_prefix(prefix, run_id) + "*")):
            shutil.rmtree(old, ignore_errors=True)
        return {"status": RunStatus.LOST.value, "samples": [], "events": [], "host": None, "summary": {
            "error": {"type": "Lost", "message": "the Dask worker running it died; its samples and events went "
                                                 "with it (Dask started it again, and the second attempt did not run)"}}}
    started.set()
    worker.log_event(topic(prefix), {"run_id": run_id, "host": host, "worker": worker.address, "pid": os.getpid()})
    cancels = (Event(cancel_event(prefix)), Event(cancel_event(prefix, run_id)))

    def cancelled() -> bool:
        return any(e.is_set() for e in cancels)

    began = time.time()
    home = tempfile.mkdtemp(prefix=_home_prefix(prefix, run_id))
    store = None
    try:
        store = Store(home)
        env = dict(_dask_environ(), **extra_env, SVMCORE_DIE_WITH_PARENT=str(os.getpid()))
        run = Run(store, RunConfig(**config), extra_env=env)
        if cancelled():
            run.cancel()  # start() then records it cancelled without spawning anything
        run.start()
        while not run.is_finished():
            run.wait(POLL_S)
            if not run.is_finished() and cancelled():
                run.cancel()
                run.wait()
        rec = store.get_run(run.run_id)
        summary = dataclasses.replace(rec.summary, dask=DaskPlacement(worker.address, began, time.time()))
        return {"status": rec.status.value, "summary": summary.to_dict(), "samples": store.samples(rec.id),
                "events": store.events(rec.id), "host": host}
    finally:
        if store is not None:
            store.close()
        shutil.rmtree(home, ignore_errors=True)
