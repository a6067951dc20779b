"""The order in which a shuffled pass over a memory map or the spill reads its rows.

A window of ``window_rows`` rows is what a pass holds in memory to shuffle. Read as a
few batch-sized blocks, a window can only mix rows that lay together in the file: on a
label-sorted file the whole minority class sits in one or two blocks, lands in one or
two windows an epoch, and SGD drifts to the majority class in between
(bench/results/label-sorted-before.md). So each window is drawn from ``PIECES_PER_WINDOW`` small pieces picked at random across
the whole file, and what it holds is unchanged (the window's rows, plus one piece while it
is read). Smaller pieces mean more reads (a seek and a read of each of the spill's four
files a piece). A window is then close to a random sample of the rows only if a piece's rows
are not neighbours of the file, which in many files are alike: the spill is written in the first
pass's shuffled order (``spill``), and a shuffled memmap run maps a copy whose chunks hold
their rows mixed (``copies.binary_copy``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from svmcore.data.native import binding
from svmcore.data.rows import native

log = logging.getLogger(__name__)


def generator(entropy):
    """``np.random.default_rng(entropy)``, or the native library's twin of it (the same draws for
    ``permutation`` and ``shuffle``), so that a run that needs nothing else never loads numpy.random."""
    return binding.Generator(entropy) if native() else np.random.default_rng(entropy)


@dataclass(frozen=True)
class Shuffle:
    """How training rows are shuffled: every pass visits them in a new random order drawn from
    (seed, epoch) only, so the same seed gives the same order; ``window_rows`` bounds what a
    memory-mapped or streamed feed holds to shuffle."""

    seed: int
    window_rows: int
    stage: int = 0  # 0: a run's own passes; a data-parallel shard's: its number

    def rng(self, epoch: int):
        """The pass's generator, seeded by (seed, epoch, stage)."""
        return generator([self.seed, epoch, self.stage])

# 64 pieces of 256 rows left memmap 2.5 points below memory mode, 256 of 64 rows 0.6 (bench/label_sorted.py)
PIECES_PER_WINDOW = 256
MIN_PIECE_ROWS = 64  # the spill's index step: a piece is a whole number of index steps


def piece_rows(window_rows: int) -> int:
    """Rows of each piece a window is drawn from: ``window_rows / PIECES_PER_WINDOW``,
    at least ``MIN_PIECE_ROWS`` and a multiple of it (the default 16,384-row window: 64)."""
    per = max(MIN_PIECE_ROWS, window_rows // PIECES_PER_WINDOW)
    return per // MIN_PIECE_ROWS * MIN_PIECE_ROWS


def permutation32(n: int, rng) -> np.ndarray:
    """``rng.permutation(n)`` as int32 (4 bytes an item, not 8, and never 8 on the way): the
    same order, draw for draw (numpy's permutation is a shuffle of ``arange(n)``)."""
    if n > np.iinfo(np.int32).max:
        return rng.permutation(n)
    order = np.arange(n, dtype=np.int32)
    rng.shuffle(order)
    return order


def window_pieces(n_pieces: int, per_window: int, rng: np.random.Generator, folder: str | None = None
                  ) -> Iterator[np.ndarray]:
    """Piece numbers 0..n_pieces-1 in one random order over the whole file, ``per_window``
    (at least one) at a time: each window's pieces come from anywhere in the file. With
    ``folder`` the order is written there once drawn and read back a window at a time, so
    the pass does not hold it (4 bytes a piece: 0.6 MiB at 10^7 rows of 64-row pieces); it
    is drawn at the start of the pass, before the first window is read."""
    order = permutation32(n_pieces, rng)
    per_window = max(1, per_window)
    if folder is not None:
        path = os.path.join(folder, "order.bin")
        try:
            order.tofile(path)
        except OSError as e:  # a full disk: the pass holds its order instead of failing
            log.warning("could not write the pieces' order to %s (%s): it stays in memory", folder, e)
            if os.path.exists(path):
                os.remove(path)
        else:
            dtype, order = order.dtype, None
            yield from _read_back(path, dtype, n_pieces, per_window)
            return
    for w in range(0, n_pieces, per_window):
        yield order[w:w + per_window]


def _read_back(path: str, dtype, n_pieces: int, per_window: int) -> Iterator[np.ndarray]:
    """The order written at ``path``, a window's pieces at a time; the file goes at the end."""
    try:
        with open(path, "rb") as f:
            for w in range(0, n_pieces, per_window):
                n = min(per_window, n_pieces - w)
                pieces = np.fromfile(f, dtype, n)
                if pieces.shape[0] != n:
                    raise OSError(f"the pieces' order in {os.path.dirname(path)} is shorter than written")
                yield pieces
    finally:
        if os.path.exists(path):  # not when the spill's folder went first
            os.remove(path)


def order_bytes(train_rows: int, window_rows: int) -> float:
    """Bytes a shuffled pass over a memmap holds besides its window: the pieces' random order
    (4 bytes a piece). The spill's passes keep their order and index on disk."""
    return -(-train_rows // piece_rows(window_rows)) * 4.0


def block_windows(n_rows: int, block_rows: int, window_rows: int, rng) -> Iterator[list[tuple[int, int]]]:
    """Blocks of ``block_rows`` consecutive rows in one random order over all rows, grouped
    into windows of ``window_rows // block_rows`` blocks (at least one). Yields each
    window's blocks as [(start, stop), ...], in file order within the window."""
    n_blocks = -(-n_rows // block_rows)
    for blocks in window_pieces(n_blocks, window_rows // block_rows, rng):
        yield [(int(b) * block_rows, min(n_rows, (int(b) + 1) * block_rows)) for b in np.sort(blocks)]
