"""A compiled linear classifier trained by FTRL-proximal (McMahan et al., 2013,
"Ad click prediction: a view from the trenches", algorithm 1): logistic loss,
per-coordinate learning rates, L1 and L2.

Each weight vector keeps two arrays per feature, ``z`` (the gradients seen, less
a proximal correction) and ``n`` (the sum of squared gradients). The weights are
not stored while training: for each row, the weight of each of its nonzeros is
computed from ``z`` and ``n`` (zero where ``|z| <= l1``, which is what makes the
model sparse). The intercept is one more coordinate with value 1, not regularised.
Zero values (dense input) leave their coordinates untouched, so dense and sparse
input of the same rows give the same weights.

The interface mirrors :class:`svmcore.worker.sgd.CompiledSGD`: rows are visited in
the order given, one vector per class for more than two classes (one-vs-rest).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse as sp


@numba.njit(cache=True, nogil=True, inline="always")
def _weight(z, n, l1, l2, alpha, beta):
    if abs(z) <= l1:
        return 0.0
    sign = 1.0 if z > 0.0 else -1.0
    return -(z - sign * l1) / ((beta + math.sqrt(n)) / alpha + l2)


@numba.njit(cache=True, nogil=True)
def _row(z, n, zb, nb, v, target, cols, vals, nnz, l1, l2, alpha, beta):
    """One row for weight vector ``v`` (target 1 or 0)."""
    dot = _weight(zb[v], nb[v], 0.0, 0.0, alpha, beta)
    for k in range(nnz):
        x = vals[k]
        if x != 0.0:
            j = cols[k]
            dot += _weight(z[v, j], n[v, j], l1, l2, alpha, beta) * x
    dot = max(-35.0, min(35.0, dot))
    g0 = 1.0 / (1.0 + math.exp(-dot)) - target  # d(logistic loss)/d(margin)
    for k in range(nnz):
        x = vals[k]
        if x != 0.0:
            j = cols[k]
            g = g0 * x
            nj = n[v, j]
            w = _weight(z[v, j], nj, l1, l2, alpha, beta)
            sigma = (math.sqrt(nj + g * g) - math.sqrt(nj)) / alpha
            z[v, j] += g - sigma * w
            n[v, j] = nj + g * g
    wb = _weight(zb[v], nb[v], 0.0, 0.0, alpha, beta)
    sigma = (math.sqrt(nb[v] + g0 * g0) - math.sqrt(nb[v])) / alpha
    zb[v] += g0 - sigma * wb
    nb[v] += g0 * g0


@numba.njit(cache=True, nogil=True)
def _fit_sparse(data, indices, indptr, codes, z, n, zb, nb, l1, l2, alpha, beta):
    nvec = z.shape[0]
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        for v in range(nvec):
            target = 1.0 if codes[i] == (1 if nvec == 1 else v) else 0.0
            _row(z, n, zb, nb, v, target, indices[lo:hi], data[lo:hi], hi - lo, l1, l2, alpha, beta)


@numba.njit(cache=True, nogil=True)
def _fit_dense(X, codes, z, n, zb, nb, l1, l2, alpha, beta):
    nvec = z.shape[0]
    cols = np.arange(X.shape[1])
    for i in range(X.shape[0]):
        for v in range(nvec):
            target = 1.0 if codes[i] == (1 if nvec == 1 else v) else 0.0
            _row(z, n, zb, nb, v, target, cols, X[i], X.shape[1], l1, l2, alpha, beta)


@numba.njit(cache=True, nogil=True)
def _weights(z, n, l1, l2, alpha, beta, out):
    for v in range(z.shape[0]):
        for j in range(z.shape[1]):
            out[v, j] = _weight(z[v, j], n[v, j], l1, l2, alpha, beta)


class CompiledFTRL:
    """Logistic-loss linear classifier by FTRL-proximal, one vector per class (one in
    all for two classes)."""

    def __init__(self, l1: float, l2: float, alpha: float, beta: float, n_features: int, classes):
        self.l1, self.l2 = float(l1), float(l2)
        self.alpha, self.beta = float(alpha), float(beta)
        self.classes_ = np.asarray(classes)
        if self.classes_.shape[0] < 2:
            raise ValueError("at least two classes are needed")
        nvec = 1 if self.classes_.shape[0] == 2 else self.classes_.shape[0]
        self.n_features = int(n_features)
        self.z = np.zeros((nvec, n_features))
        self.n = np.zeros((nvec, n_features))
        self.zb = np.zeros(nvec)
        self.nb = np.zeros(nvec)
        self.t_ = 0  # rows seen: the computed weights are cached per t_
        self._coef = None

    def _codes(self, y) -> np.ndarray:
        codes = np.searchsorted(self.classes_, y)
        codes[codes >= self.classes_.shape[0]] = 0
        bad = self.classes_[codes] != y
        if bad.any():
            label = np.asarray(y)[bad][0].item()
            raise ValueError(f"label {label!r} is not one of the classes {self.classes_.tolist()}")
        return codes.astype(np.int64)

    def partial_fit(self, X, y, classes=None) -> "CompiledFTRL":
        codes = self._codes(np.asarray(y))
        args = (self.z, self.n, self.zb, self.nb, self.l1, self.l2, self.alpha, self.beta)
        if isinstance(X, tuple):
            data, indices, indptr = X[:3]
            _fit_sparse(data, indices, indptr, codes, *args)
        elif sp.issparse(X):
            X = X.tocsr()
            _fit_sparse(X.data, X.indices, X.indptr, codes, *args)
        else:
            _fit_dense(np.ascontiguousarray(X), codes, *args)
        self.t_ += codes.shape[0]
        return self

    @property
    def coef_(self) -> np.ndarray:
        """The weights, computed from z and n (a third array per feature while it is held)."""
        if self._coef is None or self._coef[0] != self.t_:
            # computed in place over the last copy: never two copies at once
            out = np.empty_like(self.z) if self._coef is None else self._coef[1]
            _weights(self.z, self.n, self.l1, self.l2, self.alpha, self.beta, out)
            self._coef = (self.t_, out)
        return self._coef[1]

    @property
    def intercept_(self) -> np.ndarray:
        zb, nb = self.zb, self.nb
        return np.array([-zb[v] / ((self.beta + math.sqrt(nb[v])) / self.alpha) for v in range(zb.shape[0])])

    def decision_function(self, X) -> np.ndarray:
        scores = np.asarray(X @ self.coef_.T + self.intercept_)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[scores.argmax(axis=1)]


def warm_up() -> None:
    """Compile (or load from the on-disk cache) the kernels now."""
    m = CompiledFTRL(0.1, 0.1, 0.1, 1.0, 3, [0, 1])
    y = np.array([0, 1, 0])
    for dtype in (np.float64, np.float32):
        X = sp.csr_matrix(np.eye(3, dtype=dtype))
        m.partial_fit(X, y)
        m.partial_fit((X.data, X.indices, X.indptr.astype(np.int64)), y)  # memory-mapped parts
        m.partial_fit(X.toarray(), y)
    m.coef_
