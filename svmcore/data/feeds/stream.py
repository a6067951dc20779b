"""Training rows streamed from a text file, a batch at a time: the whole file is never in
memory. The first pass parses the text (``source_rows``) and, shuffled, passes its rows
through the shuffle buffer (``rows.pool_shuffle``: about ``window_rows`` rows, each block's
rows copied in as it comes) after reading the file in pieces in a scattered order drawn from
(seed, epoch) (``text_index``: a buffer can only mix rows within its reach of each other, and
on a file sorted by label, read in order, that reach held one class). With a ``spill`` it
writes its batches there in the order it trains them; later passes read the spill instead of
parsing again, shuffled in windows drawn from pieces across it (``from_spill``). With a reader
thread (``threads`` > 1) the first pass's parse and the later passes' window reads run ahead
of training.
"""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np

from svmcore.data.feeds.ahead import read_ahead
from svmcore.data.feeds.source_rows import BLOCK_BYTES, SourceRows
from svmcore.data.rows import Recycled, Rows, pool_shuffle, rebatch
from svmcore.data.shuffle_order import Shuffle, permutation32
from svmcore.data.spill import Spill
from svmcore.data.text_index import STEP, n_pieces

# A shuffled first pass reads the text in pieces of at most a sixteenth of the shuffle buffer each (a piece
# is a whole number of the row index's entries), so a buffer holds rows from at least 16 places in the file.
PIECES_PER_BUFFER = 16
# With threads > 1, a later pass's batches read ahead by a thread: enough to last while the next window is
# read (half a window), at most this many bytes, since later passes set the 2-thread peak (docs/lean.md).
LATER_AHEAD_BYTES = 4 << 20


class Streamed:
    """``rows``' training rows (``n_rows`` of them; all rows when not ``hold_out``), values
    rounded to the storage precision ``sdtype`` (the spill's) and handed out as ``cdtype``.
    ``index``: the text's row index (``sources.row_index``), None to read it in order."""

    def __init__(self, rows: SourceRows, n_rows: int, sdtype, cdtype, shuffle: Shuffle | None,
                 spill: Spill | None, reader_thread: bool, hold_out: bool = True, index: str | None = None):
        self.rows = rows
        self.n_rows = n_rows
        self.sdtype, self.cdtype = np.dtype(sdtype), np.dtype(cdtype)
        self.shuffle = shuffle
        self.spill = spill
        self.reader_thread = reader_thread
        self.hold_out = hold_out
        self.index = index
        self.nbytes = 0

    def batches(self, batch_size: int, epoch: int = 0) -> Iterator[Rows]:
        """Pass ``epoch``'s batches. Shuffled, a batch's rows live in buffers that later batches
        reuse (``rows.Recycled``; its codes are its own): they are valid until the next batch is
        taken, as in the training loop."""
        from_text = not (self.spill is not None and self.spill.complete)
        if not from_text:
            ahead = self._later_ahead(batch_size) if self.reader_thread else 0
            raw = from_spill(self.spill, batch_size, self.shuffle, epoch, ahead)
        else:
            raw = rebatch(self._text(batch_size, epoch), batch_size)
            if self.spill is not None and epoch == 0:  # in the order trained: shuffled, see spill.py
                raw = self.spill.write_through(raw)
        seen = 0
        for X, codes in raw:
            seen += codes.shape[0]
            if seen > self.n_rows:  # more rows than the scan counted: never train on them
                self._changed(seen, epoch)
            yield Rows(X.stored(self.sdtype).compute(self.cdtype), codes)
        if seen != self.n_rows:
            self._changed(seen, epoch)
        if from_text and self.rows.source.stamp is not None:
            self.rows.source.check_unchanged()

    def _text(self, batch_size: int, epoch: int) -> Iterator:
        """The first pass's rows (or a later pass's, without a spill): in file order, or shuffled."""
        ahead = self.reader_thread
        if self.shuffle is None:
            return self.rows.rows(False if self.hold_out else None, parse_ahead=ahead, picked=True)
        rng = self.shuffle.rng(epoch)
        if self.index is not None:
            src = self.rows.source  # pinned by its scan: the size its row index describes
            size = src.stamp.size if src.stamp else os.path.getsize(src.path)
            per = piece_entries(self.shuffle.window_rows, size, self.rows.total_rows)
            text = self.rows.pieces(self.index, per, permutation32(n_pieces(self.rows.total_rows, per), rng),
                                    self.hold_out, parse_ahead=ahead)
        else:
            text = self.rows.rows(False if self.hold_out else None, parse_ahead=ahead, picked=True)
        # each block's rows copied into the shuffle buffer as it comes: no block held on
        return pool_shuffle(text, self.shuffle.window_rows, rng, batch_size, recycled=True)

    def fill_spill(self, batch_size: int) -> None:
        """Write the first pass's rows to the spill without training on them, so that every pass
        reads the spill shuffled across the whole file: for a file whose labels come in long runs,
        where a first pass from the text met each kind of row in one burst (bench/results/label-sorted.md)."""
        for _ in self.batches(batch_size, 0):
            pass
        self.spill.filled_first = True

    def head(self, n: int) -> Rows:
        """The first ``n`` training rows, compute-ready, parsed from the text without touching
        the spill: a transform is fitted on them before the first pass, which then writes the
        spill from its start."""
        taken = rebatch(self.rows.rows(False if self.hold_out else None), n)
        try:
            X, codes = next(taken)
        finally:
            taken.close()
        return Rows(X.stored(self.sdtype).compute(self.cdtype), codes)

    def _later_ahead(self, batch_size: int) -> int:
        """Batches the reader thread holds ready in a later pass: shuffled, half a window's
        (at most ``LATER_AHEAD_BYTES``), so that training goes on while the next window is
        read; in order, two."""
        if self.shuffle is None:
            return 2
        row_bytes = self.spill.nnz / max(1, self.spill.rows) * (self.spill.dtype.itemsize + 4) + 12
        fits = int(LATER_AHEAD_BYTES // (row_bytes * batch_size))
        return max(2, min(self.shuffle.window_rows // batch_size // 2, fits))

    def _changed(self, rows: int, epoch: int) -> None:
        """A pass found another number of training rows than the scan: the data changed."""
        source = self.rows.source
        source.check_unchanged()  # names what changed in the file, when it did
        more = "at least " if rows > self.n_rows else ""
        raise source.changed(f"{self.n_rows:,} training rows at the start, {more}{rows:,} in pass {epoch + 1}")


def piece_entries(window_rows: int, text_bytes: int, rows: int) -> int:
    """Row-index entries in each piece of a shuffled first pass: at most a sixteenth of the shuffle
    buffer, and at most what fits one parse block (``BLOCK_BYTES`` of text on average), so a piece
    is parsed as one block. A piece a little over a block was parsed as a block and a small tail,
    and each block costs the training thread its own split, copy-in and hand-over: at 10^6 rows
    of 1.2 KB, 1,024-row pieces came as 1,953 blocks and the first pass ran 15-25% slower than
    768-row pieces as 1,303 blocks (their exact peak 0.2-0.4 MiB lower)."""
    by_rows = window_rows // PIECES_PER_BUFFER // STEP
    by_bytes = int(BLOCK_BYTES // max(1.0, text_bytes / max(1, rows) * STEP))
    return max(1, min(by_rows, by_bytes))


def from_spill(spill: Spill, batch_size: int, shuffle: Shuffle | None, epoch: int, ahead: int = 0) -> Iterator[Rows]:
    """A pass over the rows of ``spill`` (in the storage precision): in written order, or
    shuffled in windows (``Spill.read_windows``, drawn from ``shuffle.rng(epoch)``).
    ``ahead``: batches a reader thread makes ahead (0: none); shuffled, every batch made and not
    yet trained has its own set of buffers."""
    if shuffle is None:
        raw = spill.read(batch_size)
    else:
        raw = spill.read_windows(batch_size, shuffle.window_rows, shuffle.rng(epoch), into=Recycled(ahead + 1))
    return read_ahead(raw, ahead) if ahead else raw
