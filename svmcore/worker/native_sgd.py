"""A linear SVM trained by SGD in the native library (``native/sgd.c``): hinge loss, L2,
scikit-learn's optimal learning rate, averaging, the sparse intercept decay, the same
algorithm as ``SGDClassifier(loss="hinge", penalty="l2", learning_rate="optimal",
shuffle=False)`` (same weights to rounding, a test checks it), with only numpy and ctypes
in the process (the lean worker's floor). ``partial_fit`` is one C call over the batch after
a check of its labels and columns, and the weight scale and the running average are carried
across batches instead of being materialised after every call: with a few dozen nonzeros a
row, that per-call overhead is what bounds scikit-learn's throughput. Rows are visited in
the order given (scikit-learn's partial_fit shuffles within each batch). Dense batches are
converted to CSR parts per batch (their intercept decays as scikit-learn's dense path: no
sparse decay)."""

from __future__ import annotations

import numpy as np

from svmcore.data.native import binding
from svmcore.data.native.binding import AVERAGE_A, AVERAGE_B, WSCALE
from svmcore.worker.solvers import SPARSE_INTERCEPT_DECAY, Batch, LazySGD, dense_to_parts


def csr_parts(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The batch as the C functions take it: values float64/float32, int32 indices, int64 indptr."""
    data, indices, indptr = batch.parts if batch.parts is not None else dense_to_parts(batch.dense)
    return (np.ascontiguousarray(data), np.ascontiguousarray(indices, dtype=np.int32),
            np.ascontiguousarray(indptr, dtype=np.int64))


class NativeSGD(LazySGD):
    """Hinge-loss linear SVM with scikit-learn's SGD schedule, in the native library."""

    def __init__(self, alpha: float, average: bool, n_features: int, classes, dtype=np.float64):
        super().__init__(alpha, average, n_features, classes, dtype)
        binding.library()  # built (or found) now: a missing compiler is an error here, not mid-run
        self._bound: binding.SGDFit | None = None

    def fit_codes(self, X, codes: np.ndarray):
        """``LazySGD.fit_codes``; CSR parts of the kernel's types (the lean path's batches) go
        straight to the kernel, through weights checked once (``binding.SGDFit``)."""
        if isinstance(X, tuple) and len(X) == 3 and self.w is not None:
            self._begin_call()
            bound = self._bound
            if bound is None or not bound.bound_to(self.w, self.aw, self.state):
                bound = self._bound = binding.SGDFit(self.w, self.aw, self.state, self.average)
            t = bound.fit(*X, codes, self.t_, self.alpha, self.optimal_init, SPARSE_INTERCEPT_DECAY)
            if t is not None:
                self.t_ = t
                return self
        return super().fit_codes(X, codes)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_bound"] = None  # C functions and addresses: made again where the model is unpickled
        return state

    def _fit(self, batch: Batch, codes: np.ndarray) -> None:
        decay = SPARSE_INTERCEPT_DECAY if batch.parts is not None else 1.0  # scikit-learn's for dense rows
        self.t_ = binding.sgd_fit(*csr_parts(batch), codes, self.w, self.aw, self.state, self.t_, self.alpha,
                                  self.optimal_init, decay, self.average)

    def _scores(self, batch: Batch, out: np.ndarray) -> None:
        """From the weights and the lazy factors: no weight-sized copy."""
        parts = csr_parts(batch)
        intercept = np.ascontiguousarray(self.intercept_)
        if self._averaged():
            a = np.ascontiguousarray(self.state[:, AVERAGE_A])
            b = np.ascontiguousarray(self.state[:, AVERAGE_B])
            binding.decision_avg(*parts, self.w, self.aw, a, b, intercept, out)
        else:
            binding.decision(*parts, self.w, np.zeros(self.n_vectors), out)
            out *= self.state[:, WSCALE]
            out += intercept

    def _fold_scale(self) -> None:
        binding.sgd_fold_scale(self.w, self.aw, self.state, self.average)
