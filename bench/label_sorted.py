"""A label-sorted file, as many public libsvm files come: accuracy and balanced accuracy
with and without shuffling, in every mode, side by side in one run.

    python bench/label_sorted.py [--rows 200000] [--positive-fraction 0.03] [--epochs 5] [--out bench/results]

The file is generated (``svmcore data make --positive-fraction F --sort-by-label``):
every positive row first, then the negatives. Each run goes through the normal CLI in
its own worker, so peaks are exact and figures are the run summaries. A LinearSVC on
the same train/test rows, after one shuffle, is the reference for what the data allows.
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

REFERENCE = r'''
import json, sys
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.metrics import balanced_accuracy_score
from sklearn.svm import LinearSVC
sys.path.insert(0, sys.argv[2])
from svmcore.data.sources import is_test_row
X, y = load_svmlight_file(sys.argv[1], zero_based=False)
test = is_test_row(np.arange(X.shape[0]), X.shape[0])
order = np.random.default_rng(0).permutation(np.flatnonzero(~test))
m = LinearSVC().fit(X[order], y[order])
p = m.predict(X[test])
print(json.dumps({"accuracy": float((p == y[test]).mean()), "balanced_accuracy": float(balanced_accuracy_score(y[test], p))}))
'''


def run(path: str, home: str, mode: str, shuffle: bool, epochs: int, solver: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, SVMCORE_DATA_DIRS=os.path.dirname(path))
    proc = subprocess.run([sys.executable, "-m", "svmcore", "run", "--home", home, f"--dataset={path}",
                           f"--mode={mode}", f"--epochs={epochs}", "--parser=numba", f"--solver={solver}",
                           "--shuffle" if shuffle else "--no-shuffle", "--json"],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--positive-fraction", type=float, default=0.03)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    from svmcore.data.files import make_dataset

    work = tempfile.mkdtemp(prefix="svmcore-sorted-")
    path = os.path.join(work, "sorted")
    make_dataset("sparse-text", rows=args.rows, features=1 << 18, nnz_per_row=40, seed=1, out=path,
                 positive_fraction=args.positive_fraction, sort_by_label=True)
    home = os.path.join(work, "home")
    rows = []
    for solver in ("sklearn", "numba"):
        for mode in ("memory", "stream", "memmap"):
            for shuffle in (False, True):
                s = run(path, home, mode, shuffle, args.epochs, solver)
                rows.append({"mode": mode, "solver": solver, "shuffle": shuffle, "accuracy": s["accuracy"],
                             "balanced_accuracy": s["balanced_accuracy"], "f1": s["f1"],
                             "baseline_accuracy": s["baseline_accuracy"], "peak_rss_mb": s["peak_rss_mb"],
                             "samples_per_s": s["samples_per_s"]})
                print(json.dumps(rows[-1]), file=sys.stderr)
    ref = json.loads(subprocess.run([sys.executable, "-c", REFERENCE, path, ROOT], capture_output=True, text=True,
                                    check=True).stdout)
    result = {"date": time.strftime("%Y-%m-%d"), "rows": args.rows, "positive_fraction": args.positive_fraction,
              "epochs": args.epochs, "machine": {"arch": platform.machine(), "cpus": os.cpu_count(),
                                                 "python": platform.python_version()},
              "runs": rows, "linearsvc_shuffled_once": ref}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "label-sorted.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = [f"# Label-sorted file: shuffle on and off, {result['date']}", "",
             f"Data: `sparse-text`, {args.rows:,} rows x 2^18 features, {args.positive_fraction:.0%} positive, every "
             f"positive row first (`svmcore data make --positive-fraction {args.positive_fraction} --sort-by-label`); "
             f"{args.epochs} epochs, default shuffle buffer. Machine: {platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}. Baseline: always predicting the majority class. "
             f"Reference: LinearSVC on the same rows shuffled once: accuracy {ref['accuracy']:.4f}, "
             f"balanced accuracy {ref['balanced_accuracy']:.4f}.", "",
             "| mode | solver | shuffle | accuracy | balanced accuracy | F1 (minority) | baseline | exact peak MiB | samples/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['solver']} | {'on' if r['shuffle'] else 'off'} | {r['accuracy']:.4f} | "
                     f"{r['balanced_accuracy']:.4f} | {r['f1']:.4f} | {r['baseline_accuracy']:.4f} | "
                     f"{r['peak_rss_mb']:.0f} | {r['samples_per_s']:,.0f} |")
    with open(os.path.join(args.out, "label-sorted.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
