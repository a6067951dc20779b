"""The linear SVM of ``sgd.CompiledSGD`` (hinge loss, L2, scikit-learn's optimal
learning rate, averaging, sparse intercept decay) in the native C library: same
algorithm, same order of operations, same weights to rounding, with only numpy and
ctypes in the process. Batches are CSR parts ``(data, indices, indptr)`` (float64 or
float32 values), a scipy CSR matrix, or a dense array (converted per batch)."""

from __future__ import annotations

import math

import numpy as np

from svmcore.data import native

SPARSE_INTERCEPT_DECAY = 0.01
_WSCALE, _B, _AA, _AB, _AI = range(5)


def _parts(X):
    """(data, indices int32, indptr int64) of a batch, without scipy when it is parts."""
    if isinstance(X, tuple):
        data, indices, indptr = X[:3]
    elif hasattr(X, "indptr"):  # a scipy CSR matrix (the classic worker path)
        X = X.tocsr()
        data, indices, indptr = X.data, X.indices, X.indptr
    else:
        X = np.asarray(X)
        if X.ndim == 1:
            X = X.reshape(1, -1)
        nz = X != 0
        indptr = np.zeros(X.shape[0] + 1, np.int64)
        np.cumsum(nz.sum(axis=1), out=indptr[1:])
        indices = np.nonzero(nz)[1]
        data = X[nz]
    if data.dtype not in (np.float64, np.float32):
        data = data.astype(np.float32)
    return (np.ascontiguousarray(data), np.ascontiguousarray(indices, dtype=np.int32),
            np.ascontiguousarray(indptr, dtype=np.int64))


class NativeSGD:
    """Hinge-loss linear SVM, one weight vector per class (one in all for two classes)."""

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
        self._coef = None
        typw = math.sqrt(1.0 / math.sqrt(self.alpha))
        self.optimal_init = 1.0 / (typw * self.alpha)
        self._lib = native.lib()

    def _codes(self, y) -> np.ndarray:
        codes = np.searchsorted(self.classes_, y)
        codes[codes >= self.classes_.shape[0]] = 0
        bad = self.classes_[codes] != y
        if bad.any():
            label = np.asarray(y)[bad][0].item()
            raise ValueError(f"label {label!r} is not one of the classes {self.classes_.tolist()}")
        return codes.astype(np.int64)

    def partial_fit(self, X, y, classes=None) -> "NativeSGD":
        return self.fit_codes(X, self._codes(np.asarray(y)))

    def fit_codes(self, X, codes: np.ndarray) -> "NativeSGD":
        """One pass over a batch whose labels are class indices already."""
        data, indices, indptr = _parts(X)
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        n = indptr.shape[0] - 1
        if codes.shape[0] != n:
            raise ValueError(f"{n} rows but {codes.shape[0]} labels")
        if indices.shape[0] and int(indices.max()) >= self.n_features:
            raise ValueError(f"a row uses feature {int(indices.max()) + 1}, above the model's {self.n_features}")
        fit = self._lib.sgd_fit_f64 if data.dtype == np.float64 else self._lib.sgd_fit_f32
        self.t_ = fit(data.ctypes.data, indices.ctypes.data, indptr.ctypes.data, n, codes.ctypes.data,
                      self.w.ctypes.data, self.aw.ctypes.data, self.state.ctypes.data, self.w.shape[0],
                      self.n_features, self.t_, self.alpha, self.optimal_init, SPARSE_INTERCEPT_DECAY,
                      int(self.average))
        return self

    @property
    def coef_(self) -> np.ndarray:
        if self._coef is None or self._coef[0] != self.t_:
            st = self.state
            # in place into one reused buffer: no temporaries as large as the weights
            coef = self._coef[1] if self._coef is not None else np.empty_like(self.w)
            if self.average and self.t_ > 1.0:
                np.multiply(self.w, st[:, _AA, None], out=coef)
                coef += self.aw
                coef /= st[:, _AB, None]
            else:
                np.multiply(self.w, st[:, _WSCALE, None], out=coef)
            self._coef = (self.t_, coef)
        return self._coef[1]

    @property
    def intercept_(self) -> np.ndarray:
        return (self.state[:, _AI] if self.average and self.t_ > 1.0 else self.state[:, _B]).copy()

    def decision_function(self, X) -> np.ndarray:
        data, indices, indptr = _parts(X)
        n = indptr.shape[0] - 1
        intercept = np.ascontiguousarray(self.intercept_)
        nvec = self.w.shape[0]
        out = np.empty((n, nvec))
        f64 = data.dtype == np.float64
        if self.average and self.t_ > 1.0:
            # from the running sums: no weight-sized copy (the coef_ buffer) at all
            a = np.ascontiguousarray(self.state[:, _AA])
            b = np.ascontiguousarray(self.state[:, _AB])
            fn = self._lib.decision_avg_f64 if f64 else self._lib.decision_avg_f32
            fn(data.ctypes.data, indices.ctypes.data, indptr.ctypes.data, n, self.w.ctypes.data,
               self.aw.ctypes.data, a.ctypes.data, b.ctypes.data, intercept.ctypes.data, nvec,
               self.n_features, out.ctypes.data)
        else:
            coef = self.coef_
            fn = self._lib.decision_f64 if f64 else self._lib.decision_f32
            fn(data.ctypes.data, indices.ctypes.data, indptr.ctypes.data, n, coef.ctypes.data,
               intercept.ctypes.data, nvec, self.n_features, out.ctypes.data)
        return out.ravel() if nvec == 1 else out

    def predict_codes(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        return (scores > 0).astype(np.int64) if scores.ndim == 1 else scores.argmax(axis=1)

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.predict_codes(X)]


def warm_up() -> None:
    """Load (building first if needed) the native library."""
    native.lib()
