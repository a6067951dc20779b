"""A compiled linear SVM trained by SGD (hinge loss, L2, optimal learning rate).

The same algorithm as scikit-learn's ``SGDClassifier(loss="hinge", penalty="l2",
learning_rate="optimal", shuffle=False)``, including averaged SGD and the sparse
intercept decay, so its weights match scikit-learn's to rounding (a test checks
that). What differs is the cost around it: ``partial_fit`` here is one compiled
call over the batch after a check of its labels and columns, with no copies or
per-call setup, and the weight
scale and the running average are carried across batches instead of being
materialised after every call. With a few dozen nonzeros per row, that overhead is
what bounds scikit-learn's throughput, not the arithmetic.

Rows are visited in the order given (scikit-learn's partial_fit shuffles within each
batch); the data here arrive in a fixed order from a file or generator already.

The weights and their average may be float32 (``model_state``): every product is taken in
float64 (a weight is read as float64), as the native library's ``_s32`` kernels do, so the
two solvers keep the same weights in either state.
"""

from __future__ import annotations

import numba
import numpy as np

# numba freezes these globals into its cached kernels: an edit of the layout in
# binding.py needs the cache cleared (the native library is checked against it at load)
from svmcore.data.native.binding import AVERAGE_A as _AA
from svmcore.data.native.binding import AVERAGE_B as _AB
from svmcore.data.native.binding import AVERAGE_INTERCEPT as _AI
from svmcore.data.native.binding import INTERCEPT as _B
from svmcore.data.native.binding import MIN_WSCALE
from svmcore.data.native.binding import WSCALE as _WSCALE
from svmcore.worker.solvers import SPARSE_INTERCEPT_DECAY, Batch, LazySGD, exercise


@numba.njit(cache=True, nogil=True)
def _reset_scale(w, aw, st, v, average):
    if average:
        a, b = st[v, _AA], st[v, _AB]
        for j in range(w.shape[1]):
            aw[v, j] = (aw[v, j] + a * w[v, j]) / b
        st[v, _AA] = 0.0
        st[v, _AB] = 1.0
    s = st[v, _WSCALE]
    for j in range(w.shape[1]):
        w[v, j] *= s
    st[v, _WSCALE] = 1.0


@numba.njit(cache=True, nogil=True)
def _step(w, aw, st, v, target, p, eta, alpha, decay, average, t, cols, vals, n):
    """One sample for weight vector ``v``; ``p`` is its margin before the step."""
    dloss = -target if p * target <= 1.0 else 0.0
    update = -eta * dloss
    st[v, _WSCALE] *= max(0.0, 1.0 - eta * alpha)
    if st[v, _WSCALE] < MIN_WSCALE:
        _reset_scale(w, aw, st, v, average)
    s = st[v, _WSCALE]
    if update != 0.0:
        c = update / s
        for k in range(n):
            w[v, cols[k]] += vals[k] * c
        st[v, _B] += update * decay
    if average:
        mu = 1.0 / t
        if update != 0.0:
            c = -st[v, _AA] * update / s
            for k in range(n):
                aw[v, cols[k]] += vals[k] * c
        if t > 1.0:
            st[v, _AB] /= (1.0 - mu)
        st[v, _AA] += mu * st[v, _AB] * s
        st[v, _AI] += (st[v, _B] - st[v, _AI]) / t


@numba.njit(cache=True, nogil=True)
def _fit_sparse(data, indices, indptr, codes, w, aw, st, t, alpha, optimal_init, decay, average):
    nvec = w.shape[0]
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        cols = indices[lo:hi]
        vals = data[lo:hi]
        eta = 1.0 / (alpha * (optimal_init + t - 1.0))
        for v in range(nvec):
            dot = 0.0
            for k in range(hi - lo):
                dot += np.float64(w[v, cols[k]]) * vals[k]
            p = dot * st[v, _WSCALE] + st[v, _B]
            target = 1.0 if codes[i] == (1 if nvec == 1 else v) else -1.0
            _step(w, aw, st, v, target, p, eta, alpha, decay, average, t, cols, vals, hi - lo)
        t += 1.0
    return t


@numba.njit(cache=True, nogil=True)
def _fit_dense(X, codes, w, aw, st, t, alpha, optimal_init, average):
    nvec = w.shape[0]
    nf = X.shape[1]
    cols = np.arange(nf)
    for i in range(X.shape[0]):
        vals = X[i]
        eta = 1.0 / (alpha * (optimal_init + t - 1.0))
        for v in range(nvec):
            dot = 0.0
            for k in range(nf):
                dot += np.float64(w[v, k]) * vals[k]
            p = dot * st[v, _WSCALE] + st[v, _B]
            target = 1.0 if codes[i] == (1 if nvec == 1 else v) else -1.0
            _step(w, aw, st, v, target, p, eta, alpha, 1.0, average, t, cols, vals, nf)
        t += 1.0
    return t


@numba.njit(cache=True, nogil=True, inline="always")
def _coef_at(w, aw, st, v, j, averaged):
    """One coefficient, with the same operations as the whole-array formula."""
    if averaged:
        return (aw[v, j] + st[v, _AA] * w[v, j]) / st[v, _AB]
    return w[v, j] * st[v, _WSCALE]


@numba.njit(cache=True, nogil=True)
def _decision_sparse(data, indices, indptr, w, aw, st, averaged, intercept, out):
    """Scores of CSR rows from the lazy state, touching only the columns present."""
    for i in range(indptr.shape[0] - 1):
        for v in range(w.shape[0]):
            dot = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                dot += data[k] * _coef_at(w, aw, st, v, indices[k], averaged)
            out[i, v] = dot + intercept[v]


class CompiledSGD(LazySGD):
    """Hinge-loss linear SVM with scikit-learn's SGD schedule, in numba kernels."""

    def _fit(self, batch: Batch, codes: np.ndarray) -> None:
        if batch.parts is not None:
            data, indices, indptr = batch.parts
            self.t_ = _fit_sparse(data, indices, indptr, codes, self.w, self.aw, self.state, self.t_,
                                  self.alpha, self.optimal_init, SPARSE_INTERCEPT_DECAY, self.average)
        else:
            self.t_ = _fit_dense(batch.dense, codes, self.w, self.aw, self.state, self.t_,
                                 self.alpha, self.optimal_init, self.average)

    def _scores(self, batch: Batch, out: np.ndarray) -> None:
        """``X @ coef_.T + intercept_`` from the weights, their average and the lazy scale and
        average factors: nothing as large as the weights is allocated, and only the columns
        present are read."""
        args = (self.w, self.aw, self.state, self._averaged(), self.intercept_)
        _decision_sparse(*batch.parts, *args, out)

    def _fold_scale(self) -> None:
        for v in range(self.w.shape[0]):
            _reset_scale(self.w, self.aw, self.state, v, self.average)


def warm_up() -> None:
    """Compile (or load from the on-disk cache) the kernels of both model states now."""
    for dtype in (np.float64, np.float32):
        exercise(CompiledSGD(1e-4, True, 3, [0, 1], dtype))
