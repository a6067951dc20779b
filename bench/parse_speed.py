"""Micro-benchmark: sklearn's load_svmlight_file vs svmcore.fastsvm on one ~100 MB file.

    python bench/parse_speed.py [--mb 100] [--repeat 3] [--block-mib 8] [--path FILE] [--no-rss]

Makes the file with ``python -m svmcore data make sparse-text`` (rows chosen from a
small sample so the file is about ``--mb`` MB), then times, side by side in one run:

* sklearn ``load_svmlight_file(path, zero_based=False)`` on the whole file;
* ``parse_block`` over ``iter_svmlight_blocks`` (after a warm-up call, so numba's
  compile / cache load is excluded and reported on its own), parse only and with the
  blocks assembled into one CSR; and the same with 2 threads (the parser drops the GIL);

checks that the outputs are identical (bit for bit), counts how often the per-line
Python fallback ran, measures the fallback rate on ``%.17g`` / ``repr`` / sklearn
``dump_svmlight_file`` text, and (unless ``--no-rss``) the memory cost of numba in
fresh processes (VmHWM before/after ``import numba`` and after the first compile).
MB = 10**6 bytes. Wall times are the best of ``--repeat`` runs; CPU times are
process CPU seconds of that run (they are less disturbed by other load on the box).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from svmcore.data import fastsvm  # noqa: E402

MAXF = 2**26


def make_file(path: str, target_mb: float) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        sample = os.path.join(tmp, "sample.svm")
        subprocess.run([sys.executable, "-m", "svmcore", "data", "make", "sparse-text", "--rows", "3000",
                        "--out", sample], check=True, env=env, cwd=ROOT, capture_output=True)
        per_row = os.path.getsize(sample) / 3000
    rows = max(1000, int(target_mb * 1e6 / per_row))
    print(f"making {path}: {rows:,} rows x ~{per_row:.0f} bytes/row", flush=True)
    subprocess.run([sys.executable, "-m", "svmcore", "data", "make", "sparse-text", "--rows", str(rows),
                    "--out", path], check=True, env=env, cwd=ROOT, capture_output=True)


def timed(fn, repeat: int):
    """(result of the best run, best wall s, CPU s of that run)."""
    best = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if best is None or w < best[1]:
            best = (out, w, c)
        del out
    return best


def run_sklearn(path):
    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(path, zero_based=False, dtype=np.float64)


def run_fast(path, block_bytes, assemble: bool):
    parts = [fastsvm.parse_block(b, MAXF) for b, _ in fastsvm.iter_svmlight_blocks(path, block_bytes)]
    return assemble_parts(parts) if assemble else parts


def run_fast_threads(path, block_bytes, threads: int):
    with ThreadPoolExecutor(threads) as pool:
        futs = [pool.submit(fastsvm.parse_block, b, MAXF)
                for b, _ in fastsvm.iter_svmlight_blocks(path, block_bytes)]
        return assemble_parts([f.result() for f in futs])


def assemble_parts(parts):
    """One CSR (data, indices, indptr, y, n_rows, max_id) from per-block results."""
    data = np.concatenate([p[0] for p in parts])
    indices = np.concatenate([p[1] for p in parts])
    y = np.concatenate([p[3] for p in parts])
    counts = np.concatenate([np.diff(p[2]) for p in parts])
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return data, indices, indptr, y, int(len(y)), max(p[5] for p in parts)


def identical(X, ys, ours) -> bool:
    data, indices, indptr, y, n_rows, max_id = ours
    return (X.shape == (n_rows, max(max_id, 1))
            and np.array_equal(X.indptr, indptr) and np.array_equal(X.indices, indices)
            and np.array_equal(np.asarray(X.data, np.float64).view(np.uint64), data.view(np.uint64))
            and np.array_equal(ys.view(np.uint64), y.view(np.uint64)))


def fallback_rates(n: int = 300_000) -> list[tuple[str, int, int]]:
    """(text form, values, values that took the Python path) for random floats."""
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(n // 3), rng.standard_normal(n // 3),
                        rng.random(n - 2 * (n // 3)) * 10.0 ** rng.integers(-300, 300, n - 2 * (n // 3))])
    out = []
    for name, fmt in [("%.17g", "%.17g"), ("repr", None), ("%.16g", "%.16g"), ("%.8g", "%.8g")]:
        text = [repr(float(v)) if fmt is None else fmt % v for v in x]
        blob = "".join(f"1 1:{s}\n" for s in text).encode()
        before = fastsvm.stats["python_lines"]
        fastsvm.parse_block(blob, 2)
        out.append((name, len(x), fastsvm.stats["python_lines"] - before))
    import scipy.sparse as sp

    X = sp.csr_matrix(x.reshape(-1, 100))
    f = io.BytesIO()
    dump_svmlight_file(X, np.arange(X.shape[0]) % 2 * 2.0 - 1, f, zero_based=False)
    before = fastsvm.stats["python_lines"]
    fastsvm.parse_block(f.getvalue(), 100)
    out.append(("dump_svmlight_file (%.16g)", X.nnz, fastsvm.stats["python_lines"] - before))
    return out


RSS_PROBE = r"""
import os, sys, time
sys.path.insert(0, {root!r})
def mem():
    kv = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    return tuple(int(kv[k].split()[0]) / 1024 for k in ("VmHWM", "VmRSS", "RssAnon", "RssFile"))
out = []
import numpy
out.append(("python + numpy",) + mem())
t = time.time(); import numba
out.append(("+ import numba (%.2f s)" % (time.time() - t),) + mem())
t = time.time(); from svmcore import fastsvm
out.append(("+ import svmcore.fastsvm (%.2f s)" % (time.time() - t),) + mem())
t = time.time(); fastsvm.warm_up()
out.append(("+ first call, {cache} numba cache (%.2f s)" % (time.time() - t),) + mem())
if {path!r}:
    b, _ = next(fastsvm.iter_svmlight_blocks({path!r}, 8 * 2**20))
    fastsvm.parse_block(b, 2**26)
    out.append(("+ read and parse one 8 MiB block",) + mem())
for row in out:
    print("\t".join([row[0]] + ["%.1f" % v for v in row[1:]]))
"""


def rss_rows(path: str) -> list[tuple]:
    """Stages of a fresh process with numba's cache filled, then the first call with
    an empty cache (a compile), then sklearn for scale."""
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {ROOT!r}); "
                    "from svmcore import fastsvm; fastsvm.warm_up()"], check=True)  # fill the cache
    rows = []
    with tempfile.TemporaryDirectory() as cold:
        for cache, env in [("warm", dict(os.environ)), ("cold", dict(os.environ, NUMBA_CACHE_DIR=cold))]:
            code = RSS_PROBE.format(root=ROOT, cache=cache, path=path if cache == "warm" else "")
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            for line in res.stdout.strip().splitlines():
                label, *vals = line.split("\t")
                if cache == "warm" or "first call" in label:
                    rows.append((label, *map(float, vals)))
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); import numpy, sklearn.datasets, scipy.sparse;"
            "kv=dict(l.split(':',1) for l in open('/proc/self/status') if ':' in l);"
            "print(*[int(kv[k].split()[0])/1024 for k in ('VmHWM','VmRSS','RssAnon','RssFile')])")
    vals = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    rows.append(("(for scale) python + numpy + sklearn.datasets", *map(float, vals)))
    code = code.replace("scipy.sparse;", "scipy.sparse; from svmcore import fastsvm; fastsvm.warm_up();")
    vals = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    rows.append(("  ... + fastsvm first call, warm numba cache", *map(float, vals)))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of the generated file in MB")
    ap.add_argument("--path", default=os.path.join(tempfile.gettempdir(), "svmcore_parse_speed.svm"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--block-mib", type=float, default=8.0)
    ap.add_argument("--no-rss", action="store_true", help="skip the fresh-process memory probes")
    args = ap.parse_args(argv)

    if not os.path.exists(args.path) or abs(os.path.getsize(args.path) / 1e6 - args.mb) > 0.1 * args.mb:
        make_file(args.path, args.mb)
    size = os.path.getsize(args.path)
    block_bytes = int(args.block_mib * 2**20)
    with open(args.path, "rb") as f:  # warm the page cache for both contestants
        while f.read(1 << 24):
            pass

    w0 = time.perf_counter()
    fastsvm.warm_up()
    warm_s = time.perf_counter() - w0

    print(f"file {args.path}: {size / 1e6:.1f} MB; best of {args.repeat}; block {args.block_mib:g} MiB; "
          f"numba warm-up {warm_s:.2f} s (excluded)\n", flush=True)
    before = fastsvm.stats["python_lines"]
    (X, ys), sk_w, sk_c = timed(lambda: run_sklearn(args.path), args.repeat)
    n_rows = X.shape[0]
    _, fp_w, fp_c = timed(lambda: run_fast(args.path, block_bytes, assemble=False), args.repeat)
    ours, fa_w, fa_c = timed(lambda: run_fast(args.path, block_bytes, assemble=True), args.repeat)
    same = identical(X, ys, ours)
    del ours
    ours2, ft_w, ft_c = timed(lambda: run_fast_threads(args.path, block_bytes, 2), args.repeat)
    same2 = identical(X, ys, ours2)
    del ours2
    python_lines = fastsvm.stats["python_lines"] - before

    rows = [("sklearn load_svmlight_file", sk_w, sk_c),
            ("fastsvm blocks, parse only", fp_w, fp_c),
            ("fastsvm blocks + one CSR", fa_w, fa_c),
            ("fastsvm 2 threads + one CSR", ft_w, ft_c)]
    print(f"{'':30} {'wall s':>7} {'cpu s':>7} {'MB/s':>7} {'MB/cpu-s':>9} {'rows/s':>10} {'x sklearn':>9}"
          f" {'x (cpu)':>8}")
    for name, w, c in rows:
        print(f"{name:30} {w:7.2f} {c:7.2f} {size / 1e6 / w:7.0f} {size / 1e6 / c:9.0f} {n_rows / w:10,.0f} "
              f"{sk_w / w:9.1f} {sk_c / c:8.1f}")
    print(f"\nrows {n_rows:,}, nnz {X.nnz:,}, features {X.shape[1]:,}; identical to sklearn (bit for bit): "
          f"{same} (1 thread), {same2} (2 threads); lines on the Python fallback: {python_lines}")

    print("\nfallback rate (values that left the compiled path):")
    for name, n, slow in fallback_rates():
        print(f"  {name:28} {slow:>6} of {n:,}")

    if not args.no_rss:
        print("\nmemory in fresh processes (MiB; the cold row is a separate process with an empty cache):")
        print(f"  {'stage':50} {'VmHWM':>7} {'VmRSS':>7} {'RssAnon':>8} {'RssFile':>8}")
        for label, hwm, rss, anon, filed in rss_rows(args.path):
            print(f"  {label:50} {hwm:7.1f} {rss:7.1f} {anon:8.1f} {filed:8.1f}")
    return 0 if same and same2 else 1


if __name__ == "__main__":
    sys.exit(main())
