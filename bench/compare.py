"""Side-by-side benchmark: this project's modes against scikit-learn (and Vowpal
Wabbit when installed) on the same svmlight file, in one run.

    python bench/compare.py [--rows 1000000] [--epochs 5] [--out bench/results]

Every contender runs in its own process and reports its own exact peak (VmHWM
read by itself at the end); ours report through the normal run summary. The table
gives each figure and its ratio to this project's stream mode with the numba parser.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PEER = r'''
import json, sys, time
path, epochs, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
import numpy as np
t0 = time.time()
from sklearn.datasets import load_svmlight_file
X, y = load_svmlight_file(path, zero_based=False, dtype=np.float64)
X.indices = X.indices.astype(np.int32); X.indptr = X.indptr.astype(np.int64)
load_s = time.time() - t0
n = X.shape[0]
test = (np.arange(n) % 5 == 4) & (np.arange(n) // 5 < 20000)
Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
del X
t1 = time.time()
if kind == "sgd":
    from sklearn.linear_model import SGDClassifier
    m = SGDClassifier(loss="hinge", alpha=1e-5, average=True, random_state=0)
    classes = np.unique(y)
    for e in range(epochs):
        for s in range(0, Xtr.shape[0], 1024):
            m.partial_fit(Xtr[s:s + 1024], ytr[s:s + 1024], classes=classes)
    samples = epochs * Xtr.shape[0]
else:
    from sklearn.svm import LinearSVC
    m = LinearSVC().fit(Xtr, ytr)
    samples = Xtr.shape[0] * m.n_iter_
train_s = time.time() - t1
acc = float((m.predict(Xte) == yte).mean())
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"wall_s": time.time() - t0, "train_s": train_s, "load_s": load_s, "peak_rss_mb": hwm / 1024,
                  "accuracy": acc, "samples_per_s": samples / train_s}))
'''

VW = r'''
import json, sys, time
path, epochs = sys.argv[1], int(sys.argv[2])
import vowpalwabbit
t0 = time.time()
model = vowpalwabbit.Workspace(f"--loss_function hinge --binary -b 20 --passes {epochs} --cache_file {path}.vwcache "
                               f"-k --holdout_off --quiet -d {path}.vw")
model.finish()
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"wall_s": time.time() - t0, "peak_rss_mb": hwm / 1024, "accuracy": None, "samples_per_s": None}))
'''


def run_ours(path: str, home: str, mode: str, parser: str, epochs: int) -> dict:
    proc = subprocess.run([sys.executable, "-m", "svmcore", "run", "--home", home, "--json", f"--dataset={path}",
                           f"--mode={mode}", f"--parser={parser}", f"--epochs={epochs}"],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall_s": s["wall_s"], "train_s": s["train_s"], "peak_rss_mb": s["peak_rss_mb"],
            "accuracy": s["accuracy"], "samples_per_s": s["samples_per_s"], "status": s["status"]}


def run_peer(code: str, *args) -> dict | None:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--skip-liblinear", action="store_true")
    args = ap.parse_args()
    work = os.path.join(tempfile.gettempdir(), "svmcore-bench")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, f"sparse-text-{args.rows}.svm")
    if not os.path.exists(path):
        print(f"writing {args.rows:,} rows to {path} ...", flush=True)
        subprocess.run([sys.executable, "-m", "svmcore", "data", "make", "sparse-text", "--rows", str(args.rows),
                        "--out", path], check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    home = tempfile.mkdtemp(prefix="svmcore-bench-home-")
    results: dict[str, dict] = {}
    for mode, parser in (("memory", "sklearn"), ("stream", "sklearn"), ("stream", "numba"),
                         ("memmap", "numba")):
        name = f"svmcore {mode} ({parser} parser)"
        print(f"running {name} ...", flush=True)
        results[name] = run_ours(path, home, mode, parser, args.epochs)
        if mode == "memmap":  # second run reuses the binary copy: the steady state
            results[name + ", cached"] = run_ours(path, home, mode, parser, args.epochs)
    print("running scikit-learn SGDClassifier (in memory) ...", flush=True)
    results["scikit-learn SGDClassifier, in memory"] = run_peer(PEER, path, str(args.epochs), "sgd")
    if not args.skip_liblinear:
        print("running scikit-learn LinearSVC (in memory) ...", flush=True)
        results["scikit-learn LinearSVC, in memory"] = run_peer(PEER, path, str(args.epochs), "linearsvc")
    try:
        import vowpalwabbit  # noqa: F401
        results["Vowpal Wabbit"] = {"note": "installed but not wired: convert to VW format first"}
    except ImportError:
        results["Vowpal Wabbit"] = {"note": "not installed (optional: pip install vowpalwabbit); skipped"}

    ref = results["svmcore stream (numba parser)"]
    lines = [f"# Side-by-side benchmark, {time.strftime('%Y-%m-%d')}",
             "", f"Data: `sparse-text`, {args.rows:,} rows x 2^20 features, {os.path.getsize(path) / 1e6:,.0f} MB svmlight; "
             f"{args.epochs} epochs (LinearSVC: to convergence). Machine: {platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}. Ratios are to svmcore stream mode with the numba parser. "
             "Peaks are each process's own VmHWM (exact); memmap's includes the mapped file pages it touched "
             "(file-backed, reclaimable). LinearSVC's samples/s counts rows x liblinear iterations.", "",
             "| contender | wall s | exact peak MiB | accuracy | train samples/s | wall ratio | peak ratio | samples/s ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        if "note" in r or "error" in r:
            lines.append(f"| {name} | {r.get('note') or r.get('error')} | | | | | | |")
            continue

        def f(v, spec):
            return "–" if v is None else format(v, spec)

        def ratio(key):
            a, b = r.get(key), ref.get(key)
            return "–" if not a or not b else f"{a / b:.2f}"
        lines.append(f"| {name} | {f(r['wall_s'], '.1f')} | {f(r['peak_rss_mb'], '.0f')} | {f(r['accuracy'], '.4f')} | "
                     f"{f(r['samples_per_s'], ',.0f')} | {ratio('wall_s')} | {ratio('peak_rss_mb')} | {ratio('samples_per_s')} |")
    table = "\n".join(lines)
    print("\n" + table)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"compare-{args.rows}")
    with open(stem + ".md", "w") as fh:
        fh.write(table + "\n")
    with open(stem + ".json", "w") as fh:
        json.dump({"rows": args.rows, "epochs": args.epochs, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
