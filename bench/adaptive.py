"""Would adaptive updates learn faster per pass? Per-coordinate AdaGrad steps on the hinge
loss (as Vowpal Wabbit's default update, with and without its per-feature normalisation)
against this project's averaged SGD at its default alpha (chosen for the rows), accuracy
after each pass over the same rows, in one process, side by side.

    python bench/adaptive.py [--rows 200000] [--passes 5]

The training and test files are bench/alpha.py's `sparse-text` slices (the first N rows,
the same 20,000 later rows). A measurement for deciding whether to add a solver, not a
solver: the AdaGrad loop lives here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.alpha import files  # noqa: E402
from bench.remedies import describe, machine, write_result  # noqa: E402
from svmcore.spec.regularisation import auto_alpha  # noqa: E402
from svmcore.worker.native_sgd import NativeSGD  # noqa: E402


@numba.njit(cache=True)
def _adagrad_pass(data, indices, indptr, y, order, w, g2, scale, eta, normalised):
    """One pass of per-coordinate AdaGrad on the hinge loss (intercept as feature 0 of w[-1])."""
    nf = w.shape[0] - 1
    for i in order:
        lo, hi = indptr[i], indptr[i + 1]
        dot = w[nf]
        for k in range(lo, hi):
            j = indices[k]
            x = data[k]
            if normalised and abs(x) > scale[j]:  # VW's normalised update: track each feature's largest |x|
                if scale[j] > 0:
                    w[j] *= (scale[j] / abs(x)) ** 2
                scale[j] = abs(x)
            dot += w[j] * x
        if y[i] * dot >= 1.0:
            continue
        for k in range(lo, hi):
            j = indices[k]
            g = -y[i] * data[k]
            g2[j] += g * g
            step = eta / np.sqrt(g2[j])
            if normalised and scale[j] > 0:
                step /= scale[j]
            w[j] -= step * g
        g = -y[i]
        g2[nf] += g * g
        w[nf] -= eta / np.sqrt(g2[nf]) * g


def _load(path: str, n_features: int):
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(path, n_features=n_features, zero_based=False)
    return X.tocsr(), np.where(y > 0, 1.0, -1.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="sparse-200k", help="a dataset of bench/alpha.py")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--data", default=os.environ.get("SVMCORE_ALPHA_DATA", "/tmp/svmcore-alpha-data"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    train, test = files(args.data, args.dataset)
    nf = (1 << 20) + 1
    X, y = _load(train, nf)
    Xt, yt = _load(test, nf)
    rng = np.random.default_rng(0)
    orders = [rng.permutation(X.shape[0]) for _ in range(args.passes)]
    curves = {}

    def acc(decide):
        return float(np.mean(np.where(decide(Xt) >= 0, 1.0, -1.0) == yt))

    alpha = auto_alpha(X.shape[0])
    sgd = NativeSGD(alpha, True, nf, [-1.0, 1.0])
    curve = []
    t0 = time.time()
    for order in orders:
        for s in range(0, order.shape[0], 1024):
            rows = order[s:s + 1024]
            sgd.partial_fit(X[rows], y[rows])
        curve.append(acc(lambda A: sgd.decision_function(A)))
    curves[f"averaged SGD, alpha auto ({alpha:g}), batches of 1,024"] = {"accuracy": curve,
                                                                         "seconds": time.time() - t0}
    for normalised in (False, True):
        for eta in (0.1, 0.5, 2.0):
            w, g2, scale = np.zeros(nf + 1), np.full(nf + 1, 1e-12), np.zeros(nf + 1)
            curve = []
            t0 = time.time()
            for order in orders:
                _adagrad_pass(X.data, X.indices, X.indptr, y, order, w, g2, scale, eta, normalised)
                curve.append(acc(lambda A: A @ w[:nf] + w[nf]))
            name = f"AdaGrad{' + normalised' if normalised else ''}, eta {eta:g}, no L2"
            curves[name] = {"accuracy": curve, "seconds": time.time() - t0}
            print(name, [round(a, 4) for a in curve], file=sys.stderr, flush=True)
    m = machine()
    result = {"date": time.strftime("%Y-%m-%d"), "dataset": args.dataset, "train_rows": int(X.shape[0]),
              "passes": args.passes, "machine": m, "description": describe(m), "curves": curves}
    write_result(args.out, "adaptive", result, markdown(result))
    return 0


def markdown(r: dict) -> str:
    passes = r["passes"]
    out = ["# Adaptive (AdaGrad) updates against the tuned SGD schedule, accuracy per pass", "", r["description"], "",
           f"{r['train_rows']:,} training rows of `sparse-text` ({r['dataset']} of bench/alpha.py), the same 20,000 "
           "later rows as the test set, the same row order in every pass for every learner; one process. AdaGrad: "
           "per-coordinate steps eta / sqrt(sum of squared gradients) on the hinge loss, optionally normalised by "
           "each feature's largest |x| (as Vowpal Wabbit's default update), no averaging, no L2.", "",
           "| learner | " + " | ".join(f"pass {i + 1}" for i in range(passes)) + " |",
           "|---|" + "---|" * passes]
    for name, c in r["curves"].items():
        out.append(f"| {name} | " + " | ".join(f"{a:.4f}" for a in c["accuracy"]) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
