"""A run's live buffers: memory samples read from /proc and events tailed from the
worker's event file, and what of them has reached the store. The monitor thread fills
them; readers (the CLI's progress bar, the dashboard's live fragment) take snapshots
under a lock and never block it."""

from __future__ import annotations

import threading
import time
from dataclasses import astuple, dataclass

from svmcore.engine import limits, procfs
from svmcore.engine.summary import MemorySample
from svmcore.spec.events import PHASE_END, PHASE_START, Event, parse_lines
from svmcore.store.sqlite import Store, StoreError


@dataclass(frozen=True)
class Buffers:
    """A consistent copy of the buffers at one moment."""

    samples: list[MemorySample]
    events: list[Event]
    phase: str | None


class Monitor:
    """``cgroup``: the group of a cgroup-capped run, whose charge each sample reads too."""

    def __init__(self, events_path: str, t0: float, cgroup: str | None = None):
        self.events_path = events_path
        self.t0 = t0
        self.cgroup = cgroup
        self._lock = threading.Lock()
        self._samples: list[MemorySample] = []
        self._events: list[Event] = []
        self._phase: str | None = None
        self._imported = False  # the worker ended its imports phase (it is past the libraries' start)
        self._offset = 0  # bytes of the event file read so far
        self._flushed = (0, 0)  # samples, events already in the store

    def preload(self, samples: list[MemorySample]) -> None:
        """Samples already in the store (an earlier runner's, for a run resumed after a restart):
        part of the run's buffers, never written again."""
        with self._lock:
            self._samples[:0] = samples
        self._flushed = (self._flushed[0] + len(samples), self._flushed[1])

    def sample(self, pid: int) -> bool:
        """One reading of the worker's memory; False once it has none (exited)."""
        reading = procfs.read_status(pid)
        if reading is None:
            return False
        charge = limits.cgroup_charge(self.cgroup) if self.cgroup else None
        s = MemorySample(time.time() - self.t0, reading.rss_bytes, reading.anon_bytes, reading.file_bytes,
                         reading.hwm_bytes, *(charge or (None, None)))
        with self._lock:
            self._samples.append(s)
        return True

    def tail_events(self) -> None:
        """Read the complete lines the worker has added to its event file."""
        try:
            with open(self.events_path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        new = parse_lines(data[:end].splitlines(), self.t0, time.time(), self.events_path)
        with self._lock:
            for ev in new:
                ev["seq"] = len(self._events)
                self._events.append(ev)
                if ev["kind"] == PHASE_START:
                    self._phase = ev["phase"]
                elif ev["kind"] == PHASE_END and self._phase == ev["phase"]:
                    self._phase = None
                    self._imported = self._imported or ev["phase"] == "imports"
        self._offset += end + 1

    def buffers(self) -> Buffers:
        with self._lock:
            return Buffers(list(self._samples), list(self._events), self._phase)

    @property
    def phase(self) -> str | None:
        with self._lock:
            return self._phase

    @property
    def imported(self) -> bool:
        with self._lock:
            return self._imported

    def flush(self, store: Store, run_id: int) -> str | None:
        """Write what the store has not seen yet; a store error is returned (and the same
        rows retried at the next flush), never raised: monitoring goes on."""
        n_samples, n_events = self._flushed
        with self._lock:
            samples = self._samples[n_samples:]
            events = self._events[n_events:]
        try:
            store.add_samples(run_id, [astuple(s) for s in samples])
            store.add_events(run_id, [(e["seq"], e["t_s"], e["kind"],
                                       {k: v for k, v in e.items() if k not in ("seq", "t_s", "kind")}) for e in events])
        except StoreError as e:
            return str(e)
        self._flushed = (n_samples + len(samples), n_events + len(events))
        return None
