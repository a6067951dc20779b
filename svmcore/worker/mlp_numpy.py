"""A multilayer perceptron written with numpy, with gradient checkpointing.

Fully connected ReLU layers, a sigmoid (two classes) or softmax output with log loss,
L2 penalty ``alpha`` and Adam, as scikit-learn's ``MLPClassifier`` does by default
(learning rate 1e-3, betas 0.9 and 0.999, epsilon 1e-8, Glorot-uniform initial
weights). Unlike scikit-learn, one call of ``partial_fit`` is one Adam step on the
whole batch it is given, and the first layer reads sparse CSR input directly
(``X @ W1`` and ``X.T @ delta1`` with scipy).

Checkpointing (``checkpoint=k``): the forward pass keeps the input and every k-th
hidden layer's activations only (k = 0 keeps them all); the backward pass recomputes
each segment between two kept layers from the kept one when it reaches it, and drops
it once its gradients are taken. The recomputation repeats the very same operations
on the very same inputs, so the weights come out bitwise equal to a run without
checkpointing; what it costs is one more forward pass through the layers it dropped.

Each layer's gradient is applied as soon as it is known (the layer below it only
needs its weights before the update), so one layer's gradient exists at a time.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from svmcore.spec.config import kept_layers

LEARNING_RATE = 1e-3
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8


class NumpyMLP:
    def __init__(self, n_features: int, hidden: tuple[int, ...], classes, alpha: float = 1e-4,
                 checkpoint: int = 0, seed: int = 0, dtype=np.float64, learning_rate: float = LEARNING_RATE):
        self.classes_ = np.asarray(classes)
        self.binary = self.classes_.shape[0] == 2
        outputs = 1 if self.binary else self.classes_.shape[0]
        self.sizes = [n_features, *hidden, outputs]
        self.depth = len(hidden)
        self.alpha, self.lr, self.checkpoint = alpha, learning_rate, checkpoint
        self.dtype = np.dtype(dtype)
        rng = np.random.default_rng(seed)
        self.coefs_, self.intercepts_ = [], []
        for i, (a, b) in enumerate(zip(self.sizes, self.sizes[1:])):
            factor = 2.0 if self.binary and i == len(self.sizes) - 2 else 6.0  # scikit-learn's Glorot bounds
            bound = np.sqrt(factor / (a + b))
            self.coefs_.append(rng.uniform(-bound, bound, (a, b)).astype(self.dtype))
            self.intercepts_.append(rng.uniform(-bound, bound, b).astype(self.dtype))
        self._m = [np.zeros_like(p) for p in self._params()]
        self._v = [np.zeros_like(p) for p in self._params()]
        self.t = 0
        self.recomputed_layers = 0  # hidden layers computed twice, over all steps (the time checkpointing costs)

    def _params(self) -> list[np.ndarray]:
        return [p for pair in zip(self.coefs_, self.intercepts_) for p in pair]

    # ------------------------------------------------------------ forward

    def _layer(self, i: int, a):
        """Layer i+1's pre-activation from layer i's activation ``a`` (i = 0: the input)."""
        z = a @ self.coefs_[i]
        z = np.asarray(z, dtype=self.dtype)  # sparse @ dense is dense; keep our dtype
        z += self.intercepts_[i]
        return z

    def _hidden(self, i: int, a):
        z = self._layer(i, a)
        np.maximum(z, 0, out=z)
        return z

    def _output(self, z: np.ndarray) -> np.ndarray:
        if self.binary:
            np.negative(z, out=z)
            np.exp(z, out=z)
            z += 1
            np.reciprocal(z, out=z)
            return z
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        return z

    def _forward(self, X, keep: set[int] | None):
        """Output probabilities, and the hidden activations in ``keep`` (None: all)."""
        acts: list = [X] + [None] * self.depth
        a = X
        for i in range(self.depth):
            a = self._hidden(i, a)
            if keep is None or i + 1 in keep:
                acts[i + 1] = a
        return self._output(self._layer(self.depth, a)), acts

    def predict(self, X) -> np.ndarray:
        X = self._input(X)
        p, _ = self._forward(X, keep=set())
        idx = (p[:, 0] > 0.5).astype(np.intp) if self.binary else p.argmax(axis=1)
        return self.classes_[idx]

    def _input(self, X):
        if sp.issparse(X):
            return X.tocsr().astype(self.dtype, copy=False)
        return np.asarray(X, dtype=self.dtype)

    # ------------------------------------------------------------ training

    def loss(self, X, y) -> float:
        """Log loss plus ``alpha / 2 * |W|^2 / rows``, as scikit-learn defines it."""
        X = self._input(X)
        p, _ = self._forward(X, keep=set())
        t = self._targets(y)
        eps = np.finfo(p.dtype).eps
        p = np.clip(p, eps, 1 - eps)
        if self.binary:
            ll = -(t * np.log(p) + (1 - t) * np.log(1 - p)).sum()
        else:
            ll = -(t * np.log(p)).sum()
        n = X.shape[0]
        return float(ll / n + 0.5 * self.alpha * sum(float((w * w).sum()) for w in self.coefs_) / n)

    def _targets(self, y) -> np.ndarray:
        idx = np.searchsorted(self.classes_, np.asarray(y))
        if self.binary:
            return idx.astype(self.dtype)[:, None]
        t = np.zeros((idx.shape[0], self.classes_.shape[0]), self.dtype)
        t[np.arange(idx.shape[0]), idx] = 1
        return t

    def gradients(self, X, y) -> list[np.ndarray]:
        """The loss's gradient for every parameter (coefs and intercepts interleaved),
        without updating: for checking against finite differences."""
        grads: list = [None] * (2 * (self.depth + 1))

        def keep(i, gw, gb):
            grads[2 * i], grads[2 * i + 1] = gw.copy(), gb.copy()

        self._backward(self._input(X), y, keep)
        return grads

    def partial_fit(self, X, y, classes=None) -> NumpyMLP:
        """One Adam step on the batch (X, y)."""
        self.t += 1
        lr_t = self.lr * np.sqrt(1 - BETA2 ** self.t) / (1 - BETA1 ** self.t)
        self._backward(self._input(X), y, lambda i, gw, gb: self._adam(i, gw, gb, lr_t))
        return self

    def _adam(self, i: int, gw: np.ndarray, gb: np.ndarray, lr_t: float) -> None:
        for j, (p, g) in enumerate(((self.coefs_[i], gw), (self.intercepts_[i], gb))):
            m, v = self._m[2 * i + j], self._v[2 * i + j]
            m *= BETA1
            m += (1 - BETA1) * g
            v *= BETA2
            np.square(g, out=g)  # g is ours and no longer needed: square in place
            g *= 1 - BETA2
            v += g
            np.sqrt(v, out=g)
            g += EPSILON
            np.divide(m, g, out=g)
            g *= lr_t
            p -= g

    def _backward(self, X, y, apply) -> None:
        """Forward (keeping the checkpointed layers), then backward layer by layer:
        ``apply(i, grad_W_i, grad_b_i)`` is called from the last layer down, after
        layer i's weights have been used for the delta below it."""
        n = X.shape[0]
        keep = None if self.checkpoint <= 1 else set(kept_layers(self.depth, self.checkpoint))
        p, acts = self._forward(X, keep)
        delta = p
        delta -= self._targets(y)
        delta /= n  # the mean loss's gradient at the output's pre-activation
        for i in range(self.depth, -1, -1):  # layer i maps acts[i] to layer i+1
            if acts[i] is None:
                self._recompute(acts, i)
            a = acts[i]
            gw = a.T @ delta
            gw = np.asarray(gw.toarray() if sp.issparse(gw) else gw, dtype=self.dtype)
            gw += (self.alpha / n) * self.coefs_[i]
            gb = delta.sum(axis=0)
            below = None
            if i > 0:
                below = delta @ self.coefs_[i].T
                below *= a > 0  # ReLU's derivative, read off its output
            apply(i, gw, gb)
            del gw, gb
            if i > 0:
                acts[i] = None  # done with this layer: drop it (a kept one is not needed again either)
            delta = below

    def _recompute(self, acts: list, i: int) -> None:
        """Fill ``acts`` from the nearest kept layer below i up to i."""
        c = i
        while acts[c] is None:
            c -= 1
        a = acts[c]
        for j in range(c, i):
            a = self._hidden(j, a)
            acts[j + 1] = a
            self.recomputed_layers += 1
