"""A source's rows as ``Rows``, a block at a time: parsed by the run's parser (the native
svmlight parser straight into CSR parts, without scipy; any other through ``Source``:
scikit-learn's line parsers for svmlight, CSV and raw text, an .npz, generated
data), with class codes, every block checked against the scan (the file unchanged, no feature
beyond its width, no label it did not see). In file order, or a text file in pieces read in a
scattered order (``pieces``, from the scan's ``text_index``), each block numbered by its
first row so that the held-out rule (a rule on the row number) splits it wherever it lies."""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np

from svmcore.data import nativesvm
from svmcore.data.feeds.ahead import read_ahead
from svmcore.data.rows import Parts, Picked, Rows, block_of, class_codes
from svmcore.data.sources import CHUNK_ROWS, Source, is_test_row, last_test_row
from svmcore.data.text_index import pieces
from svmcore.spec.choices import Parser
from svmcore.spec.errors import DataError
from svmcore.spec.knobs import MAX_FEATURES

BLOCK_BYTES = 1 << 20  # the native parser's text block: ~1,000 rows of text-like data
# With threads > 1, blocks (~0.4 MiB parsed each) a thread parses ahead: a shuffle round trains half a pool
# while the parser fills the queue; 2 ran 10% slower, 8 held 2 MiB more for no speed (docs/lean.md).
PARSE_AHEAD_BLOCKS = 4
# pieces of a shuffled first pass the kernel is asked to read from disk before their turn (``_disk_ahead``)
PIECES_AHEAD = 4


class SourceRows:
    """The rows of ``source`` (pinned by its scan: ``total_rows``), ``n_features`` wide, labels
    among ``classes``; scikit-learn's parser reads ``chunk_rows`` lines at a time."""

    def __init__(self, source: Source, n_features: int, classes: np.ndarray, total_rows: int,
                 chunk_rows: int = CHUNK_ROWS):
        self.source = source
        self.n_features = n_features
        self.classes = np.asarray(classes)
        self.total_rows = total_rows
        self.chunk_rows = chunk_rows
        cfg = source.cfg
        self.native = source.fmt == "svmlight" and cfg.parser == Parser.NATIVE and not cfg.hashing_bits

    def blocks(self, span: tuple | None = None, scratch: bool = False, block_bytes: int = BLOCK_BYTES,
               buffers: dict | None = None) -> Iterator[Rows]:
        """The rows a parsed block at a time (of ``span`` only: ``readers.iter_file_chunks``).
        ``scratch``: parsed on a reader thread (``nativesvm.iter_parsed_blocks``)."""
        if not self.native:
            for X, y in self.source.iter_chunks(self.chunk_rows, self.n_features, span=span):
                out = [Rows(block_of(X), self._codes(y))]
                X = y = None  # handed on, not held here until the next chunk is parsed
                yield out.pop()
            return
        source, path = self.source, self.source.path
        try:
            for b in nativesvm.iter_parsed_blocks(path, MAX_FEATURES, block_bytes, scratch, span, buffers):
                if source.stamp is not None:
                    source.check_unchanged()
                if b.max_id > self.n_features:
                    row = int(np.searchsorted(b.indptr, int(np.argmax(b.indices)), side="right") - 1)
                    from svmcore.data.readers import _line_of_row
                    raise DataError(f"uses feature {b.max_id:,}, more than the {self.n_features:,} features seen "
                                    "when the file was scanned", path, _line_of_row(path, b.first_row_line, row))
                out = [Rows(Parts(b.data, b.indices, b.indptr), self._codes(b.y))]
                b = None  # handed on, not held here until the next block is parsed
                yield out.pop()
        except DataError:
            if source.stamp is not None:
                source.check_unchanged()  # a line torn by a writer: say so, not "bad line"
            raise

    def _codes(self, y: np.ndarray) -> np.ndarray:
        codes, bad = class_codes(self.classes, y)
        if bad.shape[0]:
            raise DataError(f"has label {y[bad[0]]}, which the scan did not see; the file changed", self.source.path)
        return codes

    def rows(self, want_test: bool | None, parse_ahead: bool = False, picked: bool = False,
             block_bytes: int = BLOCK_BYTES) -> Iterator:
        """The rows in file order: the training rows (``want_test`` False), the held-out rows
        (True, stopping after the last one) or all (None). ``parse_ahead``: a thread parses the
        next blocks (in C, without the GIL) while this one trains; only the parse, since any
        Python work there would take the GIL from training. ``picked``: a block's kept rows are
        handed on as ``Picked`` rows of it, for ``rebatch`` to gather, not copied."""
        blocks = self.blocks(scratch=parse_ahead, block_bytes=block_bytes)
        if parse_ahead:
            blocks = read_ahead(blocks, PARSE_AHEAD_BLOCKS)
        if want_test is None:
            return blocks
        return split(numbered(blocks), want_test, self.total_rows, picked)

    def pieces(self, index: str, piece_entries: int, order: np.ndarray, hold_out: bool, parse_ahead: bool = False
               ) -> Iterator:
        """The training rows (all rows without ``hold_out``) of the text's pieces
        (``piece_entries`` entries of the row index at ``index`` each) in ``order``, each
        piece's kept rows as ``Picked`` rows of its blocks."""
        def blocks():
            buffers: dict = {}  # one text buffer and one set of scratch arrays for every piece
            spans = pieces(index, self.total_rows, piece_entries, order)
            for start, end, line, first_row, n in _disk_ahead(spans, self.source.path):
                row = first_row
                for block in self.blocks((start, end, line), parse_ahead, buffers=buffers):
                    yield row, block
                    row += block.codes.shape[0]
                if row - first_row != n:
                    self.source.check_unchanged()
                    raise self.source.changed(f"{n:,} rows at row {first_row:,} at the start, "
                                              f"{row - first_row:,} now")

        numbered_blocks = read_ahead(blocks(), PARSE_AHEAD_BLOCKS) if parse_ahead else blocks()
        if not hold_out:
            return (block for _, block in numbered_blocks)
        return split(numbered_blocks, False, self.total_rows, picked=True)


def _disk_ahead(spans: Iterator[tuple], path: str, ahead: int = PIECES_AHEAD) -> Iterator[tuple]:
    """``spans`` (pieces of the text at ``path``), each handed on once the kernel has been asked
    to read the next ``ahead`` pieces into the page cache (``POSIX_FADV_WILLNEED``). The kernel
    reads ahead of sequential reads only: a piece at a scattered place was read from disk while
    its parser waited. Parsing 3,000 pieces of a 12 GB file out of the page cache went from
    290,000 to 440,000 rows/s (the thread busy 78% of the time, then all of it); the lean
    path's first pass at 10^7 rows from 202,000 to 247,000 (medians of 6 runs each)."""
    window: list[tuple] = []
    with open(path, "rb") as f:
        for span in spans:
            start, end = span[0], span[1]
            os.posix_fadvise(f.fileno(), start, 0 if end is None else end - start, os.POSIX_FADV_WILLNEED)
            window.append(span)
            if len(window) > ahead:
                yield window.pop(0)
        yield from window


def numbered(blocks: Iterator[Rows]) -> Iterator[tuple[int, Rows]]:
    """Blocks in file order with the number of their first row."""
    row = 0
    for block in blocks:
        n = block.codes.shape[0]
        out = [(row, block)]
        block = None
        yield out.pop()
        row += n


def split(numbered_blocks: Iterator[tuple[int, Rows]], want_test: bool, total_rows: int, picked: bool = False
          ) -> Iterator[tuple[object, np.ndarray]]:
    """The training (or held-out) rows of numbered blocks of a dataset of ``total_rows`` rows
    (``sources.is_test_row``): a block whose rows all stay as it is, else its kept rows gathered
    (``picked``: as ``Picked`` rows of it). Held-out rows in file order stop after the last one."""
    last = last_test_row(total_rows)
    for row0, (X, codes) in numbered_blocks:
        if want_test and row0 > last:
            return
        keep = is_test_row(np.arange(row0, row0 + codes.shape[0]), total_rows)
        keep = keep if want_test else ~keep
        if keep.all():
            out = [(X, codes)]
        elif keep.any():
            rows = np.flatnonzero(keep)
            out = [(Picked(X, rows) if picked else X.gather(rows), codes[rows])]
        else:
            continue
        X = codes = None  # handed on, not held here while the consumer works on it (a parsed block: ~0.5 MiB)
        yield out.pop()
