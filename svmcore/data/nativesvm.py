"""The svmlight parser in C (``native/svmlight.c``): a strict grammar and the float
conversion (Eisel-Lemire) in C, without scipy in the process; numbers with more than 19
significant digits go through the C library's correctly rounded ``strtod``. Lines the
strict grammar refuses take the per-line Python path (``svmlight_lines.parse_line_python``),
which parses them as scikit-learn does or raises :class:`BlockError`. The C calls release the
GIL, so a reader thread parses while another trains.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

from svmcore.data.native import binding
from svmcore.data.svmlight_lines import BlockError, iter_blocks, parse_line_python

DEFAULT_BLOCK_BYTES = 2**20  # ~1,000 rows of text-like data: small next to the model

stats = {"python_lines": 0}


class Block(NamedTuple):
    """The CSR parts of a parsed block and where its rows are."""
    data: np.ndarray     # float64
    indices: np.ndarray  # int32, file id - 1
    indptr: np.ndarray   # int64
    y: np.ndarray        # float64
    n_rows: int
    max_id: int          # the largest 1-based id seen, 0 if none
    first_row_line: int  # 0-based physical line of the first row in the block, -1 if none


class ParsedBlock(NamedTuple):
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    y: np.ndarray
    n_rows: int
    max_id: int
    first_line: int       # 1-based file line of the block's first physical line
    first_row_line: int   # 1-based file line of the block's first row


def _read_only_bytes(buf) -> np.ndarray:
    """Bytes, a memoryview or a uint8 array as a read-only 1-D uint8 array."""
    if isinstance(buf, np.ndarray):
        if buf.dtype != np.uint8 or buf.ndim != 1:
            raise TypeError("parse_block needs a 1-D uint8 array, bytes or a memoryview")
        arr = np.ascontiguousarray(buf).view()
    else:
        arr = np.frombuffer(buf, dtype=np.uint8)
    arr.flags.writeable = False
    return arr


def _parse(buf, max_features: int, scratch: dict | None = None) -> Block:
    max_features = int(max_features)
    if not 1 <= max_features <= 2**31:
        raise ValueError(f"max_features must be in [1, 2**31], got {max_features}")
    arr = _read_only_bytes(buf)
    n = arr.shape[0]
    # Upper bounds instead of a counting pass (which cost as much as the parse): a pair takes at
    # least 4 bytes ("1:1 "), a row at least 2 ("1\n"). np.empty does not touch the pages, so
    # only what is written counts in RSS; the arrays are trimmed to size at the end.
    nnz_cap = n // 2 + 2
    row_cap = n // 2 + 2
    if scratch is None:
        data = np.empty(nnz_cap, dtype=np.float64)
        indices = np.empty(nnz_cap, dtype=np.int32)
        indptr = np.empty(row_cap + 1, dtype=np.int64)
        y = np.empty(row_cap, dtype=np.float64)
    else:
        data, indices, indptr, y = (_scratch(scratch, k, cap, dtype) for k, cap, dtype in (
            ("data", nnz_cap, np.float64), ("indices", nnz_cap, np.int32), ("indptr", row_cap + 1, np.int64),
            ("y", row_cap, np.float64)))
    indptr[0] = 0
    # the scan's state, in and out: pos, nnz, rows, max_id, line_no, data_no, first_row_line
    state = np.array([0, 0, 0, 0, 0, 0, -1], dtype=np.int64)
    # the C scanner parses until the end (status 0) or a line it refuses, stopping at its start:
    # that line takes the Python path
    while binding.scan(arr, max_features, data, indices, indptr, y, state) != 0:
        stats["python_lines"] += 1
        end = binding.find_newline(arr, int(state[0]), n)
        state[:] = _python_line(arr, [int(v) for v in state], end, max_features, (data, indices, indptr, y))
        if end >= n:
            break
    _, nnz, rows, max_id, _, _, first_row_line = (int(v) for v in state)
    data, indices, y, indptr = data[:nnz], indices[:nnz], y[:rows], indptr[:rows + 1]
    if scratch is not None:  # the block's own arrays, of its size
        data, indices, y, indptr = data.copy(), indices.copy(), y.copy(), indptr.copy()
    # else views, not copies: the pages past the end were never written, so they hold no memory
    return Block(data, indices, indptr, y, rows, max_id, first_row_line)


def _python_line(arr, state: list[int], end: int, max_features: int, out) -> list[int]:
    """The line arr[pos:end] parsed in Python and appended to ``out``; the state after it."""
    pos, nnz, rows, max_id, line_no, data_no, first_row_line = state
    raw = arr[pos:end].tobytes()
    try:
        parsed = parse_line_python(raw, max_features)
    except (ValueError, IndexError, OverflowError) as e:
        raise BlockError(line_no, data_no, raw.rstrip(b"\r\n"), pos, str(e) or type(e).__name__) from None
    if parsed is not None:  # (None, a line sklearn would skip, does not reach here)
        data, indices, indptr, y = out
        label, ids, vals = parsed
        k = len(ids)
        data[nnz:nnz + k] = vals
        indices[nnz:nnz + k] = np.asarray(ids, dtype=np.int64) - 1
        y[rows] = label
        if rows == 0 and first_row_line < 0:
            first_row_line = line_no
        rows += 1
        nnz += k
        indptr[rows] = nnz
        if ids and ids[-1] > max_id:
            max_id = ids[-1]
        data_no += 1
    if end < arr.shape[0]:
        return [end + 1, nnz, rows, max_id, line_no + 1, data_no, first_row_line]
    return [end, nnz, rows, max_id, line_no, data_no, first_row_line]


def _scratch(scratch: dict, key: str, n: int, dtype) -> np.ndarray:
    a = scratch.get(key)
    if a is None or a.shape[0] < n:
        a = scratch[key] = np.empty(n, dtype)
    return a[:n]


def parse_block(buf: bytes | memoryview | np.ndarray, max_features: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """``(data float64, indices int32 (file id - 1), indptr int64, y float64, n_rows,
    max_id)`` of a block of complete svmlight lines."""
    r = _parse(buf, max_features)
    return r.data, r.indices, r.indptr, r.y, r.n_rows, r.max_id


def warm_up() -> None:
    """Load (building it first if needed) the library."""
    parse_block(b"1 qid:1 1:0.5 3:1e-3 # c\n\n-1 2:-.5e+2\n", 4)


def iter_parsed_blocks(path: str, max_features: int, block_bytes: int = DEFAULT_BLOCK_BYTES, scratch: bool = False,
                       span: tuple | None = None, buffers: dict | None = None) -> Iterator[ParsedBlock]:
    """``parse_block`` over the file's blocks (``svmlight_lines.iter_blocks``); blocks with no
    rows are skipped.
    A bad line raises :class:`DataError` naming its file line. With ``scratch`` every block
    is parsed into the same arrays (sized for the densest block) and copied out at its size,
    instead of into fresh arrays of that size, mapped and unmapped a block at a time: on a
    reader thread each map and unmap also stalled the training thread's page faults (the
    lean path's first pass with 2 threads ran 15-20% faster, for about 1 MiB of peak).
    ``span``: a part of the file (``svmlight_lines.iter_blocks``); ``buffers``: a dict that
    keeps the text buffer and the scratch arrays for the next call (a first pass that reads
    the file in pieces)."""
    kept = {} if buffers is None else buffers
    into = kept.setdefault("scratch", {}) if scratch else None
    # each block parsed before the next read
    for block, first_line in iter_blocks(path, block_bytes, binding.rfind_newline, binding.count_newlines,
                                         reuse=kept, span=span):
        try:
            r = _parse(block, max_features, into)
        except BlockError as e:
            raise e.data_error(path, first_line) from None
        if r.n_rows:
            out = [ParsedBlock(r.data, r.indices, r.indptr, r.y, r.n_rows, r.max_id, first_line,
                               first_line + r.first_row_line)]
            r = None  # handed on, not held here until the next block is parsed
            yield out.pop()


def write_rows(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, y: np.ndarray) -> memoryview:
    """CSR rows as ``sklearn.datasets.dump_svmlight_file(X, y, f, zero_based=False)``
    writes them, byte for byte ("%.16g" values; "%d" labels when ``y`` is integer). A view
    of the written part of the buffer, not a copy: only its written pages are resident."""
    data = np.ascontiguousarray(data, dtype=np.float64)
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1
    if y.dtype.kind in "iub":
        yf, yi = None, np.ascontiguousarray(y, dtype=np.int64)
    else:
        yf, yi = np.ascontiguousarray(y, dtype=np.float64), None
    cap = 64 * n + 48 * int(indptr[-1] - indptr[0]) + 64
    out = np.empty(cap, dtype=np.uint8)
    got = binding.write_rows(data, indices, indptr, yf, yi, 0, n, out)
    if got < 0:
        raise RuntimeError("svmlight writer: output buffer too small")
    return memoryview(out)[:got]
