"""Score a svmlight file with an exported model, a parsed block at a time (numpy and the
native parser only): predictions out as they come, accuracy counted on the way."""

from __future__ import annotations

import os
import time
from typing import BinaryIO

import numpy as np

from svmcore.data import nativesvm
from svmcore.data.readers import _line_of_row, explain_svmlight_line
from svmcore.serve.model_file import LinearModel
from svmcore.spec.errors import DataError
from svmcore.spec.knobs import MAX_FEATURES


def _too_wide(model: LinearModel, block, path: str) -> DataError:
    k = int(np.argmax(block.indices))
    row = int(np.searchsorted(block.indptr, k, side="right") - 1)
    trained = os.path.basename(str(model.meta.get("dataset")))
    return DataError(f"uses feature {block.max_id:,}, but the model has {model.width:,} features (trained on "
                     f"{trained}); score files with the training data's columns, or train with feature "
                     "hashing (--hashing-bits) so that any column id folds into the model",
                     path, _line_of_row(path, block.first_row_line, row))


def _format(labels: np.ndarray, scores: np.ndarray | None) -> bytes:
    text = [f"{v:g}" for v in labels.tolist()]
    if scores is not None:
        text = [t + "\t" + ",".join(f"{s:.17g}" for s in row) for t, row in zip(text, scores.tolist())]
    return ("\n".join(text) + "\n").encode() if text else b""


def score_file(model: LinearModel, path: str, out: BinaryIO | None, with_scores: bool = False) -> dict:
    """Predictions for every row of ``path`` written to ``out`` (one label a line; with
    ``with_scores`` a tab and the score of each weight vector). Returns rows, rows/s and,
    when the file's labels are the model's classes, the accuracy."""
    hashed = bool(model.meta.get("hashing_bits"))
    rows = correct = unknown = 0
    t0 = time.monotonic()
    try:
        for b in nativesvm.iter_parsed_blocks(path, MAX_FEATURES):
            if not hashed and b.max_id > model.width:
                raise _too_wide(model, b, path)
            data, indices = model.prepare(b.data, b.indices)
            scores = model.scores(data, indices, b.indptr)
            pred = model.classes[model.predict_codes(scores)]
            if out is not None:
                out.write(_format(pred, scores if with_scores else None))
            known = np.isin(b.y, model.classes)
            unknown += int((~known).sum())
            correct += int((pred == b.y).sum())
            rows += b.n_rows
    except nativesvm.BlockError as e:
        raise DataError(explain_svmlight_line(e.line) or f"is not valid svmlight ({e.reason})", path, e.line_number) from None
    seconds = time.monotonic() - t0
    if rows == 0:
        raise DataError("has no rows to score", path)
    labelled = unknown < rows
    return {"rows": rows, "score_s": seconds, "rows_per_s": rows / seconds if seconds > 0 else None,
            "accuracy": correct / rows if labelled else None, "labels_not_classes": unknown,
            "accuracy_note": (None if unknown == 0 else
                              f"{unknown:,} rows have labels that are not the model's classes "
                              f"{model.classes.tolist()}" + (" (counted as errors)" if labelled else
                                                              ": no accuracy (an unlabelled file)"))}
