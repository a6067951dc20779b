"""FTRL-proximal (McMahan et al., 2013, "Ad click prediction: a view from the trenches",
algorithm 1) in the native library (``native/ftrl.c``): logistic loss, per-coordinate learning
rates, L1 and L2; one vector per class above two (one-vs-rest), rows in the order given.

Each weight vector keeps two arrays per feature, ``z`` (the gradients seen, less a proximal
correction) and ``n`` (the sum of squared gradients). The weights are not stored: for each row,
the weight of each of its nonzeros is computed from ``z`` and ``n`` (zero where ``|z| <= l1``,
which makes the model sparse). The intercept is one more coordinate with value 1, not
regularised. Zero values leave their coordinates untouched, so dense and sparse input of the
same rows give the same weights.
"""

from __future__ import annotations

import numpy as np

from svmcore.data.native import binding
from svmcore.data.rows import Dense, Parts
from svmcore.worker.native_sgd import csr_parts
from svmcore.worker.solvers import LinearSolver


class NativeFTRL(LinearSolver):
    """Logistic-loss linear classifier by FTRL-proximal, in the native library."""

    def __init__(self, l1: float, l2: float, alpha: float, beta: float, n_features: int, classes):
        super().__init__(n_features, classes)
        self.l1, self.l2 = float(l1), float(l2)
        self.alpha, self.beta = float(alpha), float(beta)
        if self.l1 < 0 or self.l2 < 0 or not self.alpha > 0 or self.beta < 0:
            raise ValueError(f"FTRL needs l1, l2, beta >= 0 and alpha > 0, not {l1}, {l2}, {beta} and {alpha}")
        binding.library()  # built (or found) now: a missing compiler is an error here, not mid-run
        self.z = np.zeros((self.n_vectors, self.n_features))
        self.n = np.zeros((self.n_vectors, self.n_features))
        self.zb = np.zeros(self.n_vectors)
        self.nb = np.zeros(self.n_vectors)
        self.t_ = 0  # rows seen

    @classmethod
    def from_config(cls, cfg, width: int, classes, alpha: float, l2: float | None) -> NativeFTRL:
        return cls(cfg.l1, l2, cfg.ftrl_alpha, cfg.ftrl_beta, width, classes)

    def _rates(self) -> tuple[float, float, float, float]:
        return self.l1, self.l2, self.alpha, self.beta

    def _fit(self, batch: Parts | Dense, codes: np.ndarray) -> None:
        binding.ftrl_fit(*csr_parts(batch), codes, self.z, self.n, self.zb, self.nb, *self._rates())
        self.t_ += codes.shape[0]

    def _scores(self, batch: Parts | Dense, out: np.ndarray) -> None:
        """Each weight computed from z and n where a row needs it: nothing as large as the
        weights is allocated."""
        binding.ftrl_decision(*csr_parts(batch), self.z, self.n, *self._rates(), self.intercept_, out)

    @property
    def coef_(self) -> np.ndarray:
        """The weights, computed from z and n into one new array (a third array per
        feature while it is held)."""
        out = np.empty_like(self.z)
        binding.ftrl_weights(self.z, self.n, *self._rates(), out)
        return out

    def release_coef(self) -> np.ndarray:
        """``coef_`` computed into z itself (each weight from its own z and n) and n let go: the
        coefficients without a third weight-sized array (the model export's, at the end of a
        run: at 2^24 features it held 128 MiB more than training did). The solver is spent: it
        cannot train or score after."""
        binding.ftrl_weights(self.z, self.n, *self._rates(), self.z)
        coef, self.z, self.n = self.z, None, None
        return coef

    @property
    def intercept_(self) -> np.ndarray:
        return -self.zb / ((self.beta + np.sqrt(self.nb)) / self.alpha)

    def nonzero_weights(self, block: int = 1 << 14) -> int:
        """The weights with ``|z| > l1``, counted a block of columns at a time without computing them."""
        return sum(int(np.count_nonzero(np.abs(self.z[:, lo:lo + block]) > self.l1))
                   for lo in range(0, self.n_features, block))

    def get_state(self) -> dict:
        """z and n per feature and for the intercept, and the rows seen. (Runs with workers
        refuse FTRL: a mean of z and n is not a mean of models.)"""
        return {"z": self.z, "n": self.n, "zb": self.zb, "nb": self.nb, "t_": self.t_}

    def set_state(self, state: dict) -> None:
        self._replace(state, ("z", "n", "zb", "nb"))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"z": self.z, "n": self.n, "zb": self.zb, "nb": self.nb, "classes_": self.classes_}
