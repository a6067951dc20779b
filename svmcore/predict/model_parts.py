"""The memory model's pricing of each model: the bytes of its parts and the units of work its
train phase does. A model's registry entry (``spec.registry``) names its pricing here.

Each pricing has ``parts(cfg, shape, nvec)``: {part: bytes} of the model (``model.parts`` adds
the data's, the batch's and the reader's), and ``work(cfg, shape, fam, nvec, row_work, batch,
steps)``: {time feature: units} (``model.time_features``)."""

from __future__ import annotations

from svmcore.spec.config import RunConfig, kept_layers
from svmcore.spec.registry import state_bytes
from svmcore.spec.units import MiB

# Arrays of 32 MiB or more (glibc's dynamic mmap threshold at its largest) are mapped afresh at every
# allocation, smaller ones reuse the heap. Measured CPU per weight-step of an MLP step here: 23 ns for an
# 8 MiB layer, 32 at 32 MiB, 35-40 from 64 MiB to 512 MiB: the cost levels off from 64 MiB.
FRESH_LAYER_BYTES = 64 * MiB


def _sgd_work(fam: str, n: int, epochs: int, work: float, weights: float, steps: int, fresh: float = 0.0) -> dict:
    return {f"sample_{fam}": float(n) * epochs * work, f"step_{fam}": float(steps) * weights,
            f"fresh_{fam}": float(steps) * fresh}


class Linear:
    """linear-svm: its solver's state over the columns (``registry.state_bytes``)."""

    @staticmethod
    def parts(cfg: RunConfig, shape, nvec: int) -> dict[str, float]:
        return {cfg.solver_entry.model_part: state_bytes(cfg, shape.width, nvec)}

    @staticmethod
    def work(cfg, shape, fam, nvec, row_work, batch, steps) -> dict[str, float]:
        return _sgd_work(fam, shape.train_rows, cfg.epochs, row_work, nvec * shape.width, steps)


class KernelApprox:
    """A fitted transform and the linear model over its components; in memory mode (one process,
    no student that needs the rows untransformed) every row transformed, else a batch."""

    @staticmethod
    def parts(cfg: RunConfig, shape, nvec: int) -> dict[str, float]:
        C = cfg.n_components
        p = {cfg.solver_entry.model_part: state_bytes(cfg, C, nvec)}
        if cfg.approximation == "nystroem":
            p["transform_nystroem"] = C * shape.sparse_row(8) + 3 * C * C * 8
        else:
            p["transform_rff"] = shape.width * C * 8
        if cfg.mode_entry.holds_rows and cfg.workers == 1 and not cfg.distill:
            p["transformed"] = shape.train_rows * C * cfg.compute_bytes
        else:
            p["batch_transformed"] = min(cfg.batch_size, shape.train_rows) * C * 8
        return p

    @staticmethod
    def work(cfg, shape, fam, nvec, row_work, batch, steps) -> dict[str, float]:
        C = cfg.n_components  # outside memory mode each batch is transformed as it comes
        work = C + (0 if cfg.mode_entry.holds_rows else row_work * C)
        return _sgd_work(fam, shape.train_rows, cfg.epochs, work, nvec * C, steps)


class KernelSVM:
    @staticmethod
    def parts(cfg: RunConfig, shape, nvec: int) -> dict[str, float]:
        rows = shape.train_rows
        return {"model_svm": min(cfg.cache_size_mb * MiB, rows ** 2 * 8) + rows * shape.sparse_row(8)}

    @staticmethod
    def work(cfg, shape, fam, nvec, row_work, batch, steps) -> dict[str, float]:
        return {"svm": float(shape.train_rows) ** 2 * shape.nnz_per_row}


class MLP:
    """scikit-learn's MLPClassifier (``mlp_bytes``)."""

    @staticmethod
    def parts(cfg: RunConfig, shape, nvec: int) -> dict[str, float]:
        held, step = mlp_bytes(cfg, shape.width, nvec)
        return {"model_mlp": held, "model_mlp_step": step}

    @staticmethod
    def work(cfg, shape, fam, nvec, row_work, batch, steps) -> dict[str, float]:
        n = shape.train_rows
        layers, _ = _layers(cfg, shape.width, nvec)
        step_rows = min(batch, 200)  # the MLP's own batch size (models.mlp)
        steps = cfg.epochs * (n // batch * -(-batch // step_rows) + -(-(n % batch) // step_rows))
        return _sgd_work(fam, n, cfg.epochs, row_work * cfg.hidden_sizes[0], sum(layers), steps,
                         fresh_weights(cfg, layers))


class MLPNumpy:
    """The numpy MLP (``mlp_numpy_bytes``) and its activations (``activation_values``)."""

    @staticmethod
    def parts(cfg: RunConfig, shape, nvec: int) -> dict[str, float]:
        held, step = mlp_numpy_bytes(cfg, shape.width, nvec)
        rows = min(cfg.batch_size, shape.train_rows)
        return {"model_mlp": held, "model_mlp_step": step,
                "activations": rows * activation_values(cfg, nvec) * cfg.compute_bytes}

    @staticmethod
    def work(cfg, shape, fam, nvec, row_work, batch, steps) -> dict[str, float]:
        h = list(cfg.hidden_sizes)
        dense_products = [a * b for a, b in zip(h, h[1:] + [nvec])]
        fresh = fresh_weights(cfg, [shape.width * h[0], *dense_products])
        kept = set(kept_layers(len(h), cfg.checkpoint))
        # hidden layers between kept ones are computed twice (layer j's product is h[j-2] x h[j-1])
        again = sum(h[j - 2] * h[j - 1] if j > 1 else row_work * h[0] for j in range(1, len(h) + 1) if j not in kept)
        work = row_work * h[0] + sum(dense_products) + again / 3.0  # a recomputed product: a third of a step's
        return _sgd_work(fam, shape.train_rows, cfg.epochs, work, shape.width * h[0] + sum(dense_products), steps,
                         fresh)


def fresh_weights(cfg: RunConfig, layers: list[int]) -> int:
    """The weights of the layers whose arrays (in the compute dtype) are ``FRESH_LAYER_BYTES``
    or more: each step's temporaries of their size come as new zeroed pages
    (``time_features``' ``fresh_<family>``)."""
    return sum(w for w in layers if w * cfg.compute_bytes >= FRESH_LAYER_BYTES)


def _layers(cfg: RunConfig, width: int, outputs: int) -> tuple[list[int], int]:
    """An MLP's weights per layer and its biases, from ``width`` inputs to ``outputs``."""
    sizes = [width, *cfg.hidden_sizes, outputs]
    return [a * b for a, b in zip(sizes, sizes[1:])], sum(sizes[1:])


def mlp_bytes(cfg: RunConfig, width: int, outputs: int) -> tuple[float, float]:
    """What scikit-learn's MLPClassifier (solver adam) holds: (between steps, added
    during a step). Weights are in the batch's dtype (float64, or float32 for float32
    and float16 storage). Per weight it keeps ``coefs_``, ``_best_coefs`` (a copy made
    at the first partial_fit) and Adam's first and second moments: 4 copies. A step
    adds the dense gradient (``X.T @ delta`` is layer-sized even for sparse X) and,
    while Adam builds the update, 16 bytes per weight of the largest layer in
    temporaries: Adam's learning rate is a numpy float64, so the update is computed in
    float64 whatever the weights' dtype. Measured: 2^20 x 64 float64 (512 MiB of
    weights) held 4.0x between steps and 7.0x at a step's peak; tests/unit/test_estimate.py
    checks both counts against scikit-learn with tracemalloc."""
    cb = cfg.compute_bytes
    layers, biases = _layers(cfg, width, outputs)
    return 4.0 * (sum(layers) + biases) * cb, (sum(layers) + biases) * cb + 2.0 * max(layers) * 8


def mlp_numpy_bytes(cfg: RunConfig, width: int, outputs: int) -> tuple[float, float]:
    """What the numpy MLP holds: (between steps, added during a step). Between steps the
    weights and Adam's two moments (3 copies, in the compute dtype); during a step one
    layer's gradient at a time (each is applied as soon as it is known) and one Adam
    temporary of the same size."""
    cb = cfg.compute_bytes
    layers, biases = _layers(cfg, width, outputs)
    return 3.0 * (sum(layers) + biases) * cb, 2.0 * max(layers) * cb


def activation_values(cfg: RunConfig, outputs: int) -> float:
    """Values per batch row (in the compute dtype) that the numpy MLP's step holds at its
    fullest. The backward pass at hidden layer i holds the kept layers up to i, the
    layers recomputed from the nearest kept one below i up to i, the delta coming down
    (layer i+1's width, or the outputs') and the delta it makes (layer i's width) with
    ReLU's mask (one byte a value). Without checkpointing that is every hidden layer
    but the top one, from the second step of the backward pass on."""
    widths = list(cfg.hidden_sizes)
    depth = len(widths)
    kept = set(kept_layers(depth, cfg.checkpoint))
    mask = 1.0 / cfg.compute_bytes
    most = 0.0
    for i in range(depth, 0, -1):
        c = max((j for j in kept if j <= i), default=0)
        held = sum(widths[j - 1] for j in kept if j <= c) + sum(widths[j - 1] for j in range(c + 1, i + 1))
        coming = widths[i] if i < depth else outputs
        most = max(most, held + coming + widths[i - 1] * (1 + mask))
    return most
