"""The size of a linear model as a sparse copy would hold it (no imports: the lean worker uses it)."""

from __future__ import annotations


def sparse_model_size(nnz: int, nvec: int, width: int) -> dict:
    """Nonzero weights of ``nvec`` vectors of ``width`` columns and the exact bytes of a sparse
    copy (``sparse_model_bytes``: an index and a float64 value per nonzero, int32 indices below
    2^31 columns, else int64; plus, per weight vector, its intercept and an int64 row pointer)."""
    index_bytes = 4 if width < 2**31 else 8
    return {"nonzero_weights": nnz, "weights": nvec * width,
            "sparse_model_bytes": nnz * (index_bytes + 8) + nvec * 8 + (nvec + 1) * 8}
