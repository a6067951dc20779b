"""Synthetic datasets, generated chunk by chunk so any size fits in memory.

Chunk k is generated from (seed, k) alone, so the same rows come out whatever
batch size or mode reads them, and 10 million rows never need to be held at once.
"""

from __future__ import annotations

import functools
from typing import Iterator

import numpy as np

from svmcore.data.lazy_sparse import sp

GEN_CHUNK_ROWS = 10_000
LABEL_NOISE = 0.05


def _hash_unit(idx: np.ndarray, seed: int) -> np.ndarray:
    """A deterministic value in [0, 1) per feature id, without storing a vector
    as long as the feature space (which may be 2^26 long)."""
    h = idx.astype(np.uint64)  # a copy, then in place: two temporaries of its size, not seven
    h += np.uint64(seed * 7919 + 1)
    h *= np.uint64(0x9E3779B97F4A7C15)
    t = h >> np.uint64(31)
    h ^= t
    h *= np.uint64(0xBF58476D1CE4E5B9)
    np.right_shift(h, np.uint64(29), out=t)
    h ^= t
    del t
    np.right_shift(h, np.uint64(11), out=h)
    u = h.astype(np.float64)
    del h
    u /= float(1 << 53)
    return u


HEAD_TOKENS = 1 << 14  # the hidden model uses the ~16k most frequent tokens, as sentiment words are common


def hidden_weights(rank: np.ndarray, seed: int) -> np.ndarray:
    """The hidden sparse linear model over token ranks: 30% of the head vocabulary
    carries a weight in [-1, 1]; rare tokens carry none (they could not be learnt)."""
    u = _hash_unit(rank, seed)
    v = _hash_unit(rank, seed + 104729)
    return np.where((u < 0.3) & (rank < HEAD_TOKENS), 2.0 * v - 1.0, 0.0)


def sparse_text_chunk(k: int, n_rows: int, features: int, nnz_per_row: int, seed: int,
                      positive_fraction: float = 0.5) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows of text-like data: token ranks drawn from a Zipf-like (1/rank) law over
    ``features`` (ids scrambled), tf-idf-like values (1+log tf) * idf(rank), L2-normalised
    rows, labels from a hidden sparse linear model with 5% of labels flipped.

    With ``positive_fraction`` below one half the rare class is the rows that hold one of
    a few marker tokens (as spam holds its tell-tale words), so it is learnable at any
    share, and the noise is class-conditional (5% of positives flipped, and as many
    negatives)."""
    rng = np.random.default_rng([seed, k])
    X, score, marker = _raw_counts(rng, n_rows, features, nnz_per_row, seed, with_marker=positive_fraction != 0.5)
    if positive_fraction == 0.5:
        y = np.where(score > _balanced_threshold(features, nnz_per_row, seed), 1.0, -1.0)
        flip = rng.random(n_rows) < LABEL_NOISE
    else:
        y = np.where(marker < _marker_threshold(features, nnz_per_row, seed, positive_fraction), 1.0, -1.0)
        u = rng.random(n_rows)
        flip = np.where(y > 0, u < LABEL_NOISE, u < LABEL_NOISE * positive_fraction / (1.0 - positive_fraction))
    y[flip] = -y[flip]
    return X, y


def _raw_counts(rng: np.random.Generator, n_rows: int, features: int, nnz_per_row: int, seed: int,
                with_marker: bool = True) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray | None]:
    """The CSR rows, each row's hidden-model score and (``with_marker``) its marker value; the
    marker draws nothing from ``rng``, so leaving it out changes no other number."""
    # in place where the arithmetic allows, each temporary freed once used: a 10,000-row chunk held
    # about ten arrays of its draws' size at once (56 MiB for 5 MiB of CSR), and a stream run's
    # one-time text copy owned its peak; same operations in the same order, so the same bytes
    draws = rng.random((n_rows, nnz_per_row))
    # log-uniform rank: P(rank r) ~ 1/(r+1), bounded by the vocabulary
    draws *= np.log(features + 1.0)
    np.exp(draws, out=draws)
    np.floor(draws, out=draws)
    rank = draws.astype(np.int64).ravel()
    del draws
    rank -= 1
    np.clip(rank, 0, features - 1, out=rank)
    # scramble ids so that frequent tokens are not all at the low end
    key = np.repeat(np.arange(n_rows, dtype=np.int64), nnz_per_row)
    key *= features
    ids = rank * 2654435761
    ids += seed
    ids %= features
    key += ids
    del ids
    order = np.argsort(key, kind="stable")
    key = key[order]
    rank = rank[order]
    del order
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    tf = np.diff(np.r_[starts, key.size]).astype(np.float64)
    rank = rank[starts]
    rows, cols = np.divmod(key[starts], features)
    del key, starts
    idf = 1.0 + np.log1p(rank.astype(np.float64)) / 2.0
    data = np.log(tf)  # (1 + log tf) * idf
    del tf
    data += 1.0
    data *= idf
    del idf
    indptr = np.searchsorted(rows, np.arange(n_rows + 1)).astype(np.int64)
    norms = np.sqrt(np.add.reduceat(data**2, indptr[:-1])) if data.size else np.ones(n_rows)
    data /= np.repeat(norms, np.diff(indptr))
    X = sp.csr_matrix((data, cols.astype(np.int32), indptr), shape=(n_rows, features))
    del cols
    score = np.bincount(rows, weights=data * hidden_weights(rank, seed), minlength=n_rows)
    del rows
    # rows without a weighted token score exactly 0: break those ties by a coin
    score += 1e-9 * (rng.random(n_rows) - 0.5)
    if not with_marker:
        return X, score, None
    # the smallest marker value of a row's head tokens (1 when it has none)
    u = np.where(rank < HEAD_TOKENS, _hash_unit(rank, seed + 7), 1.0)
    marker = np.ones(n_rows)
    nonempty = np.diff(indptr) > 0
    if u.size:
        marker[nonempty] = np.minimum.reduceat(u, indptr[:-1][nonempty])
    return X, score, marker


@functools.lru_cache(maxsize=64)
def _balanced_threshold(features: int, nnz_per_row: int, seed: int) -> float:
    """Median score of a calibration sample, so that classes come out balanced."""
    rng = np.random.default_rng([seed, 2**31 - 1])
    _, score, _ = _raw_counts(rng, 2000, features, nnz_per_row, seed, with_marker=False)
    return float(np.median(score))


@functools.lru_cache(maxsize=64)
def _marker_threshold(features: int, nnz_per_row: int, seed: int, fraction: float) -> float:
    """Marker tokens are head tokens whose value is below this: chosen on a calibration
    sample so that ``fraction`` of rows hold at least one."""
    rng = np.random.default_rng([seed, 2**31 - 2])
    _, _, marker = _raw_counts(rng, 20_000, features, nnz_per_row, seed)
    return float(np.quantile(marker, fraction))


def dense_chunk(k: int, n_rows: int, features: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian features, a dense hidden linear model plus a mild nonlinearity
    (so kernels can help), 5% label noise."""
    rng = np.random.default_rng([seed, k])
    X = rng.standard_normal((n_rows, features))
    w = 2.0 * _hash_unit(np.arange(features), seed) - 1.0
    score = X @ w / np.sqrt(features) + 0.5 * (X[:, 0] * X[:, 1 % features])
    y = np.where(score > 0, 1.0, -1.0)
    flip = rng.random(n_rows) < LABEL_NOISE
    y[flip] = -y[flip]
    return X, y


def iter_synthetic(kind: str, rows: int, features: int, nnz_per_row: int, seed: int,
                   positive_fraction: float = 0.5) -> Iterator[tuple[sp.csr_matrix | np.ndarray, np.ndarray]]:
    """Yield (X, y) generation chunks covering rows [0, rows)."""
    n_chunks = (rows + GEN_CHUNK_ROWS - 1) // GEN_CHUNK_ROWS
    for k in range(n_chunks):
        n = min(GEN_CHUNK_ROWS, rows - k * GEN_CHUNK_ROWS)
        if kind == "sparse-text":
            yield sparse_text_chunk(k, n, features, nnz_per_row, seed, positive_fraction)
        else:
            yield dense_chunk(k, n, features, seed)


def marker_kinds(X: sp.csr_matrix, features: int, seed: int) -> np.ndarray:
    """Each row's kind: the column of its head token with the smallest marker value, the
    marker token that makes a positive row positive (``sparse_text_chunk``); -1 for a row
    without head tokens. Only the head vocabulary is looked up (16,384 columns at most)."""
    rank = np.arange(min(features, HEAD_TOKENS), dtype=np.int64)
    cols = (rank * 2654435761 + seed) % features  # the generator's scrambled ids
    u = _hash_unit(rank, seed + 7)
    by_col = np.argsort(cols, kind="stable")
    cols, u = cols[by_col], u[by_col]
    at = np.minimum(np.searchsorted(cols, X.indices), cols.shape[0] - 1)
    value = np.where(cols[at] == X.indices, u[at], 1.0)  # 1: not a head token
    lengths = np.diff(X.indptr)
    first = np.lexsort((value, np.repeat(np.arange(X.shape[0]), lengths)))[X.indptr[:-1][lengths > 0]]
    kinds = np.full(X.shape[0], -1, np.int64)
    kinds[lengths > 0] = np.where(value[first] < 1.0, X.indices[first], -1)
    return kinds


def sorted_by_label(make_chunks, kinds=None, budget_rows: int = GEN_CHUNK_ROWS
                    ) -> Iterator[tuple[sp.csr_matrix | np.ndarray, np.ndarray]]:
    """The rows of ``make_chunks()`` with every positive row first, then the rest, each in
    its original order: how many public libsvm files come. Two passes over the
    generator, so memory stays one chunk.

    With ``kinds`` (rows -> each row's kind, e.g. ``marker_kinds``) the positive rows come
    grouped by kind (kinds in increasing order, a kind's rows in file order), as rows gathered
    source by source do (w8a's positives: 38% of features shared one row apart, 4% between
    two at random): one pass counts each kind's rows, then each run of kinds holding at most
    ``budget_rows`` rows (or one bigger kind) is gathered in a pass of its own, so memory stays
    about a chunk."""
    if kinds is None:
        for positive in (True, False):
            for X, y in make_chunks():
                keep = (y > 0) if positive else (y <= 0)
                if keep.any():
                    yield X[keep], y[keep]
        return
    counts: dict[int, int] = {}
    for X, y in make_chunks():
        for k, c in zip(*np.unique(kinds(X[y > 0]), return_counts=True)):
            counts[int(k)] = counts.get(int(k), 0) + int(c)
    groups, rows = [[]], 0
    for k in sorted(counts):
        if groups[-1] and rows + counts[k] > budget_rows:
            groups.append([])
            rows = 0
        groups[-1].append(k)
        rows += counts[k]
    for group in groups:
        if not group:
            continue
        lo, hi = group[0], group[-1]
        Xs, ys, ks = [], [], []
        for X, y in make_chunks():
            X, y = X[y > 0], y[y > 0]
            k = kinds(X)
            mine = (k >= lo) & (k <= hi)
            Xs.append(X[mine]), ys.append(y[mine]), ks.append(k[mine])
        order = np.argsort(np.concatenate(ks), kind="stable")
        yield sp.vstack(Xs, format="csr")[order], np.concatenate(ys)[order]
        del Xs, ys, ks
    for X, y in make_chunks():
        keep = y <= 0
        if keep.any():
            yield X[keep], y[keep]
