"""Data-parallel training on Dask (``workers`` > 1): iterative parameter mixing.

The run's own process is the coordinator. It writes the training rows to ``workers`` shards
on disk (row i to shard i mod N, so a file sorted by label gives every shard both classes),
starts a LocalCluster of N single-threaded worker processes (its own children, so a cancel or
a cgroup cap covers them) or connects to ``scheduler``, and runs each epoch as one task per
shard, pinned to one Dask worker, carrying the current model. Each worker trains its shard
through the run's own pass loop (``loop.train_passes``), streamed from the shard's spill or
held in memory as the mode says, and sends its model back; the coordinator mixes the weights
(a mean weighted by shard rows; with ``mix_every`` k, every k batches of each shard) and
evaluates as a single-process run does.

Memory: each task samples its process's RSS in a thread and returns the samples and its VmHWM
(exact on a LocalCluster started for this run; on an external scheduler it would include
earlier work, so the sampled peak is reported there, and says so).

Faults: the coordinator watches its workers itself while it waits on Dask, so a worker that
dies ends the run within seconds, ``failed``, naming the worker and what it was doing (Dask
alone would wait on a dead worker's result for minutes). The engine tells a worker killed at
the run's cgroup cap apart (``oom``).

dask and distributed are imported only here, and only when a run asks for workers.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time

from itertools import islice

import numpy as np

from svmcore.data import disk
from svmcore.data.feeds.memory import InMemory
from svmcore.data.feeds.stream import from_spill
from svmcore.data.rows import COMPUTE_DTYPES, Rows
from svmcore.data.shuffle_order import Shuffle
from svmcore.data.spill import Spill
from svmcore.spec.choices import Monitor
from svmcore.spec.errors import SvmcoreError, first_line
from svmcore.spec.monitor import SAMPLE_HZ
from svmcore.spec.scheduler import parse_address, unreachable_reason
from svmcore.spec.units import MiB
from svmcore.data.proc_status import status_kib

log = logging.getLogger(__name__)

MAX_EVENT_SAMPLES = 3000  # samples of one worker in one event (thinned evenly above it)
CONNECT_TIMEOUT_S = 10.0
STARTUP_TIMEOUT_S = 120.0
WATCH_S = 0.25  # how often a waiting mix checks that its workers are still there
GONE_GRACE_S = 2.0  # after a Dask error, how long a dying worker may take to show as gone


class WorkerLost(RuntimeError):
    """A Dask worker died (or left) during the run: a fault, not bad input. ``details``
    ({"worker": its name, "doing": what it was doing}) go into the run's error, so the
    engine can name the worker when the cgroup's OOM killer is what killed it."""

    def __init__(self, message: str, worker: str | None = None, doing: str | None = None):
        super().__init__(message)
        self.details = {"worker": worker, "doing": doing} if worker else {}


class ClusterError(SvmcoreError):
    """The Dask cluster could not be started or reached, or has too few workers."""


# ------------------------------------------------------------------ mixing (pure)
def mix(states: list[dict], weights: list[float], start_t: float) -> dict:
    """Iterative parameter mixing: the mean of each array over ``states``, weighted by
    ``weights`` (rows trained on), the step count ``t_`` included: a mean, since summing the
    workers' steps decays the learning rate N times faster per row each worker sees."""
    if not states or len(states) != len(weights):
        raise ValueError("one weight per state is needed")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("the weights must add up to more than zero")
    out: dict = {}
    for key in states[0]:
        if key == "t_":
            out[key] = start_t + sum((s["t_"] - start_t) * w for s, w in zip(states, weights)) / total
            continue
        acc = np.zeros_like(np.asarray(states[0][key], dtype=np.float64))
        for s, w in zip(states, weights):
            acc += np.asarray(s[key], dtype=np.float64) * (w / total)
        out[key] = acc.astype(np.asarray(states[0][key]).dtype, copy=False)
    return out


# ------------------------------------------------------------------ shards
def write_shards(blocks, n_shards: int, folder: str, dtype, need_bytes: int | None = None) -> list[Spill]:
    """Write training rows (row-ordered ``(block, codes)``) to ``n_shards`` spills (values in
    ``dtype``), row i to shard i mod n_shards. Holds one block at a time. A full disk removes
    what was written and raises DiskFull naming ``folder`` and the space the shards need
    (``need_bytes``, when known)."""
    shards = [Spill(os.path.join(folder, f"shard-{k}"), dtype) for k in range(n_shards)]
    row0 = 0
    files = []
    try:
        for s in shards:
            files.append(s._open())
        for X, codes in blocks:
            X, n = X.sparse(), codes.shape[0]
            first = (-row0) % n_shards  # the row of this block that goes to shard 0
            for k in range(n_shards):
                start = (first + k) % n_shards
                if start < n:
                    take = np.arange(start, n, n_shards)
                    shards[k]._write(files[k], X.gather(take), codes[take])
            row0 += n
        for f in files:
            Spill._close(f)
    except OSError as e:
        if not disk.is_disk_full(e):
            raise
        for f in files:
            _close_quietly(f)
        written = disk.tree_bytes(folder)
        shutil.rmtree(folder, ignore_errors=True)
        raise disk.disk_full("the shards of the training rows (a copy of them on disk)", folder, need_bytes, written,
                             removed="the partial shards were removed", plural=True) from None
    finally:
        for f in files:
            _close_quietly(f)
    for s in shards:
        s.complete = True
    return shards


def _close_quietly(files: dict) -> None:
    for f in files.values():
        try:
            f.close()
        except OSError as e:  # a full disk refuses the last buffered bytes: the shards go anyway
            log.debug("closing %s: %s", f.name, e)


class Shards:
    """The training rows as shards on disk: the feed of a run with workers (its process holds
    none of the rows: ``nbytes`` 0)."""

    spill = None
    reader_thread = False
    nbytes = 0

    def __init__(self, shards: list[Spill], cdtype):
        self.shards = shards
        self.cdtype = cdtype
        self.n_rows = sum(s.rows for s in shards)

    def head(self, n: int) -> Rows:
        """The first ``n`` rows of the first shard, compute-ready (the kernel approximation's sample)."""
        X, codes = next(iter(self.shards[0].read(n)))
        return Rows(X.compute(self.cdtype), codes)

    def discard(self) -> None:
        for s in self.shards:
            s.discard()
        if self.shards:
            try:
                os.rmdir(os.path.dirname(self.shards[0].folder))
            except OSError as e:  # not empty or already gone: the run folder is removed with the run
                log.debug("shards folder left: %s", e)


# ------------------------------------------------------------------ on the Dask worker
_HELD: dict[str, InMemory] = {}  # memory mode: a shard read once and kept by the worker process
_PASSES: dict[tuple, tuple] = {}  # mix_every: a shard's pass in progress and its rows so far, kept between mixes


class _Sampler:
    """This process's RSS every 1/SAMPLE_HZ s, in a thread, while a task runs."""

    def __init__(self):
        self.t0 = time.time()
        self.dt: list[float] = []
        self.rss: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="svmcore-ddp-sampler", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        self.dt.append(time.time() - self.t0)
        self.rss.append(status_kib(b"VmRSS:")[0] * 1024)

    def _run(self) -> None:
        self._sample()
        while not self._stop.wait(1.0 / SAMPLE_HZ):
            self._sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()


def _shard_batches(spill: Spill, task: dict):
    """The shard's pass of epoch ``task["epoch"]``, compute-ready."""
    cdtype = COMPUTE_DTYPES[task["precision"]]
    shuffle = Shuffle(task["seed"], task["window_rows"], stage=task["shard"] + 1) if task["shuffle"] else None
    if task["keep"]:
        held = _HELD.get(spill.folder)
        if held is None:
            X, codes = next(iter(spill.read(max(1, spill.rows))))
            held = _HELD[spill.folder] = InMemory(X, codes, cdtype, shuffle)
        return held.batches(task["batch_size"], task["epoch"])
    return (Rows(X.compute(cdtype), codes) for X, codes in from_spill(spill, task["batch_size"], shuffle, task["epoch"]))


def train_shard(trainer, spill: Spill, task: dict) -> dict:
    """One epoch of ``trainer`` on one shard (or, with ``task["take"]``, its next batches up
    to the next mix), on a Dask worker, through the run's pass loop. Returns the model, the
    rows trained on, this process's memory samples and its VmHWM."""
    from svmcore.worker import loop
    from svmcore.worker.faults import Faults

    sampler = _Sampler()
    at = f"shard{task['shard'] + 1}-epoch{task['epoch'] + 1}"
    faults = Faults(task.get("fault") or "")  # test-only: 'exit:CODE@shard2-epoch2', 'sleep:S@shard1-epoch1-mix3'
    faults.fire(at)
    faults.fire(f"{at}-mix{task.get('mix', 1)}")
    key = (spill.folder, task["epoch"])
    try:
        batches, before = _PASSES.pop(key, None) or (_shard_batches(spill, task), 0)
        take = task.get("take")  # batches before the next mix; None: the whole pass
        progress = loop.Progress(None, 1, spill.rows, Monitor.OFF)
        loop.train_passes(progress, lambda _: islice(batches, take) if take else batches, trainer.fit, 0)
        rows, done = progress.samples, before + progress.samples >= spill.rows
        if not done:
            _PASSES[key] = (batches, before + rows)  # the rest of this pass, for the next mix's task
        elif task["last"]:
            _HELD.pop(spill.folder, None)
    finally:
        sampler.stop()
    return {"model": trainer.model, "rows": rows, "done": done, "retained": progress.retained, "t0": sampler.t0,
            "dt": sampler.dt, "rss": sampler.rss, "hwm_bytes": status_kib(b"VmHWM:")[0] * 1024, "pid": os.getpid(),
            "seconds": time.time() - sampler.t0}


def _start_ticks(pid: int) -> int | None:
    """A live process's start time (clock ticks since boot), None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in (b"Z", b"X") else int(fields[19])


# ------------------------------------------------------------------ the coordinator
class Cluster:
    """A Dask client on a LocalCluster of ``n`` single-threaded worker processes started
    for this run, or on the scheduler at ``address``; ``workers`` are the addresses the
    shards are pinned to, ``pids`` their process ids."""

    def __init__(self, n: int, address: str | None):
        import dask
        from distributed import Client, LocalCluster

        self.local = address is None
        self.cluster = None
        try:
            # a dead worker's shard must not be trained again elsewhere (and no worker is
            # paused, spilled or killed by Dask's own memory manager: the run's cap rules)
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                if self.local:
                    self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                memory_limit=0, dashboard_address=None,
                                                silence_logs=logging.ERROR, host="127.0.0.1")
                    self.client = Client(self.cluster, timeout=STARTUP_TIMEOUT_S)
                else:
                    host, port = parse_address(address)
                    reason = unreachable_reason(host, port, CONNECT_TIMEOUT_S)
                    if reason:  # at once, not after Dask's connect timeout ("Timed out")
                        raise ClusterError(f"could not reach the Dask scheduler at {address}: {reason}")
                    self.client = Client(address, timeout=CONNECT_TIMEOUT_S)
        except ClusterError:
            self.close()
            raise
        except Exception as e:
            self.close()
            where = "start a local Dask cluster" if self.local else f"reach the Dask scheduler at {address}"
            raise ClusterError(f"could not {where}: {e or type(e).__name__}") from None
        try:
            if self.local:
                self.client.wait_for_workers(n, timeout=STARTUP_TIMEOUT_S)
            have = sorted(self.client.scheduler_info()["workers"])
            if len(have) < n:
                raise ClusterError(f"the Dask scheduler at {address} has {len(have)} worker(s); "
                                   f"workers={n} needs {n} (one shard each)")
            self.workers = have[:n]
            self.pids = self.client.run(os.getpid, workers=self.workers)
            self._started = {addr: _start_ticks(pid) for addr, pid in self.pids.items()}
        except ClusterError:
            self.close()
            raise
        except Exception as e:
            self.close()
            raise ClusterError(f"the Dask cluster did not get ready: {e or type(e).__name__}") from None

    def name(self, k: int) -> str:
        addr = self.workers[k]
        pid = self.pids.get(addr)
        return f"Dask worker {k + 1} ({addr}{f', pid {pid}' if pid else ''})"

    def gone(self, grace_s: float = 0.0) -> int | None:
        """The index of a worker of this run that is gone (waiting up to ``grace_s`` for
        one to show as gone), or None. On a LocalCluster: its process is dead (a zombie, or
        its pid reused). On an external scheduler: the scheduler no longer lists its address
        (since dask/distributed#6361 a worker that lost its scheduler never comes back with
        the shard it held)."""
        deadline = time.monotonic() + grace_s
        while True:
            k = self._gone_now()
            if k is not None or time.monotonic() >= deadline:
                return k
            time.sleep(0.05)

    def _gone_now(self) -> int | None:
        if self.local:
            for k, addr in enumerate(self.workers):
                pid = self.pids.get(addr)
                if pid and _start_ticks(pid) != self._started.get(addr):
                    return k
            return None
        have = self.client.scheduler_info(n_workers=-1)["workers"]
        return next((k for k, addr in enumerate(self.workers) if addr not in have), None)

    def lost(self, k: int, doing: str) -> WorkerLost:
        how = "died" if self.local else "left the cluster"
        return WorkerLost(f"{self.name(k)} {how} {doing}; the run stops here rather than return a model "
                          "without that shard's rows", worker=self.name(k), doing=doing)

    def guarded(self, doing, call):
        """``call()``, watched: a worker of the run gone while it waits ends the run at once,
        and if it fails while a worker is gone, the error is that worker's loss (``doing(k)``
        says what worker k was doing), not Dask's wording of it. The call runs in a daemon
        thread because a blocking one may wait on the dead worker itself (a broadcast scatter
        retries a dead worker's address for 30 s a try)."""
        box: dict = {}

        def target():
            try:
                box["value"] = call()
            except BaseException as e:  # handed to the waiting thread below
                box["error"] = e

        waiter = threading.Thread(target=target, name="svmcore-dask-call", daemon=True)
        waiter.start()
        while waiter.is_alive():
            waiter.join(WATCH_S)
            if waiter.is_alive() and (k := self.gone()) is not None:
                raise self.lost(k, doing(k))
        if "error" not in box:
            return box["value"]
        try:
            raise box["error"]
        except Exception as e:
            k = self.gone(GONE_GRACE_S)
            if k is not None:
                raise self.lost(k, doing(k)) from None
            if _is_lost(e):
                log.warning("Dask %s: %s", type(e).__name__, first_line(e))
                raise WorkerLost(f"the Dask cluster failed {doing(None)} ({type(e).__name__}, no worker of the "
                                 "run is gone)") from None
            raise

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            try:
                client.close(timeout=10)
            except Exception as e:  # closing after a fault: the run's outcome is already decided
                log.warning("closing the Dask client: %s", e)
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=20)
            except Exception as e:
                log.warning("closing the local Dask cluster: %s", e)


def _thin(dt: list, rss: list) -> tuple[list, list]:
    if len(dt) <= MAX_EVENT_SAMPLES:
        return dt, rss
    idx = np.linspace(0, len(dt) - 1, MAX_EVENT_SAMPLES).astype(int)
    return [dt[i] for i in idx], [rss[i] for i in idx]


def total_peak(series: list[tuple[list, list]], step_s: float = 1.0 / SAMPLE_HZ) -> int:
    """The peak of the sum of several processes' sampled RSS: each series (absolute
    times, bytes) held at its last reading on a common grid, summed where every series
    has begun (a process not yet sampled counts as its first reading, not as zero)."""
    series = [(np.asarray(t, float), np.asarray(r, float)) for t, r in series if len(t)]
    if not series:
        return 0
    lo = min(t[0] for t, _ in series)
    hi = max(t[-1] for t, _ in series)
    grid = np.arange(lo, hi + step_s, step_s)
    total = np.zeros_like(grid)
    for t, r in series:
        i = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(t) - 1)
        total += r[i]
    return int(total.max())


def train(cfg, trainer, shards: Shards, progress, faults) -> dict:
    """Train ``trainer`` for ``cfg.epochs`` epochs over ``shards`` on Dask, mixing after
    each epoch, or every ``cfg.mix_every`` batches of each shard (each worker keeps its
    place in its shard's pass between mixes). Each epoch is one pass of ``progress``
    (``loop.Progress``: its events, and the live evaluation of the coordinator's mixed model);
    ``faults`` (``faults.Faults``) fire at each mix and go to the shards. Returns the run's
    ``parallel`` summary."""
    n = cfg.workers
    coordinator = _Sampler()
    t_start = time.monotonic()
    cluster = Cluster(n, cfg.scheduler)
    started_s = time.monotonic() - t_start
    worker_t: list[list] = [[] for _ in range(n)]
    worker_rss: list[list] = [[] for _ in range(n)]
    hwm = [0] * n
    retained = [{"rss_bytes": 0, "anon_bytes": 0} for _ in range(n)]  # each worker's at the end of its shard's pass
    try:
        for epoch in range(cfg.epochs):
            t_epoch = time.monotonic()
            pending = list(range(n))  # shards whose pass has batches left
            mix_round = 0
            while pending:
                mix_round += 1
                pending = _mix_round(cfg, cluster, trainer, shards, progress.events, epoch, mix_round, pending,
                                     faults, worker_t, worker_rss, hwm, retained)
            progress.samples += shards.n_rows
            progress.batches += sum(-(-s.rows // cfg.batch_size) for s in shards.shards)
            progress.pass_done(epoch, shards.n_rows, time.monotonic() - t_epoch,
                               workers_rss_bytes=[r["rss_bytes"] for r in retained],
                               workers_anon_bytes=[r["anon_bytes"] for r in retained])
    except Exception as e:
        # what the processes measured until then goes with the failure (the run's summary heads it)
        coordinator.stop()
        try:
            e.parallel = _summary(cfg, cluster, shards, coordinator, started_s, worker_t, worker_rss, hwm,
                                  finished=False)
        except Exception as inner:  # the failure itself is what the run reports
            log.warning("no memory summary of the failed data-parallel run: %s", inner)
        raise
    finally:
        cluster.close()
        coordinator.stop()
    return _summary(cfg, cluster, shards, coordinator, started_s, worker_t, worker_rss, hwm)


def _mix_round(cfg, cluster: Cluster, trainer, shards: Shards, events, epoch: int, mix_round: int,
               pending: list[int], faults, worker_t, worker_rss, hwm, retained) -> list[int]:
    """One task per pending shard from the current model, then the mix. Returns the
    shards whose pass has batches left (none when mixing once per epoch). Every wait on
    Dask is watched: a worker of the run that is gone ends it at once (WorkerLost)."""
    from svmcore.spec.events import WORKER_MEMORY

    where = f"mix {mix_round} of epoch {epoch + 1}" if cfg.mix_every else f"epoch {epoch + 1}"
    faults.fire(f"epoch{epoch + 1}-mix{mix_round}")  # test-only: 'sleep:S@epoch1-mix3', before the model is sent
    futures: dict[int, object] = {}
    finished: set[int] = set()

    def doing(k: int | None) -> str:
        if k is None:
            return f"in {where}"
        if k not in pending:
            return f"after its shard {k + 1} had finished its pass of epoch {epoch + 1}, while {where} went on"
        fut = futures.get(k)
        if fut is None:
            return f"while the model was sent for {where}"
        if k in finished:  # its result waits on the worker until the coordinator gathers it
            return f"after training shard {k + 1} in {where}, before its model reached the coordinator"
        return f"while training shard {k + 1} in {where}"

    start_t = float(trainer.model.t_)
    k = cluster.gone()
    if k is not None:
        raise cluster.lost(k, doing(k))
    # one serialized copy of the model per mix, sent to every worker (not one per task)
    shared = cluster.guarded(doing, lambda: cluster.client.scatter(
        trainer, broadcast=True, hash=False, workers=[cluster.workers[k] for k in pending], timeout=STARTUP_TIMEOUT_S))
    for k in pending:
        task = {"shard": k, "epoch": epoch, "batch_size": cfg.batch_size, "precision": cfg.precision,
                "shuffle": cfg.shuffle, "seed": cfg.seed, "window_rows": cfg.shuffle_buffer,
                "keep": cfg.mode_entry.holds_rows, "last": epoch == cfg.epochs - 1, "fault": faults.spec,
                "take": cfg.mix_every or None, "mix": mix_round}
        futures[k] = cluster.guarded(doing, lambda k=k, task=task: cluster.client.submit(
            train_shard, shared, shards.shards[k], task, pure=False, workers=[cluster.workers[k]],
            allow_other_workers=False, key=f"svmcore-shard{k + 1}-epoch{epoch + 1}-mix{mix_round}-{os.getpid()}"))
    for k, fut in futures.items():
        fut.add_done_callback(lambda f, k=k: f.status == "finished" and finished.add(k))
    _watch(cluster, list(futures.values()), doing)
    results = [_result(cluster, k, futures[k], doing) for k in pending]
    for k, r in zip(pending, results):
        dt, rss = _thin(r["dt"], r["rss"])
        events.emit(WORKER_MEMORY, worker=k + 1, address=cluster.workers[k], pid=r["pid"], epoch=epoch + 1,
                    mix=mix_round, start_ts=r["t0"], started_ago_s=time.time() - r["t0"], dt=dt, rss_bytes=rss,
                    hwm_bytes=r["hwm_bytes"], rows=r["rows"], seconds=r["seconds"])
        worker_t[k].extend(r["t0"] + d for d in r["dt"])
        worker_rss[k].extend(r["rss"])
        hwm[k] = max(hwm[k], r["hwm_bytes"])
        if r["done"]:
            retained[k] = r["retained"]
    trained = [r for r in results if r["rows"]]  # a shard that had no batch left is the model as sent
    if trained:
        mixed = mix([r["model"].get_state() for r in trained], [r["rows"] for r in trained], start_t)
        # one returned model carries the fitted attributes (classes, loss); the mixed arrays replace its own
        trainer.model = trained[0]["model"]
        trainer.model.set_state(mixed)
    return [k for k, r in zip(pending, results) if not r["done"]]


def _watch(cluster: Cluster, futures: list, doing) -> None:
    """Until every task ended, checking every ``WATCH_S`` that no worker of the run is
    gone (a task pinned to a dead worker would otherwise wait for it for good)."""
    from distributed import wait

    while True:
        try:
            wait(futures, timeout=WATCH_S)
            return
        except TimeoutError:
            k = cluster.gone()
        except Exception as e:  # a task cancelled ("lost dependencies": the model sent went with a worker)
            k = cluster.gone(GONE_GRACE_S)
            if k is None:
                log.warning("Dask %s: %s", type(e).__name__, first_line(e))
                return  # each task's own status says what happened to it
        if k is not None:
            raise cluster.lost(k, doing(k))


def _result(cluster: Cluster, k: int, fut, doing) -> dict:
    """Shard k's finished task's result, gathered from its worker: watched too, since the
    result lives on the worker and goes with it."""
    while True:
        if fut.status == "error":
            err = fut.exception()
            if not _is_lost(err):
                raise err  # the task itself failed (a MemoryError under an rlimit cap is oom)
        if fut.status in ("error", "cancelled", "lost"):
            gone = cluster.gone(GONE_GRACE_S)
            raise cluster.lost(k if gone is None else gone, doing(k if gone is None else gone))
        try:
            return fut.result(timeout=WATCH_S)
        except TimeoutError:
            pass
        except Exception as e:
            if not _is_lost(e):
                raise
        gone = cluster.gone()
        if gone is not None:
            raise cluster.lost(gone, doing(gone))


def _summary(cfg, cluster: Cluster, shards: Shards, coordinator: _Sampler, started_s: float, worker_t, worker_rss,
             hwm, finished: bool = True) -> dict:
    """The run's ``parallel`` summary. Of a run that failed (``finished`` False) only what
    was read until then: each worker's sampled maximum over its finished tasks (None if it
    finished none), and the total only when every worker had been read."""
    n = cfg.workers
    exact = cluster.local and finished
    per_worker = []
    for k in range(n):
        sampled = max(worker_rss[k], default=None)
        peak = (max(hwm[k], sampled or 0) if exact else sampled)
        per_worker.append({"worker": k + 1, "address": cluster.workers[k], "pid": cluster.pids.get(cluster.workers[k]),
                           "rows": shards.shards[k].rows,
                           "peak_rss_mb": peak / MiB if peak is not None else None,
                           "peak_exact": exact, "peak_sampled_mb": sampled / MiB if sampled is not None else None})
    coord_series = ([coordinator.t0 + d for d in coordinator.dt], coordinator.rss)
    total = (total_peak([coord_series] + [(worker_t[k], worker_rss[k]) for k in range(n)])
             if all(worker_rss[k] for k in range(n)) else None)
    until = "" if finished else " until the run failed (a worker's last task is not in it)"
    return {
        "workers": n, "scheduler": cfg.scheduler or "local", "cluster_start_s": started_s,
        "per_worker": per_worker,
        "worker_peak_source": ("each Dask worker's kernel high-water mark (VmHWM, its process started with this "
                               "run): exact" if exact else
                               "each Dask worker's RSS sampled at 50 Hz while it trained" + (
                                   " (its VmHWM would include earlier work on that worker)" if finished else until)
                               + ": sampled"),
        "coordinator_peak_sampled_mb": max(coordinator.rss, default=0) / MiB,
        "total_peak_sampled_mb": total / MiB if total is not None else None,
        "total_source": ("the coordinator's and every Dask worker's RSS sampled at 50 Hz, summed at each instant "
                         f"(a worker between epochs counts at its last reading){until}: sampled"),
        **({} if finished else {"ended_early": True}),
    }


def _is_lost(err) -> bool:
    """True for the errors Dask gives when the worker running a task died or left."""
    names = {type(err).__name__} | {c.__name__ for c in type(err).__mro__}
    return bool(names & {"KilledWorker", "CommClosedError", "FutureCancelledError", "FuturesCancelledError",
                         "CancelledError"})
