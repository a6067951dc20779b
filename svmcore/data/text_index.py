"""Where a text file's data rows start: the byte offset and the file line of every ``STEP``-th
data row (int64 pairs), written beside the cached scan (``sources.scan``), so that a shuffled
first pass can read the file in line-aligned pieces, in a scattered order, knowing each piece's
first row number (the held-out rule is a rule on it; ``feeds.stream``). A data row is a line
that is neither empty nor a comment (the parsers' rule); a CSV file's header is not one.
16 bytes per ``STEP`` rows: 62 KB at 10^6 rows, read a piece's entries at a time."""

from __future__ import annotations

import logging
import os

import numpy as np

from svmcore.data import disk
from svmcore.data.svmlight_lines import iter_blocks

log = logging.getLogger(__name__)

STEP = 256  # data rows between entries: a piece is a whole number of entries
_SPACE = np.frombuffer(b" \t\r\x0b\x0c", np.uint8)  # a line starting with one of these may be blank
_NO_ROW = np.frombuffer(b"\n#", np.uint8)  # an empty line, a comment
_BOM = b"\xef\xbb\xbf"


def path_of(scan_file: str) -> str:
    """The index beside a cached scan's JSON file."""
    return scan_file[:-len(".json")] + ".rows"


class RowIndex:
    """The entries of a file read block by block (``add``: line-aligned blocks in file order,
    as ``svmlight_lines.iter_blocks`` cuts them)."""

    def __init__(self, path: str, header: bool = False):
        with open(path, "rb") as f:
            self.pos = len(_BOM) if f.read(3) == _BOM else 0  # the blocks start after it
        self.header = header  # a CSV file's first non-blank line names the columns
        self.rows = 0
        self.entries: list[np.ndarray] = []

    def add(self, block, first_line: int) -> None:
        arr = np.frombuffer(block, np.uint8)
        starts = np.concatenate([[0], np.flatnonzero(arr == 10) + 1])
        starts = starts[starts < arr.shape[0]]
        first = arr[starts]
        data = ~np.isin(first, _NO_ROW)
        ends = np.append(starts[1:], arr.shape[0])
        for i in np.flatnonzero(np.isin(first, _SPACE)):  # rare: a line starting with a blank
            line = bytes(arr[starts[i]:ends[i]]).strip()
            data[i] = bool(line) and not line.startswith(b"#")
        rows = np.flatnonzero(data)
        if self.header and rows.shape[0]:
            rows, self.header = rows[1:], False
        at = rows[(self.rows + np.arange(rows.shape[0])) % STEP == 0]
        self.entries.append(np.stack([self.pos + starts[at], first_line + at], axis=1).astype(np.int64))
        self.rows += rows.shape[0]
        self.pos += arr.shape[0]

    def write(self, out: str) -> None:
        tmp = disk.temporary(out)  # unique per call: sessions of one dashboard are threads of one process
        np.concatenate(self.entries or [np.zeros((0, 2), np.int64)]).tofile(tmp)
        os.replace(tmp, out)


def build(path: str, fmt: str, out: str, rows: int | None) -> None:
    """The index of the file at ``path`` (format ``fmt``), written to ``out`` if it finds the
    ``rows`` data rows the scan counted (else the log says why there is none: a shuffled first
    pass then reads the file in order)."""
    index = RowIndex(path, header=fmt == "csv")
    for block, first_line in iter_blocks(path, 1 << 20, _rfind_newline, _count_newlines, reuse=True):
        index.add(block, first_line)
    if rows is not None and index.rows != rows:
        log.warning("%s: %s data lines found, the scan counted %s rows: no row index", path, index.rows, rows)
        return
    index.write(out)


def _rfind_newline(arr: np.ndarray, lo: int, hi: int) -> int:
    at = np.flatnonzero(arr[lo:hi] == 10)
    return lo + int(at[-1]) if at.shape[0] else -1


def _count_newlines(arr: np.ndarray, hi: int) -> int:
    return int(np.count_nonzero(arr[:hi] == 10))


def pieces(path: str, rows: int, piece_entries: int, order: np.ndarray):
    """``(start, end, first_line, first_row, rows)`` of each piece of ``piece_entries`` entries of
    the index at ``path`` (of a file of ``rows`` rows), in ``order`` (piece numbers); ``end``
    None for the last piece."""
    n_entries = -(-rows // STEP)
    with open(path, "rb") as f:
        fd = f.fileno()
        for k in order.tolist():
            a, b = k * piece_entries, min(n_entries, (k + 1) * piece_entries)
            start, line = _entry(fd, a, path)
            end = _entry(fd, b, path)[0] if b < n_entries else None
            yield start, end, line, a * STEP, min(rows, b * STEP) - a * STEP


def n_pieces(rows: int, piece_entries: int) -> int:
    return -(-(-(-rows // STEP)) // piece_entries)


def _entry(fd: int, k: int, path: str) -> tuple[int, int]:
    raw = os.pread(fd, 16, 16 * k)
    if len(raw) < 16:
        raise OSError(f"the row index {path} is shorter than its scan's rows; delete it to rebuild it")
    start, line = np.frombuffer(raw, np.int64).tolist()
    return start, line
