"""scikit-learn's ``SGDClassifier(loss="hinge", penalty="l2", learning_rate="optimal",
shuffle=False)`` in the native library (``native/sgd.c``), same weights to rounding, with only
numpy and ctypes in the process. ``partial_fit`` is one C call after a check of the labels and
columns, with no per-call setup (what bounds scikit-learn on rows of a few dozen nonzeros); rows
are visited in the order given. Dense batches are converted to CSR parts (their intercept decays
as scikit-learn's dense path: no sparse decay)."""

from __future__ import annotations

import math

import numpy as np

from svmcore.data.native import binding
from svmcore.data.native.binding import AVERAGE_A, AVERAGE_B, AVERAGE_INTERCEPT, INTERCEPT, SGD_STATE, WSCALE
from svmcore.data.rows import Dense, Parts
from svmcore.worker.solvers import LinearSolver

SPARSE_INTERCEPT_DECAY = 0.01  # scikit-learn's, for sparse input


def csr_parts(batch: Parts | Dense) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The batch as the C functions take it: values float64/float32, int32 indices, int64 indptr."""
    data, indices, indptr = batch.sparse()
    return (np.ascontiguousarray(data), np.ascontiguousarray(indices, dtype=np.int32),
            np.ascontiguousarray(indptr, dtype=np.int64))


class NativeSGD(LinearSolver):
    """Hinge-loss SGD with scikit-learn's optimal learning rate, in the native library: the
    weights ``w`` with a lazy scale, their running average ``aw`` and one row of ``state``
    (``binding.SGD_STATE``) per vector. The weights and their average are float64, or float32
    (``model_state``: the steps are the same float64 arithmetic, each weight rounded where it is
    stored); ``state`` is float64."""

    def __init__(self, alpha: float, average: bool, n_features: int, classes, dtype=np.float64):
        super().__init__(n_features, classes)
        self.alpha = float(alpha)
        if not self.alpha > 0:
            raise ValueError(f"alpha must be above 0, not {alpha}")
        self.average = bool(average)
        self.w = np.zeros((self.n_vectors, self.n_features), dtype)
        self.aw = np.zeros((self.n_vectors, self.n_features) if average else (self.n_vectors, 1), dtype)
        self.state = np.zeros((self.n_vectors, len(SGD_STATE)))
        self.state[:, WSCALE] = 1.0
        self.state[:, AVERAGE_B] = 1.0
        self.t_ = 1.0
        typw = math.sqrt(1.0 / math.sqrt(self.alpha))
        self.optimal_init = 1.0 / (typw * self.alpha)  # scikit-learn's, for the hinge loss
        binding.library()  # built (or found) now: a missing compiler is an error here, not mid-run
        self._bound: binding.SGDFit | None = None

    @classmethod
    def from_config(cls, cfg, width: int, classes, alpha: float, l2: float | None) -> NativeSGD:
        return cls(alpha, cfg.average, width, classes, np.dtype(cfg.model_state.value))

    def _averaged(self) -> bool:
        return self.average and self.t_ > 1.0

    def _begin_call(self) -> None:
        """scikit-learn's ``partial_fit`` of a two-class averaged model starts every call's plain
        intercept at its initial 0 (it keeps the plain intercept only before averaging begins,
        which is at once), and so does this: both train the same model batch after batch. On a
        file with 3% positives that intercept, held near 0, scored 1.5 points more balanced
        accuracy than one learnt across calls (docs/data.md)."""
        if self.average and self.n_vectors == 1:
            self.state[0, INTERCEPT] = 0.0

    def _coef_block(self, lo: int, hi: int) -> np.ndarray:
        """Coefficients of columns lo:hi, in the kernels' order of operations."""
        st, w = self.state, self.w[:, lo:hi]
        if self._averaged():
            out = np.multiply(w, st[:, AVERAGE_A, None])
            out += self.aw[:, lo:hi]
            out /= st[:, AVERAGE_B, None]
            return out
        return np.multiply(w, st[:, WSCALE, None])

    @property
    def coef_(self) -> np.ndarray:
        return self._coef_block(0, self.n_features)

    def release_coef(self, block: int = 1 << 14) -> np.ndarray:
        """``coef_`` computed into the weight array itself, a block of columns at a time, and
        the average let go: the coefficients without a second weight-sized array (the model
        export's, at the end of a run). The solver is spent: it cannot train or score after."""
        for lo in range(0, self.n_features, block):
            hi = min(self.n_features, lo + block)
            self.w[:, lo:hi] = self._coef_block(lo, hi)
        coef, self.w, self.aw = self.w, None, None
        return coef

    @property
    def intercept_(self) -> np.ndarray:
        return self.state[:, AVERAGE_INTERCEPT if self._averaged() else INTERCEPT].copy()

    def nonzero_weights(self, block: int = 1 << 14) -> int:
        """Counted a block of columns at a time: no copy of the weights."""
        return sum(int(np.count_nonzero(self._coef_block(lo, lo + block))) for lo in range(0, self.n_features, block))

    def get_state(self) -> dict:
        """The weights with the lazy scale and average factors folded in (the same model:
        wscale 1, average_a 0, average_b 1, so a mean of states is a mean of models)."""
        binding.sgd_fold_scale(self.w, self.aw, self.state, self.average)
        return {"w": self.w, "aw": self.aw, "state": self.state, "t_": float(self.t_)}

    def set_state(self, state: dict) -> None:
        self._replace(state, ("w", "aw", "state"))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"w": self.w, "aw": self.aw, "state": self.state, "classes_": self.classes_}

    def fit_codes(self, X, codes: np.ndarray):
        """``LinearSolver.fit_codes``; CSR parts of the kernel's types (the lean path's batches) go
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

    def _fit(self, batch: Parts | Dense, codes: np.ndarray) -> None:
        decay = SPARSE_INTERCEPT_DECAY if isinstance(batch, Parts) else 1.0  # scikit-learn's for dense rows
        self.t_ = binding.sgd_fit(*csr_parts(batch), codes, self.w, self.aw, self.state, self.t_, self.alpha,
                                  self.optimal_init, decay, self.average)

    def _scores(self, batch: Parts | Dense, out: np.ndarray) -> None:
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
