"""Export a trained linear model for serving (``svmcore.serve.model_file``'s format).

Called once at the end of a run, in the worker, while the model and the held-out rows
are still there. The coefficients are read through the model's ``coef_`` and
``intercept_`` (scikit-learn's, and the compiled solvers' which fold in the weight
scale and the running average, or compute FTRL's weights from z and n): one
weight-sized float64 copy, for the time of the export. The export picks the smallest
layout that loses nothing:

- sparse (column, value) pairs when they take fewer bytes than the dense vector (FTRL
  with L1 leaves most weights at zero; SGD's hinge steps touch every column seen);
- float32 values when, on the first ``CHECK_ROWS`` held-out rows, no prediction changes
  against float64; float64 otherwise (the check says how many would have).

It also scores those rows with the exported weights and records the difference from the
training process's own scores, so the serving side's numbers can be traced to training.
"""

from __future__ import annotations

import logging

import numpy as np

from svmcore.serve import model_file, model_folder
from svmcore.spec.config import RunConfig

log = logging.getLogger(__name__)

CHECK_ROWS = 2000


def not_exportable(cfg: RunConfig) -> str | None:
    """Why a run's model cannot be exported, or None."""
    if not cfg.model_entry.exportable and not cfg.distill:  # a distilled run exports its linear-svm student
        return (f"{cfg.model} models are not exportable yet: only linear-svm is (kernel-approx would need its "
                "fitted transformer in the serving process); with distill on, the run exports a linear-svm student")
    if not cfg.is_builtin:
        from svmcore.data.readers import sniff_format
        if sniff_format(cfg.dataset) == "text":
            return "trained on raw text (tokens hashed while reading): the serving process reads svmlight rows only"
    return None


def _parts(rows):
    """(data float64, indices int32, indptr int64 from 0) of the first ``CHECK_ROWS`` of the
    test rows (a block, or rows left on disk), without importing scipy."""
    P = rows.slice(0, min(CHECK_ROWS, rows.n_rows)).sparse().from_zero()
    return np.asarray(P.data, np.float64), np.asarray(P.indices, np.int32), np.asarray(P.indptr, np.int64)


def _compare(model: model_file.LinearModel, parts, reference: np.ndarray) -> dict:
    scores = model.scores(*parts)
    changed = int((model.predict_codes(scores) != model.predict_codes(reference)).sum())
    diff = float(np.abs(scores - reference).max()) if scores.size else 0.0
    return {"changed_predictions": changed, "max_score_diff": diff, "scores": scores}


def _check(coef: np.ndarray, intercept: np.ndarray, classes, width: int, own: np.ndarray, parts) -> dict:
    """The exported weights' scores on the check rows, in float64 and float32, against the
    training process's own scores ``own``."""
    meta = {"input_precision": "float64"}  # the check rows are in compute form already
    m64 = model_file.LinearModel(meta, np.asarray(classes), intercept, width, coef=coef)
    as64 = _compare(m64, parts, own)
    m32 = model_file.LinearModel(meta, np.asarray(classes), intercept, width, coef=coef.astype(np.float32))
    as32 = _compare(m32, parts, as64["scores"])
    return {"rows": int(parts[2].shape[0] - 1),
            "vs_training": {k: as64[k] for k in ("changed_predictions", "max_score_diff")},
            "float32_vs_float64": {k: as32[k] for k in ("changed_predictions", "max_score_diff")}}


def _arrays(coef: np.ndarray, dtype, sparse: bool) -> dict:
    if not sparse:
        return {"coef": coef.astype(dtype)}
    cols = [np.flatnonzero(c) for c in coef]
    return {"indptr": np.concatenate([[0], np.cumsum([c.shape[0] for c in cols])]).astype(np.int64),
            "indices": np.concatenate(cols).astype(np.int32),
            "values": np.concatenate([c[k] for c, k in zip(coef, cols)]).astype(dtype)}


def _export(run_dir: str, model, cfg: RunConfig, classes, check_rows) -> dict:
    intercept = np.asarray(model.intercept_, dtype=np.float64).ravel()
    parts = _parts(check_rows)
    own = np.asarray(model.decision_function(parts), np.float64).reshape(-1, intercept.shape[0])  # training's scores
    # the run's last use of its model: our SGD and FTRL solvers compute the coefficients in place
    release = getattr(model, "release_coef", None)
    coef = np.atleast_2d(release() if release is not None else model.coef_)
    if coef.dtype != np.float32:  # a float32 model state's coefficients are exact in float32: kept as they are
        coef = np.asarray(coef, dtype=np.float64)
    nvec, width = coef.shape
    check = _check(coef, intercept, classes, width, own, parts)
    nnz = int(np.count_nonzero(coef))
    sizes = {f"{layout}_{name}": model_file.weight_bytes(nvec, width, nnz, size, layout == model_folder.SPARSE)
             for layout in (model_folder.DENSE, model_folder.SPARSE) for name, size in (("float64", 8), ("float32", 4))}
    float32 = check["float32_vs_float64"]["changed_predictions"] == 0
    dtype = "float32" if float32 else "float64"
    sparse = sizes[f"sparse_{dtype}"] < sizes[f"dense_{dtype}"]
    arrays = _arrays(coef, np.float32 if float32 else np.float64, sparse)
    del coef
    meta = {"model": "linear-svm" if cfg.distill else cfg.model, "distilled_from": cfg.model if cfg.distill else None,
            "solver": cfg.solver, "loss": cfg.solver_entry.loss, "model_state": cfg.model_state,
            "classes": np.asarray(classes).tolist(), "width": width, "vectors": nvec,
            "storage": model_folder.SPARSE if sparse else model_folder.DENSE, "dtype": dtype, "intercept": intercept.tolist(),
            "nonzero_weights": nnz, "hashing_bits": cfg.hashing_bits, "input_precision": cfg.precision,
            "dataset": cfg.dataset, "model_bytes": sizes[f"{'sparse' if sparse else 'dense'}_{dtype}"],
            "sizes": sizes, "check": check}
    arrays[model_file.CHECK_SCORES[:-4]] = own
    folder = model_file.write(run_dir, meta, arrays)
    # each file's size and SHA-256: the run's summary binds the model to this run (app.serving.model_of)
    return {"exported": True, "folder": folder, "files": model_folder.digests(folder), **{k: meta[k] for k in (
        "storage", "dtype", "model_bytes", "sizes", "nonzero_weights", "check")}}


def save_model(run_dir: str | None, model, cfg: RunConfig, classes, check_rows) -> dict:
    """Export ``model`` into ``run_dir/model/``; ``check_rows``: the test rows (a block, or
    rows on disk: ``.slice``). This is the
    run's last use of its model: an SGD or FTRL solver of ours gives its weights up to the
    file (``release_coef``) and cannot score after.
    Returns ``{"model_export": {...}}`` for the run's summary (what was written, or why
    not); a failed write is logged and reported there, and never fails the run."""
    if not run_dir:
        return {}
    why = not_exportable(cfg)
    if why:
        return {"model_export": {"exported": False, "reason": why}}
    try:
        return {"model_export": _export(run_dir, model, cfg, classes, check_rows)}
    except OSError as e:
        log.warning("the model of %s could not be exported: %s", run_dir, e)
        return {"model_export": {"exported": False, "reason": f"the export could not be written ({e})"}}
