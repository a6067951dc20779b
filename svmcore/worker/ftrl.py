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

A ``solvers.LinearModel``: rows are visited in the order given, one vector per class for
more than two classes (one-vs-rest).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from svmcore.worker.solvers import Batch, LinearSolver, exercise


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
def _decision_sparse(data, indices, indptr, z, n, l1, l2, alpha, beta, intercept, out):
    """Scores of CSR rows, each weight computed from z and n for the columns present only."""
    for i in range(indptr.shape[0] - 1):
        for v in range(z.shape[0]):
            dot = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                dot += data[k] * _weight(z[v, j], n[v, j], l1, l2, alpha, beta)
            out[i, v] = dot + intercept[v]


@numba.njit(cache=True, nogil=True)
def _count_nonzero(z, l1):
    c = 0
    for v in range(z.shape[0]):
        for j in range(z.shape[1]):
            if abs(z[v, j]) > l1:
                c += 1
    return c


@numba.njit(cache=True, nogil=True)
def _weights(z, n, l1, l2, alpha, beta, out):
    for v in range(z.shape[0]):
        for j in range(z.shape[1]):
            out[v, j] = _weight(z[v, j], n[v, j], l1, l2, alpha, beta)


class CompiledFTRL(LinearSolver):
    """Logistic-loss linear classifier by FTRL-proximal, in numba kernels."""

    def __init__(self, l1: float, l2: float, alpha: float, beta: float, n_features: int, classes):
        super().__init__(n_features, classes)
        self.l1, self.l2 = float(l1), float(l2)
        self.alpha, self.beta = float(alpha), float(beta)
        if self.l1 < 0 or self.l2 < 0 or not self.alpha > 0 or self.beta < 0:
            raise ValueError(f"FTRL needs l1, l2, beta >= 0 and alpha > 0, not {l1}, {l2}, {beta} and {alpha}")
        self.z = np.zeros((self.n_vectors, self.n_features))
        self.n = np.zeros((self.n_vectors, self.n_features))
        self.zb = np.zeros(self.n_vectors)
        self.nb = np.zeros(self.n_vectors)
        self.t_ = 0  # rows seen

    @classmethod
    def from_config(cls, cfg, width: int, classes, alpha: float, l2: float | None) -> CompiledFTRL:
        return cls(cfg.l1, l2, cfg.ftrl_alpha, cfg.ftrl_beta, width, classes)

    def _fit(self, batch: Batch, codes: np.ndarray) -> None:
        args = (self.z, self.n, self.zb, self.nb, self.l1, self.l2, self.alpha, self.beta)
        if batch.parts is not None:
            _fit_sparse(*batch.parts, codes, *args)
        else:
            _fit_dense(batch.dense, codes, *args)
        self.t_ += codes.shape[0]

    def _scores(self, batch: Batch, out: np.ndarray) -> None:
        """Each weight computed from z and n where a row needs it: nothing as large as the
        weights is allocated."""
        args = (self.z, self.n, self.l1, self.l2, self.alpha, self.beta, self.intercept_)
        _decision_sparse(*batch.parts, *args, out)

    @property
    def coef_(self) -> np.ndarray:
        """The weights, computed from z and n into one new array (a third array per
        feature while it is held)."""
        out = np.empty_like(self.z)
        _weights(self.z, self.n, self.l1, self.l2, self.alpha, self.beta, out)
        return out

    def release_coef(self) -> np.ndarray:
        """``coef_`` computed into z itself (each weight from its own z and n) and n let go: the
        coefficients without a third weight-sized array (the model export's, at the end of a
        run: at 2^24 features it held 128 MiB more than training did). The solver is spent: it
        cannot train or score after."""
        _weights(self.z, self.n, self.l1, self.l2, self.alpha, self.beta, self.z)
        coef, self.z, self.n = self.z, None, None
        return coef

    @property
    def intercept_(self) -> np.ndarray:
        zb, nb = self.zb, self.nb
        return np.array([-zb[v] / ((self.beta + math.sqrt(nb[v])) / self.alpha) for v in range(zb.shape[0])])

    def nonzero_weights(self) -> int:
        """The weights with ``|z| > l1``, counted without computing them."""
        return int(_count_nonzero(self.z, self.l1))

    def get_state(self) -> dict:
        """z and n per feature and for the intercept, and the rows seen. (Runs with workers
        refuse FTRL: a mean of z and n is not a mean of models.)"""
        return {"z": self.z, "n": self.n, "zb": self.zb, "nb": self.nb, "t_": self.t_}

    def set_state(self, state: dict) -> None:
        self._replace(state, ("z", "n", "zb", "nb"))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"z": self.z, "n": self.n, "zb": self.zb, "nb": self.nb, "classes_": self.classes_}


def warm_up() -> None:
    """Compile (or load from the on-disk cache) the kernels now."""
    exercise(CompiledFTRL(0.1, 0.1, 0.1, 1.0, 3, [0, 1]))
