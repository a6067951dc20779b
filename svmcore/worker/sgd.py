"""A compiled linear SVM trained by SGD (hinge loss, L2, optimal learning rate).

The same algorithm as scikit-learn's ``SGDClassifier(loss="hinge", penalty="l2",
learning_rate="optimal", shuffle=False)``, including averaged SGD and the sparse
intercept decay, so its weights match scikit-learn's to rounding (a test checks
that). What differs is the cost around it: ``partial_fit`` here is one compiled
call over the batch with no validation, copies or per-call setup, and the weight
scale and the running average are carried across batches instead of being
materialised after every call. With a few dozen nonzeros per row, that overhead is
what bounds scikit-learn's throughput, not the arithmetic.

Rows are visited in the order given (scikit-learn's partial_fit shuffles within each
batch); the data here arrive in a fixed order from a file or generator already.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse as sp

SPARSE_INTERCEPT_DECAY = 0.01  # scikit-learn's, for sparse input
MIN_WSCALE = 1e-9

# state layout per weight vector: wscale, intercept, average_a, average_b, average_intercept
_WSCALE, _B, _AA, _AB, _AI = range(5)


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
                dot += w[v, cols[k]] * vals[k]
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
                dot += w[v, k] * vals[k]
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


@numba.njit(cache=True, nogil=True)
def _decision_dense(X, w, aw, st, averaged, intercept, out):
    for i in range(X.shape[0]):
        for v in range(w.shape[0]):
            dot = 0.0
            for j in range(X.shape[1]):
                x = X[i, j]
                if x != 0.0:
                    dot += x * _coef_at(w, aw, st, v, j, averaged)
            out[i, v] = dot + intercept[v]


@numba.njit(cache=True, nogil=True)
def _coef_into(w, aw, st, averaged, out):
    for v in range(w.shape[0]):
        for j in range(w.shape[1]):
            out[v, j] = _coef_at(w, aw, st, v, j, averaged)


@numba.njit(cache=True, nogil=True)
def _count_nonzero(w, aw, st, averaged):
    n = 0
    for v in range(w.shape[0]):
        for j in range(w.shape[1]):
            if _coef_at(w, aw, st, v, j, averaged) != 0.0:
                n += 1
    return n


def _floats(a: np.ndarray) -> np.ndarray:
    """A batch's values as the kernels take them (float16 or integers become float64)."""
    return a if a.dtype in (np.float64, np.float32) else a.astype(np.float64)


class CompiledSGD:
    """Hinge-loss linear SVM with scikit-learn's SGD schedule, one vector per class
    (one in all for two classes, like scikit-learn's one-vs-rest)."""

    def __init__(self, alpha: float, average: bool, n_features: int, classes):
        self.alpha = float(alpha)
        self.average = bool(average)
        self.classes_ = np.asarray(classes)
        if self.classes_.shape[0] < 2:
            raise ValueError("at least two classes are needed")
        nvec = 1 if self.classes_.shape[0] == 2 else self.classes_.shape[0]
        self.n_features = int(n_features)
        self.w = np.zeros((nvec, n_features))
        self.aw = np.zeros((nvec, n_features) if average else (nvec, 1))
        self.state = np.zeros((nvec, 5))
        self.state[:, _WSCALE] = 1.0
        self.state[:, _AB] = 1.0
        self.t_ = 1.0
        typw = math.sqrt(1.0 / math.sqrt(self.alpha))
        self.optimal_init = 1.0 / (typw * self.alpha)  # scikit-learn's, for the hinge loss

    def _codes(self, y) -> np.ndarray:
        codes = np.searchsorted(self.classes_, y)
        codes[codes >= self.classes_.shape[0]] = 0
        bad = self.classes_[codes] != y
        if bad.any():
            label = np.asarray(y)[bad][0].item()
            raise ValueError(f"label {label!r} is not one of the classes {self.classes_.tolist()}")
        return codes.astype(np.int64)

    def partial_fit(self, X, y, classes=None) -> "CompiledSGD":
        codes = self._codes(np.asarray(y))
        if isinstance(X, tuple):
            data, indices, indptr = X[:3]
            self.t_ = _fit_sparse(data, indices, indptr, codes, self.w, self.aw, self.state, self.t_,
                                  self.alpha, self.optimal_init, SPARSE_INTERCEPT_DECAY, self.average)
        elif sp.issparse(X):
            X = X.tocsr()
            self.t_ = _fit_sparse(X.data, X.indices, X.indptr, codes, self.w, self.aw, self.state, self.t_,
                                  self.alpha, self.optimal_init, SPARSE_INTERCEPT_DECAY, self.average)
        else:
            X = np.ascontiguousarray(X)
            self.t_ = _fit_dense(X, codes, self.w, self.aw, self.state, self.t_,
                                 self.alpha, self.optimal_init, self.average)
        return self

    def _averaged(self) -> bool:
        return self.average and self.t_ > 1.0

    @property
    def coef_(self) -> np.ndarray:
        """The coefficients, computed from the lazy state into one new array (a copy as
        large as the weights: scoring does not use it, see ``decision_function``)."""
        out = np.empty_like(self.w)
        _coef_into(self.w, self.aw, self.state, self._averaged(), out)
        return out

    @property
    def intercept_(self) -> np.ndarray:
        return (self.state[:, _AI] if self._averaged() else self.state[:, _B]).copy()

    def nonzero_weights(self) -> int:
        """The number of nonzero coefficients, counted without materialising them."""
        return int(_count_nonzero(self.w, self.aw, self.state, self._averaged()))

    def decision_function(self, X) -> np.ndarray:
        """``X @ coef_.T + intercept_``, scored from the weights, their average and the lazy
        scale and average factors: nothing as large as the weights is allocated, and for
        sparse rows only the columns present are read."""
        args = (self.w, self.aw, self.state, self._averaged(), self.intercept_)
        if isinstance(X, tuple):
            data, indices, indptr = X[:3]
        elif sp.issparse(X):
            X = X.tocsr()
            data, indices, indptr = X.data, X.indices, X.indptr
        else:
            X = _floats(np.asarray(X))
            if X.ndim == 1:
                X = X.reshape(1, -1)
            if X.shape[1] != self.n_features:
                raise ValueError(f"rows have {X.shape[1]} columns, the model {self.n_features}")
            out = np.empty((X.shape[0], self.w.shape[0]))
            _decision_dense(X, *args, out)
            return out.ravel() if out.shape[1] == 1 else out
        data = _floats(data)
        if indices.shape[0] and int(indices.max()) >= self.n_features:
            raise ValueError(f"a row uses column {int(indices.max())}, the model has {self.n_features}")
        out = np.empty((indptr.shape[0] - 1, self.w.shape[0]))
        _decision_sparse(data, indices, indptr, *args, out)
        return out.ravel() if out.shape[1] == 1 else out

    def predict(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[scores.argmax(axis=1)]


def warm_up() -> None:
    """Compile (or load from the on-disk cache) both kernels now."""
    m = CompiledSGD(1e-4, True, 3, [0, 1])
    y = np.array([0, 1, 0])
    for dtype in (np.float64, np.float32):
        X = sp.csr_matrix(np.eye(3, dtype=dtype))
        m.partial_fit(X, y)
        m.partial_fit((X.data, X.indices, X.indptr.astype(np.int64)), y)  # memory-mapped parts
        m.partial_fit(X.toarray(), y)
        m.decision_function(X)
        m.decision_function((X.data, X.indices, X.indptr.astype(np.int64)))
        m.decision_function(X.toarray())
