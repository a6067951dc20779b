"""How often to mix: iterative parameter mixing simulated in one process (no Dask), with
the product's own mixing (``svmcore.worker.parallel.mix``) and shards (row i to shard
i mod N), against one process trained on the same rows. Mixing after every epoch (what
``--workers`` does) is compared with mixing every k batches, for N = 2 and 4.

    python bench/ddp_mixing.py [--rows 100000] [--epochs 3] [--out bench/results]

Writes bench/results/ddp-mixing.{json,md}. Accuracy only: the memory and time of real
workers are bench/ddp.py's.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys

import numpy as np
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from svmcore.data.sources import is_test_row  # noqa: E402
from svmcore.data.synthetic import iter_synthetic  # noqa: E402
from svmcore.worker import parallel  # noqa: E402

BATCH = 1024


def data(rows: int):
    Xs, ys = zip(*iter_synthetic("sparse-text", rows, 1 << 20, 50, 0))
    X, y = sp.vstack(Xs, format="csr"), np.concatenate(ys)
    test = is_test_row(np.arange(rows), rows)
    return X[~test], y[~test], X[test], y[test]


def _model(n_features: int, classes):
    from svmcore.worker.sklearn_sgd import SklearnSGD
    return SklearnSGD(1e-5, True, n_features, classes, seed=0)


def single(X, y, epochs: int):
    classes = np.unique(y)
    m = _model(X.shape[1], classes)
    for e in range(epochs):
        order = np.random.default_rng([0, e]).permutation(y.shape[0])
        for s in range(0, y.shape[0], BATCH):
            r = order[s:s + BATCH]
            m.partial_fit(X[r], y[r], classes=classes)
    return m


def mixed(X, y, epochs: int, n: int, every: int | None):
    """``every``: mix every that many batches of each shard (None: after each epoch)."""
    shards = [(X[k::n], y[k::n]) for k in range(n)]
    classes = np.unique(y)
    base = _model(X.shape[1], classes)
    for e in range(epochs):
        orders = [np.random.default_rng([0, e, k]).permutation(sy.shape[0]) for k, (_, sy) in enumerate(shards)]
        n_batches = -(-shards[0][1].shape[0] // BATCH)
        step = every or n_batches
        for b0 in range(0, n_batches, step):
            start_t = base.t_
            outs, rows = [], []
            for k, (sx, sy) in enumerate(shards):
                m = copy.deepcopy(base)
                seen = 0
                for b in range(b0, min(n_batches, b0 + step)):
                    r = orders[k][b * BATCH:(b + 1) * BATCH]
                    if r.shape[0]:
                        m.partial_fit(sx[r], sy[r], classes=classes)
                        seen += r.shape[0]
                outs.append(m)
                rows.append(max(1, seen))
            state = parallel.mix([m.get_state() for m in outs], rows, start_t)
            base = outs[0]
            base.set_state(state)
    return base


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    X, y, Xt, yt = data(args.rows)
    acc = lambda m: float((m.predict(Xt) == yt).mean())  # noqa: E731
    one = acc(single(X, y, args.epochs))
    print(f"one process: {one:.4f}", flush=True)
    rows = []
    for n in (2, 4):
        for every in (None, 16, 4, 1):
            a = acc(mixed(X, y, args.epochs, n, every))
            rows.append({"workers": n, "mix_every_batches": every, "accuracy": a, "vs_one_pt": 100 * (a - one)})
            print(f"workers={n} every={every or 'epoch'}: {a:.4f} ({100 * (a - one):+.2f} pt)", flush=True)
    out = {"rows": args.rows, "epochs": args.epochs, "batch_size": BATCH, "one_process": one, "mixed": rows,
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count()}}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "ddp-mixing.json"), "w") as f:
        json.dump(out, f, indent=1)
    lines = ["# How often to mix the workers' weights (simulated in one process)", "",
             f"sparse-text, {args.rows:,} rows x 2^20 columns, {args.epochs} epochs, batches of {BATCH}, the "
             f"product's mixing (row-weighted mean of weights, averaged weights, intercepts and step count). "
             f"One process: **{one:.4f}**. Accuracy is deterministic here (no timing involved).", "",
             "| workers | mix every | accuracy | vs one process |", "|---|---|---|---|"]
    for r in rows:
        every = "epoch" if r["mix_every_batches"] is None else f"{r['mix_every_batches']} batches"
        lines.append(f"| {r['workers']} | {every} | {r['accuracy']:.4f} | {r['vs_one_pt']:+.2f} pt |")
    with open(os.path.join(args.out, "ddp-mixing.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
