"""A memory pool for batches (issue 21), measured on the lean and the classic path's loops: each batch
gathered into fresh arrays (as the worker does today) against one set of preallocated
buffers reused by every batch of every epoch; with the lean worker's malloc settings
(``floor.every_run`` and ``floor.lean``), with every worker's (``floor.every_run``: a fixed mmap
threshold) and with glibc's defaults; without and with ``malloc_trim``
after each epoch. Per case, in a child process of its own: the exact peak (VmHWM), the
RSS after each epoch, and what the allocator keeps free inside the heap (glibc's
``mallinfo2().fordblks``) after each epoch.

    python bench/memory_pool.py [--rows 50000] [--epochs 3] [--batch-size 1024] [--out bench/results]

The loops here are copies of the two paths' shapes, not the worker itself, so the pool is
measured before it is built in. lean: native parser blocks re-read every epoch, rows
gathered into batches, the native SGD solver. classic: the file loaded once by
scikit-learn's parser into a CSR matrix (memory mode), batches cut by row slices, and
scikit-learn's SGDClassifier.partial_fit; run with every worker's fixed mmap threshold, as the
classic worker does. The peak is VmHWM reset (clear_refs) when training starts, so the classic path's
load is not in it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MiB = 2**20
CASES = ([("lean", alloc, buffers, trim) for alloc in ("lean", "glibc") for buffers in ("per-batch", "pool")
          for trim in (False, True)]
         + [("classic", "worker", buffers, trim) for buffers in ("per-batch", "pool") for trim in (False, True)])
OWN = {"lean": "lean", "classic": "worker"}  # the allocator settings each path's worker runs with
OWN_WORDS = {"lean": "the lean worker's malloc settings",
             "classic": "every worker's fixed mmap threshold, as the classic worker runs"}


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


def _status() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(line.split()[1]) * 1024
    return out


def _free_in_heap(libc) -> int:
    fn = libc.mallinfo2
    fn.restype = _Mallinfo2
    return int(fn().fordblks)


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:  # VmHWM back to the current RSS
        f.write("5")


def child(path: str, loop: str, alloc: str, buffers: str, trim: bool, epochs: int, batch_size: int,
          features: int) -> dict:
    if loop == "classic":
        return classic_child(path, alloc, buffers, trim, epochs, batch_size, features)
    import numpy as np

    from svmcore.data import nativesvm
    from svmcore.data.native import binding
    from svmcore.data.rows import Parts
    from svmcore.worker import floor
    from svmcore.worker.native_sgd import NativeSGD

    if alloc == "lean":
        floor.every_run()
        floor.lean()
    lib, libc = binding.library(), ctypes.CDLL(None)
    model = NativeSGD(1e-5, True, features, np.array([-1.0, 1.0]))
    pool = {"data": np.empty(0), "indices": np.empty(0, np.int32), "indptr": np.empty(batch_size + 1, np.int64)}
    epochs_out = []
    _reset_peak()
    t0 = time.monotonic()
    for _ in range(epochs):
        for b in nativesvm.iter_parsed_blocks(path, features):
            codes_all = (b.y > 0).astype(np.int64)
            for s in range(0, b.n_rows, batch_size):
                rows = np.arange(s, min(b.n_rows, s + batch_size), dtype=np.int64)
                if buffers == "per-batch":
                    X = Parts(b.data, b.indices, b.indptr).gather(rows)
                else:
                    nnz = int(b.indptr[rows[-1] + 1] - b.indptr[rows[0]])
                    if pool["data"].shape[0] < nnz:  # grown to the largest batch seen, then reused
                        pool["data"], pool["indices"] = np.empty(2 * nnz), np.empty(2 * nnz, np.int32)
                    lib.csr_gather(b.data.ctypes.data, b.indices.ctypes.data, b.indptr.ctypes.data, 8,
                                   rows.ctypes.data, rows.shape[0], pool["data"].ctypes.data,
                                   pool["indices"].ctypes.data, pool["indptr"].ctypes.data)
                    X = (pool["data"][:nnz], pool["indices"][:nnz], pool["indptr"][:rows.shape[0] + 1])
                model.fit_codes(X, codes_all[rows])
                del X
        if trim:
            libc.malloc_trim(0)
        epochs_out.append({"rss_bytes": _status()["VmRSS"], "free_in_heap_bytes": _free_in_heap(libc)})
    return {"peak_bytes": _status()["VmHWM"], "epochs": epochs_out, "seconds": time.monotonic() - t0}


def classic_child(path: str, alloc: str, buffers: str, trim: bool, epochs: int, batch_size: int,
                  features: int) -> dict:
    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    from svmcore.worker import floor
    from svmcore.worker.sklearn_sgd import SklearnSGD

    if alloc in ("lean", "worker"):
        floor.every_run()
    if alloc == "lean":
        floor.lean()
    libc = ctypes.CDLL(None)
    X, y = load_svmlight_file(path, n_features=features, dtype=np.float64)
    codes = (y > 0).astype(np.int64)
    model = SklearnSGD(1e-5, True, features, np.array([-1.0, 1.0]))
    n = X.shape[0]
    pool = {"data": np.empty(0), "indices": np.empty(0, np.int32), "indptr": np.empty(batch_size + 1, X.indptr.dtype)}
    epochs_out = []
    _reset_peak()
    t0 = time.monotonic()
    for _ in range(epochs):
        for s in range(0, n, batch_size):
            e = min(n, s + batch_size)
            if buffers == "per-batch":
                Xb = X[s:e]  # a scipy row slice: new arrays for every batch
            else:
                lo, hi = int(X.indptr[s]), int(X.indptr[e])
                if pool["data"].shape[0] < hi - lo:
                    pool["data"], pool["indices"] = np.empty(2 * (hi - lo)), np.empty(2 * (hi - lo), X.indices.dtype)
                pool["data"][:hi - lo] = X.data[lo:hi]
                pool["indices"][:hi - lo] = X.indices[lo:hi]
                np.subtract(X.indptr[s:e + 1], lo, out=pool["indptr"][:e - s + 1])
                Xb = sp.csr_matrix((pool["data"][:hi - lo], pool["indices"][:hi - lo], pool["indptr"][:e - s + 1]),
                                   shape=(e - s, features), copy=False)
            model.fit_codes(Xb, codes[s:e])
            del Xb
        if trim:
            libc.malloc_trim(0)
        epochs_out.append({"rss_bytes": _status()["VmRSS"], "free_in_heap_bytes": _free_in_heap(libc)})
    return {"peak_bytes": _status()["VmHWM"], "epochs": epochs_out, "seconds": time.monotonic() - t0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--child", nargs=8, help=argparse.SUPPRESS)
    ap.add_argument("--render", action="store_true", help="only rewrite the .md and the reference from the .json")
    args = ap.parse_args()
    if args.child:
        path, loop, alloc, buffers, trim, epochs, batch, features = args.child
        print(json.dumps(child(path, loop, alloc, buffers, trim == "1", int(epochs), int(batch), int(features))))
        return 0
    from bench.remedies import describe, machine, rerender, write_result

    if args.render:
        return rerender(args.out, "memory-pool", markdown, reference)
    folder = tempfile.mkdtemp(prefix="svmcore-pool-bench-")
    path = os.path.join(folder, "train.svm")
    subprocess.run([sys.executable, "-m", "svmcore", "data", "make", "sparse-text", f"--rows={args.rows}", "--seed=0",
                    f"--out={path}"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), check=True, capture_output=True)
    load_before, t0 = os.getloadavg(), time.time()
    cases = []
    for loop, alloc, buffers, trim in CASES:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path, loop, alloc, buffers,
                               "1" if trim else "0", str(args.epochs), str(args.batch_size), str(1 << 20)],
                              cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True,
                              check=True)
        cases.append({"path": loop, "allocator": alloc, "buffers": buffers, "trim": trim, **json.loads(proc.stdout)})
        print(json.dumps(cases[-1]), file=sys.stderr, flush=True)
    m = machine()
    m["loadavg_before"], m["loadavg_after"] = [round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]
    from svmcore.worker.floor import MMAP_THRESHOLD, TRIM_THRESHOLD

    result = {"date": time.strftime("%Y-%m-%d"), "rows": args.rows, "epochs": args.epochs,
              "mmap_threshold_kib": MMAP_THRESHOLD // 1024, "trim_threshold_mib": TRIM_THRESHOLD // MiB,
              "batch_size": args.batch_size, "machine": m, "description": describe(m),
              "seconds": round(time.time() - t0), "cases": cases}
    write_result(args.out, "memory-pool", result, markdown(result), reference(result))
    print(markdown(result))
    return 0


def _saves(diffs: list[float]) -> str:
    """The pool's saving in words: under 1 MiB either way is nothing measurable."""
    return "saves nothing measurable" if max(map(abs, diffs)) < 1 else "changes the exact peak measurably"


def _pool_peaks(cases: dict, path: str, alloc: str, trim: bool = False) -> tuple[float, float] | None:
    a, b = cases.get((path, alloc, "per-batch", trim)), cases.get((path, alloc, "pool", trim))
    return (a["peak_bytes"] / MiB, b["peak_bytes"] / MiB) if a and b else None


def _rss_growth(c: dict) -> float:
    return (c["epochs"][-1]["rss_bytes"] - c["epochs"][0]["rss_bytes"]) / MiB


def reference(r: dict):
    """What Learn shows of the results: the claims row (the exact peaks with per-batch
    arrays and with reused buffers on each path, with the workers' own allocator
    settings, and the verdict with those figures) and a sentence per finding."""
    from svmcore.app.reference import Reference

    cases = {(c.get("path", "lean"), c["allocator"], c["buffers"], c["trim"]): c for c in r["cases"]}
    mine = {p: _pool_peaks(cases, p, a) for p, a in OWN.items()}
    mine = {p: v for p, v in mine.items() if v}
    own = {k: c for k, c in cases.items() if not k[3] and k[1] == OWN[k[0]]}
    per_batch = [c for k, c in own.items() if k[2] == "per-batch"]  # each path's own allocator, no trim
    pooled = [c for k, c in own.items() if k[2] == "pool"]
    diffs = [b - a for a, b in mine.values()]
    row = {
        "setup": f"{r['rows']:,} sparse-text rows, {r['epochs']} epochs, batches of {r['batch_size']:,}",
        "run's exact peak (MiB)": " · ".join(f"{p} {a:,.1f} → {b:,.1f}" for p, (a, b) in mine.items()),
        "phases it acts on (MiB)": "RSS growth over the epochs: per-batch " + ", ".join(
            f"{_rss_growth(c):+.1f}" for c in per_batch) + "; pool " + ", ".join(f"{_rss_growth(c):+.1f}" for c in pooled),
        "verdict": (f"{_saves(diffs)}: exact peak {min(diffs):+.1f} to {max(diffs):+.1f} MiB with reused buffers "
                    "(a freed batch's memory is reused by the next batch or given back to the kernel)")}
    return Reference("memory_pool", r["description"], r["date"], "python bench/memory_pool.py", r["seconds"],
                     {"row": row, "lessons": lessons(cases)})


def lessons(cases: dict) -> list[str]:
    """What the benchmark measured, a sentence per finding (``cases`` by path, allocator, buffers, trim)."""
    out = []
    for path, alloc in OWN.items():
        how = OWN_WORDS[path]
        peaks = _pool_peaks(cases, path, alloc)
        if not peaks:
            continue
        a, b = cases[(path, alloc, "per-batch", False)], cases[(path, alloc, "pool", False)]
        rss = lambda c: " · ".join(f"{e['rss_bytes'] / MiB:,.1f}" for e in c["epochs"])  # noqa: E731
        out.append(f"{path} path ({how}): exact peak {peaks[0]:,.1f} MiB with per-batch arrays, {peaks[1]:,.1f} MiB "
                   f"with reused buffers ({peaks[1] - peaks[0]:+.1f}); RSS after each epoch {rss(a)} against "
                   f"{rss(b)} MiB: the pool {_saves([peaks[1] - peaks[0]])}, because a freed batch's memory is "
                   "reused by the next batch (from the heap) or given back to the kernel (mapped on its own)")
    lean, glibc = _pool_peaks(cases, "lean", "lean"), _pool_peaks(cases, "lean", "glibc")
    if lean and glibc:
        out.append(f"what does move it on the lean path is the allocator: {lean[0]:,.1f} MiB with the lean malloc "
                   f"settings against {glibc[0]:,.1f} MiB with glibc's defaults (exact peaks, per-batch arrays)")
    trims = [(k, c, cases.get((k[0], k[1], k[2], True))) for k, c in cases.items() if not k[3]]
    drops = [(c["epochs"][-1]["rss_bytes"] - t["epochs"][-1]["rss_bytes"]) / MiB for _, c, t in trims if t]
    peak_drops = [(c["peak_bytes"] - t["peak_bytes"]) / MiB for _, c, t in trims if t]
    if drops:
        out.append(f"malloc_trim after each epoch lowers the RSS after the last epoch by {min(drops):,.1f} to "
                   f"{max(drops):,.1f} MiB, the exact peak by {min(peak_drops):+.1f} to {max(peak_drops):+.1f} MiB")
    return out


def markdown(r: dict) -> str:
    m = r["machine"]
    lines = [f"# A memory pool for batches: exact peak and RSS across epochs, {r['date']}", "",
             (f"Data: `sparse-text` (seed 0, 2^20 columns, 50 nonzeros a row), {r['rows']:,} rows, {r['epochs']} "
              f"epochs, batches of {r['batch_size']:,} rows, in a child process per case. lean path: the native "
              "parser's blocks re-read every epoch and the native SGD solver (averaged, two float64 arrays of 2^20 "
              "weights: 16 MiB); classic path: the file loaded once by scikit-learn's parser into a CSR matrix "
              "(memory mode), batches cut by row slices, scikit-learn's SGDClassifier.partial_fit (averaged), with "
              "every worker's allocator setting, as the classic worker runs. per-batch: each batch in new arrays (the "
              "workers today); pool: one set of buffers, grown to the largest batch and reused by every batch of every "
              f"epoch. lean allocator: the lean worker's mallopt settings ({r.get('mmap_threshold_kib', 256)} KiB mmap "
              f"threshold, {r.get('trim_threshold_mib', 1)} MiB trim threshold, one arena); worker: every worker's "
              f"fixed mmap threshold ({r.get('mmap_threshold_kib', 256)} KiB) alone; glibc: the defaults. trim: "
              "malloc_trim(0) after each epoch. Peak: VmHWM, reset when training "
              "starts (exact; the classic load is not in it); RSS and the heap's free bytes (mallinfo2 fordblks, what "
              "the allocator keeps) after each epoch, in MiB. Seconds are wall time on a machine shared with other "
              f"work (load average {m['loadavg_before'][0]} before and {m['loadavg_after'][0]} after, {r['seconds']} s "
              f"in all): sampled under load, the peaks are not. Machine: {r['description']}."), "",
             "| path | allocator | buffers | trim | exact peak | RSS after each epoch | kept free in the heap after each epoch | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for c in r["cases"]:
        lines.append(f"| {c['path']} | {c['allocator']} | {c['buffers']} | {'yes' if c['trim'] else 'no'} | "
                     f"{c['peak_bytes'] / MiB:,.1f} | "
                     + " · ".join(f"{e['rss_bytes'] / MiB:,.1f}" for e in c["epochs"]) + " | "
                     + " · ".join(f"{e['free_in_heap_bytes'] / MiB:,.2f}" for e in c["epochs"])
                     + f" | {c['seconds']:,.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
