"""A traced run's allocation sites (the trace knob): memray's file of the run read back once
when it ends, into the ``spec.result.Trace`` its summary keeps: the top sites at the run's peak
of the tracked heap and at each phase's peak (the phases' spans on the run's clock), and the
50 Hz sample nearest that peak, which reconciles the traced heap with the exact peak.

memray's temporal high-water marks give the heap's peak in each 10 ms interval of the run and
which allocations held it, so a phase's peak is the highest interval inside the phase.
memray is imported here only when a traced run is read."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import logging
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import NamedTuple

from svmcore.engine.process import child_env
from svmcore.engine.summary import MemorySample
from svmcore.spec.result import TRACE_FILE, PeakSites, PhaseSpan, Site, Trace
from svmcore.spec.units import MiB

log = logging.getLogger(__name__)

TOP_SITES = 10
GREW_SITES = 5  # lines kept of those that grew between two pass ends
GREW_LEAST_BYTES = 64 << 10  # less growth than this is no line's to name (a run's last scores, a model copy)
STACK_FRAMES = 16  # Python frames kept of a site's call path: its outer ones, '…', its inner ones
OUTER_FRAMES = 6
# the worker process's own frames above its run: every call path starts below them
_HARNESS = ("svmcore/worker/__main__.py", "svmcore/worker/main.py", "svmcore/worker/tracing.py")
FLAMEGRAPH_FILE = "flamegraph.html"
_SVMCORE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROOT = os.path.dirname(_SVMCORE)
# native frames that only allocate: the site's native function is the one that called them
_ALLOCATORS = ("malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "memalign", "valloc",
               "mmap", "default_malloc", "default_calloc", "default_realloc", "PyDataMem_", "PyMem_", "_PyMem_",
               "_PyObject_", "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "pymalloc_", "new_arena",
               "allocate_from_new_pool", "operator new")
_STDLIB = re.compile(r"/lib/python3\.\d+/")
_CPYTHON = ("Objects/", "Python/", "Include/", "./Include/", "Modules/", "Parser/")


def short_path(path: str) -> str:
    """A frame's file as a reader knows it: 'svmcore/data/rows.py', 'numpy/_core/numeric.py'."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    if path.startswith(_ROOT + os.sep):
        return os.path.relpath(path, _ROOT)
    stdlib = _STDLIB.search(path)  # the standard library's: 'importlib/__init__.py'
    return path[stdlib.end():] if stdlib else path


def _native(hybrid: list, python: list) -> str | None:
    """The native function beneath the innermost Python line: of the frames between it and the
    allocator, the outermost that is neither an allocator nor the interpreter's."""
    first = hybrid.index(python[0]) if python and python[0] in hybrid else len(hybrid)
    chain = [f for f in hybrid[:first]
             if not f[0].startswith(_ALLOCATORS) and not str(f[1]).startswith(_CPYTHON)]
    if not chain:
        return None
    function, file, line = chain[-1]
    return function if file in ("<unknown>", "") else f"{function} ({short_path(file)}:{line})"


def _line_of(record, cache: dict) -> tuple:
    """A record's innermost Python frame (function, file, line): what its site is grouped by."""
    if record.stack_id not in cache:
        top = record.stack_trace(max_stacks=1)
        cache[record.stack_id] = top[0] if top else None
    return cache[record.stack_id] or ("(no Python frame)", "", 0)


def _site(record, size: int, n: int) -> Site:
    """The site of ``record``'s line with its native function, svmcore's nearest line and call path."""
    python = record.stack_trace()
    try:
        hybrid = record.hybrid_stack_trace()
    except NotImplementedError:  # a file without native frames
        hybrid = []
    native = _native(hybrid, python)
    function, file, line = python[0] if python else (native or "(no Python frame)", "", 0)
    ours = None if file.startswith(_SVMCORE) else next(
        (f"{short_path(f)}:{n} in {fn}" for fn, f, n in python[1:] if f.startswith(_SVMCORE)), None)
    return Site(bytes=size, allocations=n, function=function, file=short_path(file), line=line, ours=ours,
                native=native, stack=_call_path(python) + ((native,) if native else ()))


def _call_path(python: list) -> tuple[str, ...]:
    """A site's Python frames, outermost first, from the worker's run on (its process's harness
    left out, so that every site's path starts at ``training.run``); a deep one keeps its outer and
    inner frames with '…' between them."""
    frames = [(fn, f, n) for fn, f, n in reversed(python)]
    while frames and (frames[0][1].startswith("<frozen runpy>") or short_path(frames[0][1]) in _HARNESS):
        frames.pop(0)
    named = [f"{fn} ({short_path(f)}:{n})" for fn, f, n in frames]
    if len(named) > STACK_FRAMES:
        named = named[:OUTER_FRAMES] + ["…"] + named[OUTER_FRAMES - STACK_FRAMES + 1:]
    return tuple(named)


def _held_at(records: Sequence, k: int, cache: dict) -> dict[tuple, list]:
    """Per line: [bytes, allocations, the record of its largest share, that share] held at the
    high-water mark of memray's interval ``k``."""
    held: dict[tuple, list] = {}
    for rec in records:
        size = n = 0
        for i in rec.intervals:
            if i.allocated_before_snapshot <= k and (i.deallocated_before_snapshot is None
                                                     or k < i.deallocated_before_snapshot):
                size += i.n_bytes
                n += i.n_allocations
        if size:
            entry = held.setdefault(_line_of(rec, cache), [0, 0, rec, 0])
            entry[0] += size
            entry[1] += n
            if size > entry[3]:
                entry[2], entry[3] = rec, size
    return held


def sites_at(records: Sequence, k: int, cache: dict, top: int = TOP_SITES) -> tuple[Site, ...]:
    """The ``top`` lines by bytes held at the high-water mark of memray's interval ``k``; each
    described by the call path of its largest share (resolving every path would cost seconds)."""
    best = sorted(_held_at(records, k, cache).values(), key=lambda e: -e[0])[:top]
    return tuple(_site(rec, size, n) for size, n, rec, _ in best)


def sites_grown(records: Sequence, k0: int, k1: int, cache: dict, top: int = GREW_SITES) -> tuple[Site, ...]:
    """The ``top`` lines whose bytes held grew most from snapshot ``k0`` to ``k1`` of ``records``
    (memray's temporal allocation records; a Site's bytes and allocations: the growth)."""
    before, after = _held_at(records, k0, cache), _held_at(records, k1, cache)
    grew = [(e[0] - before.get(key, [0, 0])[0], e[1] - before.get(key, [0, 0])[1], e[2])
            for key, e in after.items()]
    best = sorted((g for g in grew if g[0] >= GREW_LEAST_BYTES), key=lambda g: -g[0])[:top]
    return tuple(_site(rec, size, n) for size, n, rec in best)


def heap_by_interval(records: Sequence, n: int) -> list[int]:
    """The traced heap at the high-water mark of each of memray's intervals, summed from the
    records' own intervals. memray's list of the same (``hwm``) stops short in a file whose
    writer was killed: its last, unfinished interval keeps the figure before the last allocations."""
    change = [0] * (max([n] + [i.allocated_before_snapshot + 1 for r in records for i in r.intervals]) + 1)
    for rec in records:
        for i in rec.intervals:
            change[i.allocated_before_snapshot] += i.n_bytes
            if i.deallocated_before_snapshot is not None:
                change[i.deallocated_before_snapshot] -= i.n_bytes
    return list(itertools.accumulate(change))[:-1]


def _peak_in(hwm: list[int], bounds: list[float], start_s: float, end_s: float | None) -> int | None:
    """The interval of the highest heap among those inside [start_s, end_s] (interval k runs from
    bounds[k] to bounds[k + 1]); a span shorter than an interval: those it overlaps."""
    last = float("inf") if end_s is None else end_s
    inside = [k for k in range(len(hwm)) if bounds[k] >= start_s and bounds[k + 1] <= last]
    inside = inside or [k for k in range(len(hwm)) if bounds[k] < last and bounds[k + 1] > start_s]
    return max(inside, key=lambda k: hwm[k]) if inside else None


class Read(NamedTuple):
    """A traced run read back: its ``Trace``, and the traced heap (MiB) at each pass's end (memray's
    memory snapshot, one each 10 ms, last taken by then; None before the first or unread)."""

    trace: Trace
    pass_heaps_mb: list[float | None]


def read(run_dir: str, t0: float, phases: Sequence[PhaseSpan], samples: Sequence[MemorySample],
         pass_ends: Sequence[float] = ()) -> Read:
    """The run whose folder is ``run_dir``, started at ``t0`` (epoch seconds), read back; with two
    or more ``pass_ends`` (seconds after ``t0``), its trace names the lines that grew from the first
    to the last."""
    path = os.path.join(run_dir, TRACE_FILE)
    unread = [None] * len(pass_ends)
    if not os.path.exists(path):
        return Read(Trace(error=f"the worker wrote no trace file ({path}): it ended before its tracker started"),
                    unread)
    import memray

    try:
        with memray.FileReader(path) as reader:
            meta = reader.metadata
            # memray's interval k ends at its k-th memory snapshot (the last one at the tracker's end)
            snapshots = list(reader.get_memory_snapshots())
            snaps = [s.time / 1000 - t0 for s in snapshots]
            at_ends = [bisect.bisect_right(snaps, t) - 1 for t in pass_ends]  # -1: before the first
            heaps = [snapshots[k].heap / MiB if k >= 0 else None for k in at_ends]
            # (a killed writer's file has no end time: its last snapshot ends it)
            bounds = [meta.start_time.timestamp() - t0] + snaps + [max([meta.end_time.timestamp() - t0] + snaps)]
            records, hwm = reader.get_temporal_high_water_mark_allocation_records(merge_threads=True)
            records = list(records)
            hwm = heap_by_interval(records, len(hwm))
            bounds += [bounds[-1]] * max(0, len(hwm) + 1 - len(bounds))  # (a killed writer's file)
            cache: dict = {}
            peaks = []
            for name, start, end in [(None, float("-inf"), None)] + [(p.name, p.start_s, p.end_s) for p in phases]:
                k = _peak_in(hwm, bounds, start, end)
                if k is not None:
                    peaks.append(PeakSites(phase=name, t_s=bounds[k + 1], traced_bytes=hwm[k],
                                           sites=sites_at(records, k, cache)))
            grew = ()
            if len(pass_ends) > 1 and snaps:
                # what each line held at the memory snapshot last taken by the first and the last pass's end
                # (memray's plain temporal records: the heap at each snapshot, not its high-water mark)
                first, last = (max(0, k) for k in (at_ends[0], at_ends[-1]))
                grew = sites_grown(list(reader.get_temporal_allocation_records(merge_threads=True)), first, last,
                                   cache)
    except (OSError, RuntimeError, ValueError) as e:  # a truncated or damaged file
        log.warning("could not read the trace %s: %s", path, e)
        return Read(Trace(file=TRACE_FILE, error=f"memray could not read {path}: {e}"), unread)
    trace = Trace(file=TRACE_FILE, allocations=meta.total_allocations, peaks=tuple(peaks), grew=grew,
                  grew_passes=(1, len(pass_ends)) if grew else None)
    top = trace.at(None)
    if top is None or top.t_s is None or not samples:
        return Read(trace, heaps)
    near = min(samples, key=lambda s: abs(s.t_s - top.t_s))
    return Read(dataclasses.replace(trace, sample_t_s=near.t_s, rss_bytes=near.rss_bytes, anon_bytes=near.anon_bytes,
                                    file_backed_bytes=near.file_bytes), heaps)


def flamegraph(run_dir: str) -> str:
    """memray's flame graph (HTML) of a traced run's peak, made once beside its file (in a child
    process: memray's reader stays out of the caller); its path. Python frames only: each
    allocation under the Python line that made it, as the sites table groups them (which names
    each line's native function). With native frames too, as ``memray flamegraph`` draws them,
    CPython's own calls sat between every two lines, and resolving every native stack took 7.6
    times as long: 25 CPU-s against 3.3 for a 5,000-row classic run. Its scripts are inlined
    (by default they come from a CDN, and the page was blank offline). Raises
    ``FileNotFoundError`` for a run without a trace, ``RuntimeError`` if memray fails."""
    source, out = os.path.join(run_dir, TRACE_FILE), os.path.join(run_dir, FLAMEGRAPH_FILE)
    if not os.path.exists(source):
        raise FileNotFoundError(f"no trace file in {run_dir}: the run was not traced, or its folder was removed")
    if not os.path.exists(out):
        done = subprocess.run([sys.executable, "-m", "svmcore.engine.traces", source, out + ".part"],
                              capture_output=True, text=True, env=child_env())
        if done.returncode != 0:
            if os.path.exists(out + ".part"):
                os.remove(out + ".part")
            raise RuntimeError(f"memray's flame graph failed: {(done.stderr or done.stdout).strip()[-500:]}")
        os.replace(out + ".part", out)
    return out


def _write_flamegraph(source: str, out: str) -> None:
    from memray import FileReader
    from memray.reporters.flamegraph import FlameGraphReporter

    reader = FileReader(source)
    reporter = FlameGraphReporter.from_snapshot(
        reader.get_high_watermark_allocation_records(merge_threads=True),
        memory_records=tuple(reader.get_memory_snapshots()), native_traces=False, merge_threads=True, inverted=False)
    with open(out, "w") as f:
        reporter.render(outfile=f, metadata=reader.metadata, show_memory_leaks=False, merge_threads=True,
                        inverted=False, no_web=True)


if __name__ == "__main__":
    _write_flamegraph(*sys.argv[1:3])
